"""The cluster steps run by the vendors' own tools when the nodes have them: nccl-tests'
all_reduce_perf (under srun or mpirun), perftest's ib_write_bw between node pairs, and DCGM's
diagnostic on every node.

Each is optional (`ProbeSkipped` names what is missing) and needs neither torch nor the rendezvous,
only the tool and, for nccl-tests, a launcher: they stand apart from the torchrun steps
(core.probes.cluster.torchrun_steps).
"""

from __future__ import annotations

import threading

from core.probes.checks.base import ProbeFailed, ProbeSkipped, q
from core.probes.cluster.evidence import DcgmDiag, PairBandwidth
from core.probes.cluster.session import (
    Launched,
    NodeSession,
    failure_text,
    first_failure,
    launch_everywhere,
)
from core.probes.cluster.step_context import StepContext, SweepCut
from core.probes.parsers import parse_nccl_tests
from core.probes.parsers.dcgm import parse_dcgmi_diag
from core.probes.parsers.ib import parse_perftest
from core.probes.parsers.nccl_debug import parse_nccl_debug
from core.probes.scorecard.common import sweep_cut

IB_WRITE_BW_SECONDS = 5


def nccl_tests(step: StepContext) -> None:
    """nccl-tests' all_reduce_perf across the nodes, under srun (a Slurm allocation) or mpirun."""
    missing = [
        s.node for s in step.sessions if not s.facts.has("all_reduce_perf") or not s.facts.nvidia
    ]
    if missing:
        raise ProbeSkipped(
            f"nccl-tests (all_reduce_perf) or an NVIDIA GPU is missing on {', '.join(missing)}"
        )
    gpus = min(s.facts.gpu_count for s in step.sessions)
    first = step.first
    sweep = "-b 8 -e 1G -f 2 -g 1"
    if step.slurm_job and first.facts.has("srun"):
        launcher = "srun"
        command = (
            f"NCCL_DEBUG=INFO srun --jobid {q(step.slurm_job)} --overlap --nodes "
            f"{len(step.sessions)} --ntasks-per-node {gpus} all_reduce_perf {sweep}"
        )
    elif first.facts.has("mpirun"):
        launcher = "mpirun"
        hosts = ",".join(f"{s.local_addr or s.address or s.node}:{gpus}" for s in step.sessions)
        command = (
            f"mpirun -np {gpus * len(step.sessions)} -H {q(hosts)} --bind-to none -x "
            f"NCCL_DEBUG=INFO -x PATH -x LD_LIBRARY_PATH all_reduce_perf {sweep}"
        )
    else:
        raise ProbeSkipped(
            f"no launcher for nccl-tests across nodes on {first.node} (mpirun, or srun in an "
            "allocation)"
        )
    result = first.ctx.run(command, timeout=step.options.timeouts.collectives_s)
    parsed = parse_nccl_tests(result.stdout)
    if parsed.value is None or not parsed.value.rows:
        raise ProbeFailed(
            f"nccl-tests under {launcher} gave no result rows: "
            f"{failure_text(Launched(first.node, result))}"
        )
    step.cluster.nccl_tests = parsed.value
    step.cluster.nccl_tests_launcher = launcher
    if step.cluster.allreduce is not None and step.cluster.allreduce.transport is None:
        step.cluster.allreduce.transport = parse_nccl_debug(
            result.stdout + "\n" + result.stderr
        ).value
    cut = sweep_cut(step.cluster.nccl_tests)
    if cut:
        raise SweepCut(
            f"nccl-tests under {launcher} was cut after {cut}: "
            f"{failure_text(Launched(first.node, result))}"
        )


def ib_write_bw(step: StepContext) -> None:
    """perftest's ib_write_bw between node pairs (each node to the next), on each server's first
    Active port."""
    missing = [s.node for s in step.sessions if not s.facts.has("ib_write_bw")]
    if missing:
        raise ProbeSkipped(f"perftest (ib_write_bw) is missing on {', '.join(missing)}")
    pairs = [
        (step.sessions[i], step.sessions[(i + 1) % len(step.sessions)])
        for i in range(len(step.sessions) if len(step.sessions) > 2 else 1)
    ]
    for client, server in pairs:
        report = step.cluster.node(server.node)
        ports = [
            p
            for p in (report.facts.hca_ports if report else [])
            if (p.state or "").lower() == "active"
        ]
        if not ports:
            step.cluster.ib_write_bw.append(
                PairBandwidth(
                    client=client.node,
                    server=server.node,
                    error=f"{server.node} has no Active HCA port",
                )
            )
            continue
        device = ports[0].device
        base = f"ib_write_bw -d {q(device)} -F --report_gbits -D {IB_WRITE_BW_SECONDS}"
        target = server.local_addr or server.address or server.node
        started = threading.Event()

        def command(
            session: NodeSession,
            base: str = base,
            target: str = target,
            started: threading.Event = started,
            server: NodeSession = server,
        ) -> str:
            if session is server:
                started.set()
                return base
            started.wait(5)
            return f"sleep 1 && {base} {q(target)}"

        parts = launch_everywhere(
            [server, client], command, timeout=IB_WRITE_BW_SECONDS + 60, halt=step.halt
        )
        parsed = parse_perftest("\n".join(parts[1].lines))
        failed = first_failure(parts)
        step.cluster.ib_write_bw.append(
            PairBandwidth(
                client=client.node,
                server=server.node,
                device=device,
                result=parsed.value,
                error=None if failed is None else f"{failed.node}: {failure_text(failed)}",
            )
        )


def dcgm(step: StepContext, level: int) -> None:
    """DCGM's own diagnostic on every node that has it (level 1 quick, 2 with the full suite)."""
    have = [s for s in step.sessions if s.facts.has("dcgmi")]
    if not have:
        raise ProbeSkipped("DCGM (dcgmi) is not installed on the nodes")
    parts = launch_everywhere(
        have,
        lambda s: f"dcgmi diag -r {level}",
        timeout=step.options.timeouts.compute_s,
        halt=step.halt,
        stop_others_on_failure=False,
    )
    for session, part in zip(have, parts, strict=True):
        parsed = parse_dcgmi_diag("\n".join(part.lines))
        error = None if parsed.value else failure_text(part)
        step.cluster.dcgm.append(
            DcgmDiag(node=session.node, level=level, results=parsed.value or {}, error=error)
        )


__all__ = ["IB_WRITE_BW_SECONDS", "dcgm", "ib_write_bw", "nccl_tests"]
