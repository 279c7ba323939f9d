"""A run's GPU samples as one float64 matrix: the columns, packing metrics into blocks, and reading
blocks back.

Samples are the history's volume: up to 10 Hz × 8 GPUs for hours. A row per sample reloads too
slowly (an hour, 288k rows, took 0.9 s just to fetch on a 2-core machine, before any conversion), so
each batch the runner flushes becomes rows of ``sample_blocks`` holding a float64 matrix (columns
`SAMPLE_COLUMNS`, NaN where the tool gave no value), and comes back as NumPy columns with no
per-sample Python object. The layout lives here, apart from the store's SQL, because it is the one
part that is NumPy and not SQLite, and a benchmark packs samples by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.probes.parsers._common import CLOCK_EVENT_BITS
from core.probes.samples import GpuMetric

SAMPLE_COLUMNS = (
    "t",
    "gpu",
    "util",
    "mem_used",
    "mem_total",
    "temp",
    "power",
    "sm_clock",
    "mem_clock",
    "throttle",
)
BLOCK_ROWS = 4096  # a block stays small enough to write in one go


@dataclass
class SampleTable:
    """GPU samples of one run as columns (float64; NaN where the tool gave no value), in arrival
    order."""

    t: np.ndarray
    gpu: np.ndarray
    util: np.ndarray
    mem_used: np.ndarray
    mem_total: np.ndarray
    temp: np.ndarray
    power: np.ndarray
    sm_clock: np.ndarray
    mem_clock: np.ndarray
    throttle: np.ndarray

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @classmethod
    def empty(cls) -> SampleTable:
        return cls(*(np.empty(0, dtype=np.float64) for _ in SAMPLE_COLUMNS))

    def gpus(self) -> list[int]:
        """GPU indices present, ascending."""
        return sorted(int(g) for g in np.unique(self.gpu[~np.isnan(self.gpu)]))

    def for_gpu(self, index: int) -> SampleTable:
        """The rows of one GPU."""
        mask = self.gpu == index
        return SampleTable(*(getattr(self, name)[mask] for name in SAMPLE_COLUMNS))


def _throttle(metric: GpuMetric) -> int | None:
    if metric.clocks_event_mask is not None:
        return metric.clocks_event_mask
    if not metric.clocks_event_reasons:
        return None
    names = {name: bit for bit, name in CLOCK_EVENT_BITS.items()}
    return sum(names.get(reason, 0) for reason in set(metric.clocks_event_reasons)) or None


def sample_values(metric: GpuMetric) -> tuple[float | int | None, ...]:
    """One metric as the values of `SAMPLE_COLUMNS` (``t`` as given: the runner makes it
    run-relative)."""
    return (
        metric.t,
        metric.gpu,
        metric.util_pct,
        metric.mem_used_bytes,
        metric.mem_total_bytes,
        metric.temp_c,
        metric.power_w,
        metric.sm_clock_mhz,
        metric.mem_clock_mhz,
        _throttle(metric),
    )


def pack_samples(metrics: Sequence[GpuMetric]) -> np.ndarray:
    """Metrics -> float64 matrix (rows x columns), None -> NaN."""
    return np.array([sample_values(m) for m in metrics], dtype="<f8").reshape(
        len(metrics), len(SAMPLE_COLUMNS)
    )


def sample_blocks(run_id: int, matrix: np.ndarray) -> list[dict[str, Any]]:
    """The ``sample_blocks`` rows of one packed batch: at most `BLOCK_ROWS` samples each."""
    return [
        {
            "run_id": run_id,
            "t_first": float(np.nanmin(chunk[:, 0])),
            "t_last": float(np.nanmax(chunk[:, 0])),
            "rows": int(chunk.shape[0]),
            "data": chunk.tobytes(),
        }
        for chunk in (matrix[i : i + BLOCK_ROWS] for i in range(0, matrix.shape[0], BLOCK_ROWS))
    ]


def table_from_blocks(blobs: Sequence[bytes | None]) -> SampleTable:
    """The blocks' data, in order, as one table; a block of the wrong size is skipped."""
    width = len(SAMPLE_COLUMNS)
    parts = [
        np.frombuffer(blob, dtype="<f8") for blob in blobs if blob and len(blob) % (8 * width) == 0
    ]
    if not parts:
        return SampleTable.empty()
    matrix = np.concatenate(parts).reshape(-1, width)
    return SampleTable(
        *(np.ascontiguousarray(matrix[:, i], dtype=np.float64) for i in range(width))
    )


__all__ = [
    "BLOCK_ROWS",
    "SAMPLE_COLUMNS",
    "SampleTable",
    "pack_samples",
    "sample_blocks",
    "sample_values",
    "table_from_blocks",
]
