"""The window shows a plan's likely ranges as a person sees them: typed plan, Next to Time & cost
and to Summary, 'likely X (range A–B)' on screen with the coverage and regime beside it and the
ranges' basis as a tooltip.

The plans carry the test's own bands (tests/bands.py), planned on the worker thread as `tuneplan`
runs them; without a band no page claims a range.
"""

from __future__ import annotations

import pytest

from core.units import fmt_hours, fmt_hours_range, fmt_rate_range, fmt_usd, fmt_usd_range
from gui.workers import ThreadExecutor
from tests import bands as B
from tests.gui.conftest import open_window
from tests.gui.wizard_driver import choose, next_page, settle, type_like_a_person

pytestmark = pytest.mark.real_window


def plan_typed(qtbot, monkeypatch, store, settings, bands: bool):
    """A window whose plans carry (or lack) bands; the person types 300M tokens and picks 8
    H100-SXM."""
    B.install(monkeypatch, bands=bands)
    window = open_window(qtbot, ThreadExecutor(), store, settings, debounce_ms=150)
    wizard = window.wizard
    next_page(qtbot, wizard)
    assert wizard.currentPage() is wizard.data_page
    tokens = next(f for f in wizard.data_page.fields if f.path == "data.tokens")
    type_like_a_person(qtbot, tokens.editor, "300M")
    while wizard.currentPage() is not wizard.hardware_page:
        next_page(qtbot, wizard)
    choose(qtbot, wizard.hardware_page.gpu.combo, "H100-SXM")
    settle(qtbot, wizard.state)
    next_page(qtbot, wizard)
    assert wizard.currentPage() is wizard.cost_page
    assert wizard.state.analysis is not None
    return window, wizard.state.analysis.result


def likely_texts(r) -> dict[str, str]:
    t, c, usd = r.time, r.compute, r.cost
    return {
        "hours": f"likely {fmt_hours(t.hours)} (range "
        f"{fmt_hours_range(t.hours_range.low, t.hours_range.high, t.hours)})",
        "rate": f"likely {c.tokens_per_second:,.0f} tokens/s (range "
        f"{fmt_rate_range(c.tokens_per_second_range.low, c.tokens_per_second_range.high)})",
        "cost": f"likely {fmt_usd(usd.total_usd)} (estimate range "
        f"{fmt_usd_range(usd.total_usd_range.low, usd.total_usd_range.high, usd.total_usd)})",
    }


def test_time_and_cost_and_summary_show_the_likely_range(qtbot, monkeypatch, store, settings):
    window, r = plan_typed(qtbot, monkeypatch, store, settings, bands=True)
    assert r.request.data.tokens == 3e8 and r.hardware.gpu == "H100-SXM"
    assert r.cost.total_usd is not None
    want = likely_texts(r)
    note = (
        f"80% of held-out published runs of this kind fell inside (regime: {B.REGIME}, from "
        f"{B.CASES} runs of {B.SOURCES} sources)"
    )
    cost = window.wizard.cost_page
    assert cost.headline.isVisible()
    assert f"{want['hours']} wall" in cost.headline.text()
    assert f"{want['cost']} total on-demand" in cost.headline.text()
    assert cost.band.isVisible()
    assert cost.band.text() == f"Throughput {want['rate']}. {note[0].upper()}{note[1:]}."
    assert "calibration residuals" in cost.band.toolTip() and "held-out" in cost.band.toolTip()

    next_page(qtbot, window.wizard)
    summary = window.wizard.summary_page
    assert window.wizard.currentPage() is summary
    assert want["hours"] in summary.headline.text()
    shown = {
        summary.figures.itemAt(i, summary.figures.ItemRole.FieldRole)
        .widget()
        .accessibleName(): summary.figures.itemAt(i, summary.figures.ItemRole.FieldRole).widget()
        for i in range(summary.figures.rowCount())
    }
    assert shown["Wall time"].text() == want["hours"]
    assert shown["Throughput"].text() == want["rate"]
    assert shown["Total cost"].text() == want["cost"]
    assert "calibration residuals" in shown["Wall time"].toolTip()
    assert summary.band.isVisible() and note in summary.band.text()


def test_without_a_band_no_page_claims_a_range(qtbot, monkeypatch, store, settings):
    window, r = plan_typed(qtbot, monkeypatch, store, settings, bands=False)
    assert r.time.hours_range is None
    cost = window.wizard.cost_page
    assert f"<b>{fmt_hours(r.time.hours)} wall" in cost.headline.text()
    assert "likely" not in cost.headline.text() and not cost.band.isVisible()
    next_page(qtbot, window.wizard)
    summary = window.wizard.summary_page
    assert not summary.band.isVisible()
    values = [
        summary.figures.itemAt(i, summary.figures.ItemRole.FieldRole).widget().text()
        for i in range(summary.figures.rowCount())
    ]
    assert not any("likely" in v for v in values) and fmt_hours(r.time.hours) in values
