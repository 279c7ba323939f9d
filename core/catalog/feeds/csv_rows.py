"""Reading a catalog CSV strictly: the header must hold the columns a format needs, numbers must be
numbers.

A refresh writes nothing unless every file parses, so a garbled file (HTML from a proxy, a truncated
download, a renamed column) must be an error that names the file, the line and the column, not a
silent empty result.
"""

from __future__ import annotations

import csv
import io
import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

from core.catalog.records import CatalogError

# SkyPilot's GpuInfo and gpuhunt's provider_data are long JSON-ish cells
csv.field_size_limit(1 << 20)
_EXTRA = "\0extra"  # DictReader's key for cells past the header
# DictReader's value for cells a row lacks: what a file cut mid-row looks like
_MISSING: Any = object()


# Terminal escape sequences whole (ECMA-48): CSI (ESC [ ... final byte), OSC and other strings (ESC
# ] ... BEL or ESC \), and two-character escapes; what is left of any other control character is
# dropped one by one.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?"
)


def _clean(cell: str) -> str:
    """A cell without terminal escapes, control or format characters (an instance name from a feed
    must not reach the terminal or a launch file as code) and without surrounding blanks."""
    return "".join(
        ch for ch in _ESCAPES.sub("", cell) if unicodedata.category(ch) not in ("Cc", "Cf")
    ).strip()


def rows(text: str, where: str, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row; CatalogError when the header lacks a required column, a
    row has more or fewer cells than the header or a quote is left open (what a cut or mangled file
    looks like)."""
    if not text.strip():
        raise CatalogError(f"{where} is empty: expected a CSV file with a header row")
    reader = csv.DictReader(io.StringIO(text), restkey=_EXTRA, restval=_MISSING, strict=True)
    try:
        header = list(reader.fieldnames or [])
    except csv.Error as exc:
        raise CatalogError(f"{where} does not start with a CSV header row: {exc}") from None
    missing = [c for c in required if c not in header]
    if missing:
        shown = ", ".join(header[:6]) if header else "nothing"
        raise CatalogError(
            f"{where} is not a catalog of this format: it lacks the column(s) {', '.join(missing)}"
            f" (its first row has {shown[:120]})"
        )
    try:
        for row in reader:
            if _EXTRA in row:
                raise CatalogError(f"{where} line {reader.line_num} has more cells than the header")
            if any(v is _MISSING for v in row.values()):
                raise CatalogError(
                    f"{where} line {reader.line_num} has fewer cells than the header (is the file "
                    "cut off?)"
                )
            yield (
                reader.line_num,
                {k: _clean(v or "") for k, v in row.items() if isinstance(v, str | None)},
            )
    except csv.Error as exc:
        raise CatalogError(f"{where} line {reader.line_num} is not valid CSV: {exc}") from None


def number(value: str, where: str, line: int, column: str) -> float | None:
    """A non-negative finite number, None for an empty cell; CatalogError naming the cell
    otherwise."""
    if value == "" or value.lower() in ("nan", "none"):
        return None
    try:
        x = float(value)
    except ValueError:
        raise CatalogError(
            f"{where} line {line}: {column} '{value[:40]}' is not a number"
        ) from None
    if not math.isfinite(x) or x < 0:
        raise CatalogError(
            f"{where} line {line}: {column} '{value[:40]}' must be a number from 0 up"
        )
    return x
