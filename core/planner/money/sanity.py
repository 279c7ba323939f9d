"""The sanity layer: what a founder should look at twice before trusting a plan (issue 11, points 3
and 5).

A plan can be arithmetically right and still mislead: priced from an auction floor or a typo in a
price override, on an instance size nobody rents, with no room left in GPU memory, for a run of
months or a bill of millions, or from a price nobody has looked at for a quarter. ``sanity_checks``
turns each of those into one sentence (a ``SanityWarning``) that the plan carries
(``PlanResult.sanity``) and the text output, the report and the window show. It plans nothing
itself: it reads the result, the request and the catalog's price records.

The thresholds are the issue's, not measured: a quarter of the median price, 5% memory headroom, 30
days, $10M, 90 days of price age (``core.catalog.STALE_AFTER_DAYS``). They are heuristics and are
named so.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from core.catalog import PRICING_MODES, STALE_AFTER_DAYS, Catalog, CatalogError, Price
from core.planner.money import pricing
from core.planner.request import HardwareSpec, PlanRequest
from core.planner.result import PlanResult, SanityWarning
from core.units import fmt_bytes, fmt_hours, fmt_usd, plural

# heuristic (issue 11): below a quarter of the providers' median is a typo or a bid floor
OUTLIER_FRACTION = 0.25
# heuristic (issue 11): allocator fragmentation alone can take a few percent
HEADROOM_FRACTION = 0.05
LONG_RUN_HOURS = 30 * 24.0  # heuristic (issue 11): a month; also the search's default longest_hours
# heuristic (issue 11): beyond a fine-tune's budget; usually a unit slip in data.tokens
HUGE_COST_USD = 10e6


class AlternativeOption(Protocol):
    """What ``planner.analysis.PricedOption`` offers: the cheapest configuration that has a price in
    `mode`."""

    @property
    def mode(self) -> str: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def compute_usd(self) -> float: ...
    @property
    def hardware(self) -> HardwareSpec: ...


def _nodes_label(hw: HardwareSpec) -> str:
    """'8× H100-SXM', '4 nodes × 8 H100-SXM'."""
    return (
        f"{hw.gpus_per_node}× {hw.gpu}"
        if hw.nodes == 1
        else f"{hw.nodes} nodes × {hw.gpus_per_node} {hw.gpu}"
    )


def mode_name(mode: str) -> str:
    """'on-demand', 'spot', 'reserved'."""
    return mode.replace("_", "-")


def seen_text(date: str | None, today: dt.date) -> str:
    """A price's seen date as the report prints it: '2026-11-09', '2026-03-22 · stale (254 days)',
    'undated'."""
    if date is None:
        return "undated"
    age = (today - dt.date.fromisoformat(date)).days
    return f"{date} · stale ({age} days)" if age > STALE_AFTER_DAYS else date


def seen_phrase(date: str | None) -> str:
    """'seen 2026-11-09', or 'undated' (never 'seen undated'): how the CLI and the window date a
    price inline."""
    return f"seen {date}" if date else "undated"


def provider_median(catalog: Catalog, gpu: str, mode: str) -> tuple[float, int] | None:
    """The median over providers of each provider's cheapest list price serving `mode` for `gpu`,
    and how many providers it is over; None without one.

    Only a provider's own list prices count (``Price.serves`` with nothing allowed): marketplace
    offers and auction floors are what the check is meant to catch, and serverless rates never serve
    a plan.
    """
    cheapest: dict[str, float] = {}
    try:
        rows = catalog.prices_for(gpu)
    except CatalogError:
        return None
    for p in rows:
        if p.serves(mode):
            cheapest[p.provider] = min(p.usd_per_gpu_hour, cheapest.get(p.provider, float("inf")))
    if not cheapest:
        return None
    return statistics.median(cheapest.values()), len(cheapest)


def is_outlier(catalog: Catalog, gpu: str, mode: str, price: float) -> bool:
    """A price the plan flags as an outlier: under OUTLIER_FRACTION of the providers' median (the
    search ranks such an offer after every other, as it does a tight memory headroom)."""
    found = provider_median(catalog, gpu, mode)
    return found is not None and price < OUTLIER_FRACTION * found[0]


def _outliers(result: PlanResult, catalog: Catalog) -> list[SanityWarning]:
    out = []
    gpu = result.hardware.gpu
    for mode in PRICING_MODES:
        price = getattr(result.cost.usd_per_gpu_hour, mode)
        found = provider_median(catalog, gpu, mode)
        if price is None or found is None:
            continue
        median, providers = found
        if is_outlier(catalog, gpu, mode, price):
            out.append(
                SanityWarning(
                    kind="price_outlier",
                    figure=price,
                    message=(
                        f"The {mode_name(mode)} price of ${price:.2f}/GPU-h for {gpu} is below a "
                        f"quarter of the ${median:.2f} median of {providers} "
                        f"provider{'s' if providers > 1 else ''}: an outlier, check it."
                    ),
                )
            )
    return out


def _allow(request: PlanRequest) -> tuple[str, ...]:
    """The pricing models the user allows (``pricing.allow``; none where the request has no such
    field)."""
    return tuple(str(a) for a in (getattr(request.pricing, "allow", None) or ()))


def _rentable(
    request: PlanRequest, result: PlanResult, catalog: Catalog, prices: Mapping[str, Price | None]
) -> list[SanityWarning]:
    """A node is one instance: an offer whose instances hold fewer GPUs than the plan's node cannot
    run it."""
    if request.pricing.usd_per_gpu_hour is not None:  # the user's own price: their own offer
        return []
    hw, mode = result.hardware, request.pricing.mode.value
    row = prices.get(mode)
    where = f" at {row.provider_name}" if row else ""
    domain = pricing.nvlink_domain(catalog, hw.gpu)
    if row is not None and row.billed_gpus(hw.gpus_per_node, domain) is None:
        return [
            SanityWarning(
                kind="not_rentable",
                figure=float(hw.gpus_per_node),
                message=(
                    f"The {mode_name(mode)} offer the plan is priced from{where} ({row.instance}) "
                    f"has instances of {', '.join(map(str, row.sizes))} GPUs, not "
                    f"{hw.gpus_per_node}: it cannot be rented as planned."
                ),
            )
        ]
    try:
        offers = [
            p
            for p in catalog.prices_for(hw.gpu, request.pricing.provider)
            if p.serves(mode, _allow(request))
        ]
    except CatalogError:
        return []
    if not offers or any(p.billed_gpus(hw.gpus_per_node, domain) is not None for p in offers):
        return []
    largest = max(max(p.sizes) for p in offers)
    at = f" at {offers[0].provider_name}" if request.pricing.provider else ""
    return [
        SanityWarning(
            kind="not_rentable",
            figure=float(hw.gpus_per_node),
            message=(
                f"No {mode_name(mode)} offer for {hw.gpu}{at} has instances of "
                f"{plural(hw.gpus_per_node, 'GPU')} (the largest holds {largest}): it cannot be "
                f"rented as planned; use at most {largest} GPUs per node."
            ),
        )
    ]


def not_fit_text(result: PlanResult) -> str | None:
    """'Does not fit: it needs 22.00 TB per GPU, 21.95 TB more than the 48.00 GB of RTX-6000-ADA, so
    it cannot run and has no cost; what would: use LoRA …': the headline of a plan that does not
    fit, the same in the CLI, the window and the PDF. None when it fits."""
    m = result.memory
    if m.fits:
        return None
    # a plan saved before short_bytes existed reads 0 there
    short = max(m.per_gpu.total - m.gpu_memory, 0)
    text = (
        f"Does not fit: it needs {fmt_bytes(m.per_gpu.total)} per GPU, {fmt_bytes(short)} more "
        f"than the {fmt_bytes(m.gpu_memory)} of {result.hardware.gpu}, so it cannot run and has "
        "no cost"
    )
    return text + (f"; what would: {m.suggestions[0]}" if m.suggestions else "") + "."


def _fit(result: PlanResult) -> list[SanityWarning]:
    text, m = not_fit_text(result), result.memory
    short = float(max(m.per_gpu.total - m.gpu_memory, 0))
    return [] if text is None else [SanityWarning(kind="does_not_fit", figure=short, message=text)]


def _headroom(result: PlanResult) -> list[SanityWarning]:
    m = result.memory
    if not m.fits or m.gpu_memory <= 0:
        return []
    free = (m.gpu_memory - m.per_gpu.total) / m.gpu_memory
    if free >= HEADROOM_FRACTION:
        return []
    return [
        SanityWarning(
            kind="low_headroom",
            figure=free,
            message=(
                f"Memory per GPU is {fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)}: "
                f"{free:.1%} headroom, under 5%; fragmentation or a longer sequence can run it "
                "out of memory."
            ),
        )
    ]


def _size(result: PlanResult) -> list[SanityWarning]:
    out = []
    hours, total = result.time.hours, result.cost.total_usd
    if hours > LONG_RUN_HOURS:
        out.append(
            SanityWarning(
                kind="long_run",
                figure=hours,
                message=(
                    f"The run takes {fmt_hours(hours)}, longer than 30 days: check data.tokens "
                    "and data.epochs, or plan "
                    "more GPUs."
                ),
            )
        )
    if total is not None and total > HUGE_COST_USD:
        out.append(
            SanityWarning(
                kind="huge_cost",
                figure=total,
                message=(
                    f"The total is {fmt_usd(total)}, beyond $10M: check data.tokens and "
                    "data.epochs before budgeting it."
                ),
            )
        )
    return out


def mode_totals(result: PlanResult) -> dict[str, float]:
    """Total cost per priced mode (compute + storage + egress + idle), cheapest first."""
    extra = result.cost.side_usd()
    totals = {
        m: v + extra for m, v in result.cost.compute_usd.model_dump().items() if v is not None
    }
    return dict(sorted(totals.items(), key=lambda kv: kv[1]))


def _other_provider(result: PlanResult, catalog: Catalog, mode: str) -> str | None:
    """'Nebius has spot at $0.79/GPU-h' for the plan's GPU and node size, when another provider has
    `mode`."""
    try:
        offer = pricing.node_offer(
            catalog, result.hardware.gpu, mode, result.hardware.gpus_per_node
        )
    except CatalogError:
        return None
    if offer is None:
        return None
    row = offer.row
    return (
        f"{row.provider_name} has {mode_name(mode)} {result.hardware.gpu} at "
        f"${row.usd_per_gpu_hour:.2f}/GPU-h"
    )


def cost_range_warning(
    result: PlanResult, catalog: Catalog, alternatives: Sequence[AlternativeOption] = ()
) -> SanityWarning | None:
    """Which modes the cost range spans and, for a mode the plan has no price in, the best option
    that has one.

    `alternatives` are the analysis's priced alternatives (the cheapest configuration of the whole
    catalog in that mode); without them, another provider of the same GPU and node size is named
    from the catalog.
    """
    totals = mode_totals(result)
    if not totals:
        return None
    modes = list(totals)
    lo, hi = totals[modes[0]], totals[modes[-1]]
    if len(modes) == 1:
        text = f"The cost ({fmt_usd(lo)}) is {mode_name(modes[0])} only"
    else:
        text = (
            f"The cost range {fmt_usd(lo)}–{fmt_usd(hi)} spans {mode_name(modes[0])} to "
            f"{mode_name(modes[-1])}"
        )
        if len(modes) == 3:
            text += f", {mode_name(modes[1])} between"
    missing = [m for m in ("spot", "reserved") if m not in totals]
    if missing:
        where = f" at {result.cost.provider}" if result.cost.provider else ""
        text += (
            f"; no {' or '.join(mode_name(m) for m in missing)} price for "
            f"{result.hardware.gpu}{where}"
        )
        named = []
        for m in missing:
            alt = next((a for a in alternatives if a.mode == m), None)
            if alt is not None:
                named.append(
                    f"the cheapest option with {mode_name(m)} is {_nodes_label(alt.hardware)}"
                    + (f" at {alt.provider}" if alt.provider else "")
                    + f" ({fmt_usd(alt.compute_usd)})"
                )
            elif (other := _other_provider(result, catalog, m)) is not None:
                named.append(other)
        if named:
            text += ": " + "; ".join(named)
    return SanityWarning(kind="cost_range", figure=hi - lo, message=text + ".")


def with_alternatives(
    result: PlanResult, catalog: Catalog, alternatives: Sequence[AlternativeOption]
) -> list[SanityWarning]:
    """The plan's sanity list with its cost-range line naming the analysis's priced alternatives."""
    line = cost_range_warning(result, catalog, alternatives)
    return [line if (w.kind == "cost_range" and line is not None) else w for w in result.sanity]


def _freshness(
    request: PlanRequest, result: PlanResult, prices: Mapping[str, Price | None], today: dt.date
) -> list[SanityWarning]:
    """Prices seen more than STALE_AFTER_DAYS ago, and prices whose source gives no date; a mode the
    user's own price override replaces is the user's figure, not the record's."""
    out = []
    gpu = result.hardware.gpu
    overridden = (
        request.pricing.mode.value if request.pricing.usd_per_gpu_hour is not None else None
    )
    # provider -> modes, so one sentence covers a provider's undated prices
    undated: dict[str, list[str]] = {}
    for mode, row in prices.items():
        if row is None or mode == overridden:
            continue
        age = row.age_days(today)
        if age is None:
            undated.setdefault(row.provider_name, []).append(mode_name(mode))
        elif age > STALE_AFTER_DAYS:
            out.append(
                SanityWarning(
                    kind="stale_price",
                    figure=float(age),
                    message=(
                        f"The {row.provider_name} {mode_name(mode)} price for {gpu} was seen "
                        f"{row.date}, {age} days ago (stale after {STALE_AFTER_DAYS}): check it."
                    ),
                )
            )
    for provider, modes in undated.items():
        which = modes[0] if len(modes) == 1 else ", ".join(modes[:-1]) + " and " + modes[-1]
        out.append(
            SanityWarning(
                kind="undated_price",
                message=(
                    f"The {provider} {which} price{'s' if len(modes) > 1 else ''} for {gpu} "
                    f"{'have' if len(modes) > 1 else 'has'} no date in "
                    f"{'their' if len(modes) > 1 else 'its'} source: "
                    "check before you rent."
                ),
            )
        )
    return out


def _lookup(request: PlanRequest, result: PlanResult, catalog: Catalog) -> dict[str, Price | None]:
    out: dict[str, Price | None] = {}
    for mode in PRICING_MODES:
        try:
            out[mode] = catalog.best_price(result.hardware.gpu, mode, request.pricing.provider)
        except CatalogError:
            out[mode] = None
    return out


def sanity_checks(
    request: PlanRequest,
    result: PlanResult,
    catalog: Catalog,
    today: dt.date,
    *,
    prices: Mapping[str, Price | None] | None = None,
    alternatives: Iterable[AlternativeOption] = (),
) -> list[SanityWarning]:
    """Every sanity finding of a plan, in the order a reader checks them: whether it fits at all,
    price, rentability, memory headroom, size, the cost range, then the prices' age.

    `prices` are the records the plan was priced from, per mode (``plan()`` passes them); without
    them the catalog's cheapest per mode is assumed.
    """
    rows = dict(prices) if prices is not None else _lookup(request, result, catalog)
    found = [
        *_fit(result),
        *_outliers(result, catalog),
        *_rentable(request, result, catalog, rows),
        *_headroom(result),
        *_size(result),
    ]
    line = cost_range_warning(result, catalog, list(alternatives))
    if line is not None:
        found.append(line)
    return found + _freshness(request, result, rows, today)
