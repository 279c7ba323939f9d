"""Per-GPU sample history for the live charts: GpuMetric batches in, ring buffers of eight metrics
out.

No Qt here: the pane feeds batches as events arrive, and the redraw timer reads contiguous views.
Times are the probe's own ``t`` (seconds since its stream started); when a stream restarts after a
reconnect its clock starts again at 0, so a per-GPU offset keeps each history ascending. A reopened
run's samples come from the store as one :class:`SampleTable` and go in with
:meth:`GpuHistory.load_table`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from core.probes import GpuMetric, SampleTable
from gui.probe.ring import FloatArray, RingBuffer

HISTORY_S = 3600.0
SAMPLE_HZ = 10.0


@dataclass(frozen=True)
class MetricSpec:
    """One chartable GpuMetric field: ``scale`` turns the stored value into ``unit``."""

    field: str
    title: str
    unit: str
    short: str  # column header of the newest-value table
    scale: float = 1.0
    y_range: tuple[float, float] | None = None


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("util_pct", "GPU utilisation", "%", "%", y_range=(0.0, 100.0)),
    MetricSpec("mem_used_bytes", "Memory used", "GiB", "GiB", scale=1 / 2**30),
    MetricSpec("temp_c", "Temperature", "°C", "°C"),
    MetricSpec("power_w", "Power", "W", "W"),
    MetricSpec("sm_clock_mhz", "SM clock", "MHz", "MHz"),
    MetricSpec("mem_util_pct", "Memory controller busy", "%", "mem %", y_range=(0.0, 100.0)),
    MetricSpec("mem_temp_c", "Memory temperature", "°C", "mem °C"),
    MetricSpec("mem_clock_mhz", "Memory clock", "MHz", "mem MHz"),
)
CHANNEL = {spec.field: i for i, spec in enumerate(METRICS)}
DEFAULT_SHOWN = ("util_pct", "mem_used_bytes", "temp_c", "power_w", "sm_clock_mhz")


def metric_row(sample: GpuMetric) -> list[float]:
    """The eight channel values of one sample in chart units (NaN where the tool gave none)."""
    row = []
    for spec in METRICS:
        value = getattr(sample, spec.field)
        row.append(float("nan") if value is None else float(value) * spec.scale)
    return row


def metrics_from_table(table: SampleTable) -> dict[str, np.ndarray]:
    """Stored sample columns → chart channels (units as the live charts show them)."""
    nan = np.full(len(table), np.nan)
    return {
        "util_pct": table.util,
        "mem_used_bytes": table.mem_used / 2**30,
        "temp_c": table.temp,
        "power_w": table.power,
        "sm_clock_mhz": table.sm_clock,
        "mem_util_pct": nan,
        "mem_temp_c": nan,
        "mem_clock_mhz": table.mem_clock,
    }


class GpuHistory:
    """One ring buffer per GPU index, created on the GPU's first sample."""

    def __init__(self, history_s: float = HISTORY_S, sample_hz: float = SAMPLE_HZ) -> None:
        self.capacity = max(1, round(history_s * sample_hz))
        self.rings: dict[int, RingBuffer] = {}
        self._offset: dict[int, float] = {}
        self.samples = 0
        self.version = 0  # bumped on every change, so a redraw can tell whether anything is new

    @property
    def gpus(self) -> list[int]:
        return sorted(self.rings)

    def add(self, metrics: Iterable[GpuMetric]) -> int:
        """Append a batch; returns how many samples were taken (samples with a NaN time are
        dropped)."""
        by_gpu: dict[int, tuple[list[float], list[list[float]]]] = {}
        for sample in metrics:
            times, rows = by_gpu.setdefault(sample.gpu, ([], []))
            times.append(float(sample.t))
            rows.append(metric_row(sample))
        taken = 0
        for gpu, (times, rows) in by_gpu.items():
            raw: FloatArray = np.asarray(times, dtype=np.float64)
            keep = np.isfinite(raw)
            if not keep.any():
                continue
            values = np.asarray(rows, dtype=np.float32)[keep].T
            ring = self.rings.get(gpu)
            if ring is None:
                ring = self.rings[gpu] = RingBuffer(len(METRICS), self.capacity)
            t = self._monotonic(gpu, ring, raw[keep])
            ring.extend(t, values)
            taken += int(t.shape[0])
        if taken:
            self.samples += taken
            self.version += 1
        return taken

    def add_columns(self, gpu: int, t: FloatArray, values: FloatArray) -> int:
        """Append one GPU's samples already in columns (a reopened run): ``values`` is (channels,
        n)."""
        raw: FloatArray = np.asarray(t, dtype=np.float64)
        keep = np.isfinite(raw)
        if not keep.any():
            return 0
        ring = self.rings.get(gpu)
        if ring is None:
            ring = self.rings[gpu] = RingBuffer(len(METRICS), self.capacity)
        times = self._monotonic(gpu, ring, raw[keep])
        ring.extend(times, np.asarray(values, dtype=np.float32)[:, keep])
        self.samples += int(times.shape[0])
        self.version += 1
        return int(times.shape[0])

    def load_table(self, table: SampleTable) -> int:
        """Append a stored run's samples (each GPU's rows in time order); returns how many were
        taken."""
        channels = metrics_from_table(table)
        taken = 0
        for gpu in table.gpus():
            mask = table.gpu == gpu
            t = table.t[mask]
            order = np.argsort(t, kind="stable")
            values = np.vstack([channels[name][mask][order] for name in CHANNEL])
            taken += self.add_columns(gpu, t[order], values)
        return taken

    def _monotonic(self, gpu: int, ring: RingBuffer, t: FloatArray) -> FloatArray:
        """Shift a restarted stream's clock so it continues after the last stored time."""
        offset = self._offset.get(gpu, 0.0)
        shifted = t + offset
        last = ring.latest_t
        if last is not None and shifted[0] < last:
            step = float(np.median(np.diff(t))) if t.shape[0] > 1 else 1.0 / SAMPLE_HZ
            offset += last - shifted[0] + max(step, 1e-3)
            shifted = t + offset
        # a batch that goes backwards inside itself stays ascending
        shifted = np.maximum.accumulate(shifted)
        self._offset[gpu] = offset
        return shifted

    @property
    def first_t(self) -> float | None:
        """The oldest time still held (the left edge of a whole-run view)."""
        starts = [float(r.last()[0][0]) for r in self.rings.values() if len(r)]
        return min(starts) if starts else None

    @property
    def latest_t(self) -> float | None:
        ends = [r.latest_t for r in self.rings.values() if r.latest_t is not None]
        return max(ends) if ends else None

    def clear(self) -> None:
        self.rings.clear()
        self._offset.clear()
        self.samples = 0
        self.version += 1
