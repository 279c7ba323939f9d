"""The figures of a plan beyond the plan itself: its memory on every GPU type, its price at every provider, the
search's candidates, the scaling and buy-vs-rent curves, and the plan in words (conclusion, key figures).

Two answers more, so that each page does what it says: when the search changed a training setting the user
chose, why (``overrides``); and when the plan has no spot or reserved price, the best configuration that has
one (``priced_alternatives``).

The wizard pages and the plan report (``core.planner.report``) draw from one :class:`Analysis`, so a number on
screen and in the PDF agree. Nothing here does planning math of its own: every figure comes from ``core.planner``
(a plan per GPU for the memory chart, a plan per provider for the price comparison, the planner's search, scaling
and cost curves).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import OrderedDict
from typing import Literal

from pydantic import BaseModel, Field

from core.catalog import GPU, PRICING_MODES, Catalog, CatalogError, load_catalog
from core.document import KeyFigure
from core.planner.choices import OVERRIDABLE as OVERRIDABLE
from core.planner.choose import search
from core.planner.model.params import Architecture
from core.planner.money import cost, pricing, sanity
from core.planner.plan import PlanError, gpu_hardware, on_candidate, plan, resolve_model
from core.planner.request import HardwareSpec, PlanRequest, PricingMode, Sharding
from core.planner.result import Candidate, ComputeCost, PlanResult
from core.units import fmt_bytes, fmt_gpu_hours, fmt_hours, fmt_usd, plural

MODES = PRICING_MODES
UTILISATIONS = tuple(round(0.05 * i, 2) for i in range(1, 21))

# --------------------------------------------------------------------------- figures (chart data)


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


class GpuMemory(BaseModel):
    """One bar of the memory chart: the job on this GPU type, component by component.

    ``basis`` says which configuration the bar is for: ``plan`` is the planned GPU with the plan's own counts and
    sharding; ``search`` is the configuration the hardware search picks for this GPU type (GPUs per node, nodes,
    sharding, recomputation, micro-batch), the rest of the request unchanged; ``as_planned`` is a GPU type on
    which nothing fits within the search limits, shown at the plan's counts and sharding.
    """

    gpu: str
    capacity: int
    basis: Literal["plan", "search", "as_planned"] = "search"
    gpus_per_node: int = 0
    nodes: int = 0
    sharding: Sharding | None = None
    micro_batch_size: int = 0
    gradient_checkpointing: bool | Literal["selective"] = False
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    weights: int = 0
    gradients: int = 0
    optimizer: int = 0
    activations: int = 0
    logits: int = 0
    overhead: int = 0
    total: int = 0
    fits: bool = False
    max_micro_batch: int = 0
    max_seq_len: int = 0
    note: str | None = None
    error: str | None = None

    @property
    def configuration(self) -> str:
        """'8× zero3', '2×8 fsdp' (nodes × GPUs per node); '' when the GPU could not be planned."""
        if self.error is not None or self.sharding is None:
            return ""
        gpus = f"{self.gpus_per_node}×" if self.nodes == 1 else f"{self.nodes}×{self.gpus_per_node}"
        recompute = {True: ", recompute", "selective": ", selective recompute"}.get(self.gradient_checkpointing, "")
        layout = f", tp {self.tensor_parallel} × pp {self.pipeline_parallel}" if self.tensor_parallel * \
            self.pipeline_parallel > 1 else ""
        return f"{gpus} {self.sharding.value}" + layout + recompute


class ProviderCost(BaseModel):
    provider: str
    provider_name: str
    usd_per_gpu_hour: ComputeCost
    compute_usd: ComputeCost
    total_usd: float | None
    spot_expected_lost_hours: float | None
    dates: dict[str, str | None]
    sources: dict[str, str | None]
    instances: dict[str, str | None] = Field(default_factory=dict)  # the instance each mode is priced from
    billed_gpus: dict[str, int | None] = Field(default_factory=dict)  # GPUs paid for per node, by mode
    low_confidence: list[str] = Field(default_factory=list)  # modes priced from a low-confidence record


class ScalingCurve(BaseModel):
    gpu: str
    gpus_per_node: int
    nodes: list[float]
    tokens_per_s: list[float]
    efficiency: list[float]
    hours: list[float]
    fits: list[bool]
    global_batch: int = 0
    dropped_nodes: list[float] = Field(default_factory=list)  # more replicas than the global batch can feed


class BreakEven(BaseModel):
    utilisation: list[float]
    owned_usd_per_gpu_hour: list[float]
    rent_usd_per_gpu_hour: float | None
    break_even_utilisation: float | None
    capex_usd_per_gpu: float
    capex_source: str


class PricedOption(BaseModel):
    """The configuration the search picks when ranking by a pricing mode's price, planned in that mode."""

    mode: str
    hardware: HardwareSpec
    provider: str | None
    hours: float
    compute_usd: float
    price_date: str | None


class Figures(BaseModel):
    model: ModelSummary
    memory_by_gpu: list[GpuMemory]
    providers: list[ProviderCost]
    candidates: list[Candidate]  # the whole catalog's with Automatic hardware, the chosen GPU's otherwise
    search_note: str | None = None
    scaling: ScalingCurve | None = None
    break_even: BreakEven | None = None
    overrides: dict[str, str] = Field(default_factory=dict)  # request path -> why the search changed it
    priced_alternatives: list[PricedOption] = Field(default_factory=list)  # for the modes the plan has no price in


class Analysis(BaseModel):
    """A plan and everything the wizard pages and the report draw from it."""

    result: PlanResult
    figures: Figures


def _model_summary(request: PlanRequest, result: PlanResult, catalog: Catalog) -> ModelSummary:
    arch, notes = resolve_model(request.model, catalog)
    return ModelSummary(
        name=arch.name, total_params=arch.total_params, active_params=arch.active_params,
        trainable_params=result.compute.params_trainable, layers=arch.layers, hidden=arch.hidden,
        heads=arch.heads, kv_heads=arch.kv_heads, intermediate=arch.intermediate, vocab=arch.vocab,
        experts=arch.experts, experts_per_token=arch.experts_per_token, max_position=arch.max_position,
        inferred=arch.inferred, notes=list(notes))


def _memory_row(gpu: str, result: PlanResult, basis: Literal["plan", "search", "as_planned"],
                note: str | None = None) -> GpuMemory:
    m, hw, t = result.memory, result.hardware, result.request.training
    return GpuMemory(gpu=gpu, capacity=m.gpu_memory, basis=basis, gpus_per_node=hw.gpus_per_node, nodes=hw.nodes,
                     sharding=t.sharding, micro_batch_size=t.micro_batch_size,
                     gradient_checkpointing=t.gradient_checkpointing, tensor_parallel=t.tensor_parallel,
                     pipeline_parallel=t.pipeline_parallel, fits=m.fits, max_micro_batch=m.max_micro_batch,
                     max_seq_len=m.max_seq_len, note=note, **m.per_gpu.model_dump())


def _search_choice(arch: Architecture, planned: PlanRequest, gpu: str, catalog: Catalog) -> Candidate | None:
    """The configuration the hardware search picks for one GPU type.

    With a single GPU type every configuration pays the same price per GPU-hour, so ranking by cost is ranking
    by GPU-hours; a flat 1 USD price ranks GPU types without a catalog price the same way.
    """
    single = planned.model_copy(update={
        "hardware": None,
        "search": planned.search.model_copy(update={"gpus": [gpu]}),
        "pricing": planned.pricing.model_copy(update={"usd_per_gpu_hour": 1.0, "discount": 0.0}),
    })
    try:
        return search.search(arch, single, catalog).best
    except (PlanError, CatalogError, ValueError):
        return None


def _other_gpu_row(arch: Architecture, planned: PlanRequest, result: PlanResult, gpu: GPU, catalog: Catalog,
                   today: dt.date | None) -> GpuMemory:
    choice = _search_choice(arch, planned, gpu.id, catalog)
    try:
        if choice is not None:
            r = plan(on_candidate(planned, choice), catalog, today)
            return _memory_row(gpu.id, r, "search")
        spec = result.hardware.model_copy(update={"gpu": gpu.id})
        r = plan(planned.model_copy(update={"hardware": spec}), catalog, today)
    except (PlanError, CatalogError) as exc:
        return GpuMemory(gpu=gpu.id, capacity=gpu.memory_bytes, basis="as_planned", error=str(exc))
    return _memory_row(gpu.id, r, "as_planned",
                       note=f"nothing fits on {gpu.id} with up to {plural(planned.search.max_gpus, 'GPU')}")


def _memory_key(planned: PlanRequest) -> str:
    """What a GPU row depends on: memory never depends on the prices. The search's pick for one GPU type does
    depend on the dataset size: every configuration pays the same start-up on each of its GPUs, so a short job
    is cheapest on fewer GPUs than a long one (1× L40 at 2e8 tokens, 4× at 7e8), and a row kept across token
    counts would show another configuration's memory."""
    key = planned.model_dump(mode="json", exclude={"pricing": True})
    return json.dumps(key, sort_keys=True)


_ROWS: OrderedDict[tuple[str, str], tuple[Catalog, GpuMemory]] = OrderedDict()
_ROWS_LOCK = threading.Lock()
_ROWS_KEPT = 512  # about two dozen requests' worth of rows


def memory_by_gpu(result: PlanResult, catalog: Catalog, today: dt.date | None = None) -> list[GpuMemory]:
    """The job's memory per GPU on every catalog GPU type, each at the configuration the search picks for it.

    Holding the GPU count fixed would draw the same bar for every type (memory per GPU depends on the count and
    sharding, not on the card), so each type gets its own best configuration; the planned GPU shows the plan.
    A search and a plan per GPU type take most of an analysis, so rows are kept for requests that differ only
    in what they do not depend on (see _memory_key): typing a new token count does not redo them.
    """
    planned = result.request
    arch, _ = resolve_model(planned.model, catalog)
    key = _memory_key(planned)
    rows = []
    for gpu in catalog.gpus.values():
        if gpu.id == result.hardware.gpu:
            rows.append(_memory_row(gpu.id, result, "plan"))
            continue
        with _ROWS_LOCK:
            kept = _ROWS.get((gpu.id, key))
        if kept is not None and kept[0] is catalog:
            rows.append(kept[1])
            continue
        row = _other_gpu_row(arch, planned, result, gpu, catalog, today)
        with _ROWS_LOCK:
            _ROWS[(gpu.id, key)] = (catalog, row)
            while len(_ROWS) > _ROWS_KEPT:
                _ROWS.popitem(last=False)
        rows.append(row)
    return rows


def provider_costs(request: PlanRequest, catalog: Catalog, today: dt.date | None = None) -> list[ProviderCost]:
    """The planned job priced at every provider that rents this GPU (the user's price override left out)."""
    hw = request.hardware
    assert hw is not None, "plan the request first: provider_costs needs its hardware"
    spec = request.pricing.model_copy(update={"usd_per_gpu_hour": None})
    out = []
    for slug in catalog.providers():
        try:
            if not catalog.prices_for(hw.gpu, slug):
                continue
            r = plan(request.model_copy(update={"pricing": spec.model_copy(update={"provider": slug})}),
                     catalog, today)
        except (PlanError, CatalogError):
            continue
        # The same offers the plan was priced from: whole instances of this node size, the request's allowances;
        # low-confidence records too (a provider is named), each flagged in the plan's warnings.
        offers = {mode: pricing.node_offer(catalog, hw.gpu, mode, hw.gpus_per_node, provider=slug,
                                           allow=[a.value for a in request.pricing.allow]) for mode in MODES}
        rows = {m: (o.row if o else None) for m, o in offers.items()}
        out.append(ProviderCost(
            provider=slug, provider_name=catalog.provider(slug).name, usd_per_gpu_hour=r.cost.usd_per_gpu_hour,
            compute_usd=r.cost.compute_usd, total_usd=r.cost.total_usd,
            spot_expected_lost_hours=r.cost.spot_expected_lost_hours,
            dates={m: (row.date if row else None) for m, row in rows.items()},
            sources={m: (row.source if row else None) for m, row in rows.items()},
            instances={m: (row.instance if row else None) for m, row in rows.items()},
            billed_gpus={m: (o.billed_gpus if o else None) for m, o in offers.items()},
            low_confidence=[m for m, row in rows.items() if row is not None and row.confidence == "low"]))
    return out


def scaling(request: PlanRequest, catalog: Catalog) -> ScalingCurve:
    hw = request.hardware
    assert hw is not None
    arch, _ = resolve_model(request.model, catalog)
    gpu = catalog.gpu(hw.gpu)
    curve = search.scaling_curve(arch, request, gpu_hardware(gpu, hw, request.training.precision,
                                                                      request.training))
    return ScalingCurve(gpu=gpu.id, gpus_per_node=hw.gpus_per_node, nodes=curve["nodes"],
                        tokens_per_s=curve["tokens_per_s"], efficiency=curve["efficiency"], hours=curve["hours"],
                        fits=[bool(f) for f in curve["fits"]], global_batch=curve["global_batch"],
                        dropped_nodes=curve["dropped_nodes"])


def break_even(result: PlanResult, catalog: Catalog) -> BreakEven | None:
    """Owned cost per used GPU-hour against utilisation, with the rental price as the line to beat."""
    bvr = result.cost.buy_vs_rent
    if bvr is None:
        return None
    buy = result.request.assumptions.buy
    gpu = catalog.gpu(result.hardware.gpu)
    if buy.capex_usd_per_gpu is not None:
        capex, source = buy.capex_usd_per_gpu, "your figure (assumptions.buy.capex_usd_per_gpu)"
    elif gpu.street_price_usd:
        capex = sum(gpu.street_price_usd) / 2
        source = gpu.sources.get("street_price_usd", "catalog street price (midpoint of low and high)")
    else:
        return None
    curve = cost.owned_cost_curve(buy, capex, UTILISATIONS)
    return BreakEven(utilisation=list(UTILISATIONS), owned_usd_per_gpu_hour=[float(v) for v in curve],
                     rent_usd_per_gpu_hour=bvr.usd_per_gpu_hour_rented,
                     break_even_utilisation=bvr.break_even_utilization, capex_usd_per_gpu=capex,
                     capex_source=source)


def _candidates(request: PlanRequest, result: PlanResult, catalog: Catalog) -> tuple[list[Candidate], str | None]:
    """The search's list: of the whole catalog when it chose the hardware, else of the GPU the user chose (other
    counts, nodes and sharding of it), ranked by time when that GPU has no price in the chosen mode."""
    if result.candidates:
        return result.candidates, None
    gpu = result.hardware.gpu
    one = request.model_copy(update={"hardware": None, "search": request.search.model_copy(update={"gpus": [gpu]})})
    mode, provider = request.pricing.mode.value, request.pricing.provider
    note = None
    try:
        allow = [a.value for a in request.pricing.allow]
        if request.pricing.usd_per_gpu_hour is None and pricing.any_offer(
                catalog, gpu, mode, provider=provider, allow=allow) is None:
            one = one.model_copy(update={"search": one.search.model_copy(update={"objective": "time"})})
            note = (f"no {mode.replace('_', '-')} price for {gpu}" + (f" at {provider}" if provider else "")
                    + ": its configurations are ranked by time")
        arch, _ = resolve_model(one.model, catalog)
        found = search.search(arch, one, catalog)
    except (PlanError, CatalogError) as exc:
        return [], str(exc)
    return found.candidates, found.reason or note




def _override_sentence(name: str, wanted: object, got: object, found: search.SearchOutcome,
                       best: Candidate | None, objective: str) -> str:
    """'the search turned gradient checkpointing on: without it this does not fit', or what keeping it costs."""
    if name == "gradient_checkpointing":
        change = f"the search turned gradient checkpointing {'on' if got else 'off'}"
        instead = "with it on" if wanted else "without it"
    elif name == "micro_batch_size":
        change, instead = f"the search chose micro-batch {got}", f"at micro-batch {wanted}"
    else:
        change, instead = f"the search chose sharding {got}", f"with sharding {wanted}"
    kept = found.best
    if kept is None:
        if found.candidates:
            why = "no configuration that fits has a price"
        elif found.reason and "deadline" in found.reason:
            why = "nothing finishes within the deadline"
        else:
            why = "this does not fit"
        return f"{change}: {instead} {why}"
    if best is not None and objective != "time" and fmt_usd(kept.cost_usd) != fmt_usd(best.cost_usd):
        return f"{change}: {instead} the best configuration costs {fmt_usd(kept.cost_usd)} instead of " \
               f"{fmt_usd(best.cost_usd)}"
    if best is not None and fmt_hours(kept.hours) != fmt_hours(best.hours):
        return f"{change}: {instead} the best configuration takes {fmt_hours(kept.hours)} instead of " \
               f"{fmt_hours(best.hours)}"
    return f"{change}: {instead} the best configuration needs more GPUs"


def search_overrides(request: PlanRequest, result: PlanResult, catalog: Catalog) -> dict[str, str]:
    """The training settings the request sets and the search changed, by path, each with the reason.

    Only settings present in the request count (pydantic's ``model_fields_set``): a default the user never
    touched is the search's to choose.
    """
    if request.hardware is not None:
        return {}
    chosen, planned = request.training, result.request.training
    changed = [n for n in OVERRIDABLE if n in chosen.model_fields_set and getattr(chosen, n) != getattr(planned, n)]
    if not changed:
        return {}
    arch, _ = resolve_model(request.model, catalog)
    best = result.candidates[0] if result.candidates else None
    out = {}
    for name in changed:
        found = search.search(arch, request, catalog, keep=frozenset({name}))
        wanted, got = getattr(chosen, name), getattr(planned, name)
        out[f"training.{name}"] = _override_sentence(
            name, getattr(wanted, "value", wanted), getattr(got, "value", got), found, best,
            request.search.objective)
    return out


_CHEAPEST: OrderedDict[str, tuple[Catalog, Candidate | None]] = OrderedDict()
_CHEAPEST_KEPT = 64


def _cheapest_in(mode: str, request: PlanRequest, catalog: Catalog) -> Candidate | None:
    """The search's pick when ranked by `mode`'s price. It does not depend on the dataset size (every configuration
    trains the same tokens at its own price per GPU-hour) unless a deadline ranks, so typing a token count reuses
    it."""
    key = json.dumps([mode, request.model_dump(mode="json", exclude={"data": {"tokens", "epochs"}}
                                                if request.search.objective != "cost_under_deadline" else None)],
                     sort_keys=True)
    with _ROWS_LOCK:
        kept = _CHEAPEST.get(key)
    if kept is not None and kept[0] is catalog:
        return kept[1]
    arch, _ = resolve_model(request.model, catalog)
    best = search.search(arch, request, catalog).best
    with _ROWS_LOCK:
        _CHEAPEST[key] = (catalog, best)
        while len(_CHEAPEST) > _CHEAPEST_KEPT:
            _CHEAPEST.popitem(last=False)
    return best


def priced_alternatives(request: PlanRequest, result: PlanResult, catalog: Catalog,
                        today: dt.date | None = None) -> list[PricedOption]:
    """For each pricing mode the plan has no price in (no spot price for its GPU, say), the cheapest configuration
    of the catalog that has one, planned in that mode: the plan's own cost page would otherwise say only "—". A plan
    that does not fit has no cost in any mode for want of memory, not of a price: it gets the cheapest configuration
    that fits in its own mode, what would run."""
    out = []
    objective = "cost_under_deadline" if request.search.objective == "cost_under_deadline" else "cost"
    for mode in MODES if result.memory.fits else (request.pricing.mode.value,):
        if getattr(result.cost.compute_usd, mode) is not None:
            continue
        priced = request.model_copy(update={
            "hardware": None,
            "pricing": request.pricing.model_copy(update={"mode": PricingMode(mode), "usd_per_gpu_hour": None}),
            "search": request.search.model_copy(update={"objective": objective, "gpus": None})})
        try:
            best = _cheapest_in(mode, priced, catalog)
            if best is None:
                continue
            r = plan(on_candidate(priced, best), catalog, today)
        except (PlanError, CatalogError, ValueError):
            continue
        usd = getattr(r.cost.compute_usd, mode)
        if usd is not None:
            out.append(PricedOption(mode=mode, hardware=r.hardware, provider=r.cost.provider, hours=r.time.hours,
                                    compute_usd=usd, price_date=r.cost.price_date))
    return out


def analyse(request: PlanRequest, catalog: Catalog | None = None, today: dt.date | None = None) -> Analysis:
    """Plan the request and gather every chart's data. Raises PlanError when the request cannot be planned."""
    catalog = catalog or load_catalog()
    result = plan(request, catalog, today)
    planned = result.request
    candidates, note = _candidates(request, result, catalog)
    try:
        curve: ScalingCurve | None = scaling(planned, catalog)
    except (PlanError, CatalogError, ValueError):
        curve = None
    figures = Figures(
        model=_model_summary(request, result, catalog), memory_by_gpu=memory_by_gpu(result, catalog, today),
        providers=provider_costs(planned, catalog, today) if result.memory.fits else [],  # unpriced: unfit
        candidates=candidates, search_note=note,
        scaling=curve, break_even=break_even(result, catalog),
        overrides=search_overrides(request, result, catalog),
        priced_alternatives=priced_alternatives(request, result, catalog, today))
    result.sanity = sanity.with_alternatives(result, catalog, figures.priced_alternatives)
    return Analysis(result=result, figures=figures)


# --------------------------------------------------------------------------- words and key figures


def hardware_label(hw: HardwareSpec) -> str:
    """'8× H100-SXM' or '2 nodes × 8 H100-SXM (16 GPUs)'."""
    if hw.nodes == 1:
        return f"{hw.gpus_per_node}× {hw.gpu}"
    return f"{hw.nodes} nodes × {hw.gpus_per_node} {hw.gpu} ({hw.gpus} GPUs)"


def cost_range(result: PlanResult) -> tuple[float, float] | None:
    """Cheapest and dearest total over the priced modes (compute + storage + egress + idle)."""
    values = list(sanity.mode_totals(result).values())
    return (min(values), max(values)) if values else None


MODE_COSTS = "Cost by pricing mode"  # the key figure of the cheapest to the dearest mode's total
NOT_FIT = "none: it does not fit"  # a key figure of money for a plan that cannot run


def cost_range_text(result: PlanResult) -> str:
    if not result.memory.fits:
        return NOT_FIT
    totals = sanity.mode_totals(result)  # cheapest first
    if not totals:
        return "no price"
    (lo_mode, lo), (hi_mode, hi) = next(iter(totals.items())), list(totals.items())[-1]
    if fmt_usd(lo) == fmt_usd(hi):
        return f"{fmt_usd(lo)} {sanity.mode_name(lo_mode)}" if len(totals) == 1 else fmt_usd(lo)
    # each end names its pricing mode: beside the estimate's 'likely X (estimate range A–B)' it reads as another
    # kind of range, the cheapest mode to the dearest, not as the estimate's spread
    return f"{fmt_usd(lo)} {sanity.mode_name(lo_mode)} to {fmt_usd(hi)} {sanity.mode_name(hi_mode)}"


def about_hours(hours: float) -> str:
    """'about 3.2 h', and 'about 2,300 years' where fmt_hours already says 'about' (never 'about about')."""
    text = fmt_hours(hours)
    return text if text.startswith("about ") else f"about {text}"


def conclusion(result: PlanResult) -> str:
    """One sentence: what to rent, how long, how much, and whether it fits; a plan that does not fit says that,
    by how much and what would, and gives no cost."""
    t, m = result.request.training, result.memory
    what = f"Fine-tune {result.model_name} with {t.method.value} on {hardware_label(result.hardware)}"
    if not m.fits:
        text = sanity.not_fit_text(result) or ""
        return f"{what}: {text[:1].lower()}{text[1:]}"
    mode = result.request.pricing.mode.value.replace("_", "-")
    total = fmt_usd(result.cost.total_usd) if result.cost.total_usd is not None else "an unknown cost"
    where = f" at {result.cost.provider}" if result.cost.provider else ""
    return (f"{what}: {about_hours(result.time.hours)} and {total} {mode}{where}; it fits in "
            f"{fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)} per GPU.")


def key_figures(result: PlanResult) -> list[KeyFigure]:
    c, t, m = result.compute, result.time, result.memory
    return [
        KeyFigure(label="Hardware", value=hardware_label(result.hardware)),
        KeyFigure(label="Wall time", value=fmt_hours(t.hours)),
        KeyFigure(label="GPU-hours", value=fmt_gpu_hours(t.gpu_hours)),
        KeyFigure(label=MODE_COSTS, value=cost_range_text(result)),
        KeyFigure(label="Total cost", value=fmt_usd(result.cost.total_usd) if m.fits else NOT_FIT),
        KeyFigure(label="Memory per GPU", value=f"{fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)}"
                  + ("" if m.fits else " (does not fit)")),
        KeyFigure(label="Throughput", value=f"{c.tokens_per_second:,.0f} tokens/s"),
        KeyFigure(label="MFU", value=f"{c.mfu:.0%}"),
    ]
