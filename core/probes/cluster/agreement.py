"""The cluster step that compares the nodes: what each must agree on (GPU model and count, driver,
CUDA, NCCL, torch, kernel), read from its own run, and its clock against ours.

A cluster whose nodes differ is the first thing to know before any traffic between them is measured,
and it needs no launcher, no torch and no rendezvous: it stands apart from the steps that do.
"""

from __future__ import annotations

import time

from core.probes.checks.base import HostFacts
from core.probes.cluster.evidence import AgreementRow, ClusterEvidence, NodeFacts
from core.probes.cluster.session import NodeSession, on_every_node
from core.probes.cluster.step_context import StepContext
from core.probes.evidence import ProbeEvidence
from core.probes.parsers.ib import parse_ibv_devinfo

AGREED_FIELDS = ("gpu_model", "gpu_count", "driver", "cuda", "nccl", "torch", "kernel")


def node_facts(evidence: ProbeEvidence | None, host: HostFacts | None) -> NodeFacts:
    """What the nodes must agree on, from a node's own run evidence and the facts found before it
    ran."""
    facts = NodeFacts()
    inventory = evidence.inventory if evidence is not None else None
    if inventory is not None:
        facts.hostname = inventory.hostname
        facts.kernel = inventory.kernel
        if inventory.nvidia is not None:
            gpus = inventory.nvidia.gpus
            facts.gpu_count = len(gpus)
            facts.gpu_model = gpus[0].name if gpus else None
            facts.driver = inventory.nvidia.driver_version or (gpus[0].driver if gpus else None)
            facts.cuda = inventory.nvidia.cuda_version or (gpus[0].cuda_version if gpus else None)
        else:
            facts.gpu_count = 0
        if inventory.infiniband is not None:
            facts.hca_ports = list(inventory.infiniband.ports)
        facts.topology = inventory.topology
    python = host.python if host is not None else None
    if python is not None:
        facts.torch = python.torch
        facts.nccl = python.nccl_version
    return facts


def agreement_rows(cluster: ClusterEvidence) -> list[AgreementRow]:
    """Each agreed property across the nodes that reported anything."""
    rows = []
    for name in AGREED_FIELDS:
        values = {
            n.node: _text(getattr(n.facts, name)) for n in cluster.nodes if n.state != "unreachable"
        }
        if all(v is None for v in values.values()):
            continue
        rows.append(AgreementRow(field=name, values=values, agree=len(set(values.values())) <= 1))
    return rows


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def clock_offset(session: NodeSession, timeout: float) -> tuple[float | None, str]:
    """(node clock minus ours, what the node printed): its ``date`` against the moment that line
    arrives here.

    Not against the midpoint of the whole command: the remote shell's start-up (a login shell
    sourcing ~/.bashrc, seconds on a loaded host) comes before ``date`` runs and would count as half
    its length of clock skew; the line's way back is one network trip, milliseconds."""
    text, arrived = "", None
    for line in session.ctx.stream("date +%s.%N", timeout=timeout):
        if arrived is None and line.strip():
            text, arrived = line.strip(), time.time()
    try:
        return (round(float(text) - arrived, 3) if arrived is not None else None), text
    except ValueError:
        return None, text


def agreement(step: StepContext) -> None:
    """Clock offsets (`clock_offset`), HCA ports by ibv_devinfo where ibstat gave none (every node
    at once), then every agreed property compared."""
    timeout = step.options.timeouts.command_s

    def read(session: NodeSession) -> None:
        report = step.cluster.node(session.node)
        if report is None:
            return
        offset, text = clock_offset(session, timeout)
        report.facts.clock_offset_s = offset
        if offset is None:
            step.warn(f"{session.node}: its clock could not be read ({text[:40]!r})")
        if not report.facts.hca_ports and session.facts.has("ibv_devinfo"):
            parsed = parse_ibv_devinfo(session.ctx.run("ibv_devinfo -v", timeout=timeout).stdout)
            if parsed.value is not None:
                report.facts.hca_ports = list(parsed.value.ports)

    on_every_node(step.sessions, read)
    step.cluster.agreement = agreement_rows(step.cluster)
    differing = [row.field for row in step.cluster.agreement if not row.agree]
    if differing:
        step.log("warning", f"the nodes differ in {', '.join(differing)}")


__all__ = ["AGREED_FIELDS", "agreement", "agreement_rows", "clock_offset", "node_facts"]
