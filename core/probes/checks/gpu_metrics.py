"""GPU live metrics: ONE streaming process for the whole run, not a poll per sample.

NVML (``nvml_stream.py``, when the host's Python has ``nvidia-ml-py``) is preferred because
nvidia-smi's text "is not guaranteed to be backwards compatible" (its man page); the script prints
the very CSV that ``nvidia-smi --query-gpu=... --format=csv,nounits -lms N`` prints, so one parser
(`QueryGpuStream`) reads both. The sampler runs on its own thread over the same connection (one SSH
channel of its own: paramiko multiplexes channels and each channel is used by one thread only) while
the other probes run.

Why a thread: the other probes block the runner's worker on their own commands for minutes (fio, the
burn), and the stream must be read all that time, for the live charts and for the history the burn
grades clocks and temperatures from. `MetricsSampler.start` starts that one thread; it shares only
the history (under a lock) and the runner's callbacks (which only queue), and `MetricsSampler.stop`
ends the remote process and joins it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from core.probes.checks.base import (
    HostFacts,
    LogLevel,
    ProbeContext,
    ProbeFailed,
    ProbeSkipped,
    q,
    telling_line,
)
from core.probes.parsers import QueryGpuStream
from core.probes.samples import GpuMetric
from core.probes.transport.base import CommandResult, Disconnected, Transport, TransportError

BASE_FIELDS = (
    "timestamp",
    "index",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "clocks.sm",
    "clocks.mem",
)
EVENT_FIELD = "clocks_event_reasons.active"
# drivers before 535 (Azure NHC switches at 535.54.03)
OLD_EVENT_FIELD = "clocks_throttle_reasons.active"
_BATCH_S = 0.4
_RAW_LINES = 200
_HISTORY_LIMIT = 2_000_000


def query_fields(facts: HostFacts) -> list[str]:
    return [*BASE_FIELDS, EVENT_FIELD if facts.query_fields_event_reasons else OLD_EVENT_FIELD]


def nvidia_smi_command(facts: HostFacts, interval_ms: int) -> str:
    fields = ",".join(query_fields(facts))
    return f"nvidia-smi --query-gpu={q(fields)} --format=csv,nounits -lms {int(interval_ms)}"


def sampler_command(ctx: ProbeContext) -> tuple[str, str]:
    """(command, method) for the metrics stream: NVML when the host can, else nvidia-smi."""
    interval_ms = ctx.options.metrics_interval_ms
    python = ctx.facts.python
    if python is not None and python.nvml:
        script = ctx.upload("nvml_stream.py")
        return f"{q(python.path)} {q(script)} --interval-ms {interval_ms}", "NVML"
    return nvidia_smi_command(ctx.facts, interval_ms), "nvidia-smi"


class MetricsSampler:
    """Reads the metrics stream on a thread; hands batches to ``on_batch`` and keeps a history for
    the burn."""

    def __init__(
        self,
        transport: Transport,
        command: str,
        *,
        interval_s: float,
        on_batch: Callable[[list[GpuMetric]], None],
        on_raw: Callable[[str, CommandResult], None],
        on_log: Callable[[LogLevel, str, str | None], None],
        clock: Callable[[], float],
    ) -> None:
        self.transport = transport
        self.command = command
        self.interval_s = interval_s
        self._on_batch = on_batch
        self._on_raw = on_raw
        self._on_log = on_log
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._history: list[GpuMetric] = []
        self.count = 0
        self.warnings: list[str] = []
        self.disconnected = False
        self.ended_early = False

    def start(self) -> MetricsSampler:
        self._stop.clear()
        self.disconnected = self.ended_early = False
        self._thread = threading.Thread(target=self._main, name="tuneplan-gpu-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the stream (kills the remote process group) and wait for the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def mark(self) -> int:
        """A position in the history, to read what arrived after it with `since`."""
        with self._lock:
            return len(self._history)

    def since(self, mark: int) -> list[GpuMetric]:
        with self._lock:
            return list(self._history[mark:])

    def publish(self, metrics: list[GpuMetric]) -> None:
        if not metrics:
            return
        with self._lock:
            if len(self._history) < _HISTORY_LIMIT:
                self._history.extend(metrics)
            self.count += len(metrics)
        self._on_batch(metrics)

    def _main(self) -> None:
        offset = self._clock()
        parser = QueryGpuStream(interval_s=self.interval_s)
        pending: list[GpuMetric] = []
        head: list[str] = []
        last_flush = time.monotonic()
        stream = None
        try:
            stream = self.transport.stream(self.command, timeout=None, cancel=self._stop)
            for line in stream:
                if len(head) < _RAW_LINES:
                    head.append(line)
                for metric in parser.feed(line + "\n"):
                    pending.append(metric.model_copy(update={"t": round(offset + metric.t, 3)}))
                if pending and time.monotonic() - last_flush >= _BATCH_S:
                    self.publish(pending)
                    pending, last_flush = [], time.monotonic()
        except Disconnected:
            self.disconnected = True
        except TransportError as exc:
            self._on_log("warning", f"the GPU metrics stream failed: {exc}", "gpu_metrics")
        finally:
            for metric in parser.flush():
                pending.append(metric.model_copy(update={"t": round(offset + metric.t, 3)}))
            self.publish(pending)
            for warning in parser.warnings:
                if warning not in self.warnings and len(self.warnings) < 20:
                    self.warnings.append(warning)
            result = getattr(stream, "result", None)
            if isinstance(result, CommandResult):
                self._on_raw("gpu_metrics", result.model_copy(update={"stdout": "\n".join(head)}))
                if not self._stop.is_set() and not self.disconnected:
                    self.ended_early = True
                    reason = telling_line(result.stderr) or f"exit status {result.exit_code}"
                    self._on_log(
                        "warning",
                        f"the GPU metrics stream ended early: {reason[:200]}",
                        "gpu_metrics",
                    )


def run(ctx: ProbeContext) -> None:
    """Run on its own (named in the suite): let the background stream sample for
    ``metrics_seconds``."""
    if not ctx.facts.nvidia or ctx.sampler is None:
        raise ProbeSkipped(no_gpu_reason(ctx.facts))
    end = time.monotonic() + ctx.options.metrics_seconds
    while time.monotonic() < end:
        ctx.check_cancel()
        if not ctx.sampler.running:
            break
        time.sleep(0.1)
    ctx.warnings.extend(w for w in ctx.sampler.warnings if w not in ctx.warnings)
    if ctx.sampler.disconnected:
        raise Disconnected("the connection was lost while GPU metrics were streaming")
    if ctx.sampler.count == 0:
        raise ProbeFailed("the GPU metrics stream gave no sample")


def no_gpu_reason(facts: HostFacts) -> str:
    if not facts.has("nvidia-smi"):
        return "no NVIDIA GPU found (nvidia-smi is not installed on the host)"
    return "no NVIDIA GPU found (nvidia-smi lists no GPU)"
