"""Connect to a host on a worker, with the host-key question and password prompts on the GUI thread.

The SSH handshake runs on the executor. An unknown host key comes back as `HostKeyUnknown`; the pane
asks (see `hostkey_dialog`) and connects again accepting exactly the fingerprint the user saw.
"Accept once" writes the key to a session-only copy of the app's known-hosts file, deleted when the
pane closes, so nothing about it outlives the session; "Accept and remember" writes to the app's
file. A changed key is refused with no override.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from core.probes import (
    HostKeyChanged,
    HostKeyUnknown,
    HostOverrides,
    HostProfile,
    LocalTransport,
    SshTarget,
    SshTransport,
    Transport,
    TransportError,
    default_app_known_hosts,
    open_ssh,
    resolve,
)
from gui.probe.hostkey_dialog import HostKeyChoice, HostKeyDialog, changed_key_box
from gui.probe.prompts import Prompter
from gui.workers import Executor


@dataclass(frozen=True)
class ConnectSpec:
    """Where to connect: ``target`` None means this machine (no SSH); ``overrides`` are the host
    form's user, port and key file, put together with the target by
    `core.probes.transport.connect.resolve`."""

    label: str
    target: str | None = None
    overrides: HostOverrides = field(default_factory=HostOverrides)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def local(self) -> bool:
        return self.target is None


class Connector(QObject):
    """Signals: ``connected(object)`` a live Transport; ``failed(str)`` one sentence;
    ``status(str)`` progress; ``asking(object)`` the host-key dialog or refusal box just opened
    (tests answer it)."""

    connected = Signal(object)
    failed = Signal(str)
    status = Signal(str)
    asking = Signal(object)

    def __init__(
        self,
        executor: Executor,
        parent_widget: QWidget | None = None,
        known_hosts_file: Path | None = None,
        ssh_config: Path | None = None,
        transport_options: dict[str, Any] | None = None,
        transport_factory: Callable[..., Transport] | None = None,
    ) -> None:
        super().__init__()
        self.executor = executor
        self.parent_widget = parent_widget
        self.known_hosts_file = known_hosts_file or default_app_known_hosts()
        self.ssh_config = ssh_config
        self.transport_options = dict(transport_options or {})
        self.transport_factory: Callable[..., Transport] = transport_factory or SshTransport
        self.prompter = Prompter(parent_widget)
        self._session_dir: Path | None = None
        self.busy = False
        self.dialog: QWidget | None = None

    # ---- public

    def connect_to(self, spec: ConnectSpec) -> None:
        """Start connecting; the answer comes as ``connected`` or ``failed``."""
        if self.busy:
            self.failed.emit("a connection attempt is already running")
            return
        if spec.target is None:
            self.status.emit("Using this machine")
            self.connected.emit(LocalTransport())
            return
        # On a worker: OpenSSH's `ssh -G` reads the config (a `Match exec` may run a command), not
        # the UI thread.
        self.busy = True
        self.status.emit(f"Connecting to {spec.target}…")
        target_text = spec.target
        self.executor.submit(
            lambda: resolve(target_text, spec.overrides, self.ssh_config),
            lambda target: self._attempt(
                spec, target, accept=False, known_hosts=self.known_hosts_file
            ),
            self._unresolved,
        )

    def _unresolved(self, exc: BaseException) -> None:
        self.busy = False
        self.failed.emit(
            str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        )

    def close(self) -> None:
        """Answer open prompts and delete the session-only known-hosts copy."""
        self.prompter.close()
        if self._session_dir is not None:
            shutil.rmtree(self._session_dir, ignore_errors=True)
            self._session_dir = None

    # ---- attempts

    def _attempt(
        self, spec: ConnectSpec, target: SshTarget, accept: bool | str, known_hosts: Path
    ) -> None:
        self.busy = True
        self.status.emit(f"Connecting to {target.description}…")
        options = {
            "known_hosts_file": known_hosts,
            "accept_new_host_key": accept,
            "password_cb": self.prompter.password,
            "passphrase_cb": self.prompter.passphrase,
            **self.transport_options,
            **spec.options,
        }
        factory, ssh_config = self.transport_factory, self.ssh_config
        self.executor.submit(
            lambda: open_ssh(target, ssh_config=ssh_config, factory=factory, **options),
            self._done,
            lambda exc: self._error(spec, target, exc),
        )

    def _done(self, transport: Transport) -> None:
        self.busy = False
        # known_hosts lines skipped, as OpenSSH skips them
        notes = list(getattr(transport, "notes", []))
        more = f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""
        self.status.emit(
            f"Connected to {getattr(transport, 'description', 'host')}"
            + (f" — note: {notes[0]}{more}" if notes else "")
        )
        self.connected.emit(transport)

    def _error(self, spec: ConnectSpec, target: SshTarget, exc: BaseException) -> None:
        self.busy = False
        if isinstance(exc, HostKeyUnknown) and exc.expected is None:
            self._ask_host_key(spec, target, exc)
        elif isinstance(exc, HostKeyChanged):
            box = changed_key_box(exc, self.parent_widget)
            self.dialog = box
            box.open()
            self.asking.emit(box)
            self.failed.emit(str(exc))
        elif isinstance(exc, TransportError):
            self.failed.emit(str(exc))
        else:
            self.failed.emit(
                f"connecting to {target.description} failed: {type(exc).__name__}: {exc}"
            )

    def _ask_host_key(self, spec: ConnectSpec, target: SshTarget, exc: HostKeyUnknown) -> None:
        dialog = HostKeyDialog(exc, self.parent_widget)
        self.dialog = dialog

        def finished(_result: int) -> None:
            self.dialog = None
            choice = dialog.choice
            dialog.deleteLater()
            if choice is HostKeyChoice.cancel:
                self.failed.emit(f"host key of {exc.host} not accepted; not connected")
            elif choice is HostKeyChoice.remember:
                self._attempt(
                    spec, target, accept=exc.fingerprint, known_hosts=self.known_hosts_file
                )
            else:
                self._attempt(
                    spec, target, accept=exc.fingerprint, known_hosts=self._session_known_hosts()
                )

        dialog.finished.connect(finished)
        dialog.open()
        self.asking.emit(dialog)

    def _session_known_hosts(self) -> Path:
        """A private copy of the app's known-hosts file for keys accepted once (removed by
        :meth:`close`)."""
        if self._session_dir is None:
            self._session_dir = Path(tempfile.mkdtemp(prefix="tuneplan-hosts-"))
        path = self._session_dir / "known_hosts"
        if not path.exists():
            if self.known_hosts_file.exists():
                shutil.copyfile(self.known_hosts_file, path)
            else:
                path.touch(mode=0o600)
        return path


def connect_spec(profile: HostProfile) -> ConnectSpec:
    """Where a saved host profile connects: this machine, or its target with the form's user, port
    and key."""
    if profile.local:
        return ConnectSpec(label=profile.name)
    overrides = HostOverrides(
        user=profile.user or None,
        port=profile.port,
        identity_files=(profile.identity_file,) if profile.identity_file else (),
    )
    return ConnectSpec(label=profile.name, target=profile.target, overrides=overrides)
