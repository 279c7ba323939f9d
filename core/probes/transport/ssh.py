"""SSH transport (paramiko): run probes on a remote box with verified host keys and killable process
groups.

Why the remote wrapper: closing an SSH channel does not stop a command started without a terminal,
so each command is started in its own process group, whose id is printed on stdout before the
command runs; cancel and timeout then kill that group (TERM, then KILL) over a second channel. When
a timeout is given, coreutils ``timeout`` also bounds the command on the remote side, so a dropped
connection cannot leave it running forever, and the groups a lost connection kept us from killing
are killed at the next connect. The wrapper and kill scripts are in
`core.probes.transport.remote_process_group`; a ProxyCommand runs through
`core.probes.transport.proxy`. A peer that stops answering is found by
`core.probes.transport.keepalive` (its connection is then closed and reads as lost), and the
algorithms OpenSSH's client has dropped are refused (`core.probes.transport.algorithms`). Logging in
is `core.probes.transport.ssh_auth`, the sentence a failed connect ends in
`core.probes.transport.ssh_connect_errors`, and a file upload `core.probes.transport.ssh_upload`:
this module holds the connection (direct, through a proxy or jump hosts) and the commands run over
it.

Threading: one `SshTransport` (one paramiko client) belongs to the run's worker, which connects,
reconnects and closes it. paramiko opens a channel per command and its transport multiplexes
channels across threads, so the metrics sampler's stream runs on a channel of its own beside the
worker's commands (see `core.probes.transport.base`); the ``cancel`` events may be set from
anywhere. Passwords and passphrases are asked through the callbacks when needed and never stored.
"""

from __future__ import annotations

import contextlib
import getpass
import math
import secrets
import select
import socket
import threading
import time
from pathlib import Path

import paramiko

from core.probes.transport.algorithms import DISABLED_ALGORITHMS, OfferRecorder
from core.probes.transport.base import (
    ChunkedTransport,
    Disconnected,
    ExecGenerator,
    ExecOutcome,
    HostKeyUnknown,
    ShellStartTimeout,
    TransportError,
    Unreachable,
    make_remote_workdir,
    remove_remote_workdir,
)
from core.probes.transport.hostkeys import (
    AcceptHostKey,
    StrictHostKeyPolicy,
    default_app_known_hosts,
    default_user_known_hosts,
    known_hosts_name,
    load_known_hosts,
)
from core.probes.transport.keepalive import Keepalive
from core.probes.transport.known_hosts import KnownHosts
from core.probes.transport.proxy import ProxyProcess
from core.probes.transport.quiet import quiet_paramiko
from core.probes.transport.remote_process_group import (
    after_stderr_marker,
    kill_group_command,
    take_marker,
    wrap_command,
)
from core.probes.transport.ssh_auth import CallbackAuth, PromptCallback, authenticate
from core.probes.transport.ssh_connect_errors import connect_error
from core.probes.transport.ssh_upload import sftp_put
from core.probes.transport.target import SshTarget, hostport, parse_target

_POLL_S = 0.05
_EOF_GRACE_S = 0.5
_KILL_WAIT_S = 10.0
_MAX_JUMPS = 8
KEEPALIVE_S = 15.0  # how often the server is asked for an answer (as OpenSSH's ServerAliveInterval)
# an answer not back within this: the peer is silent and its connection lost
KEEPALIVE_REPLY_S = 30.0
# a shell slower than this to start is said to be waited for, then every ...
_SHELL_WAIT_FIRST_S = 2.0
_SHELL_WAIT_EVERY_S = 5.0
# a command given this long that timed out before its shell started: the startup files
_SHELL_SLOW_S = 3.0
_STARTUP_FILES = (
    "~/.bashrc and ~/.bash_profile or ~/.profile for bash, ~/.zshenv for zsh, ~/.cshrc for csh, "
    "~/.config/fish/config.fish for fish"
)

# its log and its threads' tracebacks stay off the terminal (core.probes.transport.quiet)
quiet_paramiko()


class SshTransport(ChunkedTransport):
    """Run commands on ``target`` over SSH. Call `connect()` (or use ``with``) before running
    anything.

    ``accept_new_host_key``: False refuses unknown hosts (`HostKeyUnknown` carries the fingerprint);
    True accepts a new key; a fingerprint string accepts only a key with that fingerprint, several
    (one per host of a cluster run) a key with one of them. A changed key is always refused.
    Accepted keys are written to ``known_hosts_file`` (the app's file), never to ``~/.ssh``.
    """

    def __init__(
        self,
        target: SshTarget,
        *,
        known_hosts_file: Path | None = None,
        user_known_hosts_file: Path | None = None,
        accept_new_host_key: AcceptHostKey = False,
        password_cb: PromptCallback | None = None,
        passphrase_cb: PromptCallback | None = None,
        connect_timeout: float = 10,
        keepalive_s: float | None = None,
        keepalive_reply_s: float | None = None,
        allow_agent: bool = True,
        look_for_keys: bool = True,
        ssh_config: Path | None = None,
        _jump_depth: int = 0,
    ) -> None:
        self.target = target
        self.user = target.user or getpass.getuser()
        self.description = f"{self.user}@{hostport(target.host, target.port)}"
        self.known_hosts_file = known_hosts_file or default_app_known_hosts()
        self.user_known_hosts_file = user_known_hosts_file or default_user_known_hosts()
        self.accept_new_host_key = accept_new_host_key
        self.connect_timeout = connect_timeout
        self.keepalive_s = KEEPALIVE_S if keepalive_s is None else keepalive_s
        self.keepalive_reply_s = (
            KEEPALIVE_REPLY_S if keepalive_reply_s is None else keepalive_reply_s
        )
        self.allow_agent = allow_agent and not target.identities_only
        self.look_for_keys = look_for_keys
        self.ssh_config = ssh_config
        self._password_cb = password_cb
        self._passphrase_cb = passphrase_cb
        self._jump_depth = _jump_depth
        self._client: paramiko.SSHClient | None = None
        self._known = KnownHosts()
        # known_hosts lines skipped at the last connect, one sentence each
        self.notes: list[str] = []
        self._jump: SshTransport | None = None
        self._proxy: ProxyProcess | None = None
        self._keepalive: Keepalive | None = None
        self._unkilled: set[int] = set()  # process groups a lost connection kept us from killing

    # -- connection
    # -------------------------------------------------------------------------------------

    def connect(self) -> None:
        """Open the connection: verify the host key, then authenticate. Raises a `TransportError`
        subclass."""
        if self.is_alive():
            return
        self.close()
        client = paramiko.SSHClient()
        # The user's file first, as OpenSSH reads it; only the keys for this host reach paramiko (it
        # knows neither wildcards nor @revoked), and the lines skipped become notes the caller
        # shows.
        self._known = load_known_hosts(self.user_known_hosts_file, self.known_hosts_file)
        self.notes = list(self._known.notes)
        name = known_hosts_name(self.target.host, self.target.port)
        for key_type, key in self._known.keys_for(name).items():
            client.get_host_keys().add(name, key_type, key)
        policy = StrictHostKeyPolicy(
            self.known_hosts_file, self.accept_new_host_key, known=self._known
        )
        client.set_missing_host_key_policy(policy)
        sock: socket.socket | paramiko.Channel = self._open_link()
        try:
            client.connect(
                self.target.host,
                port=self.target.port,
                username=self.user,
                sock=sock,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout,
                auth_strategy=CallbackAuth(self._authenticate),
                disabled_algorithms=DISABLED_ALGORITHMS,
                transport_factory=OfferRecorder,
            )
        except BaseException as exc:
            error = self._map_connect_error(exc, client.get_transport())
            client.close()
            with contextlib.suppress(Exception):
                sock.close()
            self._close_jump()
            raise error from exc
        transport = client.get_transport()
        assert transport is not None
        self._keepalive = Keepalive(
            transport,
            interval_s=self.keepalive_s,
            reply_s=self.keepalive_reply_s,
            description=self.description,
        ).start()
        self._client = client
        self._kill_unkilled()

    def reconnect(self) -> None:
        """Drop whatever is left of the connection and connect again (asks for a password again if
        needed)."""
        self.close()
        self.connect()

    def is_alive(self) -> bool:
        transport = self._client.get_transport() if self._client is not None else None
        return bool(
            transport is not None and transport.is_active() and transport.is_authenticated()
        )

    def close(self) -> None:
        if self._keepalive is not None:
            self._keepalive.stop()
        if self._client is not None:
            self._client.close()
            self._client = None
        self._close_jump()

    def __enter__(self) -> SshTransport:
        self.connect()
        return self

    def _close_jump(self) -> None:
        if self._jump is not None:
            self._jump.close()
            self._jump = None
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None

    def _open_link(self) -> socket.socket | paramiko.Channel:
        """The byte pipe SSH runs over: a TCP socket, a ProxyCommand, or a channel through a jump
        host."""
        target = self.target
        if target.proxy_jump:
            return self._open_jump_channel(target.proxy_jump)
        if target.proxy_command:
            self._proxy = ProxyProcess(target.proxy_command)
            return self._proxy.sock
        try:
            return socket.create_connection(
                (target.host, target.port), timeout=self.connect_timeout
            )
        except BaseException as exc:
            raise self._map_connect_error(exc) from exc

    def _open_jump_channel(self, proxy_jump: str) -> paramiko.Channel:
        """Connect to the last jump host (through the earlier ones) and tunnel a channel to the
        target."""
        hops = [hop.strip() for hop in proxy_jump.split(",") if hop.strip()]
        if self._jump_depth >= _MAX_JUMPS:
            raise Unreachable(
                f"more than {_MAX_JUMPS} jump hosts on the way to {self.description}; "
                f"check ProxyJump for loops"
            )
        try:
            hop = parse_target(hops[-1], ssh_config=self.ssh_config)
        except ValueError as exc:
            raise Unreachable(f"jump host '{hops[-1]}' for {self.description}: {exc}") from exc
        if len(hops) > 1:
            hop = hop.model_copy(update={"proxy_jump": ",".join(hops[:-1]), "proxy_command": None})
        jump = SshTransport(
            hop,
            known_hosts_file=self.known_hosts_file,
            user_known_hosts_file=self.user_known_hosts_file,
            accept_new_host_key=self.accept_new_host_key,
            password_cb=self._password_cb,
            passphrase_cb=self._passphrase_cb,
            connect_timeout=self.connect_timeout,
            keepalive_s=self.keepalive_s,
            keepalive_reply_s=self.keepalive_reply_s,
            allow_agent=self.allow_agent,
            look_for_keys=self.look_for_keys,
            ssh_config=self.ssh_config,
            _jump_depth=self._jump_depth + 1,
        )
        jump.connect()
        self._jump = jump
        assert jump._client is not None
        jump_transport = jump._client.get_transport()
        assert jump_transport is not None
        try:
            return jump_transport.open_channel(
                "direct-tcpip",
                (self.target.host, self.target.port),
                ("127.0.0.1", 0),
                timeout=self.connect_timeout,
            )
        except (paramiko.ChannelException, paramiko.SSHException, OSError, EOFError) as exc:
            self._close_jump()
            raise Unreachable(
                f"jump host {jump.description} could not open a tunnel to "
                f"{hostport(self.target.host, self.target.port)}: {exc}"
            ) from exc

    def _map_connect_error(
        self, exc: BaseException, transport: paramiko.Transport | None = None
    ) -> BaseException:
        return connect_error(
            exc,
            self.target,
            self.user,
            timeout=self.connect_timeout,
            known=self._known,
            proxy=self._proxy,
            transport=transport,
        )

    def _authenticate(self, transport: paramiko.Transport) -> None:
        authenticate(
            transport,
            self.target,
            self.user,
            known=self._known,
            allow_agent=self.allow_agent,
            look_for_keys=self.look_for_keys,
            password_cb=self._password_cb,
            passphrase_cb=self._passphrase_cb,
        )

    # -- commands
    # ---------------------------------------------------------------------------------------

    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport() if self._client is not None else None
        if transport is None:
            raise Disconnected(f"not connected to {self.description}; connect first")
        if not transport.is_active():
            raise self._lost()
        return transport

    def _lost(self, when: str = "", detail: object = None) -> Disconnected:
        """The lost-connection error; the reason is the silence when `Keepalive` found the peer
        silent."""
        silence = self._keepalive.silence if self._keepalive is not None else None
        reason = silence or detail
        return Disconnected(
            f"the connection to {self.description} was lost{when}"
            + (f": {reason}" if reason else "")
        )

    def _open_channel(self) -> paramiko.Channel:
        transport = self._transport()
        try:
            return transport.open_session(timeout=self.connect_timeout)
        except paramiko.ChannelException as exc:
            raise TransportError(f"{self.description} refused to open a session: {exc}") from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise self._lost(detail=exc) from exc

    def _execute(
        self,
        command: str,
        *,
        timeout: float | None,
        cancel: threading.Event | None,
        input: bytes | None,
    ) -> ExecGenerator:
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        marker = f"__tuneplan_pg_{secrets.token_hex(8)}__"
        remote_limit = None if timeout is None else math.ceil(timeout) + 10
        transport = self._transport()
        chan = self._open_channel()
        pgid: int | None = None
        head = b""  # stdout until the marker line (login scripts may print before it)
        stderr = bytearray()
        pending_input = input or b""
        timed_out = cancelled = finished = False
        exit_seen: float | None = None
        next_wait_report = started + _SHELL_WAIT_FIRST_S
        try:
            chan.exec_command(wrap_command(command, marker, remote_limit))
            if not pending_input:
                chan.shutdown_write()
            while True:
                while chan.recv_stderr_ready():
                    stderr += chan.recv_stderr(65536)
                while chan.recv_ready():
                    data = chan.recv(65536)
                    if pgid is None:
                        head += data
                        pgid, data = take_marker(head, marker)
                        if pgid is None:
                            continue
                    if data:
                        yield data
                if pending_input and chan.send_ready():
                    pending_input = pending_input[chan.send(pending_input[:32768]) :]
                    if not pending_input:
                        chan.shutdown_write()
                now = time.monotonic()
                if pgid is None and now >= next_wait_report and self.shell_wait is not None:
                    # the startup files still run: say so, do not sit silent
                    self.shell_wait(now - started)
                    next_wait_report = now + _SHELL_WAIT_EVERY_S
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                if deadline is not None and now >= deadline:
                    timed_out = True
                    break
                if chan.exit_status_ready():
                    exit_seen = exit_seen or now
                    drained = not chan.recv_ready() and not chan.recv_stderr_ready()
                    if drained and (
                        chan.eof_received or chan.closed or now - exit_seen > _EOF_GRACE_S
                    ):
                        break
                elif not transport.is_active():
                    break
                wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - now))
                select.select([chan], [], [], wait)
            finished = True
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if transport.is_active():
                raise TransportError(
                    f"running a command on {self.description} failed: {exc}"
                ) from exc
            raise self._lost(" while a command ran") from exc
        finally:
            if not finished or timed_out or cancelled or not transport.is_active():
                self._kill_group(chan, pgid, marker, head)
            chan.close()
        if chan.exit_status < 0 and not transport.is_active():
            raise self._lost(" while a command ran")
        if timed_out and pgid is None and transport.is_active() and (timeout or 0) >= _SHELL_SLOW_S:
            raise ShellStartTimeout(
                f"the shell on {self.description} did not start within {timeout:.0f} s: its "
                f"startup files ({_STARTUP_FILES}, and what they source) are still running; look "
                "there for a command that "
                "waits (a lock, a network mount, a conda or pyenv init)"
            )
        if pgid is None and finished and not (timed_out or cancelled) and chan.exit_status >= 0:
            raise self._never_started(chan.exit_status, bytes(stderr) + head)
        if pgid is None and head:
            yield head  # no marker: the wrapper itself failed (e.g. no bash); show what came back
        exit_code = None if (timed_out or cancelled or chan.exit_status < 0) else chan.exit_status
        return ExecOutcome(
            exit_code, after_stderr_marker(bytes(stderr), marker), timed_out, cancelled
        )

    def _never_started(self, status: int, said: bytes) -> TransportError:
        """The command ended before our wrapper printed its first line: the login shell never got to
        run it. Its startup files ended it (a ``~/.bashrc`` that exits unless the shell is
        interactive), or bash is missing; a bare 'exit status 3' would point at the command
        instead."""
        lines = [
            line.strip()
            for line in said.decode("utf-8", errors="replace").split("\n")
            if line.strip()
        ]
        last = f" (it said: {lines[-1][:200]})" if lines else ""
        return TransportError(
            f"the login shell on {self.description} ended with exit status {status} before it ran "
            f"the command: its startup files ({_STARTUP_FILES}) end non-interactive shells (an "
            f"`exit` there, or `set -e` and a failing line), or bash is not installed{last}"
        )

    def _kill_group(
        self, chan: paramiko.Channel, pgid: int | None, marker: str, head: bytes
    ) -> None:
        """Kill the remote process group over a second channel (TERM, then KILL after 2 s)."""
        end = time.monotonic() + 2.0
        while pgid is None and not chan.closed and time.monotonic() < end:
            if chan.recv_ready():
                head += chan.recv(65536)
                pgid, _ = take_marker(head, marker)
            else:
                select.select([chan], [], [], _POLL_S)
        if pgid is None:
            return
        try:
            killer = self._open_channel()
        except TransportError:
            # connection gone: killed at the next connect; till then `timeout` bounds it
            self._unkilled.add(pgid)
            return
        try:
            killer.exec_command(kill_group_command(pgid))
            stop = time.monotonic() + _KILL_WAIT_S
            while not killer.exit_status_ready() and time.monotonic() < stop:
                select.select([killer], [], [], _POLL_S)
                while killer.recv_ready():
                    killer.recv(65536)
        except (paramiko.SSHException, OSError, EOFError):
            pass
        finally:
            killer.close()

    def _kill_unkilled(self) -> None:
        """Kill the process groups a lost connection left running (a frozen peer's commands run
        on)."""
        for pgid in sorted(self._unkilled):
            with contextlib.suppress(TransportError):
                self.run(kill_group_command(pgid), timeout=_KILL_WAIT_S + 5)
        self._unkilled.clear()

    # -- files
    # ------------------------------------------------------------------------------------------

    def put_file(self, local: Path, remote_path: str, mode: int = 0o755) -> None:
        sftp_put(
            self._transport, local, remote_path, mode, description=self.description, lost=self._lost
        )

    def make_workdir(self) -> str:
        return make_remote_workdir(self, self.description)

    def remove_workdir(self, path: str) -> None:
        remove_remote_workdir(self, self.description, path)


__all__ = ["HostKeyUnknown", "SshTransport"]
