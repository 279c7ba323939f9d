"""``dcgmi diag -r 1|2|3|4``: DCGM's own verdict on each GPU test, read from its result table.

DCGM prints one box: ``| Diagnostic | Result |``, section rows (``|-----  Deployment  ---...``,
``+-----  Hardware  ---...``), then one row per test whose result is ``Pass``, ``Fail``, ``Warn`` or
``Skip``, alone or with the GPUs it applies to (``Pass - All``, ``Pass - GPUs: 1, 2, 3`` continued
on the next row by ``Fail - GPU: 0``). ``Warning`` / ``Info`` / ``Error`` rows carry wrapped free
text about the test above them, and DCGM 3.3 adds a ``Metadata`` section (versions, device ids). A
test's result here is the worst word found in its cell and continuation rows, so ``Pass - GPUs:
1..7`` + ``Fail - GPU: 0`` reads ``Fail - GPU: 0``; an ``Error`` row (DCGM could not run the test,
e.g. pending row remaps) is kept as its own entry, read ``Fail``.
"""

from __future__ import annotations

import re

from core.probes.parsers._common import clean_text, never_raises
from core.probes.samples import ParseResult

_ROW = re.compile(r"^\|\s*(.*?)\s*\|\s*(.*?)\s*\|$")
_SECTION = re.compile(r"^[|+]-{3,}\s*([A-Za-z][A-Za-z ]*?)\s*-+\+")
_RESULT = re.compile(r"^(Pass|Fail|Warn|Skip)\b(.*)$", re.IGNORECASE)
_NOTE_ROWS = frozenset({"warning", "info", "error"})
_SEVERITY = {"fail": 3, "warn": 2, "pass": 1, "skip": 0}
_SKIPPED_SECTIONS = frozenset({"metadata"})


def result_word(cell: str) -> str:
    """'Pass - All' -> 'pass', 'Fail - GPU: 0' -> 'fail': the verdict word a result cell starts
    with."""
    words = cell.split()
    return words[0].lower() if words else ""


def _worse(current: str, new: str) -> str:
    """The result cell to keep: the one whose leading word is more severe (Fail > Warn > Pass >
    Skip)."""
    return (
        new
        if _SEVERITY.get(result_word(new), -1) > _SEVERITY.get(result_word(current), -1)
        else current
    )


@never_raises
def parse_dcgmi_diag(text: str) -> ParseResult[dict[str, str]]:
    """Test name -> its result as DCGM printed it ('Pass', 'Pass - All', 'Fail - GPU: 0', 'Skip -
    All')."""
    results: dict[str, str] = {}
    warnings: list[str] = []
    section: str | None = None
    last_test: str | None = None
    saw_table = False
    errors = 0
    for raw in clean_text(text).split("\n"):
        line = raw.strip()
        if not line:
            continue
        if section_match := _SECTION.match(line):
            section = section_match.group(1).strip().lower()
            last_test = None
            continue
        row = _ROW.match(line)
        if row is None:
            if (
                line.lower().startswith(("error", "failed", "unable"))
                or "command not found" in line.lower()
            ):
                warnings.append(f"dcgmi reported: {line[:160]}")
            continue
        name, cell = row.group(1), row.group(2)
        if name.lower() == "diagnostic" and cell.lower() == "result":
            saw_table = True
            continue
        if section in _SKIPPED_SECTIONS:
            continue
        if name.lower() in _NOTE_ROWS:
            if name.lower() == "error":
                errors += 1
                results[f"Error {errors}"] = f"Fail - {cell}" if cell else "Fail"
                last_test = f"Error {errors}"
            else:
                # its wrapped text follows; the GPU list of the test above came before it
                last_test = None
            continue
        if not name:  # a continuation row: the previous test's next GPUs, or wrapped note text
            if last_test is not None and last_test.startswith("Error "):
                results[last_test] = f"{results[last_test]} {cell.strip()}".strip()
            elif last_test is not None and _RESULT.match(cell):
                results[last_test] = _worse(results[last_test], cell)
            continue
        if _RESULT.match(cell):
            results[name] = cell
            last_test = name
        else:
            warnings.append(f"unexpected dcgmi result for {name!r}: {cell[:80]!r}")
            last_test = None
    if not results:
        why = (
            "the dcgmi diag table lists no test result"
            if saw_table
            else "no dcgmi diag result table found"
        )
        return ParseResult(value=None, warnings=[*warnings, why])
    return ParseResult(value=results, warnings=warnings)


__all__ = ["parse_dcgmi_diag", "result_word"]
