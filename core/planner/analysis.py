"""The figures of a plan beyond the plan itself, gathered into one :class:`Analysis`: the model's
summary, its price at every provider, the scaling and buy-vs-rent curves, and, from the modules that
answer them, the memory on every GPU type (core/planner/gpu_memory.py) and what the search says
beside the plan (core/planner/search_figures.py: its candidates, why it changed a setting the user
chose, a priced configuration for each mode the plan has none in).

The wizard pages and the plan report (``core.planner.report``) draw from one Analysis, so a number
on screen and in the PDF agree; the plan in words is core/planner/headline.py. Nothing here does
planning math of its own: every figure comes from ``core.planner`` (a plan per provider for the
price comparison, the planner's scaling and cost curves).
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from core.catalog import PRICING_MODES, Catalog, CatalogError, load_catalog
from core.planner.choose import search
from core.planner.gpu_memory import GpuMemory, memory_by_gpu
from core.planner.money import cost, pricing, sanity
from core.planner.plan import PlanError, gpu_hardware, plan, resolve_model
from core.planner.request import PlanRequest
from core.planner.result import Candidate, ComputeCost, PlanResult
from core.planner.search_figures import (
    PricedOption,
    priced_alternatives,
    search_candidates,
    search_overrides,
)

MODES = PRICING_MODES
UTILISATIONS = tuple(round(0.05 * i, 2) for i in range(1, 21))


class ModelSummary(BaseModel):
    name: str
    total_params: int
    active_params: int
    trainable_params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    experts: int
    experts_per_token: int
    max_position: int | None
    inferred: bool
    notes: list[str] = Field(default_factory=list)


class ProviderCost(BaseModel):
    provider: str
    provider_name: str
    usd_per_gpu_hour: ComputeCost
    compute_usd: ComputeCost
    total_usd: float | None
    spot_expected_lost_hours: float | None
    dates: dict[str, str | None]
    sources: dict[str, str | None]
    # the instance each mode is priced from
    instances: dict[str, str | None] = Field(default_factory=dict)
    # GPUs paid for per node, by mode
    billed_gpus: dict[str, int | None] = Field(default_factory=dict)
    # modes priced from a low-confidence record
    low_confidence: list[str] = Field(default_factory=list)


class ScalingCurve(BaseModel):
    gpu: str
    gpus_per_node: int
    nodes: list[float]
    tokens_per_s: list[float]
    efficiency: list[float]
    hours: list[float]
    fits: list[bool]
    global_batch: int = 0
    # more replicas than the global batch can feed
    dropped_nodes: list[float] = Field(default_factory=list)


class BreakEven(BaseModel):
    utilisation: list[float]
    owned_usd_per_gpu_hour: list[float]
    rent_usd_per_gpu_hour: float | None
    break_even_utilisation: float | None
    capex_usd_per_gpu: float
    capex_source: str


class Figures(BaseModel):
    model: ModelSummary
    memory_by_gpu: list[GpuMemory]
    providers: list[ProviderCost]
    # the whole catalog's with Automatic hardware, the chosen GPU's otherwise
    candidates: list[Candidate]
    search_note: str | None = None
    scaling: ScalingCurve | None = None
    break_even: BreakEven | None = None
    # request path -> why the search changed it
    overrides: dict[str, str] = Field(default_factory=dict)
    # for the modes the plan has no price in
    priced_alternatives: list[PricedOption] = Field(default_factory=list)


class Analysis(BaseModel):
    """A plan and everything the wizard pages and the report draw from it."""

    result: PlanResult
    figures: Figures


def _model_summary(request: PlanRequest, result: PlanResult, catalog: Catalog) -> ModelSummary:
    arch, notes = resolve_model(request.model, catalog)
    return ModelSummary(
        name=arch.name,
        total_params=arch.total_params,
        active_params=arch.active_params,
        trainable_params=result.compute.params_trainable,
        layers=arch.layers,
        hidden=arch.hidden,
        heads=arch.heads,
        kv_heads=arch.kv_heads,
        intermediate=arch.intermediate,
        vocab=arch.vocab,
        experts=arch.experts,
        experts_per_token=arch.experts_per_token,
        max_position=arch.max_position,
        inferred=arch.inferred,
        notes=list(notes),
    )


def provider_costs(
    request: PlanRequest, catalog: Catalog, today: dt.date | None = None
) -> list[ProviderCost]:
    """The planned job priced at every provider that rents this GPU (the user's price override left
    out)."""
    hw = request.hardware
    assert hw is not None, "plan the request first: provider_costs needs its hardware"
    spec = request.pricing.model_copy(update={"usd_per_gpu_hour": None})
    out = []
    for slug in catalog.providers():
        try:
            if not catalog.prices_for(hw.gpu, slug):
                continue
            r = plan(
                request.model_copy(update={"pricing": spec.model_copy(update={"provider": slug})}),
                catalog,
                today,
            )
        except (PlanError, CatalogError):
            continue
        # The same offers the plan was priced from: whole instances of this node size, the request's
        # allowances; low-confidence records too (a provider is named), each flagged in the plan's
        # warnings.
        offers = {
            mode: pricing.node_offer(
                catalog,
                hw.gpu,
                mode,
                hw.gpus_per_node,
                provider=slug,
                allow=[a.value for a in request.pricing.allow],
            )
            for mode in MODES
        }
        rows = {m: (o.row if o else None) for m, o in offers.items()}
        out.append(
            ProviderCost(
                provider=slug,
                provider_name=catalog.provider(slug).name,
                usd_per_gpu_hour=r.cost.usd_per_gpu_hour,
                compute_usd=r.cost.compute_usd,
                total_usd=r.cost.total_usd,
                spot_expected_lost_hours=r.cost.spot_expected_lost_hours,
                dates={m: (row.date if row else None) for m, row in rows.items()},
                sources={m: (row.source if row else None) for m, row in rows.items()},
                instances={m: (row.instance if row else None) for m, row in rows.items()},
                billed_gpus={m: (o.billed_gpus if o else None) for m, o in offers.items()},
                low_confidence=[
                    m for m, row in rows.items() if row is not None and row.confidence == "low"
                ],
            )
        )
    return out


def scaling(request: PlanRequest, catalog: Catalog) -> ScalingCurve:
    hw = request.hardware
    assert hw is not None
    arch, _ = resolve_model(request.model, catalog)
    gpu = catalog.gpu(hw.gpu)
    curve = search.scaling_curve(
        arch, request, gpu_hardware(gpu, hw, request.training.precision, request.training)
    )
    return ScalingCurve(
        gpu=gpu.id,
        gpus_per_node=hw.gpus_per_node,
        nodes=curve["nodes"],
        tokens_per_s=curve["tokens_per_s"],
        efficiency=curve["efficiency"],
        hours=curve["hours"],
        fits=[bool(f) for f in curve["fits"]],
        global_batch=curve["global_batch"],
        dropped_nodes=curve["dropped_nodes"],
    )


def break_even(result: PlanResult, catalog: Catalog) -> BreakEven | None:
    """Owned cost per used GPU-hour against utilisation, with the rental price as the line to
    beat."""
    bvr = result.cost.buy_vs_rent
    if bvr is None:
        return None
    buy = result.request.assumptions.buy
    gpu = catalog.gpu(result.hardware.gpu)
    if buy.capex_usd_per_gpu is not None:
        capex, source = buy.capex_usd_per_gpu, "your figure (assumptions.buy.capex_usd_per_gpu)"
    elif gpu.street_price_usd:
        capex = sum(gpu.street_price_usd) / 2
        source = gpu.sources.get(
            "street_price_usd", "catalog street price (midpoint of low and high)"
        )
    else:
        return None
    curve = cost.owned_cost_curve(buy, capex, UTILISATIONS)
    return BreakEven(
        utilisation=list(UTILISATIONS),
        owned_usd_per_gpu_hour=[float(v) for v in curve],
        rent_usd_per_gpu_hour=bvr.usd_per_gpu_hour_rented,
        break_even_utilisation=bvr.break_even_utilization,
        capex_usd_per_gpu=capex,
        capex_source=source,
    )


def analyse(
    request: PlanRequest, catalog: Catalog | None = None, today: dt.date | None = None
) -> Analysis:
    """Plan the request and gather every chart's data. Raises PlanError when the request cannot be
    planned."""
    catalog = catalog or load_catalog()
    result = plan(request, catalog, today)
    planned = result.request
    candidates, note = search_candidates(request, result, catalog)
    try:
        curve: ScalingCurve | None = scaling(planned, catalog)
    except (PlanError, CatalogError, ValueError):
        curve = None
    figures = Figures(
        model=_model_summary(request, result, catalog),
        memory_by_gpu=memory_by_gpu(result, catalog, today),
        # unpriced: unfit
        providers=provider_costs(planned, catalog, today) if result.memory.fits else [],
        candidates=candidates,
        search_note=note,
        scaling=curve,
        break_even=break_even(result, catalog),
        overrides=search_overrides(request, result, catalog),
        priced_alternatives=priced_alternatives(request, result, catalog, today),
    )
    result.sanity = sanity.with_alternatives(result, catalog, figures.priced_alternatives)
    return Analysis(result=result, figures=figures)
