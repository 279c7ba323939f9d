"""The cluster steps torch runs across the nodes: the torch.distributed check (every rank's
environment, one exact all_reduce) and the all_reduce benchmark (busbw per message size), in one
torchrun launch per node.

torch's own launcher does the work: ``torchrun --nnodes N --rdzv-backend c10d`` on every node, the
rendezvous on the first node's address (core.probes.cluster.rendezvous), each node advertising the
address its traffic to the first node leaves from (``--local-addr``: without it torchrun advertises
the host name, which on many clusters resolves to an address the other nodes cannot reach) and
naming that interface to gloo and NCCL (``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME``).
``NCCL_DEBUG=INFO`` is on so that the transport NCCL chose (``NET/IB`` or ``NET/Socket``) can be
read from its own lines.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from core.probes.checks.base import NAME_PYTHON, ProbeFailed, ProbeSkipped, q
from core.probes.checks.collectives import (
    CPU_MAX_BYTES,
    CPU_MIN_BYTES,
    GPU_MAX_BYTES,
    GPU_MIN_BYTES,
    live_row,
)
from core.probes.checks.distributed import consistency_problems, parse_sanity, rank_row
from core.probes.cluster.evidence import InterNodeRun, NcclTransport
from core.probes.cluster.rendezvous import require_rendezvous
from core.probes.cluster.session import (
    Launched,
    NodeSession,
    failure_text,
    first_failure,
    launch_everywhere,
    upload_everywhere,
)
from core.probes.cluster.step_context import StepContext, SweepCut
from core.probes.parsers import parse_nccl_tests
from core.probes.parsers.nccl_debug import parse_nccl_debug
from core.probes.scorecard.common import sweep_cut


@dataclass(frozen=True)
class NodeLaunch:
    backend: str  # "nccl" or "gloo"
    nproc: int


def plan_node_launch(step: StepContext, what: str) -> NodeLaunch:
    """NCCL with one rank per GPU when every node's torch sees the same number of CUDA GPUs; else
    gloo with one rank per node; `ProbeSkipped` naming the node whose Python has no
    torch.distributed."""
    for session in step.sessions:
        python = session.facts.python
        if python is None or python.torch is None or not python.distributed:
            where = f" ({python.path})" if python is not None else ""
            raise ProbeSkipped(
                f"torch.distributed is not installed in {session.node}'s Python{where}, so the "
                f"{what} cannot run ({NAME_PYTHON})"
            )
    pythons = [s.facts.python for s in step.sessions if s.facts.python is not None]
    if all(p.cuda and p.cuda_devices > 0 and p.nccl for p in pythons):
        counts = {p.cuda_devices for p in pythons}
        if len(counts) == 1:
            return NodeLaunch("nccl", counts.pop())
        step.warn(
            f"the nodes' torch sees different GPU counts ({sorted(counts)}); ran the {what} with "
            "gloo"
        )
    if not all(p.gloo for p in pythons):
        raise ProbeSkipped(
            f"torch has no gloo backend on every node, so the {what} cannot run on CPUs"
        )
    return NodeLaunch("gloo", 1)


def torchrun_across(
    step: StepContext,
    session: NodeSession,
    launch: NodeLaunch,
    script: str,
    args: list[str],
    tag: str,
) -> str:
    """The torchrun command line one node runs (see the module docstring for each setting)."""
    rdzv = step.cluster.rendezvous
    assert rdzv is not None
    env = [f"TMPDIR={q(session.workdir)}", "OMP_NUM_THREADS=1", "NCCL_DEBUG=INFO"]
    if session.interface:
        env += [
            f"GLOO_SOCKET_IFNAME={q(session.interface)}",
            f"NCCL_SOCKET_IFNAME={q(session.interface)}",
        ]
    local = (
        f"--local-addr {q(session.local_addr)} "
        if session.local_addr and _has_local_addr(session)
        else ""
    )
    join = max(30, int(step.options.timeouts.distributed_s) - 30)
    return (
        f"cd {q(session.workdir)} && {' '.join(env)} {q(session.ctx.python())} -m "
        f"torch.distributed.run --nnodes {len(step.sessions)} --nproc-per-node {launch.nproc} "
        f"--rdzv-backend c10d --rdzv-endpoint {q(f'{rdzv.host}:{rdzv.port}')} --rdzv-id "
        f"{q(f'tuneplan-{step.run_id}-{tag}')} --rdzv-conf join_timeout={join} --max-restarts 0 "
        f"{local}{q(script)} " + " ".join(q(a) for a in args)
    )


def _has_local_addr(session: NodeSession) -> bool:
    """torchrun has --local-addr since torch 2.1."""
    version = (session.facts.python.torch if session.facts.python else None) or ""
    try:
        major, minor = (int(part) for part in version.split("+")[0].split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (2, 1)


def _launch_failed(
    step: StepContext, parts: list[Launched], what: str
) -> tuple[str | None, str | None]:
    failed = first_failure(parts)
    if failed is None:
        return None, None
    return failed.node, f"{what} failed on {failed.node}: {failure_text(failed)}"


# cluster_torch.py: the check's output above, the benchmark's below
PHASE_LINE = "__tuneplan_phase allreduce"


def distributed(step: StepContext) -> InterNodeRun:
    """dist_sanity.py across every node: each rank's RANK/LOCAL_RANK/WORLD_SIZE and one exact
    all_reduce; then, in the same torchrun launch (cluster_torch.py: torchrun starts once per node,
    not once per step), the all_reduce benchmark, whose output the allreduce step reads
    (``step.carried``)."""
    launch = plan_node_launch(step, "torch.distributed check across nodes")
    require_rendezvous(step)
    scripts = upload_everywhere(
        step.sessions, "dist_sanity.py", "allreduce_bench.py", "cluster_torch.py"
    )
    timeout_s = max(30, int(step.options.timeouts.distributed_s) - 30)
    args = [
        "--sanity",
        "--backend",
        launch.backend,
        "--timeout",
        str(timeout_s),
        "--bench",
        *_bench_args(step, launch),
    ]
    benching: set[str] = set()

    def on_line(session: NodeSession, line: str) -> None:
        if line.strip() == PHASE_LINE:
            benching.add(session.node)
        elif session.node in benching:
            _chart(step, line)

    parts = launch_everywhere(
        step.sessions,
        lambda s: torchrun_across(step, s, launch, scripts[s.node][-1], args, "sanity"),
        timeout=step.options.timeouts.distributed_s + step.options.timeouts.collectives_s,
        halt=step.halt,
        on_line=on_line,
    )
    sanity, bench = _split_phases(parts)
    if len(benching) == len(step.sessions):
        step.carried["bench"] = bench
    output = "\n".join(line for part in sanity for line in part.lines)
    ranks, summary = parse_sanity(output)
    world = len(step.sessions) * launch.nproc
    problems = consistency_problems(ranks, world)
    failed_node, error = (
        (None, None) if "bench" in step.carried else _launch_failed(step, parts, "torchrun")
    )
    if summary is None and error is None:
        error = "torchrun ended without the check's summary"
    elif problems and error is None:
        error = "; ".join(problems)
    ok = bool(summary and summary.get("all_reduce_ok")) and not problems and error is None
    run = InterNodeRun(
        backend="nccl" if launch.backend == "nccl" else "gloo",
        nnodes=len(step.sessions),
        nproc_per_node=launch.nproc,
        world_size=world,
        nodes=[s.node for s in step.sessions],
        ranks=[_rank_row(r) for r in ranks],
        all_reduce_ok=ok,
        error=error,
        failed_node=failed_node,
        transport=_transport(parts, launch),
    )
    step.cluster.distributed = run
    if not ok:
        raise ProbeFailed(
            f"the torch.distributed check across nodes failed: {error or 'a wrong all_reduce sum'}"
        )
    step.log(
        "info",
        f"{world} ranks on {len(step.sessions)} nodes: every rank's environment right, "
        "all_reduce exact",
    )
    return run


def _rank_row(record: dict[str, Any]) -> dict[str, str]:
    """The single-host check's rank line, plus the interface the rank was told to use (gloo's, else
    NCCL's)."""
    row = rank_row(record)
    return {**row, "ifname": row["GLOO_SOCKET_IFNAME"] or row["NCCL_SOCKET_IFNAME"]}


def _transport(parts: list[Launched], launch: NodeLaunch) -> NcclTransport | None:
    if launch.backend != "nccl":
        return None
    text = "\n".join(
        [
            *(line for part in parts for line in part.lines),
            *(part.result.stderr for part in parts if part.result is not None),
        ]
    )
    return parse_nccl_debug(text).value


def _bench_args(step: StepContext, launch: NodeLaunch) -> list[str]:
    """allreduce_bench.py's options: the sweep for GPUs (NCCL) or CPUs (gloo)."""
    on_gpu = launch.backend == "nccl"
    max_bytes = step.options.collective_max_bytes or (GPU_MAX_BYTES if on_gpu else CPU_MAX_BYTES)
    min_bytes = min(GPU_MIN_BYTES if on_gpu else CPU_MIN_BYTES, max_bytes)
    return [
        "--min-bytes",
        str(min_bytes),
        "--max-bytes",
        str(max_bytes),
        "--factor",
        "2" if on_gpu else "4",
        "--backend",
        launch.backend,
        "--timeout",
        str(int(step.options.timeouts.collectives_s)),
    ]


def _chart(step: StepContext, line: str) -> None:
    """A benchmark row, charted as it arrives."""
    row = live_row(line)
    if row is not None:
        step.point(float(row[0]), row[2])


def _split_phases(parts: list[Launched]) -> tuple[list[Launched], list[Launched]]:
    """Each node's output of cluster_torch.py cut at the phase line: (the check's parts, the
    benchmark's)."""
    sanity, bench = [], []
    for part in parts:
        cut = next(
            (i for i, line in enumerate(part.lines) if line.strip() == PHASE_LINE), len(part.lines)
        )
        sanity.append(replace(part, lines=part.lines[:cut]))
        bench.append(replace(part, lines=part.lines[cut + 1 :]))
    return sanity, bench


def allreduce(step: StepContext) -> InterNodeRun:
    """allreduce_bench.py across every node: busbw per message size, charted as rows arrive. Run in
    the distributed step's launch when that got to it (``step.carried``), else in a launch of its
    own."""
    launch = plan_node_launch(step, "all_reduce benchmark across nodes")
    require_rendezvous(step)
    on_gpu = launch.backend == "nccl"
    parts = step.carried.pop("bench", None)
    if parts is None:
        scripts = upload_everywhere(step.sessions, "allreduce_bench.py")
        parts = launch_everywhere(
            step.sessions,
            lambda s: torchrun_across(
                step, s, launch, scripts[s.node][0], _bench_args(step, launch), "bw"
            ),
            timeout=step.options.timeouts.collectives_s,
            halt=step.halt,
            on_line=lambda _s, line: _chart(step, line),
        )
    failed_node, error = _launch_failed(step, parts, "the all_reduce benchmark")
    collective = None
    for part in parts:
        parsed = parse_nccl_tests("\n".join(part.lines)).value
        if parsed is not None and parsed.rows:
            collective = parsed.model_copy(update={"tool": "torch_all_reduce_bench"})
            break
    transport = _transport(parts, launch)
    run = InterNodeRun(
        backend="nccl" if on_gpu else "gloo",
        nnodes=len(step.sessions),
        nproc_per_node=launch.nproc,
        world_size=len(step.sessions) * launch.nproc,
        nodes=[s.node for s in step.sessions],
        collective=collective,
        error=error,
        failed_node=failed_node,
        transport=transport,
    )
    step.cluster.allreduce = run
    if collective is None:
        raise ProbeFailed(
            f"the all_reduce benchmark across nodes gave no result rows: {error or 'no output'}"
        )
    cut = sweep_cut(collective)
    if cut:
        raise SweepCut(
            f"the all_reduce sweep across the nodes was cut after {cut}: "
            f"{error or 'it ended without its last sizes'}"
        )
    if error:
        step.warn(error)
    if not on_gpu:
        step.warn(
            "no GPU on the nodes: measured gloo between CPU processes over TCP, not the GPUs' "
            "network"
        )
    return run


__all__ = ["NodeLaunch", "allreduce", "distributed", "plan_node_launch", "torchrun_across"]
