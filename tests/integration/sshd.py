"""A real OpenSSH server for integration tests: own host key, own client key, a free port on
127.0.0.1.

Started as ``/usr/sbin/sshd -D -e -f <config>`` (no daemonising, log to a file) and stopped by PID.
With ``netns`` it runs inside that network namespace (``ip netns exec NS``), and with ``hostname``
in a UTS namespace of its own under that name, so several servers on this machine look like several
hosts (tests/integration/netns.py). Expected values such as the host key fingerprint come from
``ssh-keygen -lf``, a tool independent of the code under test.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.probes.transport.hostkeys import known_hosts_name
from core.probes.transport.local import proc_stats
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 10.0


def unavailable(reason: str) -> None:
    """Skip a test whose real part (sshd, torch, fio, a tmpfs) is missing, or fail it under CI=true,
    where CI installs every one of them (packaging/test.sh): a missing part there is a broken
    install, not a skip."""
    import pytest

    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"integration test cannot run under CI: {reason}")
    pytest.skip(reason)


class SshdUnavailable(RuntimeError):
    """sshd or ssh-keygen is missing, or the server cannot start here; the message says which."""


def find_missing_tools() -> str | None:
    """A sentence naming what is missing to run sshd tests, or None when all is there."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed (apt-get install openssh-client)"
    return None


def keygen(
    path: Path, *, passphrase: str = "", key_type: str = "ed25519", comment: str = "tuneplan-test"
) -> None:
    """Generate a key pair with ssh-keygen (``path`` and ``path.pub``)."""
    for p in (path, path.with_name(path.name + ".pub")):
        p.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, "-N", passphrase, "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
        timeout=30,
    )


def keygen_fingerprint(public_key: Path) -> str:
    """The SHA256 fingerprint as ``ssh-keygen -lf`` prints it (second field)."""
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(public_key)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    return out.split()[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    return [child for child, fields in proc_stats() if len(fields) > 1 and fields[1] == str(pid)]


def _descendants(pid: int) -> list[int]:
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _kill(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


@dataclass
class SshdServer:
    """One sshd under ``workdir``. Call `start()`; `stop()` kills it (and what it started) by
    PID."""

    workdir: Path
    host: str = "127.0.0.1"
    port: int = 0
    user: str = field(default_factory=getpass.getuser)
    extra_config: str = ""
    # the network namespace it listens in (``ip netns exec``); None: this one
    netns: str | None = None
    # the host name its sessions see (a UTS namespace of its own); None: ours
    hostname: str | None = None
    # set in every session (sshd takes one SetEnv)
    session_env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _orphan_sessions: set[int] = field(default_factory=set)

    @property
    def host_key_path(self) -> Path:
        return self.workdir / "ssh_host_ed25519_key"

    @property
    def host_key_pub_path(self) -> Path:
        return self.workdir / "ssh_host_ed25519_key.pub"

    @property
    def client_key_path(self) -> Path:
        """Private key (no passphrase) whose public half is authorised for ``user``."""
        return self.workdir / "client_key"

    @property
    def authorized_keys_path(self) -> Path:
        return self.workdir / "authorized_keys"

    @property
    def log_path(self) -> Path:
        return self.workdir / "sshd.log"

    @property
    def host_key_fingerprint(self) -> str:
        """SHA256 fingerprint of the current host key, computed by ssh-keygen."""
        return keygen_fingerprint(self.host_key_pub_path)

    @property
    def host_public_key(self) -> str:
        """The host's public key line (``ssh-ed25519 AAAA... comment``)."""
        return self.host_key_pub_path.read_text().strip()

    @property
    def target(self) -> str:
        """``user@127.0.0.1:port``, the form the app's target parser reads."""
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None, "sshd is not running"
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def trusted_known_hosts(self, path: Path) -> Path:
        """A known-hosts file at ``path`` holding this server's host key (written from its .pub
        file)."""
        key_type, key_b64 = self.host_public_key.split()[:2]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{known_hosts_name(self.host, self.port)} {key_type} {key_b64}\n")
        return path

    def connected_transport(self, folder: Path) -> SshTransport:
        """An SshTransport to this server with its client key only, connected (the host key trusted
        from ``folder``/known_hosts); the caller closes it."""
        transport = SshTransport(
            SshTarget(
                host=self.host,
                port=self.port,
                user=self.user,
                identity_files=[str(self.client_key_path)],
                identities_only=True,
            ),
            known_hosts_file=self.trusted_known_hosts(folder / "known_hosts"),
            user_known_hosts_file=folder / "absent",
            allow_agent=False,
            look_for_keys=False,
            connect_timeout=5,
        )
        transport.connect()
        return transport

    def authorize(self, public_key: Path) -> None:
        """Allow another client key to log in."""
        with self.authorized_keys_path.open("a") as handle:
            handle.write(public_key.read_text().strip() + "\n")

    def start(self) -> SshdServer:
        """Generate keys (first time), write the config, start sshd and wait until the port
        accepts."""
        missing = find_missing_tools()
        if missing:
            raise SshdUnavailable(missing)
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.host_key_path.exists():
            keygen(self.host_key_path, comment="tuneplan-test-host")
        if not self.client_key_path.exists():
            keygen(self.client_key_path)
            self.authorized_keys_path.write_text(
                self.client_key_path.with_name("client_key.pub").read_text()
            )
        _ensure_privsep_dir()
        last_error = ""
        for _ in range(3):  # a free port can be taken between probing and binding
            if not self.port:
                self.port = free_port()
            self._write_config()
            if self._launch():
                return self
            last_error = self.log()
            self.port = 0
        raise SshdUnavailable(f"sshd did not start: {last_error.strip()[-2000:]}")

    def _write_config(self) -> None:
        # WORKAROUND: a login bash sources ~/.bashrc, and a bashrc that runs `pyenv init` rehashes
        # under a lock file; a test that kills a session mid-rehash leaves the lock behind and every
        # later command then waits PYENV_REHASH_TIMEOUT (60 s). One second keeps such hosts usable;
        # elsewhere the variable is ignored.
        (self.workdir / "sshd_config").write_text(
            f"""SetEnv PYENV_REHASH_TIMEOUT=1{"".join(f" {k}={v}" for k, v in self.session_env.items())}
Port {self.port}
ListenAddress {self.host}
HostKey {self.host_key_path}
PidFile {self.workdir / "sshd.pid"}
AuthorizedKeysFile {self.authorized_keys_path}
StrictModes no
UsePAM no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding yes
Subsystem sftp internal-sftp
MaxStartups 50
MaxSessions 50
LogLevel VERBOSE
{self.extra_config}
"""  # noqa: E501
        )

    def _launch(self) -> bool:
        log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            try:
                with socket.create_connection((self.host, self.port), timeout=1) as sock:
                    sock.settimeout(2)
                    if sock.recv(64).startswith(b"SSH-2.0-"):
                        return True
            except OSError:
                time.sleep(0.05)
        self.stop()
        return False

    def _command(self) -> list[str]:
        """sshd's command line; ``ip netns exec`` and ``unshare`` exec in place, so the PID is
        sshd's own."""
        command = [SSHD, "-D", "-e", "-f", str(self.workdir / "sshd_config")]
        if self.hostname is not None:
            command = [
                "unshare",
                "--uts",
                "sh",
                "-c",
                'hostname "$0" && exec "$@"',
                self.hostname,
                *command,
            ]
        if self.netns is not None:
            command = ["ip", "netns", "exec", self.netns, *command]
        return command

    def session_pids(self) -> list[int]:
        """Every process below the listening sshd: the per-connection sshd processes and what they
        started."""
        assert self.process is not None, "sshd is not running"
        return _descendants(self.pid)

    def kill_connections(self, *, kill_commands: bool = False) -> int:
        """Drop every established SSH connection, as a network failure would; returns how many died.

        Kills the per-connection sshd processes (``sshd: user [priv]`` and its children). The
        commands those sessions started keep running unless ``kill_commands``; they are killed at
        `stop()` in any case.
        """
        assert self.process is not None, "sshd is not running"
        victims = _descendants(self.pid)
        sshd_procs = [p for p in victims if _comm(p).startswith("sshd")]
        others = [p for p in victims if p not in sshd_procs]
        sessions = _command_sessions(others)
        _kill(sshd_procs)
        if kill_commands:
            _kill(_session_members(sessions))
        else:
            self._orphan_sessions |= sessions
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_state(p) != "Z" for p in sshd_procs):
            time.sleep(0.02)
        return len(sshd_procs)

    def freeze_connections(self) -> int:
        """Stop (SIGSTOP) every per-connection sshd process, as a frozen peer would: the TCP
        connections stay open and nothing answers on them; returns how many were stopped. `stop()`
        kills them (SIGKILL ends a stopped process), and the commands they started, which keep
        running, with them."""
        assert self.process is not None, "sshd is not running"
        victims = _descendants(self.pid)
        sshd_procs = [p for p in victims if _comm(p).startswith("sshd")]
        self._orphan_sessions |= _command_sessions([p for p in victims if p not in sshd_procs])
        _kill(sshd_procs, signal.SIGSTOP)
        return len(sshd_procs)

    def stop(self) -> None:
        """Kill sshd, its connections and anything they started; safe to call twice."""
        if self.process is not None:
            # The listener is frozen first: a client that reconnects the moment its session dies
            # must find no sshd to accept it, as when a host goes away (SIGTERM alone left it a
            # moment to accept one more).
            _kill([self.pid], signal.SIGSTOP)
            tree = _descendants(self.pid)
            self._orphan_sessions |= _command_sessions(
                [p for p in tree if not _comm(p).startswith("sshd")]
            )
            _kill([self.pid], signal.SIGKILL)
            _kill(tree)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
            self.process = None
        _kill(_session_members(self._orphan_sessions))
        self._orphan_sessions.clear()

    def restart_with_new_host_key(self) -> str:
        """Stop, put a fresh host key in place, start again on the same port; return the new
        fingerprint."""
        self.stop()
        keygen(self.host_key_path, comment="tuneplan-test-host-2")
        port = self.port
        self._write_config()
        if not self._launch():
            raise SshdUnavailable(f"sshd did not restart on port {port}: {self.log()[-2000:]}")
        return self.host_key_fingerprint


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "Z"
    return stat[stat.rfind(")") + 2 :].split()[0]


def _stat_field(pid: int, index: int) -> int | None:
    """A numeric field of /proc/PID/stat counted after the command name (1 ppid, 2 pgrp, 3
    session)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[index])


def _command_sessions(pids: list[int]) -> set[int]:
    """Sessions of the commands sshd started, never the test runner's own session."""
    own = os.getsid(0)
    return {
        sid for sid in (_stat_field(p, 3) for p in pids) if sid is not None and sid not in (own, 0)
    }


def _session_members(sessions: set[int]) -> list[int]:
    """Every live process in the given sessions (commands started by sshd run in their own
    session)."""
    if not sessions:
        return []
    return [
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and _stat_field(int(e.name), 3) in sessions
    ]


def _ensure_privsep_dir() -> None:
    """sshd refuses to start without its privilege-separation directory (/run/sshd on Debian)."""
    privsep = Path("/run/sshd")
    if privsep.is_dir():
        return
    try:
        privsep.mkdir(mode=0o755, parents=True)
    except OSError as exc:
        raise SshdUnavailable(
            f"sshd needs {privsep} and it could not be created: {exc.strerror}"
        ) from exc
