"""fio ``--output-format=json`` (fio 2.x to 3.x).

Traps seen in real files: text before the JSON (``fio: terminating on signal 2``, job banners with
``json,normal``), no ``bw_bytes`` in fio 3.1 (only ``bw`` in KiB/s), ``clat_ns`` in 3.x but ``clat``
in µs in 2.x, and JSON cut off when the remote command is killed. A cut JSON is repaired by closing
the open brackets after the last complete value, and the result is flagged ``truncated``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from core.probes.parsers._common import clean_text, never_raises, to_float, to_int
from core.probes.samples import FioDirection, FioJob, FioResult, ParseResult

_START = re.compile(r'\{\s*"fio version"')
_MAX_REPAIR_TRIES = 400


def _cut_points(text: str) -> list[tuple[int, str]]:
    """(end index, closing brackets) after each complete JSON value, latest first."""
    points: list[tuple[int, str]] = []
    stack: list[str] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if not stack:
                break
            stack.pop()
            if not stack:
                return [(i + 1, "")]
            points.append((i + 1, "".join(reversed(stack))))
        elif char == ",":
            points.append((i, "".join(reversed(stack))))
    return list(reversed(points))


def _load(text: str) -> tuple[Any, bool]:
    """(decoded JSON, was_repaired); raises ValueError when nothing decodes."""
    try:
        return json.JSONDecoder().raw_decode(text)[0], False
    except ValueError:
        pass
    for tries, (end, closers) in enumerate(_cut_points(text)):
        if tries >= _MAX_REPAIR_TRIES:
            break
        candidate = text[:end].rstrip().rstrip(",") + closers
        try:
            return json.loads(candidate), True
        except ValueError:
            continue
    raise ValueError("no decodable JSON")


def _num(section: dict[str, Any], key: str) -> float | None:
    """A finite JSON number, else None (fio never prints NaN, but a damaged file may)."""
    value = section.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) and abs(number) < 1e30 else None


def _percentile(lat: dict[str, Any], wanted: float) -> float | None:
    table = lat.get("percentile")
    if not isinstance(table, dict):
        return None
    for key, value in table.items():
        point = to_float(str(key))
        if point is not None and abs(point - wanted) < 1e-6 and isinstance(value, int | float):
            return float(value) if math.isfinite(value) else None
    return None


def _direction(section: Any) -> FioDirection | None:
    if not isinstance(section, dict):
        return None
    clat, scale = section.get("clat_ns"), 1.0
    if not isinstance(clat, dict):
        clat, scale = section.get("clat"), 1000.0  # fio 2.x: microseconds
    clat = clat if isinstance(clat, dict) else {}
    lat = section.get("lat_ns") if isinstance(section.get("lat_ns"), dict) else None
    lat_scale = 1.0
    if lat is None and isinstance(section.get("lat"), dict):
        lat, lat_scale = section["lat"], 1000.0

    def scaled(value: float | None, factor: float) -> float | None:
        return value * factor if value is not None else None

    bw_bytes = _num(section, "bw_bytes")
    if bw_bytes is None and (bw_kib := _num(section, "bw")) is not None:
        bw_bytes = bw_kib * 1024.0
    runtime_ms = _num(section, "runtime")
    io_bytes = _num(section, "io_bytes")
    total_ios = _num(section, "total_ios")
    return FioDirection(
        io_bytes=int(io_bytes) if io_bytes is not None else None,
        bw_bytes_per_s=bw_bytes,
        iops=_num(section, "iops"),
        runtime_s=runtime_ms / 1000.0 if runtime_ms is not None else None,
        total_ios=int(total_ios) if total_ios is not None else None,
        clat_mean_ns=scaled(_num(clat, "mean"), scale),
        clat_p50_ns=scaled(_percentile(clat, 50.0), scale),
        clat_p99_ns=scaled(_percentile(clat, 99.0), scale),
        clat_p999_ns=scaled(_percentile(clat, 99.9), scale),
        lat_mean_ns=scaled(_num(lat, "mean"), lat_scale) if lat else None,
    )


def _job(raw: dict[str, Any], global_options: dict[str, Any], warnings: list[str]) -> FioJob:
    job_options = raw.get("job options")
    options = {**global_options, **(job_options if isinstance(job_options, dict) else {})}
    name = raw.get("jobname")
    job = FioJob(
        name=str(name) if name is not None else "?",
        rw=str(options["rw"]) if "rw" in options else None,
        bs=str(options["bs"]) if "bs" in options else None,
        iodepth=to_int(str(options.get("iodepth"))) if "iodepth" in options else None,
        numjobs=to_int(str(options.get("numjobs"))) if "numjobs" in options else None,
        error=raw.get("error") if isinstance(raw.get("error"), int) else None,
        read=_direction(raw.get("read")),
        write=_direction(raw.get("write")),
    )
    runtime = raw.get("job_runtime")
    if isinstance(runtime, int | float):
        job.runtime_s = runtime / 1000.0
    else:
        sides = [d.runtime_s for d in (job.read, job.write) if d and d.runtime_s]
        job.runtime_s = max(sides) if sides else None
    if job.error:
        warnings.append(f"fio job {job.name!r} reported error {job.error}")
    return job


@never_raises
def parse_fio_json(text: str) -> ParseResult[FioResult]:
    """Parse fio JSON output, skipping any text before it and repairing a cut-off end."""
    cleaned = clean_text(text)
    warnings: list[str] = []
    match = _START.search(cleaned)
    start = match.start() if match else cleaned.find("{")
    if start < 0:
        return ParseResult(value=None, warnings=["no JSON object in fio output"])
    prefix = cleaned[:start].strip()
    if prefix:
        warnings.append(f"text before the fio JSON: {prefix.splitlines()[0][:120]!r}")
    try:
        data, repaired = _load(cleaned[start:])
    except ValueError:
        return ParseResult(value=None, warnings=[*warnings, "fio JSON could not be decoded"])
    if not isinstance(data, dict):
        return ParseResult(value=None, warnings=[*warnings, "fio JSON is not an object"])
    if repaired:
        warnings.append("fio JSON was cut off; read up to the last complete value")
    raw_options, raw_jobs = data.get("global options"), data.get("jobs")
    global_options: dict[str, Any] = raw_options if isinstance(raw_options, dict) else {}
    jobs: list[Any] = raw_jobs if isinstance(raw_jobs, list) else []
    result = FioResult(
        fio_version=str(data["fio version"]) if "fio version" in data else None,
        jobs=[_job(raw, global_options, warnings) for raw in jobs if isinstance(raw, dict)],
        truncated=repaired,
    )
    for disk in data.get("disk_util") or []:
        if (
            isinstance(disk, dict)
            and isinstance(disk.get("name"), str)
            and isinstance(disk.get("util"), int | float)
        ):
            result.disk_util_pct[disk["name"]] = float(disk["util"])
    if not result.jobs:
        warnings.append("fio JSON has no complete job")
    return ParseResult(value=result, warnings=warnings)
