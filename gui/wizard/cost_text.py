"""The Time & cost page's figures in words: its headline, each provider's table row, the offer
priced and the cheapest option that has a price (or, for a plan that cannot run, that fits).

Apart from the page's widgets because these are plain functions of a plan's result: the same words
for every provider and mode, with each price's date, written once and read by the page when a plan
arrives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.catalog import PRICING_MODES
from core.planner import CostResult, PlanResult
from core.units import fmt_gpu_hours, fmt_hours, fmt_usd
from gui.table_model import Row

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import PricedOption, ProviderCost

MODES = PRICING_MODES


def offer_text(c: CostResult) -> str:
    """' (p5.48xlarge in us-east-1, marketplace)': the instance and region priced, and the kind of
    price when it is not the mode's own."""
    from core.planner import offer_place  # loaded by the plan the cost is of (with NumPy)

    if not c.instance:
        return ""
    kind = f", {c.pricing_model}" if c.pricing_model in ("marketplace", "auction") else ""
    low = ", low confidence" if c.confidence == "low" else ""
    return f" ({offer_place(c)}{kind}{low})"


def price_cell(usd: float | None, date: str | None) -> str:
    if usd is None:
        return "—"
    return f"${usd:,.2f} ({date or 'undated'})"


def provider_row(p: ProviderCost, chosen: str | None, gpus_per_node: int = 1) -> Row:
    """One provider: per-GPU rate by mode (with its date; 'low confidence' where the record says
    so), the plan's compute cost by mode; the tooltip names the instance, what a node pays for and
    the source."""
    cells = [p.provider_name]
    sort: list[Any] = [p.provider_name]
    tips = [p.provider_name]
    for mode in MODES:
        cell = price_cell(getattr(p.usd_per_gpu_hour, mode), p.dates.get(mode))
        cells.append(cell + (" low confidence" if mode in p.low_confidence else ""))
        sort.append(getattr(p.usd_per_gpu_hour, mode))
        billed, instance = p.billed_gpus.get(mode), p.instances.get(mode)
        pays = f"; pays for {billed} GPUs per node" if billed and billed > gpus_per_node else ""
        tips.append(
            f"{instance}{pays} — {p.sources.get(mode) or 'undated'}"
            if instance
            else (p.sources.get(mode) or "undated")
        )
    for mode in MODES:
        cells.append(fmt_usd(getattr(p.compute_usd, mode)))
        sort.append(getattr(p.compute_usd, mode))
    return Row(
        cells,
        sort=sort,
        highlight={0} if p.provider_name == chosen else set(),
        tooltips=[*tips, "", "", ""],
    )


def priced_option_text(option: PricedOption, planned_gpu: str, fits: bool = True) -> str:
    """'No spot price for MI300X; the cheapest option with one: 1× A100-80GB-SXM at Mithril, $0.99
    spot in 15.7 h.'; for a plan that does not fit, 'It does not fit as planned on RTX-6000-ADA; the
    cheapest configuration that fits: 2× H100-SXM at Lambda, on-demand, 3.1 h.' (what would run,
    with no dollar figure: a page of a plan that cannot run shows no money, and a price beside it
    would be read as this plan's)."""
    from core.planner import hardware_label, seen_phrase  # loaded by the plan the option comes from

    mode = option.mode.replace("_", "-")
    where = f"{hardware_label(option.hardware)} at {option.provider or 'an unnamed provider'}"
    if not fits:
        return (
            f"It does not fit as planned on {planned_gpu}; the cheapest configuration that fits: "
            f"{where}, {mode}, {fmt_hours(option.hours)}."
        )
    return (
        f"No {mode} price for {planned_gpu}; the cheapest option with one: {where}, "
        f"{fmt_usd(option.compute_usd)} {mode} compute in {fmt_hours(option.hours)} "
        f"(price {seen_phrase(option.price_date)})."
    )


def headline_text(r: PlanResult) -> str:
    """The page's answer: wall time, GPU-hours and total ('likely X (range A–B)' where the plan has
    bands)."""
    # loaded by the plan the headline is of
    from core.planner import likely_cost, likely_hours, seen_phrase

    c = r.cost
    mode = r.request.pricing.mode.value.replace("_", "-")
    hours, total = (
        likely_hours(r) or fmt_hours(r.time.hours),
        likely_cost(r) or fmt_usd(c.total_usd),
    )
    if c.unpriced_reason:
        return (
            f"<b>{hours} wall, {fmt_gpu_hours(r.time.gpu_hours)} GPU-hours; no cost</b>: "
            f"{c.unpriced_reason}."
        )
    return (
        f"<b>{hours} wall, {fmt_gpu_hours(r.time.gpu_hours)} GPU-hours; {total} total {mode}</b> "
        f"at {c.provider or 'no provider'}{offer_text(c)} (price {seen_phrase(c.price_date)})."
        + (f" It {c.billing}." if c.billing else "")
    )
