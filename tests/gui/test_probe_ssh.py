"""The pane connecting to a real OpenSSH server on 127.0.0.1: the host-key dialog (accept once,
accept and remember, cancel), the refusal of a changed key, and a passphrase asked on the GUI thread
for a worker.

Expected fingerprints come from ``ssh-keygen -lf`` (the `SshdServer` helper), not from the app.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QMessageBox

from core.probes.history.records import HostProfile
from core.probes.history.store import ProbeStore
from core.probes.transport.ssh import SshTransport
from gui.probe.hostkey_dialog import HostKeyDialog
from gui.probe.pane import ProbePane
from gui.workers import InlineExecutor, ThreadExecutor

try:
    from tests.integration.sshd import SshdServer, SshdUnavailable, find_missing_tools, keygen
except ImportError:  # tests/ is not a package here; load the helper from its folder
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from sshd import SshdServer, SshdUnavailable, find_missing_tools, keygen  # type: ignore[no-redef]

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"sshd tests cannot run under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    missing = find_missing_tools()
    if missing:
        _unavailable(missing)
    server = SshdServer(workdir=tmp_path_factory.mktemp("sshd"))
    try:
        server.start()
    except SshdUnavailable as exc:
        _unavailable(str(exc))
    yield server
    server.stop()


def make_pane(qtbot, store: ProbeStore, tmp_path: Path, executor) -> ProbePane:
    options = {
        "user_known_hosts_file": tmp_path / "no_user_known_hosts",
        "allow_agent": False,
        "look_for_keys": False,
    }
    pane = ProbePane(
        executor,
        store,
        known_hosts_file=tmp_path / "app" / "known_hosts",
        transport_options=options,
        run_suite=lambda *a: iter(()),
        make_options=lambda c: c,
    )
    qtbot.addWidget(pane)
    pane.show()
    return pane


def add_host(pane: ProbePane, sshd: SshdServer, key: Path | None = None) -> None:
    pane.store.save_host(
        HostProfile(
            name="rented", target=sshd.target, identity_file=str(key or sshd.client_key_path)
        )
    )
    pane.hosts.refresh(select="rented")


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def open_host_key_dialog(qtbot, pane: ProbePane) -> HostKeyDialog:
    with qtbot.waitSignal(pane.connector.asking, timeout=15000) as asked:
        click(qtbot, pane.connect_button)
    dialog = asked.args[0]
    assert isinstance(dialog, HostKeyDialog)
    return dialog


def test_unknown_key_shows_its_fingerprint_and_accept_once_is_not_remembered(
    qtbot, sshd, probe_store, tmp_path
):
    pane = make_pane(qtbot, probe_store, tmp_path, InlineExecutor())
    add_host(pane, sshd)
    dialog = open_host_key_dialog(qtbot, pane)
    assert dialog.fingerprint.text() == sshd.host_key_fingerprint
    assert dialog.key_type.text() == "Key type: ssh-ed25519"
    assert pane.transport is None
    click(qtbot, dialog.once_button)
    assert isinstance(pane.transport, SshTransport)
    result = pane.transport.run("echo probe-ok", timeout=10)
    assert result.stdout == "probe-ok\n", result
    app_file = tmp_path / "app" / "known_hosts"
    assert not app_file.exists() or str(sshd.port) not in app_file.read_text()
    session_file = pane.connector._session_dir / "known_hosts"
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in session_file.read_text()
    pane.shutdown()
    assert not session_file.exists()  # the one-time acceptance is gone with the session


def test_accept_and_remember_writes_the_app_file_and_reconnects_silently(
    qtbot, sshd, probe_store, tmp_path
):
    executor = ThreadExecutor()
    pane = make_pane(qtbot, probe_store, tmp_path, executor)
    try:
        add_host(pane, sshd)
        dialog = open_host_key_dialog(qtbot, pane)
        click(qtbot, dialog.remember_button)
        qtbot.waitUntil(lambda: pane.transport is not None, timeout=15000)
        line = (tmp_path / "app" / "known_hosts").read_text()
        key_type, key_b64 = sshd.host_public_key.split()[:2]
        assert line == f"[127.0.0.1]:{sshd.port} {key_type} {key_b64}\n"
        pane.disconnect_host()
        asked: list[object] = []
        pane.connector.asking.connect(asked.append)
        click(qtbot, pane.connect_button)
        qtbot.waitUntil(lambda: pane.transport is not None, timeout=15000)
        assert asked == []
        assert pane.start_button.isEnabled()
    finally:
        pane.shutdown()
        assert executor.stop_all(5000)


def test_cancel_leaves_the_host_unconnected(qtbot, sshd, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path, InlineExecutor())
    add_host(pane, sshd)
    dialog = open_host_key_dialog(qtbot, pane)
    click(qtbot, dialog.cancel_button)
    assert pane.transport is None
    assert (
        pane.status.text()
        == f"Not connected: host key of [127.0.0.1]:{sshd.port} not accepted; not connected"
    )
    assert not (tmp_path / "app" / "known_hosts").exists()


def test_changed_key_is_refused_with_no_way_to_connect(qtbot, sshd, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path, InlineExecutor())
    add_host(pane, sshd)
    click(qtbot, open_host_key_dialog(qtbot, pane).remember_button)
    old = sshd.host_key_fingerprint
    pane.disconnect_host()
    new = sshd.restart_with_new_host_key()
    with qtbot.waitSignal(pane.connector.asking, timeout=15000) as asked:
        click(qtbot, pane.connect_button)
    box = asked.args[0]
    assert isinstance(box, QMessageBox)
    assert box.windowTitle() == "Host key changed"
    assert old in box.informativeText() and new in box.informativeText()
    assert box.standardButtons() == QMessageBox.StandardButton.Close and len(box.buttons()) == 1
    assert pane.transport is None
    assert "changed" in pane.status.text()
    box.close()


def test_passphrase_is_asked_on_the_gui_thread_for_the_worker(qtbot, sshd, probe_store, tmp_path):
    locked = tmp_path / "locked_key"
    keygen(locked, passphrase="correct horse")
    sshd.authorize(locked.with_name("locked_key.pub"))
    executor = ThreadExecutor()
    pane = make_pane(qtbot, probe_store, tmp_path, executor)
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    app_file = tmp_path / "app" / "known_hosts"
    app_file.parent.mkdir(parents=True)
    app_file.write_text(f"[127.0.0.1]:{sshd.port} {key_type} {key_b64}\n")
    shown: list[str] = []

    def answer(dialog):
        shown.append(dialog.labelText())

        def type_and_accept():
            dialog.setTextValue("correct horse")
            dialog.accept()

        QTimer.singleShot(0, type_and_accept)

    pane.connector.prompter.shown.connect(answer)
    try:
        add_host(pane, sshd, key=locked)
        click(qtbot, pane.connect_button)
        qtbot.waitUntil(
            lambda: pane.transport is not None or "Not connected" in pane.status.text(),
            timeout=20000,
        )
        assert pane.transport is not None, pane.status.text()
        assert len(shown) == 1 and "locked_key" in shown[0]
        assert "correct horse" not in probe_store.path.read_bytes().decode("latin-1")
    finally:
        pane.shutdown()
        assert executor.stop_all(5000)
