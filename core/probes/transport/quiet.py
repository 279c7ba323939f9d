"""Keep paramiko's own output off the terminal: its log and the tracebacks of its reader threads.

Why: paramiko logs each failed handshake from its own thread with a full traceback, which Python's
last-resort handler prints on stderr, and its reader thread can die with an exception of its own
when a peer vanishes mid-packet, which ``threading.excepthook`` prints. Each failure already reaches
the user as one sentence (``core.probes.transport.ssh_connect_errors``, `Disconnected`). A handler
of our own keeps the last resort away, and the threads' tracebacks go to paramiko's log; `tuneplan
probe --verbose` configures logging and shows both.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import paramiko

_installed = False


def quiet_paramiko() -> None:
    """Install the NullHandler and the thread hook once (every other thread keeps the hook it
    had)."""
    global _installed
    if _installed:
        return
    _installed = True
    logging.getLogger("paramiko").addHandler(logging.NullHandler())
    previous: Callable[[threading.ExceptHookArgs], object] = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.thread, paramiko.Transport):
            if args.exc_value is not None:
                logging.getLogger("paramiko.transport").debug(
                    "transport thread ended: %s", args.exc_value, exc_info=args.exc_value
                )
            return
        previous(args)

    threading.excepthook = hook
