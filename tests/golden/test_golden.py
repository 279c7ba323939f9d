"""Same behaviour: every recorded output of tuneplan is byte-identical to its golden file (see
golden.py)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tests.golden.golden import EXPECTED, outputs

CASES = sorted(name for name, _ in outputs(Path("/nonexistent")))


def test_every_golden_file_has_a_case() -> None:
    """A golden file whose case was removed would pass silently forever: list them all."""
    on_disk = sorted(
        str(p.relative_to(EXPECTED)) for p in EXPECTED.rglob("*.*") if p.parent.name != "pdf_text"
    )  # tests/gui/test_golden_pdf.py keeps those
    assert on_disk == CASES


def test_enough_plan_requests_are_recorded() -> None:
    assert sum(c.startswith("plan_json/") for c in CASES) >= 30


@pytest.mark.parametrize("case", CASES)
def test_output_matches_golden(case: str, tmp_path: Path, regen: bool) -> None:
    produce = dict(outputs(tmp_path))[case]
    actual = produce()
    golden = EXPECTED / case
    if regen:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual)
        return
    expected = golden.read_text()
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), actual.splitlines(True), "golden", "now", n=2
            )
        )
        pytest.fail(f"{case} differs from its golden file:\n{diff[:4000]}")
