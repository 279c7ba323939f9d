"""Same behaviour, drawn: the text of plan PDFs is byte-identical to its golden file (see
tests/golden/golden.py).

The PDF is drawn by the real renderer and read back with pypdf, as a reader's PDF tool would read
it; the text is NFKC-normalised and runs of blanks are collapsed (pypdf's tabs), nothing else.
``--regen-golden`` rewrites it.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from pypdf import PdfReader

from tests.golden.golden import EXPECTED, REQUESTS, TODAY, frozen_today

PDF_CASES = ["readme_lora_8xh100", "full_7b_zero3_2nodes", "search_cost"]


def pdf_text(name: str, tmp_path: Path) -> str:
    from core.planner.analysis import analyse
    from core.planner.report import build_report
    from core.planner.request import PlanRequest
    from gui.pdf import render_report

    with frozen_today():
        report = build_report(
            analyse(PlanRequest.model_validate(REQUESTS[name]), today=TODAY), TODAY
        )
    path = tmp_path / f"{name}.pdf"
    render_report(report, path)
    text = "\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
    return re.sub(r"[ \t]+", " ", unicodedata.normalize("NFKC", text)) + "\n"


def test_pdf_cases_are_all_on_disk() -> None:
    on_disk = sorted(p.stem for p in (EXPECTED / "pdf_text").glob("*.txt"))
    assert on_disk == sorted(PDF_CASES)


@pytest.mark.parametrize("name", PDF_CASES)
def test_plan_pdf_text_matches_golden(name: str, qapp, tmp_path: Path, regen: bool) -> None:
    actual = pdf_text(name, tmp_path)
    golden = EXPECTED / "pdf_text" / f"{name}.txt"
    if regen:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual)
        return
    assert actual == golden.read_text(), (
        f"the text of {name}'s PDF differs from tests/golden/expected/pdf_text"
    )
