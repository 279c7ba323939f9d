"""``nvidia-smi dmon``: a scrolling table, one line per GPU per interval.

The first ``#`` line names the columns (``gpu pwr gtemp mtemp sm mem ... mclk pclk``), the second
gives units; both repeat every screenful. Unsupported values print ``-`` (``mtemp`` on GDDR boards).
Columns depend on ``-s``, so they are mapped by name, not position.
"""

from __future__ import annotations

import re
from datetime import datetime

from core.probes.parsers._common import clean_text, never_raises, to_float, to_int
from core.probes.samples import GpuMetric, ParseResult

# dmon column -> GpuMetric field. 'temp' is the pre-525 name of 'gtemp'; 'fb' is MiB used (-s m).
_COLUMNS = {
    "pwr": "power_w",
    "gtemp": "temp_c",
    "temp": "temp_c",
    "mtemp": "mem_temp_c",
    "sm": "util_pct",
    "mem": "mem_util_pct",
    "mclk": "mem_clock_mhz",
    "pclk": "sm_clock_mhz",
}


def _time_of(columns: list[str], cells: list[str]) -> datetime | None:
    """Wall time from the ``-o DT`` columns ('#Date Time gpu ...' -> '20240101 12:00:01')."""
    values = dict(zip(columns, cells, strict=False))
    date, clock = values.get("date"), values.get("time")
    if clock is None:
        return None
    for text, fmt in ((f"{date} {clock}", "%Y%m%d %H:%M:%S"), (clock, "%H:%M:%S")):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


@never_raises
def parse_dmon(text: str, interval_s: float = 1.0) -> ParseResult[list[GpuMetric]]:
    """Parse ``nvidia-smi dmon`` output into samples.

    Without ``-o T``, ``t`` is the tick number times ``interval_s`` (dmon's ``-d``, default 1 s); a
    tick ends when a GPU index repeats.
    """
    warnings: list[str] = []
    columns: list[str] | None = None
    samples: list[GpuMetric] = []
    tick, seen = 0, set[int]()
    t0: datetime | None = None
    for line in clean_text(text).split("\n"):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            names = stripped.lstrip("#").lower().split()
            if "gpu" in names:  # the units line ('# Idx W C ...') is skipped
                columns = names
            continue
        if columns is None:
            warnings.append(f"dmon line before any '# gpu ...' header: {stripped[:120]!r}")
            continue
        cells = stripped.split()
        if len(cells) != len(columns):
            warnings.append(
                f"expected {len(columns)} dmon columns, got {len(cells)}: {stripped[:120]!r}"
            )
            continue
        values = dict(zip(columns, cells, strict=True))
        gpu = to_int(values.get("gpu"))
        if gpu is None or not re.fullmatch(r"\d+", values.get("gpu", "")):
            warnings.append(f"dmon line without a GPU index: {stripped[:120]!r}")
            continue
        if gpu in seen:
            tick, seen = tick + 1, set()
        seen.add(gpu)
        wall = _time_of(columns, cells)
        if wall is not None:
            t0 = t0 or wall
            t = (wall - t0).total_seconds()
        else:
            t = tick * interval_s
        fields: dict[str, float | None] = {
            field: to_float(values.get(col)) for col, field in _COLUMNS.items() if col in values
        }
        fb = to_float(values.get("fb"))
        samples.append(
            GpuMetric(
                t=t,
                gpu=gpu,
                wall_time=wall,
                mem_used_bytes=int(fb * 2**20) if fb is not None else None,
                **fields,
            )
        )
    if not samples:
        warnings.append("no dmon sample line found")
        return ParseResult(value=None, warnings=warnings)
    return ParseResult(value=samples, warnings=warnings)
