"""The PDF report shows a plan's likely ranges, read back with pypdf: the headline table's wall
time, throughput and total cost as 'likely X (range A–B)', and a line saying where the ranges come
from; none of it without a band.

`tuneplan report` runs in this process with the test's own bands (tests/bands.py), as a user runs
it.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from core.units import fmt_hours, fmt_hours_range, fmt_usd, fmt_usd_range
from tests import bands as B
from tests.gui.test_gui_pdf import REQUEST, text_of
from tuneplan.launch import main


def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bands: bool) -> tuple[str, dict]:
    """The report's text and the plan JSON, both planned with the test's bands (or none)."""
    B.install(monkeypatch, bands=bands)
    req = tmp_path / "request.json"
    req.write_text(json.dumps(REQUEST))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["plan", str(req), "--json"]) == 0
    with redirect_stdout(io.StringIO()):
        assert main(["report", str(req), "-o", str(tmp_path / "plan.pdf")]) == 0
    return text_of(tmp_path / "plan.pdf"), json.loads(out.getvalue())


def squash(text: str) -> str:
    """Words joined by single spaces: a table cell may wrap where the text does not."""
    return " ".join(text.split())


def test_the_headline_and_summary_show_the_likely_range_and_its_basis(qapp, tmp_path, monkeypatch):
    text, plan = report(tmp_path, monkeypatch, bands=True)
    t, cost = plan["time"], plan["cost"]
    hours = (
        f"likely {fmt_hours(t['hours'])} (range "
        f"{fmt_hours_range(t['hours_range']['low'], t['hours_range']['high'], t['hours'])})"
    )
    usd = (
        f"likely {fmt_usd(cost['total_usd'])} (estimate range "
        f"{fmt_usd_range(cost['total_usd_range']['low'], cost['total_usd_range']['high'], cost['total_usd'])})"  # noqa: E501
    )
    flat = squash(text)
    assert f"Wall time {hours}" in flat  # the headline table's row
    assert f"Total cost {usd}" in flat
    assert f"Time: {hours} wall" in flat  # the executive summary
    assert "calibration residuals (published ÷ planned)" in flat
    assert (
        f"80% of held-out published runs of this kind fell inside (regime: {B.REGIME}, from "
        f"{B.CASES} runs of {B.SOURCES} sources)"
    ) in flat


def test_without_a_band_the_report_claims_no_range(qapp, tmp_path, monkeypatch):
    text, plan = report(tmp_path, monkeypatch, bands=False)
    flat = squash(text)
    assert plan["time"]["hours_range"] is None
    assert "likely" not in flat and "calibration residuals" not in flat
    assert f"Wall time {fmt_hours(plan['time']['hours'])}" in flat
