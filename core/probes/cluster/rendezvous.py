"""The cluster step that finds where the nodes meet: the first node's address, each node's route
toward it, and a free port there every other node reaches (TCP) before torchrun holds its c10d
rendezvous on it.

Every torchrun launch across the nodes needs this first, and a rendezvous lost with its node is held
again on the next one (`require_rendezvous`); kept apart from the launches so the address and port
rules read in one place.
"""

from __future__ import annotations

import threading
import time

from core.probes.checks.base import ProbeFailed, ProbeSkipped, q
from core.probes.cluster.evidence import Rendezvous
from core.probes.cluster.session import (
    NodeSession,
    failure_text,
    launch_everywhere,
    on_every_node,
    own_address,
    route_to,
    upload_everywhere,
)
from core.probes.cluster.step_context import StepContext


def find_addresses(step: StepContext) -> None:
    """The first node's address (where the rendezvous runs) and each node's route toward it (all at
    once)."""
    timeout = step.options.timeouts.command_s
    first = step.first
    first.address = first.address or own_address(first, timeout)
    address = first.address

    def route(session: NodeSession) -> None:
        session.interface, session.local_addr = route_to(
            session, address, timeout, is_first=session is first
        )
        report = step.cluster.node(session.node)
        if report is not None:
            report.address = session.local_addr or session.address
            report.interface = session.interface

    on_every_node(step.sessions, route)


def listening_port(line: str) -> int | None:
    """The port in rdzv_check.py's "TUNEPLAN_LISTENING PORT" line, else None."""
    fields = line.split()
    if len(fields) == 2 and fields[0] == "TUNEPLAN_LISTENING" and fields[1].isdigit():
        return int(fields[1])
    return None


def rendezvous(step: StepContext) -> Rendezvous:
    """Listen on a free port of the first node (the listener picks it and says which); every other
    node connects to it (TCP) before torchrun, which then holds its rendezvous on that port."""
    _require_python(step)
    find_addresses(step)
    first = step.first
    assert first.address is not None
    timeout = step.options.timeouts.command_s
    scripts = upload_everywhere(step.sessions, "rdzv_check.py")
    others = step.sessions[1:]
    listening = threading.Event()
    port: list[int] = []

    def on_line(session: NodeSession, line: str) -> None:
        found = listening_port(line) if session is first else None
        if found is not None and not listening.is_set():
            port.append(found)
            listening.set()

    def command(session: NodeSession) -> str:
        python = q(session.ctx.python())
        if session is first:
            return f"{python} -u {q(scripts[session.node][0])} listen 0 {len(others)} {timeout:.0f}"
        while not listening.wait(0.1):  # connect only once the listener is up
            if step.halt.is_set() or time.monotonic() > deadline:
                return "echo 'the first node never listened' >&2; exit 1"
        return f"{python} -u {q(scripts[session.node][0])} connect {q(first.address)} {port[0]} 10"

    deadline = time.monotonic() + timeout
    parts = launch_everywhere(
        step.sessions,
        command,
        timeout=timeout,
        halt=step.halt,
        on_line=on_line,
        stop_others_on_failure=False,
    )
    if not port:
        raise ProbeFailed(
            f"no rendezvous port could be opened on {first.node}: {failure_text(parts[0])}"
        )
    result = Rendezvous(host=first.address, port=port[0], node=first.node)
    step.cluster.rendezvous = result
    for session, part in zip(step.sessions[1:], parts[1:], strict=True):
        reached = part.result is not None and part.result.ok and "TUNEPLAN_CONNECTED" in part.lines
        result.reached_from[session.node] = reached
        if not reached:
            result.errors[session.node] = failure_text(part)
    if not result.ok:
        who = ", ".join(f"{n} ({why})" for n, why in result.errors.items())
        raise ProbeFailed(
            f"the rendezvous port {first.address}:{result.port} on {first.node} cannot be reached "
            f"from {who}"
        )
    step.log(
        "info", f"rendezvous {first.address}:{result.port} on {first.node} reached from every node"
    )
    return result


def require_rendezvous(step: StepContext) -> None:
    """A rendezvous every node reached, on the first node still in the run: when the node that held
    it was lost in an earlier step, the next node that answers holds a new one (instead of every
    torchrun waiting out its join timeout on a node that is gone)."""
    held = step.cluster.rendezvous
    if held is None or not held.ok:
        raise ProbeSkipped(
            "the rendezvous port cannot be reached, so torchrun cannot start across nodes"
        )
    if held.node is not None and held.node != step.first.node:
        step.log(
            "warning",
            f"{held.node}, which held the rendezvous, is gone; {step.first.node} holds a new one",
        )
        rendezvous(step)


def _require_python(step: StepContext) -> None:
    for session in step.sessions:
        if session.facts.python is None:
            raise ProbeSkipped(f"no Python interpreter was found on {session.node}")


__all__ = ["find_addresses", "listening_port", "rendezvous", "require_rendezvous"]
