"""nccl-tests / rccl-tests (``all_reduce_perf`` and friends) text output, plus the torch fallback
table.

Real logs are messy: srun ``-l`` and mpirun ``--tag-output`` prefixes (``0: ``, ``[1,0]<stdout>:``),
``NCCL INFO`` lines in the middle of the table, a ``NCCL version`` line before it, headers that lost
their ``#`` in a copy/paste, collapsed whitespace, and failure tails (``Test NCCL failure ...``).
Data rows are recognised by shape (13 tokens: size count type redop root, then time algbw busbw
#wrong twice), not by position after a header. ``-J`` JSON output is accepted too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.probes.parsers._common import clean_text, never_raises, to_float, to_int
from core.probes.samples import (
    CollectiveDevice,
    CollectiveResult,
    CollectiveRow,
    CollectiveTiming,
    ParseResult,
)

_PREFIX = re.compile(r"^\s*(?:\d+:\s|\[\d+,\d+\]<std(?:out|err)>:\s?)")
_RANK = re.compile(
    r"^#?\s*Rank\s+(\d{1,9})\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d{1,9})"
    r"\s+\[([^\]]*)\]\s*(.*)$"
)
_PARAMS = re.compile(
    r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)"
    r"(?:\s+step:\s*(\d+)\((factor|bytes)\))?"
)
MOST_SIZES = 4096  # a header whose sweep would have more sizes than this is not taken as a plan
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d{1,18})\s*(OK|FAILED)?", re.IGNORECASE)
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*([-+0-9.eE]+|nan|inf)\s*(OK|FAILED)?", re.IGNORECASE)
_FAILURE = re.compile(
    r"(Test (?:\w+ )?failure|Segmentation fault|srun: error|mpirun noticed|MPI_ABORT)",
    re.IGNORECASE,
)
_OP = re.compile(r"(?:Collective test (?:starting|concluded):\s*|/|^|\s)(\w+?)_perf\b")
_DTYPE = re.compile(r"^[a-z][a-z0-9_]*$", re.IGNORECASE)
_SIZE = re.compile(r"^\s*([0-9.]+)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_BYTES = {
    "b": 1,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}


def _timing(tokens: list[str]) -> CollectiveTiming | None:
    time_us, algbw, busbw = (to_float(t) for t in tokens[:3])
    if time_us is None or algbw is None or busbw is None:
        return None
    wrong_text = tokens[3].rstrip("*")
    wrong = None if wrong_text.upper() == "N/A" else to_int(wrong_text)
    return CollectiveTiming(time_us=time_us, algbw_gbps=algbw, busbw_gbps=busbw, wrong=wrong)


def _data_row(tokens: list[str]) -> CollectiveRow | None:
    """A nccl-tests result row, or None when ``tokens`` are not one."""
    if len(tokens) < 13 or not (tokens[0].isdigit() and tokens[1].isdigit()):
        return None
    if max(len(tokens[0]), len(tokens[1]), len(tokens[4])) > 20:
        return None
    if not (
        _DTYPE.match(tokens[2]) and _DTYPE.match(tokens[3]) and re.fullmatch(r"-?\d+", tokens[4])
    ):
        return None
    oop, inp = _timing(tokens[5:9]), _timing(tokens[9:13])
    if oop is None or inp is None:
        return None
    return CollectiveRow(
        size_bytes=int(tokens[0]),
        count=int(tokens[1]),
        dtype=tokens[2],
        redop=tokens[3],
        root=int(tokens[4]),
        out_of_place=oop,
        in_place=inp,
    )


def _infer_nranks(result: CollectiveResult) -> None:
    """all_reduce busbw = algbw * 2(n-1)/n, so n = 2 / (2 - busbw/algbw) on the largest-bandwidth
    row."""
    if result.nranks is not None or result.op not in {None, "all_reduce"}:
        return
    timings = [
        t
        for r in result.rows
        for t in (r.out_of_place, r.in_place)
        if t and t.algbw_gbps and t.busbw_gbps and t.algbw_gbps >= 1.0
    ]
    if not timings:
        return
    best = max(timings, key=lambda t: t.algbw_gbps or 0.0)
    assert best.busbw_gbps is not None and best.algbw_gbps is not None
    ratio = best.busbw_gbps / best.algbw_gbps
    if 1.0 <= ratio < 1.999:
        result.nranks, result.nranks_inferred = round(2 / (2 - ratio)), True


def _summarise(result: CollectiveResult) -> None:
    best: tuple[float, int] | None = None
    for row in result.rows:
        for timing in (row.out_of_place, row.in_place):
            if timing is None:
                continue
            result.wrong_total += timing.wrong or 0
            if timing.busbw_gbps is not None and (best is None or timing.busbw_gbps > best[0]):
                best = (timing.busbw_gbps, row.size_bytes)
    if best:
        result.peak_busbw, result.peak_busbw_size_bytes = best
    _infer_nranks(result)


def _info_line(line: str, result: CollectiveResult) -> None:
    """Facts worth showing from NCCL_DEBUG=INFO lines: version, transport, GDR, forced algorithm."""
    if match := re.search(r"NCCL version\s+(\S+)", line):
        result.nccl_version = result.nccl_version or match.group(1)
    if match := re.search(r"(NET/\S+\s*:\s*Using\s+.*?)(?:;|$)", line):
        result.net = result.net or match.group(1).strip()
    if match := re.search(r"\bGDR\s+(\d)\b", line):
        result.gdr = match.group(1) == "1"
    elif "GDRDMA" in line:
        result.gdr = True
    if match := re.search(r"NCCL_ALGO set by environment to\s+(\S+)", line):
        result.algo = match.group(1)


def _parse_markdown_table(lines: list[str]) -> CollectiveResult | None:
    """Torch ``all_reduce_bench.py`` table: ``| payload | busbw | algbw |`` with '32KiB',
    '0.92GBps'."""
    header: list[str] | None = None
    result = CollectiveResult(tool="torch_all_reduce_bench", op="all_reduce")
    for line in lines:
        if not line.strip().startswith("|"):
            continue
        cells = [c.strip().lower() for c in line.strip().strip("|").split("|")]
        if "payload" in cells and "busbw" in cells:
            header = cells
            continue
        if header is None or len(cells) != len(header) or set("".join(cells)) <= set("-: "):
            continue
        values = dict(zip(header, cells, strict=True))
        size = _SIZE.match(values.get("payload", ""))
        if not size:
            continue
        number = to_float(size.group(1))
        size_bytes = (
            number * _BYTES.get((size.group(2) or "B").lower(), 1) if number is not None else None
        )
        if size_bytes is None or not 0 <= size_bytes < 1e18:
            continue
        result.rows.append(
            CollectiveRow(
                size_bytes=int(size_bytes),
                in_place=CollectiveTiming(
                    busbw_gbps=to_float(values.get("busbw")),
                    algbw_gbps=to_float(values.get("algbw")),
                ),
            )
        )
    return result if result.rows else None


def _parse_json(data: Any) -> CollectiveResult | None:
    """``all_reduce_perf -J file.json`` output."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None
    result = CollectiveResult(tool="nccl-tests", completed="average_bus_bandwidth" in data)
    for dev in data.get("devices") or []:
        if isinstance(dev, dict) and isinstance(dev.get("rank"), int):
            result.devices.append(
                CollectiveDevice(
                    rank=dev["rank"],
                    host=dev.get("hostname"),
                    device=dev.get("device"),
                    name=dev.get("name"),
                )
            )
    for item in data["results"]:
        if not isinstance(item, dict) or not isinstance(item.get("size"), int):
            continue
        timings = []
        for key in ("out_of_place", "in_place"):
            part = item.get(key)
            timings.append(
                CollectiveTiming(
                    time_us=to_float(str(part.get("time"))),
                    algbw_gbps=to_float(str(part.get("alg_bw"))),
                    busbw_gbps=to_float(str(part.get("bus_bw"))),
                    wrong=part.get("nwrong") if isinstance(part.get("nwrong"), int) else None,
                )
                if isinstance(part, dict)
                else None
            )
        result.rows.append(
            CollectiveRow(
                size_bytes=item["size"],
                count=item.get("count") if isinstance(item.get("count"), int) else None,
                dtype=str(item.get("type")) if item.get("type") is not None else None,
                redop=str(item.get("redop")) if item.get("redop") is not None else None,
                root=item.get("root") if isinstance(item.get("root"), int) else None,
                out_of_place=timings[0],
                in_place=timings[1],
            )
        )
    avg, oob = data.get("average_bus_bandwidth"), data.get("out_of_bounds")
    if isinstance(avg, dict):
        result.avg_busbw = to_float(str(avg.get("bandwidth")))
        result.avg_busbw_ok = avg.get("okay") if isinstance(avg.get("okay"), bool) else None
    if isinstance(oob, dict):
        result.out_of_bounds = oob.get("count") if isinstance(oob.get("count"), int) else None
        result.out_of_bounds_ok = oob.get("okay") if isinstance(oob.get("okay"), bool) else None
    result.nranks = len(result.devices) or None
    return result


def planned_sizes(params: re.Match[str]) -> list[int]:
    """The message sizes the header's sweep measures: from minBytes to maxBytes, each ``step`` times
    the last (``N(factor)``) or ``step`` bytes more (``N(bytes)``), as nccl-tests' own loop steps
    (src/common.cu) and allreduce_bench.py prints it; empty when the header names no step or the
    sweep is not a plain one."""
    low, high, step, kind = (
        int(params.group(3)),
        int(params.group(4)),
        params.group(5),
        params.group(6),
    )
    if step is None or low < 1 or int(step) < 1 or (kind == "factor" and int(step) < 2):
        return []
    sizes: list[int] = []
    size = low
    while size <= high and len(sizes) <= MOST_SIZES:
        sizes.append(size)
        size = size * int(step) if kind == "factor" else size + int(step)
    return sizes if len(sizes) <= MOST_SIZES else []


def _parse_text(lines: list[str], warnings: list[str]) -> CollectiveResult:
    result = CollectiveResult()
    extra_columns = False
    for raw in lines:
        line = _PREFIX.sub("", raw, count=1).rstrip()
        if not line.strip():
            continue
        if " NCCL INFO " in line or "NCCL version" in line:
            _info_line(line, result)
            if " NCCL INFO " in line:
                continue
        if match := re.search(r"nccl-tests version\s+(\S+)", line):
            result.tests_version = match.group(1)
        if "rccl-tests" in line.lower() or "rcccl-tests" in line.lower():
            result.tool = "rccl-tests"
        if (op := _OP.search(line)) and result.op is None:
            result.op = op.group(1)
        if match := _PARAMS.match(line.strip()):
            result.planned_sizes = (
                planned_sizes(match) if not result.planned_sizes else result.planned_sizes
            )
            continue
        if match := _RANK.match(line.strip()):
            result.devices.append(
                CollectiveDevice(
                    rank=int(match.group(1)),
                    host=match.group(4),
                    device=int(match.group(5)),
                    pci=match.group(6),
                    name=match.group(7).strip() or None,
                )
            )
            continue
        if match := _OOB.search(line):
            result.out_of_bounds = int(match.group(1))
            result.out_of_bounds_ok = (
                None if match.group(2) is None else match.group(2).upper() == "OK"
            )
            continue
        if match := _AVG.search(line):
            result.avg_busbw = to_float(match.group(1))
            result.avg_busbw_ok = None if match.group(2) is None else match.group(2).upper() == "OK"
            result.completed = True
            continue
        if _FAILURE.search(line):
            result.failures.append(line.strip()[:300])
            continue
        tokens = line.split()
        row = _data_row(tokens)
        if row is not None:
            extra_columns = extra_columns or len(tokens) > 13
            result.rows.append(row)
    if extra_columns:
        warnings.append("result rows had more than 13 columns; extra columns were ignored")
    if result.tool == "unknown" and (result.rows or result.devices):
        result.tool = "nccl-tests"
    result.nranks = len({d.rank for d in result.devices}) or None
    return result


@never_raises
def parse_nccl_tests(text: str) -> ParseResult[CollectiveResult]:
    """Parse an nccl-tests/rccl-tests log (text or ``-J`` JSON) or a torch all_reduce_bench
    table."""
    warnings: list[str] = []
    cleaned = clean_text(text)
    start = cleaned.find("{")
    result: CollectiveResult | None = None
    if start >= 0 and '"results"' in cleaned:
        try:
            result = _parse_json(json.JSONDecoder().raw_decode(cleaned, start)[0])
        except ValueError:
            result = None
    lines = cleaned.split("\n")
    if result is None:
        result = _parse_text(lines, warnings)
        if not result.rows and (table := _parse_markdown_table(lines)) is not None:
            result = table
    _summarise(result)
    if not result.rows and not result.failures and result.avg_busbw is None:
        return ParseResult(value=None, warnings=[*warnings, "no nccl-tests result row found"])
    if not result.rows:
        warnings.append("no result rows; the test failed or the output was cut before the table")
    if result.tool in {"nccl-tests", "rccl-tests"} and not result.completed:
        warnings.append(
            "no '# Avg bus bandwidth' footer: the run did not finish or the output was cut"
        )
    if result.nranks_inferred:
        warnings.append(f"rank count {result.nranks} inferred from busbw/algbw (no '# Rank' lines)")
    return ParseResult(value=result, warnings=warnings)
