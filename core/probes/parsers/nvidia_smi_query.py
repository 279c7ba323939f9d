"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` and its ``-l``/``-lms`` stream.

One row per GPU per tick. The header names the fields (``memory.used [MiB]``); values carry units
unless ``nounits``; missing values read ``[N/A]``/``[Not Supported]``. Field lists differ per
driver, so every field is optional and unknown fields are kept only in the raw row.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from core.probes.parsers._common import (
    clean_text,
    clock_reasons_from_mask,
    is_missing,
    never_raises,
    to_bool,
    to_bytes,
    to_float,
    to_int,
)
from core.probes.samples import GpuHealth, GpuInfo, GpuMetric, NvidiaSmiReport, ParseResult

Row = dict[str, str | None]

_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*(?: \[[^\]]*\])?$")
_KNOWN_PLAIN_FIELDS = {
    "index",
    "name",
    "uuid",
    "serial",
    "pstate",
    "timestamp",
    "count",
    "hostname",
    "driver_version",
    "vbios_version",
    "compute_mode",
    "persistence_mode",
}
_TIMESTAMP_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")
_REASON_FIELDS = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
    "sync_boost",
    "display_clock_setting",
)


def _split_field(cell: str) -> tuple[str, str | None]:
    """'memory.used [MiB]' -> ('memory.used', 'MiB')."""
    cell = cell.strip()
    match = re.match(r"^(.*?)\s*\[([^\]]*)\]$", cell)
    if match:
        return match.group(1).strip().lower(), match.group(2).strip()
    return cell.lower(), None


def _looks_like_header(cells: list[str]) -> bool:
    if not cells or not all(_FIELD.match(c.strip()) for c in cells):
        return False
    return any(
        "." in c or "[" in c or "_" in c or c.strip().lower() in _KNOWN_PLAIN_FIELDS for c in cells
    )


def _parse_timestamp(value: str | None) -> datetime | None:
    if is_missing(value):
        return None
    assert value is not None
    for fmt in _TIMESTAMP_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
    return None


def _get(row: Row, *names: str) -> str | None:
    """First present, non-missing value among field ``names`` (handles throttle->event renames)."""
    for name in names:
        value = row.get(name)
        if not is_missing(value):
            return value
    return None


def _mib(row: Row, units: dict[str, str], name: str) -> int | None:
    return to_bytes(row.get(name), units.get(name) or "MiB")


def _reasons(row: Row) -> tuple[int | None, list[str]]:
    mask = to_int(_get(row, "clocks_event_reasons.active", "clocks_throttle_reasons.active"))
    if mask is not None:
        return mask, clock_reasons_from_mask(mask)
    active = [
        name
        for name in _REASON_FIELDS
        if to_bool(_get(row, f"clocks_event_reasons.{name}", f"clocks_throttle_reasons.{name}"))
    ]
    return None, active


class _CsvRows:
    """Turns CSV lines into field->value dicts; remembers the header (it may repeat in a stream)."""

    def __init__(self, fields: Sequence[str] | None) -> None:
        self.fields: list[str] | None = None
        self.units: dict[str, str] = {}
        self.warnings: list[str] = []
        if fields:
            self._set_header(list(fields))

    def _set_header(self, cells: list[str]) -> None:
        self.fields, self.units = [], {}
        for cell in cells:
            name, unit = _split_field(cell)
            self.fields.append(name)
            if unit:
                self.units[name] = unit

    def read(self, line: str) -> Row | None:
        if not line.strip():
            return None
        try:
            cells = next(csv.reader([line], skipinitialspace=True))
        except (csv.Error, StopIteration):
            self.warnings.append(f"unreadable CSV line: {line[:120]!r}")
            return None
        cells = [c.strip() for c in cells]
        if _looks_like_header(cells):
            self._set_header(cells)
            return None
        if self.fields is None:
            self.warnings.append(
                f"data before any header, pass fields= for noheader output: {line[:120]!r}"
            )
            return None
        if len(cells) != len(self.fields):
            self.warnings.append(
                f"expected {len(self.fields)} values, got {len(cells)}: {line[:120]!r}"
            )
            return None
        return {
            name: (None if is_missing(value) else value)
            for name, value in zip(self.fields, cells, strict=True)
        }


def _metric(
    row: Row, units: dict[str, str], t: float, gpu: int, wall: datetime | None
) -> GpuMetric:
    mask, reasons = _reasons(row)
    return GpuMetric(
        t=t,
        gpu=gpu,
        wall_time=wall,
        util_pct=to_float(row.get("utilization.gpu")),
        mem_util_pct=to_float(row.get("utilization.memory")),
        mem_used_bytes=_mib(row, units, "memory.used"),
        mem_total_bytes=_mib(row, units, "memory.total"),
        temp_c=to_float(row.get("temperature.gpu")),
        mem_temp_c=to_float(row.get("temperature.memory")),
        power_w=to_float(_get(row, "power.draw", "power.draw.average", "power.draw.instant")),
        power_limit_w=to_float(_get(row, "enforced.power.limit", "power.limit")),
        sm_clock_mhz=to_float(_get(row, "clocks.current.sm", "clocks.sm")),
        mem_clock_mhz=to_float(_get(row, "clocks.current.memory", "clocks.mem")),
        clocks_event_mask=mask,
        clocks_event_reasons=reasons,
    )


def _info(row: Row, units: dict[str, str], gpu: int) -> GpuInfo:
    return GpuInfo(
        index=gpu,
        name=row.get("name"),
        uuid=row.get("uuid"),
        serial=row.get("serial"),
        pci_bus_id=_get(row, "pci.bus_id"),
        driver=row.get("driver_version"),
        vbios=row.get("vbios_version"),
        compute_cap=row.get("compute_cap"),
        memory_total_bytes=_mib(row, units, "memory.total"),
        pcie_gen_current=to_int(row.get("pcie.link.gen.current")),
        pcie_gen_max=to_int(row.get("pcie.link.gen.max")),
        pcie_width_current=to_int(row.get("pcie.link.width.current")),
        pcie_width_max=to_int(row.get("pcie.link.width.max")),
        persistence_mode=to_bool(row.get("persistence_mode")),
        mig_mode=row.get("mig.mode.current"),
        ecc_mode=row.get("ecc.mode.current"),
        compute_mode=row.get("compute_mode"),
        power_limit_w=to_float(_get(row, "enforced.power.limit", "power.limit")),
        max_sm_clock_mhz=to_float(row.get("clocks.max.sm")),
        max_mem_clock_mhz=to_float(row.get("clocks.max.memory")),
        fabric_state=row.get("fabric.state"),
        fabric_status=row.get("fabric.status"),
    )


def _health(row: Row, gpu: int) -> GpuHealth:
    _, reasons = _reasons(row)
    histogram = {
        level: value
        for level in ("max", "high", "partial", "low", "none")
        if (value := to_int(row.get(f"remapped_rows.histogram.{level}"))) is not None
    }
    return GpuHealth(
        index=gpu,
        pci_bus_id=row.get("pci.bus_id"),
        ecc_volatile_correctable=to_int(row.get("ecc.errors.corrected.volatile.total")),
        ecc_volatile_uncorrectable=to_int(row.get("ecc.errors.uncorrected.volatile.total")),
        ecc_aggregate_correctable=to_int(row.get("ecc.errors.corrected.aggregate.total")),
        ecc_aggregate_uncorrectable=to_int(row.get("ecc.errors.uncorrected.aggregate.total")),
        ecc_aggregate_sram_correctable=to_int(row.get("ecc.errors.corrected.aggregate.sram")),
        ecc_aggregate_sram_uncorrectable=to_int(row.get("ecc.errors.uncorrected.aggregate.sram")),
        sram_threshold_exceeded=to_bool(
            row.get("ecc.errors.uncorrected.aggregate.sram.thresholdexceeded")
        ),
        retired_pages_sbe=to_int(row.get("retired_pages.single_bit_ecc.count")),
        retired_pages_dbe=to_int(row.get("retired_pages.double_bit.count")),
        retired_pages_pending=to_bool(row.get("retired_pages.pending")),
        remapped_rows_correctable=to_int(row.get("remapped_rows.correctable")),
        remapped_rows_uncorrectable=to_int(row.get("remapped_rows.uncorrectable")),
        remapped_rows_pending=to_bool(row.get("remapped_rows.pending")),
        remapped_rows_failure=to_bool(row.get("remapped_rows.failure")),
        remap_histogram=histogram,
        clocks_event_reasons=reasons,
        recovery_action=row.get("gpu_recovery_action"),
    )


class QueryGpuStream:
    """Incremental reader for ``nvidia-smi --query-gpu=... --format=csv -lms N`` output.

    Feed it chunks as they arrive over SSH; it yields one :class:`GpuMetric` per complete row and
    never raises. Without a ``timestamp`` field, ``t`` counts ticks times ``interval_s`` (a tick
    ends when a GPU index repeats).
    """

    def __init__(self, fields: Sequence[str] | None = None, interval_s: float = 1.0) -> None:
        self._rows = _CsvRows(fields)
        self._interval_s = interval_s
        self._buffer = ""
        self._t0: datetime | None = None
        self._tick = 0
        self._seen_in_tick: set[str] = set()
        self._numbers: dict[str, int] = {}
        self.last_rows: dict[int, Row] = {}  # latest raw row per GPU, for inventory and health

    @property
    def warnings(self) -> list[str]:
        return self._rows.warnings

    @property
    def units(self) -> dict[str, str]:
        return self._rows.units

    def feed(self, chunk: str) -> list[GpuMetric]:
        """Add text; return the samples of every line it completed."""
        try:
            self._buffer += clean_text(chunk)
            *lines, self._buffer = self._buffer.split("\n")
            return [m for line in lines if (m := self._line(line)) is not None]
        except Exception as exc:  # by design: a stream must survive anything the remote prints
            self._rows.warnings.append(f"internal parser error in QueryGpuStream: {exc!r}")
            return []

    def flush(self) -> list[GpuMetric]:
        """Parse a last line that had no newline (the stream ended)."""
        rest, self._buffer = self._buffer, ""
        return self.feed(rest + "\n") if rest.strip() else []

    def _line(self, line: str) -> GpuMetric | None:
        row = self._rows.read(line)
        if row is None:
            return None
        # Which GPU: 'index' when queried, else uuid/bus id, else a single-GPU stream.
        identity = next((str(row[k]) for k in ("index", "uuid", "pci.bus_id") if row.get(k)), "")
        if identity in self._seen_in_tick:
            self._tick += 1
            self._seen_in_tick.clear()
        self._seen_in_tick.add(identity)
        index = to_int(row.get("index"))
        if index is None or index < 0:
            index = self._numbers.setdefault(identity, len(self._numbers))
        gpu = index
        wall = _parse_timestamp(row.get("timestamp"))
        if wall is not None:
            self._t0 = self._t0 or wall
            t = (wall - self._t0).total_seconds()
        else:
            t = self._tick * self._interval_s
        self.last_rows[gpu] = row
        return _metric(row, self._rows.units, t, gpu, wall)


def iter_query_gpu(
    lines: Iterable[str], fields: Sequence[str] | None = None, interval_s: float = 1.0
) -> Iterator[GpuMetric]:
    """Generator over a line iterator (e.g. a paramiko channel file); never raises on bad lines."""
    stream = QueryGpuStream(fields, interval_s)
    for line in lines:
        yield from stream.feed(line if line.endswith("\n") else line + "\n")
    yield from stream.flush()


@never_raises
def parse_query_gpu(text: str, fields: Sequence[str] | None = None) -> ParseResult[NvidiaSmiReport]:
    """Parse a finished ``--query-gpu`` CSV output into inventory, health and metric samples.

    ``fields`` is needed only for ``noheader`` output. With ``-l``, GPUs repeat per tick; the
    inventory and health are taken from each GPU's last row.
    """
    stream = QueryGpuStream(fields)
    text = clean_text(text)
    metrics = stream.feed(text) + stream.flush()
    warnings = list(stream.warnings)
    if not stream.last_rows:
        if "no devices were found" in text.lower():
            warnings.append("nvidia-smi found no GPU")
        warnings.append("no --query-gpu data row found")
        return ParseResult(value=None, warnings=warnings)
    last = stream.last_rows
    gpus = [_info(row, stream.units, gpu) for gpu, row in sorted(last.items())]
    health = [_health(row, gpu) for gpu, row in sorted(last.items())]
    drivers = {g.driver for g in gpus if g.driver}
    report = NvidiaSmiReport(
        driver_version=next(iter(drivers)) if len(drivers) == 1 else None,
        attached_gpus=to_int(next((r.get("count") for r in last.values() if r.get("count")), None)),
        gpus=gpus,
        health=health,
        metrics=metrics,
    )
    if report.attached_gpus is not None and report.attached_gpus != len(gpus):
        warnings.append(
            f"nvidia-smi reports {report.attached_gpus} GPUs but {len(gpus)} rows were read"
        )
    return ParseResult(value=report, warnings=warnings)
