"""SshTransport against a real OpenSSH server on 127.0.0.1 (started per test by the `sshd` fixture).

Expected fingerprints come from ``ssh-keygen -lf``; "nothing left running" is checked with ``pgrep
-f`` on a marker argument unique to each test (server and client are the same machine).
"""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.probes.transport.base import (
    AuthenticationFailed,
    Disconnected,
    HostKeyChanged,
    HostKeyUnknown,
    TransportError,
    Unreachable,
)
from core.probes.transport.hostkeys import accept_host_key, fingerprint, normalize_fingerprint
from core.probes.transport.remote_process_group import take_marker, wrap_command
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

try:
    from tests.integration.sshd import SshdServer, free_port, keygen, keygen_fingerprint
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from sshd import SshdServer, free_port, keygen, keygen_fingerprint  # type: ignore[no-redef]

pytestmark = pytest.mark.integration


def marker_seconds() -> str:
    """A sleep duration nobody else uses, so ``pgrep -f "sleep <it>"`` finds only this test's
    processes."""
    return f"4{secrets.randbelow(10**6):06d}.5"


def running(pattern: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def wait_until_gone(pattern: str, within_s: float = 3.0) -> list[str]:
    end = time.monotonic() + within_s
    while running(pattern) and time.monotonic() < end:
        time.sleep(0.05)
    return running(pattern)


# -- commands
# ----------------------------------------------------------------------------------------------


def test_run_reports_stdout_stderr_and_exit_codes(
    ssh_transport: SshTransport, sshd: SshdServer
) -> None:
    assert ssh_transport.description == f"{sshd.user}@127.0.0.1:{sshd.port}"
    ok = ssh_transport.run("echo hello", timeout=10)
    assert (ok.stdout, ok.stderr, ok.exit_code, ok.ok) == ("hello\n", "", 0, True)
    failed = ssh_transport.run("echo oops >&2; exit 7", timeout=10)
    assert (failed.stdout, failed.stderr, failed.exit_code, failed.ok) == ("", "oops\n", 7, False)
    assert not failed.timed_out and not failed.cancelled


def test_quoting_and_stdin_survive_the_remote_wrapper(ssh_transport: SshTransport) -> None:
    result = ssh_transport.run(
        """printf '%s|%s\\n' "it's" '$HOME `x` "q"'; cat""", timeout=10, input=b"from stdin\n"
    )
    assert result.stdout == 'it\'s|$HOME `x` "q"\nfrom stdin\n'


def test_command_killed_by_a_signal_has_no_exit_code(ssh_transport: SshTransport) -> None:
    result = ssh_transport.run("kill -KILL $$", timeout=10)
    assert result.exit_code is None
    assert not result.timed_out and not result.cancelled


def test_run_timeout_kills_the_remote_process(ssh_transport: SshTransport) -> None:
    seconds = marker_seconds()
    started = time.monotonic()
    result = ssh_transport.run(f"sleep {seconds} & sleep {seconds}; echo never", timeout=1)
    assert result.timed_out and result.exit_code is None
    assert "never" not in result.stdout
    assert time.monotonic() - started < 6
    assert wait_until_gone(f"sleep {seconds}") == []


def test_command_ignoring_term_is_killed(ssh_transport: SshTransport) -> None:
    seconds = marker_seconds()
    result = ssh_transport.run(f"trap '' TERM; sleep {seconds}; true", timeout=0.5)
    assert result.timed_out
    assert wait_until_gone(f"sleep {seconds}", within_s=1) == []


def test_stream_yields_lines_as_they_arrive(ssh_transport: SshTransport, tmp_path: Path) -> None:
    # The command prints "second" only after the test has seen "first" (it waits for a flag file, up
    # to 5 s), so a stream that buffered until the end would take the full 5 s.
    flag = tmp_path / "seen-first"
    command = (
        f"echo first; for i in $(seq 50); do [ -e {flag} ] && break; sleep 0.1; done; "
        f"echo second; printf 'no newline'"
    )
    started = time.monotonic()
    stream = ssh_transport.stream(command, timeout=20, cancel=threading.Event())
    lines = []
    for line in stream:
        lines.append(line)
        if line == "first":
            flag.touch()
    assert lines == ["first", "second", "no newline"]
    assert time.monotonic() - started < 4
    assert stream.result is not None and stream.result.exit_code == 0


def test_stream_cancel_kills_the_remote_process_group(ssh_transport: SshTransport) -> None:
    seconds = marker_seconds()
    cancel = threading.Event()
    stream = ssh_transport.stream(
        f"sleep {seconds} & bash -c 'sleep {seconds}' & echo started; wait",
        timeout=None,
        cancel=cancel,
    )
    for line in stream:
        assert line == "started"
        assert len(running(f"sleep {seconds}")) >= 2
        cancel.set()
    assert stream.result is not None and stream.result.cancelled and stream.result.exit_code is None
    assert wait_until_gone(f"sleep {seconds}", within_s=1) == []


def test_stream_closed_early_kills_the_remote_process(ssh_transport: SshTransport) -> None:
    seconds = marker_seconds()
    stream = ssh_transport.stream(
        f"echo go; sleep {seconds}", timeout=None, cancel=threading.Event()
    )
    assert next(stream) == "go"
    stream.close()
    assert wait_until_gone(f"sleep {seconds}", within_s=1) == []


def test_wrapper_makes_its_own_process_group_when_not_a_leader() -> None:
    # Under sshd the shell already leads its group; started from here bash does not, so the wrapper
    # must re-run itself under setsid and still report the real exit status.
    marker = "__tuneplan_pg_0123456789abcdef__"
    proc = subprocess.run(
        ["bash", "-c", wrap_command("echo body; exit 5", marker, None)],
        capture_output=True,
        text=True,
        timeout=10,
    )
    # the marker starts on a line of its own: after login noise
    empty, first, body = proc.stdout.splitlines()
    assert empty == ""
    name, pgid = first.split()
    assert name == marker and int(pgid) != os.getpgrp()
    assert (body, proc.returncode) == ("body", 5)


def test_marker_line_is_found_after_login_noise() -> None:
    marker = "__tuneplan_pg_00ff__"
    assert take_marker(b"Welcome to the box\n__tuneplan_pg_00ff__ 4242\npayload", marker) == (
        4242,
        b"payload",
    )
    assert take_marker(b"__tuneplan_pg_00ff__ 42", marker) == (None, b"")  # line not complete yet
    assert take_marker(b"__tuneplan_pg_1234__ 42\n", marker) == (None, b"")  # someone else's marker


# -- files and work directories
# -----------------------------------------------------------------------------


def test_workdir_is_private_and_removed(ssh_transport: SshTransport, tmp_path: Path) -> None:
    workdir = ssh_transport.make_workdir()
    assert os.path.isdir(workdir) and os.path.basename(workdir).startswith("tuneplan.")
    assert stat.S_IMODE(os.stat(workdir).st_mode) == 0o700
    script = tmp_path / "probe.sh"
    script.write_text("#!/bin/sh\necho uploaded-and-run\n")
    ssh_transport.put_file(script, f"{workdir}/probe.sh", mode=0o750)
    assert stat.S_IMODE(os.stat(f"{workdir}/probe.sh").st_mode) == 0o750
    assert ssh_transport.run(f"{workdir}/probe.sh", timeout=10).stdout == "uploaded-and-run\n"
    ssh_transport.remove_workdir(workdir)
    assert not os.path.exists(workdir)


def test_remove_workdir_refuses_other_paths(ssh_transport: SshTransport) -> None:
    for path in ("/", "/etc", "relative/tuneplan.x", "/tmp/tuneplan.x/../.."):
        with pytest.raises(ValueError, match="not one this app created"):
            ssh_transport.remove_workdir(path)
    assert os.path.isdir("/etc")


def test_remove_workdir_resolves_dotdot_and_symlinks_on_the_host(
    ssh_transport: SshTransport, tmp_path: Path
) -> None:
    target = tmp_path / "data" / "tuneplan.io.abc"
    target.mkdir(parents=True)
    (target / "tuneplan_seq.dat").write_bytes(b"\0" * 4096)
    (tmp_path / "other").mkdir()
    # realpath on the host
    ssh_transport.remove_workdir(f"{tmp_path}/other/../data/tuneplan.io.abc")
    assert not target.exists() and (tmp_path / "data").is_dir() and (tmp_path / "other").is_dir()
    ssh_transport.remove_workdir(str(target))  # already gone: nothing to do
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep")
    (tmp_path / "tuneplan.trap").symlink_to(precious)
    with pytest.raises(ValueError, match=f"resolves to {precious}"):
        ssh_transport.remove_workdir(str(tmp_path / "tuneplan.trap"))
    assert (precious / "notes.txt").read_text() == "keep"


# Each character Python's str.splitlines() ends a line at besides \n and \r (Python docs,
# str.splitlines).
SPLITLINES_BREAKS = ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("via", ["named", "behind a symlink"])
@pytest.mark.parametrize("separator", SPLITLINES_BREAKS, ids=[ascii(c) for c in SPLITLINES_BREAKS])
def test_a_path_holding_a_line_separator_never_removes_the_path_after_it(
    ssh_transport: SshTransport, tmp_path: Path, separator: str, via: str
) -> None:
    """'{tmp}/evil<U+2028>{tmp}/victim/tuneplan.io.x' is one directory on the host; read back split
    at every line break, its last line is another directory, '{tmp}/victim/tuneplan.io.x', which
    must stay."""
    victim = tmp_path / "victim" / "tuneplan.io.x"
    victim.mkdir(parents=True)
    (victim / "notes.txt").write_text("keep")
    crafted = Path(f"{tmp_path}/evil{separator}{victim}")
    crafted.mkdir(parents=True)
    named = str(crafted)
    if via == "behind a symlink":  # the name has no separator; what the host resolves it to has one
        (tmp_path / "tuneplan.link").symlink_to(crafted)
        named = str(tmp_path / "tuneplan.link")
    with pytest.raises(ValueError, match="not one this app created"):
        ssh_transport.remove_workdir(named)
    assert (victim / "notes.txt").read_text() == "keep" and crafted.is_dir()


# -- host keys --------------------------------------------------------------------------------


def test_unknown_host_key_is_refused_with_the_ssh_keygen_fingerprint(
    make_ssh_transport, sshd: SshdServer, ssh_known_hosts: Path
) -> None:
    expected = keygen_fingerprint(sshd.host_key_pub_path)
    with pytest.raises(HostKeyUnknown) as caught:
        make_ssh_transport().connect()
    assert caught.value.fingerprint == expected
    assert caught.value.host == f"[127.0.0.1]:{sshd.port}"
    assert caught.value.key_type == "ssh-ed25519"
    assert expected in str(caught.value)
    assert not ssh_known_hosts.exists()


def test_accepting_the_shown_fingerprint_remembers_the_host(
    make_ssh_transport, sshd: SshdServer, ssh_known_hosts: Path, tmp_path: Path
) -> None:
    shown = keygen_fingerprint(sshd.host_key_pub_path)
    first = make_ssh_transport(accept_new_host_key=shown)
    first.connect()
    assert first.run("echo in", timeout=10).stdout == "in\n"
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    assert ssh_known_hosts.read_text() == f"[127.0.0.1]:{sshd.port} {key_type} {key_b64}\n"
    assert stat.S_IMODE(ssh_known_hosts.stat().st_mode) == 0o600
    assert not (tmp_path / "user_known_hosts_absent").exists()  # the user's file is never written
    second = make_ssh_transport(accept_new_host_key=False)
    second.connect()
    assert second.is_alive()


def test_accepting_any_new_key_with_true(
    make_ssh_transport, sshd: SshdServer, ssh_known_hosts: Path
) -> None:
    make_ssh_transport(accept_new_host_key=True).connect()
    assert sshd.host_public_key.split()[1] in ssh_known_hosts.read_text()


def test_wrong_expected_fingerprint_is_refused(
    make_ssh_transport, sshd: SshdServer, ssh_known_hosts: Path
) -> None:
    wrong = "SHA256:" + "A" * 43
    with pytest.raises(HostKeyUnknown) as caught:
        make_ssh_transport(accept_new_host_key=wrong).connect()
    assert caught.value.expected == wrong
    assert caught.value.fingerprint == keygen_fingerprint(sshd.host_key_pub_path)
    assert wrong in str(caught.value) and "refusing" in str(caught.value)
    assert not ssh_known_hosts.exists()


def test_changed_host_key_is_refused_even_when_accepting(
    make_ssh_transport, sshd: SshdServer, ssh_trusted_known_hosts: Path
) -> None:
    old = keygen_fingerprint(sshd.host_key_pub_path)
    new = sshd.restart_with_new_host_key()
    assert new != old
    remembered = ssh_trusted_known_hosts.read_text()
    for accept in (False, True, new):
        with pytest.raises(HostKeyChanged) as caught:
            make_ssh_transport(
                known_hosts_file=ssh_trusted_known_hosts, accept_new_host_key=accept
            ).connect()
        assert str(caught.value) == (
            f"host key for [127.0.0.1]:{sshd.port} changed: expected {old}, "
            f"got {new} — refusing to connect"
        )
    assert ssh_trusted_known_hosts.read_text() == remembered


def test_hashed_known_hosts_entries_are_honoured(
    make_ssh_transport, sshd: SshdServer, ssh_trusted_known_hosts: Path
) -> None:
    subprocess.run(
        ["ssh-keygen", "-H", "-f", str(ssh_trusted_known_hosts)], check=True, capture_output=True
    )
    assert ssh_trusted_known_hosts.read_text().startswith("|1|")
    transport = make_ssh_transport(known_hosts_file=ssh_trusted_known_hosts)
    transport.connect()
    assert transport.is_alive()


def test_user_known_hosts_file_is_read(
    make_ssh_transport, sshd: SshdServer, tmp_path: Path
) -> None:
    user_file = tmp_path / "dot_ssh_known_hosts"
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    user_file.write_text(f"# comment\ngarbage line\n[127.0.0.1]:{sshd.port} {key_type} {key_b64}\n")
    transport = make_ssh_transport(user_known_hosts_file=user_file)
    transport.connect()
    assert transport.is_alive()


def test_accept_host_key_hashed_entry_is_found_by_ssh_keygen(
    sshd: SshdServer, tmp_path: Path
) -> None:
    import paramiko

    key_type, key_b64 = sshd.host_public_key.split()[:2]
    key = paramiko.PKey.from_type_string(key_type, __import__("base64").b64decode(key_b64))
    assert fingerprint(key) == keygen_fingerprint(sshd.host_key_pub_path)
    assert normalize_fingerprint(fingerprint(key)[len("SHA256:") :] + "=") == fingerprint(key)
    file = tmp_path / "kh" / "known_hosts"
    accept_host_key("127.0.0.1", sshd.port, key, file, hashed=True)
    # already there: not added twice
    accept_host_key("127.0.0.1", sshd.port, key, file, hashed=True)
    assert len(file.read_text().splitlines()) == 1
    found = subprocess.run(
        ["ssh-keygen", "-F", f"[127.0.0.1]:{sshd.port}", "-f", str(file)],
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0 and key_b64 in found.stdout


# -- authentication and reachability ------------------------------------------------------------


def test_authentication_failure_message(
    make_ssh_transport,
    sshd: SshdServer,
    ssh_target: SshTarget,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
) -> None:
    stranger = tmp_path / "stranger_key"
    keygen(stranger)
    asked: list[str] = []
    target = ssh_target.model_copy(update={"identity_files": [str(stranger)]})
    with pytest.raises(AuthenticationFailed) as caught:
        make_ssh_transport(target=target, known_hosts_file=ssh_trusted_known_hosts).connect()
    assert str(caught.value) == (
        f"authentication failed for user {sshd.user}: no key accepted and no password given"
    )

    # The server allows public keys only, so a password callback is not even asked.
    def password(prompt: str) -> str:
        asked.append(prompt)
        return "pw"

    with pytest.raises(AuthenticationFailed, match="allows only publickey"):
        make_ssh_transport(
            target=target, known_hosts_file=ssh_trusted_known_hosts, password_cb=password
        ).connect()
    assert asked == []


def test_encrypted_key_asks_for_its_passphrase_once(
    make_ssh_transport,
    sshd: SshdServer,
    ssh_target: SshTarget,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
) -> None:
    locked = tmp_path / "locked_key"
    keygen(locked, passphrase="correct horse")
    sshd.authorize(locked.with_name("locked_key.pub"))
    target = ssh_target.model_copy(update={"identity_files": [str(locked)]})
    prompts: list[str] = []

    def passphrase(prompt: str) -> str:
        prompts.append(prompt)
        return "correct horse"

    transport = make_ssh_transport(
        target=target, known_hosts_file=ssh_trusted_known_hosts, passphrase_cb=passphrase
    )
    transport.connect()
    assert transport.run("echo unlocked", timeout=10).stdout == "unlocked\n"
    assert len(prompts) == 1 and str(locked) in prompts[0]
    with pytest.raises(AuthenticationFailed, match=r"passphrase for key .* is wrong"):
        make_ssh_transport(
            target=target,
            known_hosts_file=ssh_trusted_known_hosts,
            passphrase_cb=lambda _prompt: "wrong",
        ).connect()
    with pytest.raises(AuthenticationFailed, match="is encrypted and no passphrase was given"):
        make_ssh_transport(target=target, known_hosts_file=ssh_trusted_known_hosts).connect()


def test_unreachable_port_message(make_ssh_transport, ssh_target: SshTarget) -> None:
    port = free_port()  # nothing listens there
    target = ssh_target.model_copy(update={"port": port})
    with pytest.raises(Unreachable) as caught:
        make_ssh_transport(target=target).connect()
    assert str(caught.value) == f"host 127.0.0.1:{port} refused the connection"


def test_dropped_connection_raises_disconnected_and_reconnects(
    ssh_transport: SshTransport, drop_ssh_connections
) -> None:
    seconds = marker_seconds()
    stream = ssh_transport.stream(
        f"echo up; sleep {seconds}", timeout=None, cancel=threading.Event()
    )
    with pytest.raises(Disconnected, match="lost"):
        for line in stream:
            assert line == "up"
            assert drop_ssh_connections() >= 1
    assert not ssh_transport.is_alive()
    with pytest.raises(Disconnected):
        ssh_transport.run("true", timeout=5)
    ssh_transport.reconnect()
    assert ssh_transport.run("echo back", timeout=10).stdout == "back\n"


def test_proxy_jump_through_a_jump_host(
    make_ssh_transport,
    sshd: SshdServer,
    ssh_target: SshTarget,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host jumpbox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key_path}\n  IdentitiesOnly yes\n"
    )
    target = ssh_target.model_copy(update={"proxy_jump": "jumpbox"})
    transport = make_ssh_transport(
        target=target, known_hosts_file=ssh_trusted_known_hosts, ssh_config=config
    )
    transport.connect()
    assert transport.run("echo via-jump", timeout=10).stdout == "via-jump\n"
    # the jump host, then the target through the tunnel
    assert sshd.log().count("Accepted publickey") == 2


def test_proxy_command_carries_the_connection(
    make_ssh_transport,
    sshd: SshdServer,
    ssh_target: SshTarget,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
) -> None:
    relay = tmp_path / "relay.py"
    relay.write_text(
        "import os, selectors, socket, sys\n"
        "s = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n"
        "sel = selectors.DefaultSelector(); sel.register(0, selectors.EVENT_READ); "
        "sel.register(s, 1)\nwhile True:\n    for key, _ in sel.select():\n        if key.fileobj "
        "== 0:\n            data = os.read(0, 65536)\n            if not data: "
        "sys.exit(0)\n            s.sendall(data)\n        else:\n            data = "
        "s.recv(65536)\n            if not data: sys.exit(0)\n            os.write(1, data)\n"
    )
    target = ssh_target.model_copy(
        update={"proxy_command": f"{sys.executable} {relay} 127.0.0.1 {sshd.port}"}
    )
    transport = make_ssh_transport(target=target, known_hosts_file=ssh_trusted_known_hosts)
    transport.connect()
    assert transport.run("echo via-proxy", timeout=10).stdout == "via-proxy\n"
    broken = ssh_target.model_copy(update={"proxy_command": "false"})
    with pytest.raises(Unreachable) as caught:
        make_ssh_transport(target=broken, known_hosts_file=ssh_trusted_known_hosts).connect()
    assert (
        str(caught.value)
        == f"proxy command for 127.0.0.1:{sshd.port} failed: 'false' exited with status 1"
    )


def test_a_proxy_that_closes_its_end_before_it_exits_is_named_as_the_failure(
    make_ssh_transport, sshd: SshdServer, ssh_target: SshTarget, ssh_trusted_known_hosts: Path
) -> None:
    """A proxy's end of the connection closes while it exits, so SSH fails on that EOF a moment
    before the process is gone (on a loaded machine the plain `false` above lost this race once in a
    full run). Here the proxy closes its output, then takes 0.3 s to exit: the sentence still names
    the proxy, not the host."""
    command = "sh -c 'exec >&- <&-; sleep 0.3; exit 3'"
    slow = ssh_target.model_copy(update={"proxy_command": command})
    with pytest.raises(Unreachable) as caught:
        make_ssh_transport(target=slow, known_hosts_file=ssh_trusted_known_hosts).connect()
    assert (
        str(caught.value)
        == f"proxy command for 127.0.0.1:{sshd.port} failed: '{command}' exited with status 3"
    )


def test_a_proxy_command_that_never_answers_is_named_with_the_seconds_waited(
    make_ssh_transport, sshd: SshdServer, ssh_target: SshTarget, ssh_trusted_known_hosts: Path
) -> None:
    """A proxy that neither speaks nor exits (a bastion that swallows the connection) is the failure
    to name."""
    command = f"sleep {marker_seconds()}"
    target = ssh_target.model_copy(update={"proxy_command": command})
    transport = make_ssh_transport(
        target=target, known_hosts_file=ssh_trusted_known_hosts, connect_timeout=2
    )
    started = time.monotonic()
    with pytest.raises(Unreachable) as caught:
        transport.connect()
    assert time.monotonic() - started < 10
    assert str(caught.value) == (
        f"the proxy command '{command}' for {sshd.host}:{sshd.port} did not answer within "
        "2 s (no SSH greeting came through it)"
    )
    assert wait_until_gone(command) == []


def test_a_bashrc_that_ends_non_interactive_shells_is_named_as_the_cause(
    sshd_factory, tmp_path: Path
) -> None:
    """A ~/.bashrc that exits unless the shell is interactive ends every command before it starts:
    exit status 3 alone says nothing, the sentence must point at the login shell's startup files."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(
        'case $- in *i*) ;; *) echo "not interactive" >&2; exit 3 ;; esac\n'
    )
    transport = sshd_factory(session_env={"HOME": str(home)}).connected_transport(tmp_path)
    try:
        with pytest.raises(TransportError) as caught:
            transport.run("echo never", timeout=10)
    finally:
        transport.close()
    said = str(caught.value)
    assert said.startswith(
        f"the login shell on {transport.description} ended with exit status 3 before it ran "
        "the command: its startup files (~/.bashrc"
    )
    assert "not interactive" in said and len(said.splitlines()) == 1
