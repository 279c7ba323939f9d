"""The typed events a probe run streams to its caller, from `RunStarted` to `RunFinished`.

The runner yields these while it works; the CLI prints them, the GUI's pane draws them and tests
replay them. Each is a pydantic model with a ``kind`` discriminator (`RunEvent` is the union of all
of them) and ``t``, the seconds since the run started. They live apart from the runner so that what
only reads events (the GUI, the CLI, tests) does not depend on how the runner works.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from core.probes.checks.base import HostFacts, LogLevel
from core.probes.evidence import ProbeEvidence, ProbeOutcome, Scorecard
from core.probes.samples import GpuMetric

SeriesName = Literal[
    "busbw",
    "algbw",
    "fio_read",
    "fio_write",
    "fio_iops",
    "compute_tflops",
    "tflops",
    "cpu_util",
    "cpu_temp",
    "step_ms",
]
# completed: every planned probe has an outcome and none is lost; incomplete: the run went to its
# end but a probe was lost (the connection dropped and came back); interrupted: the connection was
# lost for good, or the client died (a stale run, marked on the next start).
RunStatus = Literal["completed", "incomplete", "cancelled", "interrupted", "failed"]


class _Event(BaseModel):
    t: float = Field(0.0, description="seconds since the run started")


class RunStarted(_Event):
    kind: Literal["run_started"] = "run_started"
    run_id: int
    host: str
    probes: list[str]
    workdir: str | None = None
    facts: HostFacts | None = None


class ProbeStarted(_Event):
    kind: Literal["probe_started"] = "probe_started"
    name: str
    index: int = Field(description="1-based position in the suite")
    total: int
    eta_s: float | None = None


class MetricsBatch(_Event):
    kind: Literal["metrics"] = "metrics"
    metrics: list[GpuMetric] = Field(
        description="t of each metric is seconds since the run started"
    )


class SeriesPoint(_Event):
    """One chart point. Units of y: busbw/algbw GB/s (x = message bytes), fio_read/fio_write MB/s
    and fio_iops IOPS (x = run seconds), compute_tflops TFLOP/s (x = device index), tflops TFLOP/s
    (x = run seconds, burn), cpu_util %, cpu_temp °C (x = run seconds), step_ms milliseconds of one
    timed repetition of the step probe (x = repetition, label = the part timed: layer, optimizer,
    head, attention, gemm)."""

    kind: Literal["series"] = "series"
    series: SeriesName
    x: float
    y: float
    label: str = ""


class LogEvent(_Event):
    kind: Literal["log"] = "log"
    level: LogLevel
    message: str
    probe: str | None = None


class ProbeFinished(_Event):
    kind: Literal["probe_finished"] = "probe_finished"
    outcome: ProbeOutcome


class RunFinished(_Event):
    kind: Literal["run_finished"] = "run_finished"
    run_id: int
    evidence: ProbeEvidence
    scorecard: Scorecard | None = None
    status: RunStatus
    workdir_removed: bool = False


RunEvent = Annotated[
    RunStarted | ProbeStarted | MetricsBatch | SeriesPoint | LogEvent | ProbeFinished | RunFinished,
    Field(discriminator="kind"),
]


__all__ = [
    "LogEvent",
    "MetricsBatch",
    "ProbeFinished",
    "ProbeStarted",
    "RunEvent",
    "RunFinished",
    "RunStarted",
    "RunStatus",
    "SeriesName",
    "SeriesPoint",
]
