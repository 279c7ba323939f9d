"""Notice an SSH peer that stops answering, and close its connection so the run treats it as lost.

Why: a peer that is frozen (its sshd stopped, a hypervisor paused, a NAT entry silently dropped)
keeps the TCP connection open, so nothing ever fails: paramiko's own keepalive sends requests
without asking for an answer, and a command's channel just waits. Like OpenSSH's
``ServerAliveInterval``/``ServerAliveCountMax``, this asks the server every ``interval_s`` for an
answer (the global request ``keepalive@openssh.com`` with want-reply; OpenSSH answers it, with a
failure, which counts as an answer) and, when none comes within ``reply_s``, closes the transport.
Every channel on it then ends, and the transport's users raise `Disconnected` naming the silence.

Threading: one daemon thread per connection asks; each request waits on a thread of its own, because
paramiko's ``global_request`` has no timeout of its own (it returns only on an answer or when the
transport closes).
"""

from __future__ import annotations

import threading

import paramiko

KEEPALIVE_REQUEST = "keepalive@openssh.com"


class Keepalive:
    """Ask ``transport``'s peer for an answer every ``interval_s``; close it when none comes within
    ``reply_s``.

    ``silence`` is None until the peer was found silent, then one sentence saying so (for the
    lost-connection message).
    """

    def __init__(
        self, transport: paramiko.Transport, *, interval_s: float, reply_s: float, description: str
    ) -> None:
        self.transport = transport
        self.interval_s = interval_s
        self.reply_s = reply_s
        self.description = description
        self.silence: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name=f"keepalive {description}", daemon=True
        )

    def start(self) -> Keepalive:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop asking (the connection is being closed on purpose); does not wait for a request in
        flight."""
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            if not self.transport.is_active():
                return
            answered = threading.Event()
            threading.Thread(
                target=self._ask,
                args=(answered,),
                name=f"keepalive request {self.description}",
                daemon=True,
            ).start()
            if answered.wait(self.reply_s) or self._stop.is_set() or not self.transport.is_active():
                continue
            self.silence = (
                f"{self.description} stopped answering: no reply to a keepalive within "
                f"{self.reply_s:g} s"
            )
            self.transport.close()
            return

    def _ask(self, answered: threading.Event) -> None:
        try:
            self.transport.global_request(KEEPALIVE_REQUEST, wait=True)
        except (paramiko.SSHException, OSError, EOFError):
            return  # the transport is going away; its users see that themselves
        if self.transport.is_active():
            answered.set()
