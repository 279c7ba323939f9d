"""A plan's money: the offer that prices each pricing mode, compute in every mode, the side costs,
the cost lines.

plan.py knows the configuration and its hours; this module turns them into dollars with the sources
beside each figure (CostLine.cited), so the cost page, the CLI and the PDF cite the same rows. Spot
is billed from Daly's expected wall time with preemptions (cost.spot_cost); on-demand and reserved
from the failures-only hours.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.catalog import GPU, Catalog, CatalogError
from core.catalog.records import StorageTier
from core.planner.money import cost, pricing
from core.planner.request import HardwareSpec, PlanRequest
from core.planner.result import Assumption, CheckpointResult, ComputeCost, CostLine, CostResult
from core.units import fmt_gpu_hours


def price_for(
    catalog: Catalog,
    gpu: GPU,
    request: PlanRequest,
    mode: str,
    gpus_per_node: int,
    trusted_only: bool,
) -> pricing.NodeOffer | None:
    """The offer a node of this plan is priced from in `mode` (whole instances, the request's
    allowances)."""
    try:
        return pricing.node_offer(
            catalog,
            gpu.id,
            mode,
            gpus_per_node,
            provider=request.pricing.provider,
            allow=[a.value for a in request.pricing.allow],
            trusted_only=trusted_only,
        )
    except CatalogError:
        raise
    except Exception:
        return None


def _price_warnings(offer: pricing.NodeOffer, mode: str, gpu: GPU) -> list[str]:
    """What to know about a price the plan uses: low confidence, or a marketplace/auction offer the
    user allowed. (Its age is a sanity check: core/planner/money/sanity.py.)"""
    row, label = offer.row, mode.replace("_", "-")
    out = []
    if row.confidence == "low":
        out.append(
            f"{row.provider_name} {label} price for {gpu.id} (${row.usd_per_gpu_hour:.2f}/GPU-h, "
            f"{row.instance}) is marked low-confidence in its source: check it before you rent"
        )
    if row.pricing_model.value in ("marketplace", "auction"):
        article = "an" if row.pricing_model.value == "auction" else "a"
        out.append(
            f"the {label} price for {gpu.id} is {article} {row.pricing_model.value} offer "
            f"({row.provider_name} {row.instance}), used because pricing.allow names it: "
            + (
                "community hosts vary in reliability and network"
                if row.pricing_model.value == "marketplace"
                else "an auction floor is a bid, not a price anyone is sure to get"
            )
        )
    return out


def _price_assumptions(
    offers: dict[str, pricing.NodeOffer | None], gpu: GPU
) -> tuple[list[str], list[Assumption]]:
    """Each priced mode as a cited assumption, and the warnings its offer carries."""
    warnings: list[str] = []
    assumptions: list[Assumption] = []
    for mode, offer in offers.items():
        if offer is None:
            continue
        row = offer.row
        warnings += _price_warnings(offer, mode, gpu)
        note = pricing.billing_note(offer)
        assumptions.append(
            Assumption(
                name=f"{mode.replace('_', '-')} price",
                value=f"${row.usd_per_gpu_hour:.2f}/GPU-h "
                f"({row.provider_name} {row.instance}, {row.region}, {row.pricing_model.value}"
                + (f", {row.confidence} confidence" if row.confidence == "low" else "")
                + (f"; {note}" if note else "")
                + ")",
                source=row.source,
                date=row.date,
            )
        )
    return warnings, assumptions


@dataclass(frozen=True)
class _Compute:
    """Compute money in every mode, and what the chosen mode bills."""

    per_hour: dict[str, float | None]  # the offer's rate per GPU-hour (or the user's own)
    usd: ComputeCost
    spot: cost.SpotCost
    gpu_hours: float  # failures-only GPU-hours (on-demand, reserved)
    billed_per_node: int | None
    billed_hours: float | None
    billing: str


def _compute(
    request: PlanRequest,
    hw: HardwareSpec,
    solve_hours: float,
    ckpt: CheckpointResult,
    offers: dict[str, pricing.NodeOffer | None],
) -> _Compute:
    pricing_spec, a = request.pricing, request.assumptions
    chosen_mode = pricing_spec.mode.value
    per_hour = {m: (o.row.usd_per_gpu_hour if o else None) for m, o in offers.items()}
    # What each mode costs per GPU the plan uses: a whole node's price spread over its GPUs. The
    # user's own price (pricing.usd_per_gpu_hour) prices the GPUs used, as it says.
    per_used = {m: (o.usd_per_used_gpu_hour if o else None) for m, o in offers.items()}
    if pricing_spec.usd_per_gpu_hour is not None:
        per_hour[chosen_mode] = per_used[chosen_mode] = pricing_spec.usd_per_gpu_hour
    chosen_offer = offers[chosen_mode]
    billed_per_node = (
        hw.gpus_per_node
        if pricing_spec.usd_per_gpu_hour is not None
        else (chosen_offer.billed_gpus if chosen_offer else None)
    )
    gpu_hours = solve_hours * (1 + ckpt.overhead_fraction) * hw.gpus
    spot = cost.spot_cost(
        solve_hours=solve_hours,
        gpus=hw.gpus,
        spot_usd_per_gpu_hour=per_used["spot"],
        gpu_mtbf_hours=a.gpu_mtbf_hours,
        preemptions_per_hour=a.spot_preemptions_per_hour,
        checkpoint_write_s=ckpt.write_seconds,
        restart_s=a.restart_minutes * 60,
        discount=pricing_spec.discount,
    )
    usd = cost.compute_costs(
        gpu_hours,
        per_used["on_demand"],
        per_used["spot"],
        per_used["reserved"],
        pricing_spec.discount,
        spot_gpu_hours=spot.gpu_hours,
    )
    used_hours = spot.gpu_hours if chosen_mode == "spot" else gpu_hours
    billed_hours = (
        None if billed_per_node is None else used_hours * billed_per_node / hw.gpus_per_node
    )
    billing = (
        ""
        if pricing_spec.usd_per_gpu_hour is not None or chosen_offer is None
        else pricing.billing_note(chosen_offer)
    )
    return _Compute(per_hour, usd, spot, gpu_hours, billed_per_node, billed_hours, billing)


def plan_cost(
    request: PlanRequest,
    catalog: Catalog,
    gpu: GPU,
    hw: HardwareSpec,
    solve_hours: float,
    ckpt: CheckpointResult,
    storage_lines: list[CostLine],
    disk_bytes: float,
    offers: dict[str, pricing.NodeOffer | None],
    trusted_only: bool = False,
) -> tuple[CostResult, list[str], list[Assumption]]:
    """The plan's cost from `offers`, the offer per pricing mode that prices this node size
    (`price_for`); with `ckpt` the failures-only checkpoint plan (on-demand and reserved hours; spot
    adds its preemptions)."""
    pricing_spec, a = request.pricing, request.assumptions
    chosen_mode = pricing_spec.mode.value
    ref_offer = (
        offers.get(chosen_mode) or offers["on_demand"] or offers["spot"] or offers["reserved"]
    )
    ref = ref_offer.row if ref_offer else None
    money = _compute(request, hw, solve_hours, ckpt, offers)
    warnings, assumptions = _price_assumptions(offers, gpu)
    block = catalog.storage_price(ref.provider if ref else "aws", StorageTier.block.value)
    idle = (
        cost.idle_cost(a.idle_hours, disk_bytes, block.usd_per_gb_month if block else None) or 0.0
    )
    egress_row = catalog.egress_price(ref.provider if ref else "aws")
    egress = cost.egress_cost(a.egress_gb, egress_row.usd_per_gb if egress_row else None) or 0.0
    storage_usd = sum(line.usd or 0.0 for line in storage_lines)
    chosen = getattr(money.usd, chosen_mode)
    billed = money.billed_hours if money.billed_hours is not None else money.gpu_hours
    items = [
        CostLine.cited(
            f"compute ({chosen_mode.replace('_', '-')})",
            chosen,
            f"{fmt_gpu_hours(billed)} GPU-h billed × ${money.per_hour[chosen_mode] or 0:.2f}"
            + (
                f" (spot: {fmt_gpu_hours(money.spot.gpu_hours)} GPU-h used incl. expected lost "
                "work)"
                if chosen_mode == "spot"
                else ""
            )
            + (f"; {money.billing}" if money.billing else ""),
            ref,
        ),
        *storage_lines,
        CostLine.cited(
            "idle disks", idle, f"{a.idle_hours:g} h stopped with {disk_bytes / 1e9:,.0f} GB", block
        ),
        CostLine.cited("egress", egress, f"{a.egress_gb:g} GB out", egress_row),
    ]
    if chosen is None:
        why = pricing.missing_price_reason(
            catalog,
            gpu.id,
            chosen_mode,
            hw.gpus_per_node,
            provider=pricing_spec.provider,
            allow=[x.value for x in pricing_spec.allow],
            trusted_only=trusted_only,
        )
        warnings.append(
            f"no {chosen_mode.replace('_', '-')} price for {gpu.id}"
            + (f" at {pricing_spec.provider}" if pricing_spec.provider else "")
            + (f" ({why})" if why else "")
            + "; set pricing.usd_per_gpu_hour"
        )
    capex = (sum(gpu.street_price_usd) / 2) if gpu.street_price_usd else None
    rent = money.per_hour["on_demand"] or money.per_hour["reserved"] or money.per_hour["spot"]
    result = CostResult(
        provider=ref.provider_name if ref else None,
        price_date=ref.date if ref else None,
        price_source=ref.source if ref else None,
        instance=ref.instance if ref else None,
        region=ref.region if ref else None,
        pricing_model=ref.pricing_model.value if ref else None,
        confidence=ref.confidence if ref else None,
        billed_gpus_per_node=money.billed_per_node,
        billed_gpu_hours=money.billed_hours,
        billing=money.billing,
        usd_per_gpu_hour=ComputeCost(**money.per_hour),
        compute_usd=money.usd,
        spot_expected_lost_hours=money.spot.lost_gpu_hours
        if money.per_hour["spot"] is not None
        else None,
        storage_usd=storage_usd,
        egress_usd=egress,
        idle_usd=idle,
        total_usd=None if chosen is None else chosen + storage_usd + idle + egress,
        items=items,
        buy_vs_rent=cost.buy_vs_rent(a.buy, capex, rent)
        if (capex or a.buy.capex_usd_per_gpu)
        else None,
    )
    return result, warnings, assumptions


UNPRICED = "the plan does not fit in GPU memory, so it cannot run and has no cost"


def withheld(c: CostResult, reason: str) -> CostResult:
    """The cost of a plan that cannot run: no money at all. No compute in any mode, no storage,
    egress or idle disks, no total or range, no offer or rate, no buy-vs-rent; one line says why. A
    figure for a run that cannot happen would be read, and budgeted, as the run's cost (a $322
    checkpoint archive of a model that never trains)."""
    none = ComputeCost(on_demand=None, spot=None, reserved=None)
    return CostResult(
        provider=None,
        price_date=None,
        price_source=None,
        usd_per_gpu_hour=none,
        compute_usd=none,
        spot_expected_lost_hours=None,
        storage_usd=None,
        egress_usd=None,
        idle_usd=None,
        total_usd=None,
        unpriced_reason=reason,
        items=[CostLine(item="compute", usd=None, detail=reason)],
        buy_vs_rent=None,
    )


def offer_place(c: CostResult) -> str:
    """'p5.48xlarge in us-east-1': the instance and region the chosen price is for, as every view
    names them (the question a priced plan must answer: which box, where); 'any region' where the
    offer costs the same everywhere; '' without a priced instance."""
    if not c.instance:
        return ""
    region = c.region or "any"
    return f"{c.instance} in {'any region' if region == 'any' else region}"
