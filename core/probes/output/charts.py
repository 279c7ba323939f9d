"""The probe report's charts, built from a run's evidence: busbw by message size, matmul per device,
fio throughput and the GPU metrics over time.

A module of their own because two sections draw them: the run's report (core.probes.output.report)
and a cluster run's "Cluster" section (core.probes.cluster.report), which the run's report includes;
here, neither imports the other to draw a chart.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from core.catalog import Catalog
from core.document import BarChart, LineChart, Series
from core.probes.evidence import ProbeEvidence
from core.probes.samples import CollectiveResult, GpuMetric
from core.probes.scorecard import matmul_reference, probed_gpu, size_label

MAX_BARS = 24
# points per line of a metric chart (see JSON_SAMPLES_PER_GPU in core.probes.output.run_record)
MAX_POINTS = 240


def _thin(items: list[int], most: int) -> list[int]:
    if len(items) <= most:
        return items
    step = (len(items) - 1) / (most - 1)
    return sorted({items[round(i * step)] for i in range(most)})


def busbw_chart(coll: CollectiveResult, reference: float | None) -> BarChart | None:
    """busbw per message size (in-place and out-of-place), the expected figure as a marker on every
    bar."""
    rows = sorted((r for r in coll.rows if r.size_bytes > 0), key=lambda r: r.size_bytes)
    if not rows:
        return None
    big = [i for i, r in enumerate(rows) if r.size_bytes >= 1 << 20]
    keep = _thin(big if len(big) >= 4 else list(range(len(rows))), MAX_BARS)
    rows = [rows[i] for i in keep]

    def value(timing: object) -> float:
        bw = getattr(timing, "busbw_gbps", None)
        return float(bw) if bw is not None and math.isfinite(bw) else 0.0

    series = [Series(name="in-place", values=[value(r.in_place) for r in rows])]
    if any(r.out_of_place is not None for r in rows):
        series.append(Series(name="out-of-place", values=[value(r.out_of_place) for r in rows]))
    return BarChart(
        title="All-reduce bus bandwidth by message size",
        unit="GB/s",
        categories=[size_label(r.size_bytes) for r in rows],
        series=series,
        markers=[reference] * len(rows) if reference else None,
        marker_label="expected" if reference else None,
    )


def matmul_chart(evidence: ProbeEvidence, catalog: Catalog) -> BarChart | None:
    c = evidence.compute
    if c is None or not c.tflops_per_device:
        return None
    ref = matmul_reference(c, probed_gpu(evidence, catalog)) if c.device == "cuda" else None
    n = len(c.tflops_per_device)
    # A CPU's figure reads in GFLOP/s: in TFLOP/s its bar would be labelled 0.0.
    scale, unit = (1e3, "GFLOP/s") if 0 < max(c.tflops_per_device) < 1 else (1.0, "TFLOP/s")
    return BarChart(
        title=f"Dense {c.dtype} matmul per device ({c.matrix_size}×{c.matrix_size})",
        unit=unit,
        categories=[f"{'GPU' if c.device == 'cuda' else c.device.upper()} {i}" for i in range(n)],
        series=[Series(name="measured", values=[v * scale for v in c.tflops_per_device])],
        markers=[ref[0] * scale] * n if ref else None,
        marker_label="healthy GPU reference" if ref else None,
    )


def storage_charts(evidence: ProbeEvidence) -> list[BarChart]:
    rows = [s for s in evidence.storage if not s.skipped_reason]
    out: list[BarChart] = []
    seq = [s for s in rows if s.seq_read_bytes_per_s or s.seq_write_bytes_per_s]
    if seq:
        out.append(
            BarChart(
                title="Sequential throughput (fio)",
                unit="GB/s",
                categories=[f"{s.role}: {s.path}" for s in seq],
                series=[
                    Series(
                        name="read", values=[(s.seq_read_bytes_per_s or 0.0) / 1e9 for s in seq]
                    ),
                    Series(
                        name="write", values=[(s.seq_write_bytes_per_s or 0.0) / 1e9 for s in seq]
                    ),
                ],
            )
        )
    iops = [s for s in rows if s.rand_read_iops]
    if iops:
        out.append(
            BarChart(
                title="4 KiB random read",
                unit="thousand IOPS",
                categories=[f"{s.role}: {s.path}" for s in iops],
                series=[
                    Series(
                        name="random read", values=[(s.rand_read_iops or 0.0) / 1e3 for s in iops]
                    )
                ],
            )
        )
    return out


METRICS = (
    ("temp_c", "GPU temperature", "°C"),
    ("sm_clock_mhz", "SM clock", "MHz"),
    ("power_w", "Power", "W"),
    ("util_pct", "Utilisation", "%"),
)


def metric_charts(samples: Sequence[GpuMetric]) -> list[LineChart]:
    """One line per GPU for temperature, SM clock, power and utilisation, resampled to a common time
    grid."""
    if not samples:
        return []
    t0 = min(m.t for m in samples)
    t1 = max(m.t for m in samples)
    minutes = (t1 - t0) > 300
    scale, x_label = (60.0, "minutes") if minutes else (1.0, "seconds")
    times = sorted({m.t for m in samples})
    if len(times) <= MAX_POINTS:  # few samples: one point per sample time
        bins = len(times)
        slot = {t: i for i, t in enumerate(times)}
        x = [(t - t0) / scale for t in times]
    else:  # many: average into MAX_POINTS equal time slots
        bins = MAX_POINTS
        width = (t1 - t0) / bins
        slot = {t: min(bins - 1, int((t - t0) / width)) for t in times}
        x = [(i + 0.5) * width / scale for i in range(bins)]
    charts = []
    for field, title, unit in METRICS:
        sums: dict[int, list[float]] = defaultdict(lambda: [0.0] * bins)
        counts: dict[int, list[int]] = defaultdict(lambda: [0] * bins)
        for m in samples:
            v = getattr(m, field)
            if v is None or not math.isfinite(v):
                continue
            b = slot[m.t]
            sums[m.gpu][b] += float(v)
            counts[m.gpu][b] += 1
        if not sums:
            continue
        series = []
        for gpu in sorted(sums):
            values: list[float] = []
            last: float | None = None
            for s, n in zip(sums[gpu], counts[gpu], strict=True):
                last = s / n if n else last
                values.append(last if last is not None else math.nan)
            first = next(v for v in values if not math.isnan(v))
            series.append(
                Series(name=f"GPU {gpu}", values=[first if math.isnan(v) else v for v in values])
            )
        charts.append(
            LineChart(title=f"{title} over time", x_label=x_label, y_label=unit, x=x, series=series)
        )
    return charts
