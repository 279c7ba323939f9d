"""The Probe place's one connection: a single host's transport, or every node of a host group.

It stands apart from the pane (which runs suites over it) because connecting has its own rules: a
host is reached through the pane's ``Connector`` (on a worker, questions on the GUI thread), a group
node by node through ``ClusterConnector`` exactly as each host alone would be, and while a group is
being connected the connector's answers belong to the group, not to the target. Closing closes
whatever was reached.

Signals: ``connected(str)`` a line for the event log once the target is reached; ``failed(str)`` why
not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from core.probes import HostGroup, HostProfile
from gui.probe.cluster_connect import ClusterConnector, ConnectedNode, close_nodes, member_profiles
from gui.probe.connection import Connector, connect_spec
from gui.probe.hosts import Target

if TYPE_CHECKING:
    from core.probes import Transport


class TargetConnection(QObject):
    """What is connected now, and to which target; `selected` names the host list's current
    target."""

    connected = Signal(str)
    failed = Signal(str)

    def __init__(self, connector: Connector, selected: Callable[[], Target]) -> None:
        super().__init__()
        self.connector, self.selected = connector, selected
        self.transport: Transport | None = None
        self.nodes: list[ConnectedNode] = []  # a connected cluster target's nodes, in its order
        self.profile: Target | None = None  # the target reached
        self.pending: Target | None = None  # the target being connected
        connector.connected.connect(self.host_connected)
        connector.failed.connect(self._failed)
        # after this object's own slots: see host_connected
        self.cluster = ClusterConnector(connector)
        self.cluster.connected.connect(self.nodes_connected)
        self.cluster.failed.connect(self._failed)

    @property
    def is_open(self) -> bool:
        """A host's transport, or every node of a cluster, is connected."""
        return self.transport is not None or bool(self.nodes)

    @property
    def busy(self) -> bool:
        return self.connector.busy or self.cluster.busy

    def open(self, profile: Target, saved: list[HostProfile]) -> None:
        """Connect `profile` (a group's members are read from the `saved` hosts); the answer comes
        as a signal."""
        self.pending = profile
        if isinstance(profile, HostGroup):
            try:
                self.cluster.connect_group(member_profiles(profile, saved))
            except ValueError as exc:
                self._failed(str(exc))
        else:
            self.connector.connect_to(connect_spec(profile))

    def nodes_connected(self, nodes: list[ConnectedNode]) -> None:
        self.nodes, self.profile = nodes, self.pending
        self.connected.emit(
            f"connected to the cluster's nodes: {', '.join(p.name for p, _t in nodes)}"
        )

    def host_connected(self, transport: Transport) -> None:
        if self.cluster.busy:  # a node of a cluster being connected: ClusterConnector takes it
            return
        self.transport = transport
        self.profile = self.pending or self.selected()
        self.connected.emit(
            f"connected to {self.profile.name} ({getattr(transport, 'description', '')})"
        )

    def _failed(self, reason: str) -> None:
        if self.cluster.busy:  # one node failed: ClusterConnector closes the others and names it
            return
        self.failed.emit(reason)

    def close(self) -> bool:
        """Close what is connected; True when something was."""
        transport, self.transport, self.profile = self.transport, None, None
        nodes, self.nodes = self.nodes, []
        close_nodes(nodes)
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()
        return transport is not None or bool(nodes)
