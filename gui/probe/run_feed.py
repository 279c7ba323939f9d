"""What the probe pane shows of a run, worked out without widgets: where a runner point is drawn,
which log lines an outcome or a throttling GPU is worth, the titles above the charts, why a chart
stayed empty, and how far the run has got. (Whether a run has anything for a plan is
``core.probes.apply.nothing_to_apply``, beside the rules that apply it.)

The pane matches each runner event on its type and asks this module what it means on screen; it only
puts the answers into its widgets. Nothing here touches Qt, so the routing and the progress and ETA
arithmetic are tested on their own. Times are passed in (``now``, from ``time.monotonic``) for the
same reason.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from core.probes import NO_GPU, GpuMetric, HostFacts, ProbeOutcome, ProbeStatus, RunSummary

PROGRESS_STEPS = 1000
# Clock-event reasons worth a log line, with their level (PROBES §4 D: HW slowdown is a FAIL, SW
# thermal a WARN).
THROTTLE_LEVELS = {
    "hw_slowdown": "error",
    "hw_thermal_slowdown": "error",
    "hw_power_brake_slowdown": "error",
    "sw_thermal_slowdown": "warning",
    "sync_boost": "info",
    "sw_power_cap": "info",
}
# A line of the event log: (level, text), as EventLog.add takes them.
LogLine = tuple[str, str]


# The runner's chart series (core.probes.run.events.SeriesName) → (chart, legend name; None: the
# point's label).
SERIES_ROUTES: dict[str, tuple[str, str | None]] = {
    "busbw": ("busbw", "busbw"),
    "algbw": ("busbw", "algbw"),
    "fio_read": ("throughput", None),
    "fio_write": ("throughput", None),
    "fio_iops": ("iops", None),
    "compute_tflops": ("compute", "matmul"),
    "tflops": ("compute", "burn"),
    "cpu_util": ("cpu", "CPU busy %"),
    "cpu_temp": ("cpu", "CPU °C"),
    "step_ms": ("step", None),
}


# The probes whose points each result chart shows (the on-demand compute and CPU charts are hidden
# while empty). A cluster run's busbw comes from its inter-node all_reduce sweep
# (core.probes.cluster.run CLUSTER_STEPS).
CHART_PROBES: dict[str, tuple[str, ...]] = {
    "busbw": ("collectives", "allreduce"),
    "throughput": ("storage",),
    "iops": ("storage",),
}
NO_GPU_NOTE = "skipped: no GPU"
# A cluster run's own steps sample no GPU: each node's samples go to that node's own run
# (core.probes.cluster.run).
CLUSTER_GPU_NOTE = "charted in each node's own run (History)"
# the label of a cluster run's busbw points: its own legend entry, "busbw inter-node"
INTER_NODE = "inter-node"


def fmt_time(unix: float | None) -> str:
    return dt.datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M") if unix else "—"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "—"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def route_point(series: str, x: float, label: str, t: float) -> tuple[str, str, float]:
    """(chart, legend entry, x) for a runner point. Matmul results (x = device index) are drawn at
    the time they were measured so they share the TFLOP/s-over-time chart with the burn; per-device
    series carry the device in their name."""
    chart, name = SERIES_ROUTES.get(series, ("cpu", series))
    if name is None:
        name = label or series
    elif label and (chart == "compute" or label == INTER_NODE):
        name = f"{name} {label}"
    return chart, name, (t if series == "compute_tflops" else x)


def live_title(run_id: int | None, host: str, facts: HostFacts | None) -> str:
    """The line above the charts while a run streams: its id, the host and the GPUs the host
    reported."""
    text = f"Live: run {run_id} on {host}"
    if facts is not None:
        gpus = len(facts.gpu_lines)
        text += f", {gpus} NVIDIA GPU{'s' * (gpus != 1)}" if gpus else ", no NVIDIA GPU found"
    return text


def stored_title(run_id: int, summary: RunSummary) -> str:
    """The line above the charts for a reopened run."""
    return (
        f"Run {run_id} on {summary.host}, {fmt_time(summary.started)} "
        f"({summary.suite}, {summary.status})"
    )


def gpu_chart_note(gpus: bool | None) -> str | None:
    """Why the live GPU charts are empty: the host has no NVIDIA GPU (None: not known yet, or it has
    GPUs)."""
    return NO_GPU_NOTE if gpus is False else None


def chart_notes(
    probes: Sequence[str], outcomes: Sequence[ProbeOutcome], ended: bool
) -> dict[str, str]:
    """Why each result chart may be empty, by chart: its probe is not in the suite, ended without
    figures (skipped or failed: the outcome says why) or never ran. A chart whose probe is still to
    come gets none."""
    finished = {o.name: o for o in outcomes}
    notes: dict[str, str] = {}
    for chart, feeding in CHART_PROBES.items():
        mine = [name for name in feeding if name in probes]
        done = [finished[name] for name in mine if name in finished]
        # a cluster run: storage ran on each node
        if not mine and "nodes" in probes and chart != "busbw":
            notes[chart] = f"storage: {CLUSTER_GPU_NOTE}"
        elif not mine:
            notes[chart] = f"not measured: {feeding[0]} is not in this suite"
        elif not done:
            if ended:
                notes[chart] = f"not measured: the run ended before {mine[0]}"
        else:
            bad = next((o for o in done if o.status is not ProbeStatus.ok), None)
            if bad is None:
                notes[chart] = f"no figures: {done[0].name} reported none"
            elif (bad.error or "").startswith(NO_GPU):
                notes[chart] = f"{bad.status.value}: no GPU"
            else:
                notes[chart] = f"{bad.status.value}: {first_clause(bad.error or 'no reason given')}"
    return notes


def first_clause(reason: str) -> str:
    """The gist of a probe's reason, short enough for the middle of a chart (the event log has all
    of it): "torch is not installed in the host's Python (/usr/bin/python3), so …" → "torch is not
    installed in the host's Python"."""
    return re.split(r" \(|, |; |: ", reason, maxsplit=1)[0].rstrip(".")


def outcome_lines(outcome: ProbeOutcome) -> list[LogLine]:
    """The log lines of a finished probe: how it ended and after how long, then each of its
    warnings."""
    status = outcome.status.value
    level = {
        "ok": "info",
        "skipped": "info",
        "cancelled": "warning",
        "interrupted": "error",
        "lost": "error",
        "failed": "error",
    }.get(status, "info")
    detail = f": {outcome.error}" if outcome.error else ""
    took = fmt_duration(outcome.ended - outcome.started)
    if status in ("lost", "interrupted"):
        lines = [("error", f"connection lost during {outcome.name}{detail}")]
    else:
        lines = [(level, f"probe {outcome.name} {status} after {took}{detail}")]
    lines.extend(("warning", f"{outcome.name}: {warning}") for warning in outcome.warnings)
    return lines


class ThrottleWatch:
    """The clock-event reasons each GPU reports: a log line when one appears and when it clears."""

    def __init__(self) -> None:
        self.seen: dict[int, set[str]] = {}

    def lines(self, metrics: Iterable[GpuMetric]) -> list[LogLine]:
        out: list[LogLine] = []
        for sample in metrics:
            active = {r for r in sample.clocks_event_reasons if r in THROTTLE_LEVELS}
            seen = self.seen.setdefault(sample.gpu, set())
            for reason in sorted(active - seen):
                out.append(
                    (
                        THROTTLE_LEVELS[reason],
                        f"GPU {sample.gpu}: clocks held back ({reason}) at {sample.t:.1f} s",
                    )
                )
            for reason in sorted(seen - active):
                out.append(("info", f"GPU {sample.gpu}: {reason} cleared at {sample.t:.1f} s"))
            self.seen[sample.gpu] = active
        return out

    def clear(self) -> None:
        self.seen.clear()


@dataclass(frozen=True)
class RunningProbe:
    """The probe the runner last started: ``index`` is the runner's 1-based one, ``eta`` its
    estimate (s)."""

    name: str
    index: int
    total: int
    eta: float | None
    started: float
    # how much of it is done when known (a cluster's node phase), else from the ETA
    share: float | None = None

    @property
    def position(self) -> int:
        """The runner's 1-based index, kept within 1..total."""
        return min(max(self.index, 1), self.total)


class RunProgress:
    """How far a run has got: finished probes plus the running one's share of its ETA, in
    PROGRESS_STEPS."""

    def __init__(self) -> None:
        self.probe: RunningProbe | None = None
        self.finished = 0

    def reset(self) -> None:
        self.probe = None
        self.finished = 0

    def start(self, name: str, index: int, total: int, eta_s: float | None, now: float) -> LogLine:
        """A probe started; returns its log line."""
        self.probe = RunningProbe(name, index, max(total, 1), eta_s or None, now)
        return "info", f"probe {name} started ({self.probe.position} of {self.probe.total})"

    def finish(self) -> None:
        self.finished += 1

    def running_share(self, share: float) -> None:
        """The running probe's done share, 0 to 1, where the run reports it (a cluster's nodes, in
        their suites)."""
        if self.probe is not None:
            self.probe = replace(self.probe, share=share)

    def at(self, now: float) -> tuple[int, str | None] | None:
        """(progress bar value, ETA line) at ``now``; the line is None once the running probe has
        finished, and the whole answer None before the first probe starts."""
        if self.probe is None:
            return None
        name, total, eta = self.probe.name, self.probe.total, self.probe.eta
        elapsed = now - self.probe.started
        position = self.probe.position
        share = self.probe.share
        within = min(share if share is not None else elapsed / eta if eta else 0.0, 0.99)
        done = max(self.finished, position - 1)
        if self.finished >= position:
            within = 0.0
        value = int(PROGRESS_STEPS * min((done + within) / total, 1.0))
        if self.finished >= position:
            return value, None
        text = f"{name} ({position}/{total})"
        if eta:
            left = max(eta - elapsed, 0.0)
            text += (
                f" · {fmt_duration(elapsed)} of about {fmt_duration(eta)}, ~{fmt_duration(left)} "
                "left"
            )
        else:
            text += f" · {fmt_duration(elapsed)}"
        return value, text
