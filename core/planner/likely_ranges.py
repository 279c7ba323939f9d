"""A planned figure's likely range in words: 'likely 3.2 h (range 2.6–4.1 h)', and what the range
rests on.

The time, throughput and cost bands (core/planner/speed/bands.py) are said the same way by the
command line, the window and the PDF; a range is only as good as its calibration, so each comes with
a note of its coverage on held-out published runs. Apart from the report (core/planner/report.py)
because the window shows them without one.
"""

from __future__ import annotations

from core.document import KeyFigure
from core.planner.headline import key_figures
from core.planner.result import Band, PlanResult
from core.units import fmt_hours, fmt_hours_range, fmt_rate_range, fmt_usd, fmt_usd_range


def likely_hours(result: PlanResult) -> str | None:
    """'likely 3.2 h (range 2.6–4.1 h)', or None without a band: the CLI, the window and the PDF say
    it alike."""
    band = result.time.hours_range
    if band is None:
        return None
    point = fmt_hours(result.time.hours).removeprefix("about ")  # 'likely about …' says it twice
    return f"likely {point} (range {fmt_hours_range(band.low, band.high, result.time.hours)})"


def likely_tokens_per_second(result: PlanResult) -> str | None:
    """'likely 68,198 tokens/s (range 55,000–80,000)', or None without a band."""
    band, point = result.compute.tokens_per_second_range, result.compute.tokens_per_second
    if band is None:
        return None
    return f"likely {point:,.0f} tokens/s (range {fmt_rate_range(band.low, band.high)})"


def likely_cost(result: PlanResult) -> str | None:
    """'likely $54.06 (estimate range $44.00–$70.00)', or None without a band or without a price:
    named so beside the cost by pricing mode ('$5.48 spot to $24.45 on-demand'), another kind of
    range."""
    band, total = result.cost.total_usd_range, result.cost.total_usd
    if band is None or total is None:
        return None
    return f"likely {fmt_usd(total)} (estimate range {fmt_usd_range(band.low, band.high, total)})"


def bands(result: PlanResult) -> list[Band]:
    """The plan's bands that are filled: time, throughput, cost."""
    found = (
        result.time.hours_range,
        result.compute.tokens_per_second_range,
        result.cost.total_usd_range,
    )
    return [b for b in found if b is not None]


def band_note(band: Band) -> str:
    """'80% of held-out published runs of this kind fell inside (regime: …, from 24 runs of 5
    sources)': how far to trust it (each source's runs checked against a band built without that
    source)."""
    return (
        f"{band.coverage:.0%} of held-out published runs of this kind fell inside (regime: "
        f"{band.regime}, from {band.cases} runs of {band.sources} sources)"
    )


def band_notes(result: PlanResult) -> list[str]:
    """One note per distinct band basis (the cost band follows the time band, so usually one)."""
    return list(dict.fromkeys(band_note(b) for b in bands(result)))


def band_source(result: PlanResult) -> str | None:
    """Where the ranges come from, for the PDF: a reader of a range must see what it rests on."""
    notes = band_notes(result)
    if not notes:
        return None
    return (
        "Likely ranges: the planned figure scaled by the spread of the calibration residuals "
        "(published ÷ planned) of published runs of the same regime; the coverage is measured on "
        "held-out runs: " + "; ".join(notes) + "."
    )


def shown_key_figures(result: PlanResult) -> list[KeyFigure]:
    """The headline figures, with 'likely X (range A–B)' for wall time, throughput and total cost
    where the plan has bands (the report's table and the window's Summary page show the same)."""
    ranged = {
        "Wall time": likely_hours(result),
        "Throughput": likely_tokens_per_second(result),
        "Total cost": likely_cost(result),
    }
    return [
        KeyFigure(label=k.label, value=ranged.get(k.label) or k.value) for k in key_figures(result)
    ]
