"""Stability burn: N seconds of matmul load on every GPU while the metrics stream samples
temperature, clocks, power and throttling; the kernel log is read before and after for new Xid
errors.

On a host without GPUs it loads the CPU instead and charts utilisation and temperature from /proc
and /sys. Cancel kills the remote process group (the transport does), so no load is left running on
the host.
"""

from __future__ import annotations

from collections import defaultdict

from core.probes.checks.base import NAME_PYTHON, Cancelled, ProbeContext, ProbeSkipped, q
from core.probes.checks.compute import as_float as _num
from core.probes.checks.compute import as_int as _int
from core.probes.checks.compute import json_lines, read_link
from core.probes.checks.health import read_kernel_log, report_kernel_events
from core.probes.evidence import BurnResult
from core.probes.samples import GpuMetric, KernelLogScan
from core.probes.transport.base import TransportError

BAD_REASONS = (
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
)
LOADED_UTIL_PCT = 90.0


class _Tracker:
    """Running figures of the burn, fed line by line (script output) and batch by batch (GPU
    samples)."""

    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx
        self.ticks: dict[int, list[tuple[float, float]]] = defaultdict(list)
        self.cpu_temps: list[float] = []
        self.checksums: dict[int, float] = {}
        self.reasons_seen: set[str] = set()
        self.logged: set[tuple[int, str]] = set()
        self.mark = ctx.sampler.mark() if ctx.sampler is not None else 0
        self.seen = self.mark
        self.done = False
        self.device = "cpu"
        self.link_read = False

    def line(self, record: dict[str, object]) -> None:
        event = record.get("event")
        now = self.ctx.clock()
        index = _int(record.get("index"))
        if event == "tick":
            t, value = _num(record.get("t")), _num(record.get("tflops"))
            if t is not None and value is not None:
                self.device = str(record.get("device", "cpu"))
                self.ticks[index].append((t, value))
                self.ctx.point("tflops", now, value, f"{self.device} {index}")
                self.read_link_once()
        elif event == "cpu":
            util, temp = _num(record.get("util_pct")), _num(record.get("temp_c"))
            if util is not None:
                self.ctx.point("cpu_util", now, util, "cpu")
            if temp is not None:
                self.cpu_temps.append(temp)
                self.ctx.point("cpu_temp", now, temp, "cpu")
        elif event == "check":
            checksum = _num(record.get("checksum"))
            if checksum is not None:
                self.checksums[index] = checksum
        elif event == "done":
            self.done = True
        self.watch_gpus()

    def read_link_once(self) -> None:
        """Read the PCIe link at the first tick, while every GPU computes (idle links downshift)."""
        if self.link_read or self.device != "cuda" or not self.ctx.facts.nvidia:
            return
        self.link_read = True
        links = read_link(self.ctx)
        if links is not None:
            self.ctx.evidence.pcie_under_load = links

    def watch_gpus(self) -> None:
        """Log throttling as soon as the metrics stream shows it (once per GPU and reason)."""
        if self.ctx.sampler is None:
            return
        fresh = self.ctx.sampler.since(self.seen)
        self.seen += len(fresh)
        for metric in fresh:
            for reason in metric.clocks_event_reasons:
                if reason == "gpu_idle":
                    continue
                self.reasons_seen.add(reason)
                if reason in BAD_REASONS and (metric.gpu, reason) not in self.logged:
                    self.logged.add((metric.gpu, reason))
                    self.ctx.log(
                        "warning",
                        f"GPU {metric.gpu}: clocks held back by {reason} during the burn "
                        f"(at {metric.temp_c} °C, {metric.power_w} W)",
                    )

    def samples(self) -> list[GpuMetric]:
        return self.ctx.sampler.since(self.mark) if self.ctx.sampler is not None else []


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise(tracker: _Tracker, duration: float, completed: bool) -> BurnResult:
    """Figures of the burn; ``duration_s`` is the requested length, or the seconds of load before a
    stop."""
    samples = tracker.samples()
    temps = [m.temp_c for m in samples if m.temp_c is not None] + tracker.cpu_temps
    loaded = [
        m for m in samples if m.util_pct is not None and m.util_pct >= LOADED_UTIL_PCT
    ] or samples
    clocks = [m.sm_clock_mhz for m in loaded if m.sm_clock_mhz is not None]
    ticks = [tick for series in tracker.ticks.values() for tick in series]
    last_t = max((t for t, _ in ticks), default=0.0)
    first = [v for t, v in ticks if t <= 60.0]
    last = [v for t, v in ticks if t >= last_t - 60.0]
    return BurnResult(
        duration_s=duration if completed else round(last_t, 1),
        completed=completed,
        samples=len(samples) if samples else len(ticks),
        max_temp_c=max(temps) if temps else None,
        min_sm_clock_mhz=min(clocks) if clocks else None,
        throttle_reasons_seen=sorted(tracker.reasons_seen),
        tflops_first_minute=_mean(first),
        tflops_last_minute=_mean(last),
    )


def _new_xids(before: KernelLogScan | None, after: KernelLogScan | None) -> list[int]:
    """Xid codes logged during the burn (lines beyond those seen before it)."""
    if after is None:
        return []
    known = len(before.xids) if before is not None else 0
    return sorted({x.code for x in after.xids[known:]})


def run(ctx: ProbeContext) -> None:
    python = ctx.facts.python
    if python is None or (python.torch is None and python.numpy is None):
        raise ProbeSkipped(
            "the burn needs torch (or numpy on a CPU-only host) in the host's Python"
        )
    if ctx.facts.nvidia and not ctx.facts.cuda:
        raise ProbeSkipped(
            f"torch in {python.path} cannot use CUDA, so the GPUs cannot be loaded ({NAME_PYTHON})"
        )
    if not ctx.facts.nvidia:
        ctx.warn("no NVIDIA GPU found: burned the CPU instead")
    duration = float(ctx.options.burn_seconds)
    before, why_not = read_kernel_log(ctx)
    if before is None:
        ctx.warn(f"Xid errors during the burn are unknown: {why_not}")
    script = ctx.upload("matmul.py")
    marker = "tuneplan-burn-" + ctx.workdir.rsplit("/", 1)[-1]
    device = "cuda" if ctx.facts.cuda else "cpu"
    command = (
        f"{q(python.path)} {q(script)} burn --duration {duration:g} --interval 1 --device {device} "
        f"--marker {q(marker)}"
    )
    tracker = _Tracker(ctx)
    ctx.log("info", f"burning {'all GPUs' if device == 'cuda' else 'the CPU'} for {duration:g} s")
    stream = ctx.stream(command, timeout=duration + ctx.options.timeouts.burn_margin_s)
    try:
        for line in stream:
            for record in json_lines(line):
                tracker.line(record)
    except Cancelled:
        ctx.evidence.burn = summarise(tracker, duration, completed=False)
        raise
    except TransportError:
        # The connection dropped mid-burn: what was sampled until then is kept, marked partial.
        burn = ctx.evidence.burn = summarise(tracker, duration, completed=False)
        ctx.evidence.partial["burn"] = (
            f"{burn.duration_s:g} s of the {duration:g} s burn, {burn.samples} samples"
        )
        raise
    tracker.watch_gpus()
    burn = summarise(tracker, duration, completed=tracker.done)
    ctx.evidence.burn = burn  # kept now: the kernel log read below may still lose the connection
    result = stream.result
    if not tracker.done:
        ctx.warn(
            "the burn ended early: "
            f"{result.stderr.strip()[-200:] if result is not None else 'no output'}"
        )
    after, _ = read_kernel_log(ctx) if before is not None else (None, None)
    burn.xid_codes = _new_xids(before, after)
    if after is not None and before is not None:
        report_kernel_events(
            ctx, after, since_line=max((x.line_no for x in before.xids), default=0)
        )
    sums = set(tracker.checksums.values())
    if len(tracker.checksums) > 1 and len(sums) > 1:
        ctx.warn(f"the GPUs computed different results for the same product: {tracker.checksums}")
        ctx.log(
            "error",
            "the GPUs disagree on the result of the same matmul (possible silent data corruption)",
        )
    ctx.evidence.burn = burn
