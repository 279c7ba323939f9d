"""The charts of an analysis, as data: memory per GPU type, cost by provider, time against cost,
scaling, buy vs rent.

The window draws them with pyqtgraph (gui/charts.py) and the PDF with its own writer (gui/pdf.py),
from these same objects, so a chart on screen and on paper agree. They stand apart from the report's
sections (core/planner/report.py) because the window shows them without a report; a candidate's
label is here because the time-vs-cost chart's points and the window's candidate table name a
configuration the same way.
"""

from __future__ import annotations

from core.document import BarChart, LineChart, Point, ScatterChart, Series
from core.planner.analysis import MODES, BreakEven, Figures, ScalingCurve
from core.planner.gpu_memory import GpuMemory
from core.planner.result import Candidate

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "logits", "overhead")
MEMORY_CAPTION = (
    "Each GPU type at the configuration the hardware search picks for it (labelled nodes × GPUs "
    "per node, as 2×8, or 8× for one node; then sharding, recomputation, micro-batch), with your "
    "model, method, precision, optimizer, offload and sequence length unchanged; (plan) is the "
    "planned configuration. The vertical line is the card's memory; ✗ marks a type on which "
    "nothing fits within the search limits, drawn at the plan's counts. GPU types without a "
    "figure for this precision are left out."
)


def memory_label(row: GpuMemory) -> str:
    """'H100-SXM · 8× zero3 (plan)', with ✗ when it does not fit."""
    label = f"{row.gpu} · {row.configuration}" if row.configuration else row.gpu
    return label + (" (plan)" if row.basis == "plan" else "") + ("" if row.fits else " ✗")


def memory_chart(figures: Figures) -> BarChart:
    rows = [r for r in figures.memory_by_gpu if r.error is None]
    return BarChart(
        title="Memory per GPU on each GPU type",
        unit="GB per GPU",
        categories=[r.gpu for r in rows],
        category_labels=[memory_label(r) for r in rows],
        stacked=True,
        series=[Series(name=p, values=[getattr(r, p) / 1e9 for r in rows]) for p in MEMORY_PARTS],
        markers=[r.capacity / 1e9 for r in rows],
        marker_label="GPU memory",
        caption=MEMORY_CAPTION,
    )


def provider_chart(figures: Figures) -> BarChart:
    rows = figures.providers
    return BarChart(
        title="Compute cost by provider and pricing mode",
        unit="USD",
        categories=[p.provider_name for p in rows],
        series=[
            Series(
                name=m.replace("_", "-"), values=[getattr(p.compute_usd, m) or 0.0 for p in rows]
            )
            for m in MODES
        ],
        caption="The same job (GPU, count, hours) at each provider that rents this GPU; spot "
        "includes the expected redone work; a missing bar means the provider lists no price "
        "in that mode.",
    )


def pareto_chart(figures: Figures) -> ScatterChart:
    return ScatterChart(
        title="Time vs cost of the configurations that fit",
        x_label="hours",
        y_label="USD",
        caption="Every configuration the search kept; the Pareto front (no other is both faster "
        "and cheaper) is highlighted and joined.",
        points=[
            Point(x=c.hours, y=c.cost_usd, highlight=c.pareto, label=candidate_label(c))
            for c in figures.candidates
            if c.cost_usd is not None
        ],
    )


def scaling_chart(curve: ScalingCurve) -> LineChart:
    gpus = [n * curve.gpus_per_node for n in curve.nodes]
    base = curve.tokens_per_s[0] / gpus[0] if gpus and curve.tokens_per_s[0] > 0 else 0.0
    eff = curve.efficiency[-1] if curve.efficiency else 1.0
    return LineChart(
        title=f"Throughput vs GPUs ({curve.gpu}, {curve.gpus_per_node} per node)",
        x_label="GPUs",
        y_label="tokens/s",
        x=gpus,
        caption=(
            f"Adding nodes of {curve.gpus_per_node} {curve.gpu} with this job's sharding and "
            f"network; the gap to perfect scaling is time lost to communication ({eff:.0%} "
            f"efficiency at {gpus[-1]:g} GPUs)."
            if gpus
            else "No node count of this GPU can run the job."
        )
        + _batch_limit(curve),
        series=[
            Series(name="planned", values=curve.tokens_per_s),
            Series(name="perfect scaling", values=[base * g for g in gpus], style="dashed"),
        ],
    )


def _batch_limit(curve: ScalingCurve) -> str:
    """Why the curve stops: past it, data-parallel replicas would outnumber the sequences of one
    step."""
    if not curve.dropped_nodes:
        return ""
    first = min(curve.dropped_nodes) * curve.gpus_per_node
    return (
        f" Not drawn from {first:g} GPUs on: more data-parallel replicas × micro-batch than the "
        f"global batch of {curve.global_batch} sequences, so the extra GPUs would have nothing to "
        "train."
    )


def break_even_chart(be: BreakEven) -> LineChart:
    series = [Series(name="owned, per used GPU-hour", values=be.owned_usd_per_gpu_hour)]
    if be.rent_usd_per_gpu_hour is not None:
        series.append(
            Series(
                name="rented",
                values=[be.rent_usd_per_gpu_hour] * len(be.utilisation),
                style="dashed",
            )
        )
    floor = max(
        be.rent_usd_per_gpu_hour or 0.0,
        be.owned_usd_per_gpu_hour[-1] if be.owned_usd_per_gpu_hour else 0.0,
    )
    return LineChart(
        title="Buy vs rent: cost per GPU-hour against utilisation",
        x_label="utilisation",
        y_label="USD per GPU-hour",
        x=be.utilisation,
        series=series,
        x_percent=True,
        vline=be.break_even_utilisation,
        vline_label="break-even",
        y_max=3 * floor or None,
        caption=f"Owning a GPU (${be.capex_usd_per_gpu:,.0f} each) costs less per "
        "used hour the more it is used; above the break-even utilisation it beats renting.",
    )


def sharding_text(c: Candidate) -> str:
    """'zero3', or 'zero3/fsdp' where other shardings give the same memory, time and cost (the row's
    variants)."""
    return "/".join(s.value for s in (c.sharding, *c.variants))


def candidate_label(c: Candidate) -> str:
    """'8× H100-SXM zero3' on one node, '4 nodes × 8 H100-SXM fsdp' on several, '… tp 8 × pp 4' with
    model parallelism, '8× H100-SXM zero3/fsdp' when shardings alike give the same outcome."""
    gpus = (
        f"{c.nodes} nodes × {c.gpus_per_node} {c.gpu}"
        if c.nodes > 1
        else f"{c.gpus_per_node}× {c.gpu}"
    )
    split = c.tensor_parallel * c.pipeline_parallel > 1
    layout = f" tp {c.tensor_parallel} × pp {c.pipeline_parallel}" if split else ""
    return f"{gpus} {sharding_text(c)}{layout}"
