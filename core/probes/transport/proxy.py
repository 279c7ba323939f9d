"""A ProxyCommand as an ordinary socket, so SSH can run over whatever pipe ``~/.ssh/config`` names.

OpenSSH's ProxyCommand (``ssh -W %h:%p bastion``, ``cloudflared access ssh`` ...) is a program whose
stdin and stdout carry the SSH connection. `ProxyProcess` starts it on one end of a socket pair and
gives paramiko the other end, and can say why the proxy failed when it exits during the connection.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile

from core.probes.transport.base import Unreachable


class ProxyProcess:
    """A ProxyCommand on one end of a socket pair; paramiko gets the other end as an ordinary
    socket.

    WORKAROUND for https://github.com/paramiko/paramiko/issues/1277 (paramiko.ProxyCommand spins at
    100% CPU and never reports EOF when the command exits, so a failed proxy hangs until a timeout).
    A real socket gives EOF, timeouts and select() for free. Runs ``sh -c 'exec <command>'`` like
    OpenSSH.
    """

    def __init__(self, command: str) -> None:
        self.command = command
        self.sock, child = socket.socketpair()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the proxy; closed in close()
        try:
            self._proc = subprocess.Popen(
                ["/bin/sh", "-c", "exec " + command],
                stdin=child.fileno(),
                stdout=child.fileno(),
                stderr=self._stderr,
                start_new_session=True,
            )
        except OSError as exc:
            self.sock.close()
            self._stderr.close()
            raise Unreachable(
                f"proxy command '{command}' could not start: {exc.strerror or exc}"
            ) from exc
        finally:
            child.close()

    def exited(self, within: float = 0.0) -> bool:
        """True when the proxy has exited, waiting up to ``within`` seconds: its end of the socket
        closes while it exits, so the connection can fail on that EOF a moment before the process is
        gone."""
        try:
            self._proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            return False
        return True

    def failure(self) -> str:
        """What the proxy said before it exited (last line of its stderr) and its exit status."""
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", errors="replace").strip().splitlines()
        said = f": {lines[-1]}" if lines else ""
        return f"'{self.command}' exited with status {self._proc.poll()}{said}"

    def close(self) -> None:
        self.sock.close()
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(timeout=2)
        self._stderr.close()


__all__ = ["ProxyProcess"]
