"""What a plan shows, independent of how it is drawn: chart data, key figures, the report's sections.

The window and the PDF renderer call the same functions, so a number on screen and in the PDF agree.
Nothing here does planning math of its own: every figure comes from ``core.planner`` (a plan per GPU for the
memory chart, a plan per provider for the price comparison, the planner's search, scaling and cost curves).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import OrderedDict
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from core.catalog import GPU, PRICING_MODES, Catalog, CatalogError, load_catalog
from core.planner import cost, search
from core.planner.models import Candidate, ComputeCost, HardwareSpec, PlanRequest, PlanResult, Sharding
from core.planner.params import Architecture
from core.planner.plan import PlanError, gpu_hardware, plan, resolve_model
from core.units import fmt_bytes, fmt_count, fmt_hours, fmt_usd

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "logits", "overhead")
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
    gradient_checkpointing: bool = False
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
        return f"{gpus} {self.sharding.value}" + (", recompute" if self.gradient_checkpointing else "")


class ProviderCost(BaseModel):
    provider: str
    provider_name: str
    usd_per_gpu_hour: ComputeCost
    compute_usd: ComputeCost
    total_usd: float | None
    spot_expected_lost_hours: float | None
    dates: dict[str, str | None]
    sources: dict[str, str | None]


class ScalingCurve(BaseModel):
    gpu: str
    gpus_per_node: int
    nodes: list[float]
    tokens_per_s: list[float]
    efficiency: list[float]
    hours: list[float]
    fits: list[bool]


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
    candidates: list[Candidate]
    search_note: str | None = None
    scaling: ScalingCurve | None = None
    break_even: BreakEven | None = None


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
                     gradient_checkpointing=t.gradient_checkpointing, fits=m.fits, max_micro_batch=m.max_micro_batch,
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
            spec = HardwareSpec(gpu=gpu.id, gpus_per_node=choice.gpus_per_node, nodes=choice.nodes)
            training = planned.training.model_copy(update={
                "sharding": choice.sharding, "micro_batch_size": choice.micro_batch_size,
                "gradient_checkpointing": choice.gradient_checkpointing})
            r = plan(planned.model_copy(update={"hardware": spec, "training": training}), catalog, today)
            return _memory_row(gpu.id, r, "search")
        spec = result.hardware.model_copy(update={"gpu": gpu.id})
        r = plan(planned.model_copy(update={"hardware": spec}), catalog, today)
    except (PlanError, CatalogError) as exc:
        return GpuMemory(gpu=gpu.id, capacity=gpu.memory_bytes, basis="as_planned", error=str(exc))
    return _memory_row(gpu.id, r, "as_planned",
                       note=f"nothing fits on {gpu.id} with up to {planned.search.max_gpus} GPUs")


def _memory_key(planned: PlanRequest) -> str:
    """What a GPU row depends on. Memory never depends on the dataset size or the prices, and neither does the
    search's pick for one GPU type: every configuration runs the same optimizer steps at the same price per
    GPU-hour. Only a deadline makes the dataset size matter."""
    key = planned.model_dump(mode="json", exclude={"pricing": True})
    if planned.search.objective != "cost_under_deadline":
        key["data"].pop("tokens", None)
        key["data"].pop("epochs", None)
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
    pricing = request.pricing.model_copy(update={"usd_per_gpu_hour": None})
    out = []
    for slug in catalog.providers():
        try:
            if not catalog.prices_for(hw.gpu, slug):
                continue
            r = plan(request.model_copy(update={"pricing": pricing.model_copy(update={"provider": slug})}),
                     catalog, today)
        except (PlanError, CatalogError):
            continue
        rows = {mode: catalog.best_price(hw.gpu, mode, slug) for mode in MODES}
        out.append(ProviderCost(
            provider=slug, provider_name=catalog.provider(slug).name, usd_per_gpu_hour=r.cost.usd_per_gpu_hour,
            compute_usd=r.cost.compute_usd, total_usd=r.cost.total_usd,
            spot_expected_lost_hours=r.cost.spot_expected_lost_hours,
            dates={m: (row.date if row else None) for m, row in rows.items()},
            sources={m: (row.source if row else None) for m, row in rows.items()}))
    return out


def scaling(request: PlanRequest, catalog: Catalog) -> ScalingCurve:
    hw = request.hardware
    assert hw is not None
    arch, _ = resolve_model(request.model, catalog)
    gpu = catalog.gpu(hw.gpu)
    curve = search.scaling_curve(arch, request, gpu_hardware(gpu, hw, request.training.precision))
    return ScalingCurve(gpu=gpu.id, gpus_per_node=hw.gpus_per_node, nodes=curve["nodes"],
                        tokens_per_s=curve["tokens_per_s"], efficiency=curve["efficiency"], hours=curve["hours"],
                        fits=[bool(f) for f in curve["fits"]])


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
    if result.candidates:
        return result.candidates, None
    free = request.model_copy(update={"hardware": None})
    arch, _ = resolve_model(free.model, catalog)
    try:
        found = search.search(arch, free, catalog)
    except (PlanError, CatalogError) as exc:
        return [], str(exc)
    return found.candidates, found.reason


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
        providers=provider_costs(planned, catalog, today), candidates=candidates, search_note=note,
        scaling=curve, break_even=break_even(result, catalog))
    return Analysis(result=result, figures=figures)


# --------------------------------------------------------------------------- words and key figures


def hardware_label(hw: HardwareSpec) -> str:
    """'8× H100-SXM' or '2 nodes × 8 H100-SXM (16 GPUs)'."""
    if hw.nodes == 1:
        return f"{hw.gpus_per_node}× {hw.gpu}"
    return f"{hw.nodes} nodes × {hw.gpus_per_node} {hw.gpu} ({hw.gpus} GPUs)"


def cost_range(result: PlanResult) -> tuple[float, float] | None:
    """Cheapest and dearest total over the priced modes (compute + storage + egress + idle)."""
    extra = result.cost.storage_usd + result.cost.egress_usd + result.cost.idle_usd
    values = [v + extra for v in result.cost.compute_usd.model_dump().values() if v is not None]
    return (min(values), max(values)) if values else None


def cost_range_text(result: PlanResult) -> str:
    span = cost_range(result)
    if span is None:
        return "no price"
    lo, hi = span
    return fmt_usd(lo) if fmt_usd(lo) == fmt_usd(hi) else f"{fmt_usd(lo)}–{fmt_usd(hi)}"


def conclusion(result: PlanResult) -> str:
    """One sentence: what to rent, how long, how much, and whether it fits."""
    t, m = result.request.training, result.memory
    mode = result.request.pricing.mode.value.replace("_", "-")
    total = fmt_usd(result.cost.total_usd) if result.cost.total_usd is not None else "an unknown cost"
    where = f" at {result.cost.provider}" if result.cost.provider else ""
    fit = (f"it fits in {fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)} per GPU" if m.fits else
           f"it does NOT fit: it needs {fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)} per GPU")
    return (f"Fine-tune {result.model_name} with {t.method.value} on {hardware_label(result.hardware)}: "
            f"about {fmt_hours(result.time.hours)} and {total} {mode}{where}; {fit}.")


class KeyFigure(BaseModel):
    label: str
    value: str


def key_figures(result: PlanResult) -> list[KeyFigure]:
    c, t, m = result.compute, result.time, result.memory
    return [
        KeyFigure(label="Hardware", value=hardware_label(result.hardware)),
        KeyFigure(label="Wall time", value=fmt_hours(t.hours)),
        KeyFigure(label="GPU-hours", value=f"{t.gpu_hours:,.1f}"),
        KeyFigure(label="Cost range", value=cost_range_text(result)),
        KeyFigure(label="Total cost", value=fmt_usd(result.cost.total_usd)),
        KeyFigure(label="Memory per GPU", value=f"{fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)}"),
        KeyFigure(label="Throughput", value=f"{c.tokens_per_second:,.0f} tokens/s"),
        KeyFigure(label="MFU", value=f"{c.mfu:.0%}"),
    ]


# --------------------------------------------------------------------------- report content


class Series(BaseModel):
    name: str
    values: list[float]
    style: Literal["solid", "dashed"] = Field("solid", description="dashed for a reference line")


class _Chart(BaseModel):
    title: str
    caption: str | None = Field(None, description="what the chart holds constant and how to read it")


class BarChart(_Chart):
    kind: Literal["bar"] = "bar"
    unit: str
    categories: list[str]
    category_labels: list[str] | None = Field(None, description="what the axis prints (default: categories)")
    series: list[Series]
    stacked: bool = False
    markers: list[float | None] | None = Field(None, description="one line per category, e.g. GPU capacity")
    marker_label: str | None = None

    def labels(self) -> list[str]:
        return self.category_labels or self.categories


class Point(BaseModel):
    x: float
    y: float
    label: str = ""
    highlight: bool = False


class ScatterChart(_Chart):
    kind: Literal["scatter"] = "scatter"
    x_label: str
    y_label: str
    points: list[Point]
    highlight_label: str = "Pareto front"


class LineChart(_Chart):
    kind: Literal["line"] = "line"
    x_label: str
    y_label: str
    x: list[float]
    series: list[Series]
    vline: float | None = None
    vline_label: str | None = None
    y_max: float | None = Field(None, description="clip the y axis here (a curve that shoots up at one end)")
    x_percent: bool = Field(False, description="x values are fractions shown as percentages")


Chart = Annotated[BarChart | ScatterChart | LineChart, Field(discriminator="kind")]


class Table(BaseModel):
    kind: Literal["table"] = "table"
    header: list[str]
    rows: list[list[str]]
    widths: list[float] | None = Field(None, description="relative column widths")


class Paragraph(BaseModel):
    kind: Literal["paragraph"] = "paragraph"
    text: str


class Bullets(BaseModel):
    kind: Literal["bullets"] = "bullets"
    items: list[str]


Block = Annotated[Paragraph | Bullets | Table | BarChart | ScatterChart | LineChart, Field(discriminator="kind")]


class Section(BaseModel):
    title: str
    blocks: list[Block]


class Report(BaseModel):
    title: str
    date: str
    conclusion: str
    key_figures: list[KeyFigure]
    sections: list[Section]


MEMORY_CAPTION = (
    "Each GPU type at the configuration the hardware search picks for it (GPUs per node × nodes, sharding, "
    "recomputation, micro-batch), with your model, method, precision, optimizer, offload and sequence length "
    "unchanged; (plan) is the planned configuration. The vertical line is the card's memory; ✗ marks a type on which "
    "nothing fits within the search limits, drawn at the plan's counts. GPU types without a figure for this "
    "precision are left out."
)


def memory_label(row: GpuMemory) -> str:
    """'H100-SXM · 8× zero3 (plan)', with ✗ when it does not fit."""
    label = f"{row.gpu} · {row.configuration}" if row.configuration else row.gpu
    return label + (" (plan)" if row.basis == "plan" else "") + ("" if row.fits else " ✗")


def memory_chart(figures: Figures) -> BarChart:
    rows = [r for r in figures.memory_by_gpu if r.error is None]
    return BarChart(
        title="Memory per GPU on each GPU type", unit="GB per GPU", categories=[r.gpu for r in rows],
        category_labels=[memory_label(r) for r in rows], stacked=True,
        series=[Series(name=p, values=[getattr(r, p) / 1e9 for r in rows]) for p in MEMORY_PARTS],
        markers=[r.capacity / 1e9 for r in rows], marker_label="GPU memory", caption=MEMORY_CAPTION)


def provider_chart(figures: Figures) -> BarChart:
    rows = figures.providers
    return BarChart(
        title="Compute cost by provider and pricing mode", unit="USD", categories=[p.provider_name for p in rows],
        series=[Series(name=m.replace("_", "-"), values=[getattr(p.compute_usd, m) or 0.0 for p in rows])
                for m in MODES],
        caption="The same job (GPU, count, hours) at each provider that rents this GPU; spot includes the expected "
                "redone work; a missing bar means the provider lists no price in that mode.")


def pareto_chart(figures: Figures) -> ScatterChart:
    return ScatterChart(
        title="Time vs cost of the configurations that fit", x_label="hours", y_label="USD",
        caption="Every configuration the search kept; the Pareto front (no other is both faster and cheaper) is "
                "highlighted and joined.",
        points=[Point(x=c.hours, y=c.cost_usd, highlight=c.pareto, label=candidate_label(c))
                for c in figures.candidates if c.cost_usd is not None])


def scaling_chart(curve: ScalingCurve) -> LineChart:
    gpus = [n * curve.gpus_per_node for n in curve.nodes]
    base = curve.tokens_per_s[0] / gpus[0] if gpus and curve.tokens_per_s[0] > 0 else 0.0
    eff = curve.efficiency[-1] if curve.efficiency else 1.0
    return LineChart(
        title=f"Throughput vs GPUs ({curve.gpu}, {curve.gpus_per_node} per node)", x_label="GPUs",
        y_label="tokens/s", x=gpus,
        caption=f"Adding nodes of {curve.gpus_per_node} {curve.gpu} with this job's sharding and network; the gap to "
                f"perfect scaling is time lost to communication ({eff:.0%} efficiency at {gpus[-1]:g} GPUs)."
        if gpus else None,
        series=[Series(name="planned", values=curve.tokens_per_s),
                Series(name="perfect scaling", values=[base * g for g in gpus], style="dashed")])


def break_even_chart(be: BreakEven) -> LineChart:
    series = [Series(name="owned, per used GPU-hour", values=be.owned_usd_per_gpu_hour)]
    if be.rent_usd_per_gpu_hour is not None:
        series.append(Series(name="rented", values=[be.rent_usd_per_gpu_hour] * len(be.utilisation), style="dashed"))
    floor = max(be.rent_usd_per_gpu_hour or 0.0, be.owned_usd_per_gpu_hour[-1] if be.owned_usd_per_gpu_hour else 0.0)
    return LineChart(title="Buy vs rent: cost per GPU-hour against utilisation", x_label="utilisation",
                     y_label="USD per GPU-hour", x=be.utilisation, series=series, x_percent=True,
                     vline=be.break_even_utilisation, vline_label="break-even", y_max=3 * floor or None,
                     caption=f"Owning a GPU (${be.capex_usd_per_gpu:,.0f} each) costs less per "
                             "used hour the more it is used; above the break-even utilisation it beats renting.")


def candidate_label(c: Candidate) -> str:
    """'8× H100-SXM zero3' on one node, '4 nodes × 8 H100-SXM fsdp' on several."""
    gpus = f"{c.nodes} nodes × {c.gpus_per_node} {c.gpu}" if c.nodes > 1 else f"{c.gpus_per_node}× {c.gpu}"
    return f"{gpus} {c.sharding.value}"


def seconds(value: float) -> str:
    """'0.3 s', '12 s': a sub-second checkpoint write is not '0 s'."""
    return f"{value:.1f} s" if value < 10 else f"{value:,.0f} s"


def price_age_days(result: PlanResult, today: dt.date) -> int | None:
    if not result.cost.price_date:
        return None
    return (today - dt.date.fromisoformat(result.cost.price_date)).days


def _risks(result: PlanResult, today: dt.date) -> list[str]:
    ck, a, c = result.checkpoint, result.request.assumptions, result.cost
    out = []
    if c.compute_usd.spot is not None:
        out.append(f"Preemption: spot at {a.spot_preemptions_per_hour:g} preemptions per hour loses about "
                   f"{c.spot_expected_lost_hours or 0:,.1f} GPU-hours to redone work and restarts; spot costs "
                   f"{fmt_usd(c.compute_usd.spot)} against {fmt_usd(c.compute_usd.on_demand)} on-demand.")
    else:
        out.append("Preemption: no spot price for this GPU and provider, so no preemption risk is priced.")
    out.append(f"Failures: one job-killing failure every {fmt_hours(ck.job_mtbf_hours)} on "
               f"{result.hardware.gpus} GPUs (one per {a.gpu_mtbf_hours:,.0f} GPU-hours); expect "
               f"{ck.expected_failures:.2f} during the run.")
    out.append(f"Checkpoint plan: {fmt_bytes(ck.size_bytes)} every {ck.interval_minutes:.0f} min "
               f"(Young/Daly optimum), {seconds(ck.write_seconds)} per write, {ck.overhead_fraction:.1%} time "
               "overhead.")
    age = price_age_days(result, today)
    if age is None:
        out.append(f"Price age: the {c.provider or 'chosen'} price has no date in its source; check it before "
                   "committing.")
    else:
        stale = " — older than a year, check it" if age > 365 else ""
        out.append(f"Price age: {c.provider} price seen {c.price_date}, {age} days ago{stale}.")
    return out


FORMULAS = [
    "Memory per GPU = weights + gradients + optimizer states + activations + logits + overhead, each divided by "
    "the sharding degree where ZeRO/FSDP shards it; peak composed as the step runs.",
    "Weights: parameters × bytes per parameter (2 for bf16, ~0.5 + quantization constants for NF4).",
    "Optimizer (AdamW): 2 states × 4 bytes per trainable parameter (+4 for fp32 master weights in mixed precision).",
    "FLOPs per token ≈ 6 × parameters (+ attention term); 8 × with full activation recomputation; LoRA skips "
    "the frozen weights' gradient matmuls.",
    "Time = trained tokens × FLOPs per token ÷ (GPUs × peak FLOP/s × MFU) + exposed communication.",
    "Checkpoint interval (Young/Daly): τ ≈ √(2 δ M) − δ, with δ the write time and M the job MTBF "
    "(GPU MTBF ÷ GPUs, with spot preemptions added).",
    "Compute cost = GPU-hours × price per GPU-hour × (1 − discount); spot bills the expected lost work too.",
    "Buy vs rent: owned cost per used GPU-hour = (capex × (1 − residual) ÷ years + power × PUE + colocation + "
    "operations) ÷ (8,766 h × utilisation); break-even utilisation = yearly owned cost ÷ (8,766 × rent).",
]


def build_report(analysis: Analysis, today: dt.date | None = None) -> Report:
    """The report's content: sections of paragraphs, bullets, tables and charts, in reading order."""
    today = today or dt.date.today()
    r, f = analysis.result, analysis.figures
    t = r.request.training
    m = r.memory
    summary = [
        f"Model: {r.model_name}, {fmt_count(r.compute.params_total)} parameters"
        + (f" ({fmt_count(r.compute.params_active)} active)" if r.compute.params_active != r.compute.params_total
           else "") + f", {fmt_count(r.compute.params_trainable)} trained ({t.method.value}).",
        f"Data: {fmt_count(r.request.data.tokens)} tokens × {r.request.data.epochs:g} epochs at "
        f"{r.request.data.seq_len} tokens per sequence; {r.compute.steps:,} steps of "
        f"{r.compute.tokens_per_step:,} tokens.",
        f"Memory: {fmt_bytes(m.per_gpu.total)} per GPU of {fmt_bytes(m.gpu_memory)} "
        f"({'fits' if m.fits else 'does not fit'}); largest micro-batch {m.max_micro_batch}, longest sequence "
        f"{m.max_seq_len:,}.",
        f"Time: {fmt_hours(r.time.hours)} wall, {r.time.gpu_hours:,.1f} GPU-hours at "
        f"{r.compute.tokens_per_second:,.0f} tokens/s (MFU {r.compute.mfu:.0%}, scaling "
        f"{r.compute.scaling_efficiency:.0%}).",
        f"Cost: {cost_range_text(r)} across pricing modes; {fmt_usd(r.cost.total_usd)} "
        f"{r.request.pricing.mode.value.replace('_', '-')} at {r.cost.provider or 'no provider'}.",
    ]
    memory_rows = [[p, fmt_bytes(getattr(m.per_gpu, p))] for p in (*MEMORY_PARTS, "total")]
    cost_rows = [[line.item, fmt_usd(line.usd), line.detail, line.date or "undated"] for line in r.cost.items]
    sections = [
        Section(title="Executive summary", blocks=[Bullets(items=summary)]),
        Section(title="Memory", blocks=[
            Table(header=["component", "per GPU"], rows=memory_rows, widths=[2, 1]), memory_chart(f),
            *([Bullets(items=m.suggestions)] if m.suggestions else [])]),
        Section(title="Cost", blocks=[
            Table(header=["item", "USD", "detail", "price date"], rows=cost_rows, widths=[2, 1, 4, 1.3]),
            *([provider_chart(f)] if f.providers else []),
            *([break_even_chart(f.break_even)] if f.break_even else [])]),
    ]
    hw_blocks: list[Block] = []
    if f.candidates:
        hw_blocks.append(pareto_chart(f))
        hw_blocks.append(Table(header=["configuration", "time", "cost", "why"], widths=[2, 1, 1, 4], rows=[
            [candidate_label(c), fmt_hours(c.hours), fmt_usd(c.cost_usd), c.why] for c in f.candidates[:10]]))
    if f.scaling:
        hw_blocks.append(scaling_chart(f.scaling))
    if hw_blocks:
        sections.append(Section(title="Hardware options", blocks=hw_blocks))
    sections.append(Section(title="Risks", blocks=[Bullets(items=_risks(r, today))]))
    if r.warnings:
        sections.append(Section(title="Warnings", blocks=[Bullets(items=r.warnings)]))
    sections.append(Section(title="Assumptions", blocks=[Table(
        header=["assumption", "value", "source", "date"], widths=[2, 2, 4, 1.2],
        rows=[[a.name, a.value, a.source, a.date or "—"] for a in r.assumptions])]))
    sections.append(Section(title="Appendix: formulas", blocks=[Bullets(items=FORMULAS)]))
    return Report(title=f"Fine-tuning plan: {r.model_name} ({t.method.value})", date=today.isoformat(),
                  conclusion=conclusion(r), key_figures=key_figures(r), sections=sections)
