"""One node as the cluster steps use it: a work directory, a probe context, the address the others
reach it at, and launching one command on every node at once.

The cluster steps (core.probes.cluster.agreement, rendezvous, torchrun_steps, fabric_tools) run
after every node's own suite has ended, so each node's own work directory is gone by then; a session
makes a new one (written in the ledger first, like every directory this app makes) and removes it at
the end, also after a cancel. A command launched on all nodes together (torchrun across nodes,
ib_write_bw's server and client) gets a cancel event of its own: when one node's part fails, the
others are stopped at once instead of waiting for the rendezvous to time out.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from core.probes.checks.base import Cancelled, HostFacts, ProbeContext, q
from core.probes.transport.base import CommandResult, Transport, TransportError

N = TypeVar("N")  # a node: its session, or what a session is made from
T = TypeVar("T")

_DEV = re.compile(r"\bdev\s+(\S+)")
_SRC = re.compile(r"\bsrc\s+(\S+)")
_ADDR_OF = re.compile(r"^\d+:\s+(\S+?)(?:@\S+)?\s+inet6?\s")


@dataclass
class NodeSession:
    """A node during the cluster steps: its transport, facts (from its own run) and a work
    directory."""

    node: str
    transport: Transport
    facts: HostFacts
    ctx: ProbeContext
    address: str | None = None  # where the other nodes reach it
    interface: str | None = None  # the interface its traffic to the first node leaves on
    local_addr: str | None = None  # its own address on that interface (torchrun --local-addr)
    errors: list[str] = field(default_factory=list)

    @property
    def workdir(self) -> str:
        return self.ctx.workdir


def own_address(session: NodeSession, timeout: float) -> str:
    """The address the node was reached at: the server side of its SSH connection, 127.0.0.1 on this
    machine."""
    result = session.transport.run('printf "%s\\n" "${SSH_CONNECTION:-}"', timeout=timeout)
    fields = result.stdout.split()
    if result.ok and len(fields) == 4:
        return fields[2]
    return "127.0.0.1"


def route_to(
    session: NodeSession, address: str, timeout: float, *, is_first: bool
) -> tuple[str | None, str | None]:
    """(interface, own address) the node uses toward ``address``: on the first node, the interface
    that holds the address itself; on the others, ``ip route get`` (None, None when ``ip`` is
    missing)."""
    if not session.facts.has("ip"):
        return None, None
    if is_first:
        result = session.transport.run(f"ip -o addr show to {q(address)}", timeout=timeout)
        match = _ADDR_OF.match(result.stdout.strip())
        return (match.group(1) if match else None), address
    result = session.transport.run(f"ip -o route get {q(address)}", timeout=timeout)
    dev, src = _DEV.search(result.stdout), _SRC.search(result.stdout)
    return (dev.group(1) if dev else None), (src.group(1) if src else None)


@dataclass
class Launched:
    """One node's part of a command run on every node together."""

    node: str
    result: CommandResult | None = None
    lines: list[str] = field(default_factory=list)
    error: str | None = None  # the command could not be run at all (the connection failed)
    stopped: bool = False  # stopped because another node's part failed, or the run was cancelled


def launch_everywhere(
    sessions: list[NodeSession],
    command: Callable[[NodeSession], str],
    *,
    timeout: float,
    halt: threading.Event,
    on_line: Callable[[NodeSession, str], None] | None = None,
    stop_others_on_failure: bool = True,
) -> list[Launched]:
    """Run ``command(session)`` on every node at once, streaming stdout lines; wait for all. The
    first node whose part fails stops the rest (``stop_others_on_failure``); ``halt`` (the run's
    cancel) stops all. Raises `Cancelled` when the run was cancelled meanwhile."""
    stop = threading.Event()
    parts = [Launched(node=s.node) for s in sessions]

    def one(session: NodeSession, part: Launched) -> None:
        try:
            lines = session.transport.stream(command(session), timeout=timeout, cancel=stop)
            for line in lines:
                part.lines.append(line)
                if on_line is not None:
                    on_line(session, line)
            result = getattr(lines, "result", None)
            part.result = result if isinstance(result, CommandResult) else None
        except TransportError as exc:
            part.error = str(exc)
        failed = part.error is not None or part.result is None or not part.result.ok
        if stop.is_set() and failed:
            part.stopped = True
        elif failed and stop_others_on_failure:
            stop.set()

    threads = [
        threading.Thread(target=one, args=(s, p), name=f"tuneplan-cluster-{s.node}", daemon=True)
        for s, p in zip(sessions, parts, strict=True)
    ]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        if halt.is_set():
            stop.set()
        time.sleep(0.05)
    for session, part in zip(sessions, parts, strict=True):
        if part.result is not None:
            session.ctx.callbacks.raw(
                f"{session.ctx.name}@{session.node}",
                part.result.model_copy(update={"stdout": "\n".join(part.lines)}),
            )
    if halt.is_set():
        raise Cancelled("the cluster run was cancelled")
    return parts


def on_every_node(nodes: list[N], work: Callable[[N], T]) -> list[T]:
    """``work(node)`` on every node at once, the results in node order; the first node's exception
    (in node order) is raised once all have ended. What each node does on its own (a work directory,
    an upload, a route lookup) would otherwise cost one round trip per node after another: each
    extra node adds nothing here."""
    results: list[T | None] = [None] * len(nodes)
    errors: list[BaseException | None] = [None] * len(nodes)

    def one(index: int) -> None:
        try:
            results[index] = work(nodes[index])
        except BaseException as exc:  # by design: raised in the caller's thread below
            errors[index] = exc

    threads = [
        threading.Thread(target=one, args=(i,), name=f"tuneplan-cluster-node-{i}", daemon=True)
        for i in range(len(nodes))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results  # type: ignore[return-value]  # every slot is filled when no node raised


def upload_everywhere(sessions: list[NodeSession], *names: str) -> dict[str, list[str]]:
    """The probe scripts ``names`` uploaded to every node's work directory at once: node -> their
    paths there."""
    paths = on_every_node(sessions, lambda session: [session.ctx.upload(name) for name in names])
    return {session.node: found for session, found in zip(sessions, paths, strict=True)}


def not_answering(transports: dict[str, Transport], within: float) -> dict[str, str]:
    """Node -> why, for each node whose connection is closed or that does not run ``true`` within
    ``within`` seconds (a hung node); all are asked at once."""
    why: dict[str, str] = {}
    answered: set[str] = set()

    def ask(node: str, transport: Transport) -> None:
        if not transport.is_alive():
            why[node] = "the connection was lost"
            return
        try:
            if transport.run("true", timeout=within).ok:
                answered.add(node)
        except TransportError as exc:
            why[node] = str(exc)

    threads = [threading.Thread(target=ask, args=item, daemon=True) for item in transports.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(within + 5)
    return {
        node: why.get(node, f"it stopped answering (nothing within {within:.0f} s)")
        for node in transports
        if node not in answered
    }


def first_failure(parts: list[Launched]) -> Launched | None:
    """The node whose part failed on its own (not stopped because of another), first in node
    order."""
    for part in parts:
        if part.stopped:
            continue
        if part.error is not None or part.result is None or not part.result.ok:
            return part
    return None


def failure_text(part: Launched) -> str:
    """One sentence of why a node's part failed."""
    if part.error is not None:
        return part.error
    result = part.result
    if result is None:
        return "no result came back"
    if result.timed_out:
        return f"did not finish within {result.duration_s:.0f} s (it hung)"
    tail = [
        line.strip()
        for line in (result.stderr or "\n".join(part.lines)).splitlines()
        if line.strip()
    ]
    return tail[-1][:300] if tail else f"exit status {result.exit_code}"


__all__ = [
    "Launched",
    "NodeSession",
    "failure_text",
    "first_failure",
    "launch_everywhere",
    "not_answering",
    "on_every_node",
    "own_address",
    "route_to",
    "upload_everywhere",
]
