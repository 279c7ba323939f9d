"""The cluster steps: what needs more than one node, run after every node's own suite has ended.

Each step reads and fills the cluster evidence (core.probes.cluster.evidence) from the node sessions
(core.probes.cluster.session) and raises `ProbeSkipped` with the reason when the nodes lack what it needs
(torch, nccl-tests with a launcher, perftest, DCGM). Across nodes, torch's own launcher does the work:
``torchrun --nnodes N --rdzv-backend c10d`` on every node, the rendezvous on the first node's address, each
node advertising the address its traffic to the first node leaves from (``--local-addr``: without it torchrun
advertises the host name, which on many clusters resolves to an address the other nodes cannot reach) and
naming that interface to gloo and NCCL (``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME``). ``NCCL_DEBUG=INFO``
is on so that the transport NCCL chose (``NET/IB`` or ``NET/Socket``) can be read from its own lines.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from core.probes.checks.base import NAME_PYTHON, HostFacts, LogLevel, ProbeFailed, ProbeSkipped, q
from core.probes.checks.collectives import CPU_MAX_BYTES, CPU_MIN_BYTES, GPU_MAX_BYTES, GPU_MIN_BYTES, live_row
from core.probes.checks.distributed import consistency_problems, parse_sanity, rank_row
from core.probes.cluster.evidence import (
    AgreementRow,
    ClusterEvidence,
    DcgmDiag,
    InterNodeRun,
    NcclTransport,
    NodeFacts,
    PairBandwidth,
    Rendezvous,
)
from core.probes.cluster.session import (
    Launched,
    NodeSession,
    failure_text,
    first_failure,
    launch_everywhere,
    on_every_node,
    own_address,
    route_to,
    upload_everywhere,
)
from core.probes.evidence import ProbeEvidence
from core.probes.parsers import parse_nccl_tests
from core.probes.parsers.dcgm import parse_dcgmi_diag
from core.probes.parsers.ib import parse_ibv_devinfo, parse_perftest
from core.probes.parsers.nccl_debug import parse_nccl_debug
from core.probes.run.options import RunOptions
from core.probes.scorecard.common import sweep_cut

AGREED_FIELDS = ("gpu_model", "gpu_count", "driver", "cuda", "nccl", "torch", "kernel")
IB_WRITE_BW_SECONDS = 5


class SweepCut(ProbeFailed):
    """A sweep across the nodes stopped before its last message size (a node dropped, a rank died): what it
    measured is kept, shown as partial and never graded, and the step counts as not measured to its end."""


@dataclass
class StepContext:
    """What every step gets: the live sessions (first = where the rendezvous is), the evidence and the run's."""

    sessions: list[NodeSession]
    cluster: ClusterEvidence
    options: RunOptions
    halt: threading.Event
    run_id: int
    slurm_job: str | None
    log: Callable[[LogLevel, str], None]
    point: Callable[[float, float], None]  # inter-node busbw: (bytes, GB/s)
    warn: Callable[[str], None]
    # What a step leaves for a later one of the same run: "bench", the all_reduce benchmark's output when the
    # distributed step's torchrun launch ran it
    carried: dict[str, list[Launched]] = field(default_factory=dict)

    @property
    def first(self) -> NodeSession:
        return self.sessions[0]


# ------------------------------------------------------------------------------------------- agreement


def node_facts(evidence: ProbeEvidence | None, host: HostFacts | None) -> NodeFacts:
    """What the nodes must agree on, from a node's own run evidence and the facts found before it ran."""
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
        values = {n.node: _text(getattr(n.facts, name)) for n in cluster.nodes if n.state != "unreachable"}
        if all(v is None for v in values.values()):
            continue
        rows.append(AgreementRow(field=name, values=values, agree=len(set(values.values())) <= 1))
    return rows


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def clock_offset(session: NodeSession, timeout: float) -> tuple[float | None, str]:
    """(node clock minus ours, what the node printed): its ``date`` against the moment that line arrives here.

    Not against the midpoint of the whole command: the remote shell's start-up (a login shell sourcing
    ~/.bashrc, seconds on a loaded host) comes before ``date`` runs and would count as half its length of clock
    skew; the line's way back is one network trip, milliseconds."""
    text, arrived = "", None
    for line in session.ctx.stream("date +%s.%N", timeout=timeout):
        if arrived is None and line.strip():
            text, arrived = line.strip(), time.time()
    try:
        return (round(float(text) - arrived, 3) if arrived is not None else None), text
    except ValueError:
        return None, text


def agreement(step: StepContext) -> None:
    """Clock offsets (`clock_offset`), HCA ports by ibv_devinfo where ibstat gave none (every node at once),
    then every agreed property compared."""
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


# ------------------------------------------------------------------------------------------ rendezvous


def find_addresses(step: StepContext) -> None:
    """The first node's address (where the rendezvous runs) and each node's route toward it (all at once)."""
    timeout = step.options.timeouts.command_s
    first = step.first
    first.address = first.address or own_address(first, timeout)
    address = first.address

    def route(session: NodeSession) -> None:
        session.interface, session.local_addr = route_to(session, address, timeout, is_first=session is first)
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
    """Listen on a free port of the first node (the listener picks it and says which); every other node
    connects to it (TCP) before torchrun, which then holds its rendezvous on that port."""
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
    parts = launch_everywhere(step.sessions, command, timeout=timeout, halt=step.halt, on_line=on_line,
                              stop_others_on_failure=False)
    if not port:
        raise ProbeFailed(f"no rendezvous port could be opened on {first.node}: {failure_text(parts[0])}")
    result = Rendezvous(host=first.address, port=port[0], node=first.node)
    step.cluster.rendezvous = result
    for session, part in zip(step.sessions[1:], parts[1:], strict=True):
        reached = part.result is not None and part.result.ok and "TUNEPLAN_CONNECTED" in part.lines
        result.reached_from[session.node] = reached
        if not reached:
            result.errors[session.node] = failure_text(part)
    if not result.ok:
        who = ", ".join(f"{n} ({why})" for n, why in result.errors.items())
        raise ProbeFailed(f"the rendezvous port {first.address}:{result.port} on {first.node} cannot be reached "
                          f"from {who}")
    step.log("info", f"rendezvous {first.address}:{result.port} on {first.node} reached from every node")
    return result


def _require_rendezvous(step: StepContext) -> None:
    """A rendezvous every node reached, on the first node still in the run: when the node that held it was lost
    in an earlier step, the next node that answers holds a new one (instead of every torchrun waiting out its
    join timeout on a node that is gone)."""
    held = step.cluster.rendezvous
    if held is None or not held.ok:
        raise ProbeSkipped("the rendezvous port cannot be reached, so torchrun cannot start across nodes")
    if held.node is not None and held.node != step.first.node:
        step.log("warning", f"{held.node}, which held the rendezvous, is gone; {step.first.node} holds a new one")
        rendezvous(step)


def _require_python(step: StepContext) -> None:
    for session in step.sessions:
        if session.facts.python is None:
            raise ProbeSkipped(f"no Python interpreter was found on {session.node}")


# ------------------------------------------------------------------------------------------- torchrun


@dataclass(frozen=True)
class NodeLaunch:
    backend: str  # "nccl" or "gloo"
    nproc: int


def plan_node_launch(step: StepContext, what: str) -> NodeLaunch:
    """NCCL with one rank per GPU when every node's torch sees the same number of CUDA GPUs; else gloo with one
    rank per node; `ProbeSkipped` naming the node whose Python has no torch.distributed."""
    for session in step.sessions:
        python = session.facts.python
        if python is None or python.torch is None or not python.distributed:
            where = f" ({python.path})" if python is not None else ""
            raise ProbeSkipped(f"torch.distributed is not installed in {session.node}'s Python{where}, so the {what} "
                               f"cannot run ({NAME_PYTHON})")
    pythons = [s.facts.python for s in step.sessions if s.facts.python is not None]
    if all(p.cuda and p.cuda_devices > 0 and p.nccl for p in pythons):
        counts = {p.cuda_devices for p in pythons}
        if len(counts) == 1:
            return NodeLaunch("nccl", counts.pop())
        step.warn(f"the nodes' torch sees different GPU counts ({sorted(counts)}); ran the {what} with gloo")
    if not all(p.gloo for p in pythons):
        raise ProbeSkipped(f"torch has no gloo backend on every node, so the {what} cannot run on CPUs")
    return NodeLaunch("gloo", 1)


def torchrun_across(step: StepContext, session: NodeSession, launch: NodeLaunch, script: str, args: list[str],
                    tag: str) -> str:
    """The torchrun command line one node runs (see the module docstring for each setting)."""
    rdzv = step.cluster.rendezvous
    assert rdzv is not None
    env = [f"TMPDIR={q(session.workdir)}", "OMP_NUM_THREADS=1", "NCCL_DEBUG=INFO"]
    if session.interface:
        env += [f"GLOO_SOCKET_IFNAME={q(session.interface)}", f"NCCL_SOCKET_IFNAME={q(session.interface)}"]
    local = f"--local-addr {q(session.local_addr)} " if session.local_addr and _has_local_addr(session) else ""
    join = max(30, int(step.options.timeouts.distributed_s) - 30)
    return (f"cd {q(session.workdir)} && {' '.join(env)} {q(session.ctx.python())} -m torch.distributed.run "
            f"--nnodes {len(step.sessions)} --nproc-per-node {launch.nproc} --rdzv-backend c10d "
            f"--rdzv-endpoint {q(f'{rdzv.host}:{rdzv.port}')} --rdzv-id {q(f'tuneplan-{step.run_id}-{tag}')} "
            f"--rdzv-conf join_timeout={join} --max-restarts 0 {local}{q(script)} " + " ".join(q(a) for a in args))


def _has_local_addr(session: NodeSession) -> bool:
    """torchrun has --local-addr since torch 2.1."""
    version = (session.facts.python.torch if session.facts.python else None) or ""
    try:
        major, minor = (int(part) for part in version.split("+")[0].split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (2, 1)


def _launch_failed(step: StepContext, parts: list[Launched], what: str) -> tuple[str | None, str | None]:
    failed = first_failure(parts)
    if failed is None:
        return None, None
    return failed.node, f"{what} failed on {failed.node}: {failure_text(failed)}"


PHASE_LINE = "__tuneplan_phase allreduce"  # cluster_torch.py: the check's output above, the benchmark's below


def distributed(step: StepContext) -> InterNodeRun:
    """dist_sanity.py across every node: each rank's RANK/LOCAL_RANK/WORLD_SIZE and one exact all_reduce; then,
    in the same torchrun launch (cluster_torch.py: torchrun starts once per node, not once per step), the
    all_reduce benchmark, whose output the allreduce step reads (``step.carried``)."""
    launch = plan_node_launch(step, "torch.distributed check across nodes")
    _require_rendezvous(step)
    scripts = upload_everywhere(step.sessions, "dist_sanity.py", "allreduce_bench.py", "cluster_torch.py")
    timeout_s = max(30, int(step.options.timeouts.distributed_s) - 30)
    args = ["--sanity", "--backend", launch.backend, "--timeout", str(timeout_s), "--bench", *_bench_args(step, launch)]
    benching: set[str] = set()

    def on_line(session: NodeSession, line: str) -> None:
        if line.strip() == PHASE_LINE:
            benching.add(session.node)
        elif session.node in benching:
            _chart(step, line)

    parts = launch_everywhere(
        step.sessions, lambda s: torchrun_across(step, s, launch, scripts[s.node][-1], args, "sanity"),
        timeout=step.options.timeouts.distributed_s + step.options.timeouts.collectives_s, halt=step.halt,
        on_line=on_line)
    sanity, bench = _split_phases(parts)
    if len(benching) == len(step.sessions):
        step.carried["bench"] = bench
    output = "\n".join(line for part in sanity for line in part.lines)
    ranks, summary = parse_sanity(output)
    world = len(step.sessions) * launch.nproc
    problems = consistency_problems(ranks, world)
    failed_node, error = (None, None) if "bench" in step.carried else _launch_failed(step, parts, "torchrun")
    if summary is None and error is None:
        error = "torchrun ended without the check's summary"
    elif problems and error is None:
        error = "; ".join(problems)
    ok = bool(summary and summary.get("all_reduce_ok")) and not problems and error is None
    run = InterNodeRun(backend="nccl" if launch.backend == "nccl" else "gloo", nnodes=len(step.sessions),
                       nproc_per_node=launch.nproc, world_size=world, nodes=[s.node for s in step.sessions],
                       ranks=[_rank_row(r) for r in ranks], all_reduce_ok=ok, error=error, failed_node=failed_node,
                       transport=_transport(parts, launch))
    step.cluster.distributed = run
    if not ok:
        raise ProbeFailed(f"the torch.distributed check across nodes failed: {error or 'a wrong all_reduce sum'}")
    step.log("info", f"{world} ranks on {len(step.sessions)} nodes: every rank's environment right, "
                     "all_reduce exact")
    return run


def _rank_row(record: dict[str, Any]) -> dict[str, str]:
    """The single-host check's rank line, plus the interface the rank was told to use (gloo's, else NCCL's)."""
    row = rank_row(record)
    return {**row, "ifname": row["GLOO_SOCKET_IFNAME"] or row["NCCL_SOCKET_IFNAME"]}


def _transport(parts: list[Launched], launch: NodeLaunch) -> NcclTransport | None:
    if launch.backend != "nccl":
        return None
    text = "\n".join([*(line for part in parts for line in part.lines),
                      *(part.result.stderr for part in parts if part.result is not None)])
    return parse_nccl_debug(text).value


def _bench_args(step: StepContext, launch: NodeLaunch) -> list[str]:
    """allreduce_bench.py's options: the sweep for GPUs (NCCL) or CPUs (gloo)."""
    on_gpu = launch.backend == "nccl"
    max_bytes = step.options.collective_max_bytes or (GPU_MAX_BYTES if on_gpu else CPU_MAX_BYTES)
    min_bytes = min(GPU_MIN_BYTES if on_gpu else CPU_MIN_BYTES, max_bytes)
    return ["--min-bytes", str(min_bytes), "--max-bytes", str(max_bytes), "--factor", "2" if on_gpu else "4",
            "--backend", launch.backend, "--timeout", str(int(step.options.timeouts.collectives_s))]


def _chart(step: StepContext, line: str) -> None:
    """A benchmark row, charted as it arrives."""
    row = live_row(line)
    if row is not None:
        step.point(float(row[0]), row[2])


def _split_phases(parts: list[Launched]) -> tuple[list[Launched], list[Launched]]:
    """Each node's output of cluster_torch.py cut at the phase line: (the check's parts, the benchmark's)."""
    sanity, bench = [], []
    for part in parts:
        cut = next((i for i, line in enumerate(part.lines) if line.strip() == PHASE_LINE), len(part.lines))
        sanity.append(replace(part, lines=part.lines[:cut]))
        bench.append(replace(part, lines=part.lines[cut + 1:]))
    return sanity, bench


def allreduce(step: StepContext) -> InterNodeRun:
    """allreduce_bench.py across every node: busbw per message size, charted as rows arrive. Run in the
    distributed step's launch when that got to it (``step.carried``), else in a launch of its own."""
    launch = plan_node_launch(step, "all_reduce benchmark across nodes")
    _require_rendezvous(step)
    on_gpu = launch.backend == "nccl"
    parts = step.carried.pop("bench", None)
    if parts is None:
        scripts = upload_everywhere(step.sessions, "allreduce_bench.py")
        parts = launch_everywhere(
            step.sessions, lambda s: torchrun_across(step, s, launch, scripts[s.node][0], _bench_args(step, launch),
                                                     "bw"),
            timeout=step.options.timeouts.collectives_s, halt=step.halt, on_line=lambda _s, line: _chart(step, line))
    failed_node, error = _launch_failed(step, parts, "the all_reduce benchmark")
    collective = None
    for part in parts:
        parsed = parse_nccl_tests("\n".join(part.lines)).value
        if parsed is not None and parsed.rows:
            collective = parsed.model_copy(update={"tool": "torch_all_reduce_bench"})
            break
    transport = _transport(parts, launch)
    run = InterNodeRun(backend="nccl" if on_gpu else "gloo", nnodes=len(step.sessions), nproc_per_node=launch.nproc,
                       world_size=len(step.sessions) * launch.nproc, nodes=[s.node for s in step.sessions],
                       collective=collective, error=error, failed_node=failed_node,
                       transport=transport)
    step.cluster.allreduce = run
    if collective is None:
        raise ProbeFailed(f"the all_reduce benchmark across nodes gave no result rows: {error or 'no output'}")
    cut = sweep_cut(collective)
    if cut:
        raise SweepCut(f"the all_reduce sweep across the nodes was cut after {cut}: "
                       f"{error or 'it ended without its last sizes'}")
    if error:
        step.warn(error)
    if not on_gpu:
        step.warn("no GPU on the nodes: measured gloo between CPU processes over TCP, not the GPUs' network")
    return run


# --------------------------------------------------------------------------------- tools when present


def nccl_tests(step: StepContext) -> None:
    """nccl-tests' all_reduce_perf across the nodes, under srun (a Slurm allocation) or mpirun."""
    missing = [s.node for s in step.sessions if not s.facts.has("all_reduce_perf") or not s.facts.nvidia]
    if missing:
        raise ProbeSkipped(f"nccl-tests (all_reduce_perf) or an NVIDIA GPU is missing on {', '.join(missing)}")
    gpus = min(s.facts.gpu_count for s in step.sessions)
    first = step.first
    sweep = "-b 8 -e 1G -f 2 -g 1"
    if step.slurm_job and first.facts.has("srun"):
        launcher = "srun"
        command = (f"NCCL_DEBUG=INFO srun --jobid {q(step.slurm_job)} --overlap --nodes {len(step.sessions)} "
                   f"--ntasks-per-node {gpus} all_reduce_perf {sweep}")
    elif first.facts.has("mpirun"):
        launcher = "mpirun"
        hosts = ",".join(f"{s.local_addr or s.address or s.node}:{gpus}" for s in step.sessions)
        command = (f"mpirun -np {gpus * len(step.sessions)} -H {q(hosts)} --bind-to none -x NCCL_DEBUG=INFO "
                   f"-x PATH -x LD_LIBRARY_PATH all_reduce_perf {sweep}")
    else:
        raise ProbeSkipped(f"no launcher for nccl-tests across nodes on {first.node} (mpirun, or srun in an "
                           "allocation)")
    result = first.ctx.run(command, timeout=step.options.timeouts.collectives_s)
    parsed = parse_nccl_tests(result.stdout)
    if parsed.value is None or not parsed.value.rows:
        raise ProbeFailed(f"nccl-tests under {launcher} gave no result rows: "
                          f"{failure_text(Launched(first.node, result))}")
    step.cluster.nccl_tests = parsed.value
    step.cluster.nccl_tests_launcher = launcher
    if step.cluster.allreduce is not None and step.cluster.allreduce.transport is None:
        step.cluster.allreduce.transport = parse_nccl_debug(result.stdout + "\n" + result.stderr).value
    cut = sweep_cut(step.cluster.nccl_tests)
    if cut:
        raise SweepCut(f"nccl-tests under {launcher} was cut after {cut}: {failure_text(Launched(first.node, result))}")


def ib_write_bw(step: StepContext) -> None:
    """perftest's ib_write_bw between node pairs (each node to the next), on each server's first Active port."""
    missing = [s.node for s in step.sessions if not s.facts.has("ib_write_bw")]
    if missing:
        raise ProbeSkipped(f"perftest (ib_write_bw) is missing on {', '.join(missing)}")
    pairs = [(step.sessions[i], step.sessions[(i + 1) % len(step.sessions)])
             for i in range(len(step.sessions) if len(step.sessions) > 2 else 1)]
    for client, server in pairs:
        report = step.cluster.node(server.node)
        ports = [p for p in (report.facts.hca_ports if report else []) if (p.state or "").lower() == "active"]
        if not ports:
            step.cluster.ib_write_bw.append(PairBandwidth(client=client.node, server=server.node,
                                                          error=f"{server.node} has no Active HCA port"))
            continue
        device = ports[0].device
        base = f"ib_write_bw -d {q(device)} -F --report_gbits -D {IB_WRITE_BW_SECONDS}"
        target = server.local_addr or server.address or server.node
        started = threading.Event()

        def command(session: NodeSession, base: str = base, target: str = target,
                    started: threading.Event = started, server: NodeSession = server) -> str:
            if session is server:
                started.set()
                return base
            started.wait(5)
            return f"sleep 1 && {base} {q(target)}"

        parts = launch_everywhere([server, client], command, timeout=IB_WRITE_BW_SECONDS + 60, halt=step.halt)
        parsed = parse_perftest("\n".join(parts[1].lines))
        failed = first_failure(parts)
        step.cluster.ib_write_bw.append(PairBandwidth(
            client=client.node, server=server.node, device=device, result=parsed.value,
            error=None if failed is None else f"{failed.node}: {failure_text(failed)}"))


def dcgm(step: StepContext, level: int) -> None:
    """DCGM's own diagnostic on every node that has it (level 1 quick, 2 with the full suite)."""
    have = [s for s in step.sessions if s.facts.has("dcgmi")]
    if not have:
        raise ProbeSkipped("DCGM (dcgmi) is not installed on the nodes")
    parts = launch_everywhere(have, lambda s: f"dcgmi diag -r {level}", timeout=step.options.timeouts.compute_s,
                              halt=step.halt, stop_others_on_failure=False)
    for session, part in zip(have, parts, strict=True):
        parsed = parse_dcgmi_diag("\n".join(part.lines))
        error = None if parsed.value else failure_text(part)
        step.cluster.dcgm.append(DcgmDiag(node=session.node, level=level, results=parsed.value or {}, error=error))


__all__ = ["AGREED_FIELDS", "StepContext", "SweepCut", "agreement", "agreement_rows", "allreduce", "dcgm",
           "distributed", "ib_write_bw", "nccl_tests", "node_facts", "rendezvous"]
