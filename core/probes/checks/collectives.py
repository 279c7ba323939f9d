"""Collectives: all_reduce bus bandwidth per message size.

nccl-tests' ``all_reduce_perf`` when it is on PATH (``-g N`` over the node's GPUs); else the
uploaded ``allreduce_bench.py`` under torchrun (NCCL on GPUs, gloo with two ranks on a GPU-less
host), which prints the same format so `parse_nccl_tests` reads both. Rows are charted as they
arrive (busbw vs size).
"""

from __future__ import annotations

from core.probes.checks.base import ProbeContext, ProbeFailed, ProbeSkipped, q, short_error
from core.probes.checks.torchrun import Launch, plan_launch, torchrun_command
from core.probes.parsers import parse_nccl_tests
from core.probes.scorecard.common import sweep_cut
from core.probes.transport.base import TransportError

GPU_MIN_BYTES = 1 << 20
GPU_MAX_BYTES = 1 << 30
CPU_MIN_BYTES = 4 << 10
CPU_MAX_BYTES = 16 << 20


def live_row(line: str) -> tuple[int, float, float] | None:
    """(size, in-place algbw, in-place busbw) of an nccl-tests result line, for the live chart
    only."""
    tokens = line.split()
    if tokens and tokens[0].endswith(":") and tokens[0][:-1].isdigit():
        tokens = tokens[1:]  # srun -l prefix
    if len(tokens) < 13 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    try:
        return int(tokens[0]), float(tokens[10]), float(tokens[11])
    except ValueError:
        return None


def interconnect(ctx: ProbeContext, on_gpu: bool) -> str | None:
    """What an intra-node all_reduce crossed: 'nvlink', 'pcie', or 'loopback' for CPU ranks."""
    if not on_gpu:
        return "loopback"
    inventory = ctx.evidence.inventory
    if inventory is not None and inventory.topology is not None and inventory.topology.links:
        kinds = {v for (i, j), v in inventory.topology.links.items() if i != j}
        return "nvlink" if kinds and all(k.startswith("NV") for k in kinds) else "pcie"
    if inventory is not None and inventory.nvlink:
        return (
            "nvlink"
            if any(s.link_speeds_gbps and not s.inactive_links for s in inventory.nvlink)
            else "pcie"
        )
    return None


def _nccl_tests_command(ctx: ProbeContext) -> str:
    max_bytes = ctx.options.collective_max_bytes or GPU_MAX_BYTES
    return (
        f"NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET {q(ctx.facts.tools['all_reduce_perf'])} "
        f"-b {GPU_MIN_BYTES} -e {max(GPU_MIN_BYTES, max_bytes)} -f 2 -g {ctx.facts.gpu_count} -w "
        "5 -n 20"
    )


def run(ctx: ProbeContext) -> None:
    launch: Launch | None = None
    if ctx.facts.has("all_reduce_perf") and ctx.facts.nvidia:
        if ctx.facts.gpu_count < 2:
            raise ProbeSkipped(
                "only one GPU: all_reduce has nothing to move between GPUs on this host"
            )
        command, tool, on_gpu = _nccl_tests_command(ctx), "nccl-tests", True
    else:
        launch = plan_launch(ctx, what="all_reduce benchmark")
        script = ctx.upload("allreduce_bench.py")
        max_bytes = ctx.options.collective_max_bytes or (
            GPU_MAX_BYTES if launch.on_gpu else CPU_MAX_BYTES
        )
        min_bytes = GPU_MIN_BYTES if launch.on_gpu else CPU_MIN_BYTES
        args = [
            "--min-bytes",
            str(min(min_bytes, max_bytes)),
            "--max-bytes",
            str(max_bytes),
            "--factor",
            "2" if launch.on_gpu else "4",
            "--backend",
            launch.backend,
            "--timeout",
            str(int(ctx.options.timeouts.collectives_s)),
        ]
        command, tool, on_gpu = (
            torchrun_command(ctx, launch, script, args),
            "torch_all_reduce_bench",
            launch.on_gpu,
        )
        if not launch.on_gpu:
            ctx.warn(
                "no NVIDIA GPU found: measured a gloo all_reduce between two CPU processes over "
                "loopback"
            )
    stream = ctx.stream(command, timeout=ctx.options.timeouts.collectives_s)
    lines: list[str] = []
    try:
        for line in stream:
            lines.append(line)
            row = live_row(line)
            if row is not None:
                ctx.point("busbw", float(row[0]), row[2], tool)
                ctx.point("algbw", float(row[0]), row[1], tool)
    except TransportError:
        _keep_partial(ctx, lines, tool, on_gpu)
        raise
    result = stream.result
    parsed = parse_nccl_tests("\n".join(lines))
    ctx.warnings.extend(f"{tool}: {w}" for w in parsed.warnings)
    collective = parsed.value
    if collective is None or not collective.rows:
        why = short_error(result) if result is not None else "no output"
        raise ProbeFailed(f"the all_reduce benchmark ({tool}) produced no result rows: {why}")
    if tool == "torch_all_reduce_bench":
        collective = collective.model_copy(update={"tool": "torch_all_reduce_bench"})
    if result is not None and (result.exit_code != 0 or result.timed_out):
        ctx.warn(f"the all_reduce benchmark ended badly: {short_error(result)}")
    for failure in collective.failures[:5]:
        ctx.log("error", f"all_reduce: {failure}")
    if collective.wrong_total:
        ctx.log("error", f"all_reduce returned {collective.wrong_total} wrong values")
    ctx.evidence.collectives = collective
    ctx.evidence.collective_interconnect = interconnect(ctx, on_gpu)
    cut = sweep_cut(collective)
    # the benchmark stopped before its last size (a rank died, a hang hit the timeout): shown, not
    # graded
    if cut:
        why = short_error(result) if result is not None else "no exit status came back"
        ctx.evidence.partial["collectives"] = f"{cut}: {why}"
        raise ProbeFailed(f"the all_reduce sweep ({tool}) stopped after {cut}: {why}")


def _keep_partial(ctx: ProbeContext, lines: list[str], tool: str, on_gpu: bool) -> None:
    """The connection dropped mid-benchmark: the message sizes measured so far are kept, marked
    partial."""
    parsed = parse_nccl_tests("\n".join(lines)).value
    if parsed is None or not parsed.rows:
        ctx.evidence.partial["collectives"] = "no message size had been measured"
        return
    if tool == "torch_all_reduce_bench":
        parsed = parsed.model_copy(update={"tool": tool})
    ctx.evidence.collectives = parsed
    ctx.evidence.collective_interconnect = interconnect(ctx, on_gpu)
    largest = max(r.size_bytes for r in parsed.rows)
    cut = sweep_cut(parsed) or f"{len(parsed.rows)} message sizes up to {largest:,} bytes"
    ctx.evidence.partial["collectives"] = f"{cut} before the drop"
