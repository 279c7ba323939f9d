"""Connect every node of a host group, one after the other, through the pane's own `Connector`.

Why through the same connector: a node is a saved host, and it must be reached exactly as that host
alone would be (its target, port and key file, the app's known-hosts file, the host-key question for
an unknown key, the refusal of a changed one, the password prompts). Going one node at a time means
one question on screen at a time, each naming its host. When a node cannot be reached, the nodes
already connected are closed and the failure names the node; nothing half-connected is left behind.

Signals: ``connected(object)`` the nodes as ``[(HostProfile, Transport), ...]`` in the group's
order; ``failed(str)`` one sentence naming the node.
"""

from __future__ import annotations

import contextlib

from PySide6.QtCore import QObject, Signal

from core.probes import HostGroup, HostProfile, Transport
from gui.probe.connection import Connector, connect_spec

ConnectedNode = tuple[HostProfile, Transport]


def member_profiles(group: HostGroup, saved: list[HostProfile]) -> list[HostProfile]:
    """The group's hosts as saved profiles, in its order; ValueError naming the first one no longer
    saved."""
    by_name = {p.name: p for p in saved}
    missing = [h for h in group.hosts if h not in by_name]
    if missing:
        raise ValueError(
            f"host '{missing[0]}' of the cluster '{group.name}' is no longer saved; edit the "
            "cluster to pick its nodes again"
        )
    return [by_name[h] for h in group.hosts]


class ClusterConnector(QObject):
    connected = Signal(object)
    failed = Signal(str)

    def __init__(self, connector: Connector) -> None:
        super().__init__()
        self.connector = connector
        self._queue: list[HostProfile] = []
        self._done: list[ConnectedNode] = []
        self._current: HostProfile | None = None
        connector.connected.connect(self._node_connected)
        connector.failed.connect(self._node_failed)

    @property
    def busy(self) -> bool:
        """True while a group is being connected: the connector's answers are this object's, not the
        pane's."""
        return self._current is not None

    def connect_group(self, profiles: list[HostProfile]) -> None:
        """Connect ``profiles`` in order; the answer comes as ``connected`` or ``failed``."""
        self._queue, self._done = list(profiles), []
        self._next()

    def _next(self) -> None:
        if not self._queue:
            self._current = None
            nodes, self._done = self._done, []
            self.connected.emit(nodes)
            return
        self._current = self._queue.pop(0)
        self.connector.connect_to(connect_spec(self._current))

    def _node_connected(self, transport: Transport) -> None:
        if self._current is None:
            return
        self._done.append((self._current, transport))
        self._next()

    def _node_failed(self, reason: str) -> None:
        if self._current is None:
            return
        node, self._current, self._queue = self._current.name, None, []
        close_nodes(self._done)
        self._done = []
        self.failed.emit(f"node '{node}': {reason}")


def close_nodes(nodes: list[ConnectedNode]) -> None:
    """Close every node's connection; one that fails to close does not keep the others open."""
    for _profile, transport in nodes:
        with contextlib.suppress(Exception):
            transport.close()
