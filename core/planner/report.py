"""The plan report's content, independent of drawing: the charts of an analysis and the report's sections.

It builds a ``core.document.Report``; the window shows the same charts and ``gui/pdf.py`` draws the document, so a
number on screen and in the PDF agree. Every figure comes from ``core.planner.analysis``; this module chooses the
charts, tables and words.
"""

from __future__ import annotations

import datetime as dt

from core.catalog import STALE_AFTER_DAYS
from core.document import (
    BarChart,
    Block,
    Bullets,
    KeyFigure,
    LineChart,
    Paragraph,
    Point,
    Report,
    ScatterChart,
    Section,
    Series,
    Table,
)
from core.planner.analysis import MODES, Analysis, BreakEven, Figures, ScalingCurve
from core.planner.choose import search
from core.planner.gpu_memory import GpuMemory
from core.planner.headline import conclusion, cost_range, cost_range_text, key_figures
from core.planner.money.plan_cost import offer_place
from core.planner.money.sanity import seen_text
from core.planner.result import Band, Candidate, ComputeResult, PlanResult
from core.units import (
    fmt_bytes,
    fmt_count,
    fmt_gpu_hours,
    fmt_hours,
    fmt_hours_range,
    fmt_rate_range,
    fmt_usd,
    fmt_usd_range,
    plural,
)

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "logits", "overhead")

# The kinds of work in ComputeResult.step_breakdown_s, in the order a step runs them, as a reader names them.
STEP_PARTS = (("gemm", "matmuls (GEMM)"), ("attention", "attention"), ("memory_bound", "memory-bound kernels"),
              ("optimizer", "optimizer step"), ("host_transfer", "host transfer"),
              ("exposed_comm", "exposed communication"), ("bubble", "pipeline bubble"))
STEP_HEADER = ["part of the step", "seconds", "share of the step"]

MEMORY_CAPTION = (
    "Each GPU type at the configuration the hardware search picks for it (labelled nodes × GPUs per node, as 2×8, "
    "or 8× for one node; then sharding, recomputation, micro-batch), with your model, method, precision, optimizer, "
    "offload and sequence length unchanged; (plan) is the planned configuration. The vertical line is the card's "
    "memory; ✗ marks a type on which nothing fits within the search limits, drawn at the plan's counts. GPU types "
    "without a figure for this precision are left out."
)


# --------------------------------------------------------------------------- likely ranges


def likely_hours(result: PlanResult) -> str | None:
    """'likely 3.2 h (range 2.6–4.1 h)', or None without a band: the CLI, the window and the PDF say it alike."""
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
    """'likely $54.06 (estimate range $44.00–$70.00)', or None without a band or without a price: named so beside
    the cost by pricing mode ('$5.48 spot to $24.45 on-demand'), another kind of range."""
    band, total = result.cost.total_usd_range, result.cost.total_usd
    if band is None or total is None:
        return None
    return f"likely {fmt_usd(total)} (estimate range {fmt_usd_range(band.low, band.high, total)})"


def bands(result: PlanResult) -> list[Band]:
    """The plan's bands that are filled: time, throughput, cost."""
    found = (result.time.hours_range, result.compute.tokens_per_second_range, result.cost.total_usd_range)
    return [b for b in found if b is not None]


def band_note(band: Band) -> str:
    """'80% of held-out published runs of this kind fell inside (regime: …, from 24 runs of 5 sources)': how far to
    trust it (each source's runs checked against a band built without that source)."""
    return (f"{band.coverage:.0%} of held-out published runs of this kind fell inside (regime: {band.regime}, "
            f"from {band.cases} runs of {band.sources} sources)")


def band_notes(result: PlanResult) -> list[str]:
    """One note per distinct band basis (the cost band follows the time band, so usually one)."""
    return list(dict.fromkeys(band_note(b) for b in bands(result)))


def band_source(result: PlanResult) -> str | None:
    """Where the ranges come from, for the PDF: a reader of a range must see what it rests on."""
    notes = band_notes(result)
    if not notes:
        return None
    return ("Likely ranges: the planned figure scaled by the spread of the calibration residuals (published ÷ "
            "planned) of published runs of the same regime; the coverage is measured on held-out runs: "
            + "; ".join(notes) + ".")


def shown_key_figures(result: PlanResult) -> list[KeyFigure]:
    """The headline figures, with 'likely X (range A–B)' for wall time, throughput and total cost where the plan
    has bands (the report's table and the window's Summary page show the same)."""
    ranged = {"Wall time": likely_hours(result), "Throughput": likely_tokens_per_second(result),
              "Total cost": likely_cost(result)}
    return [KeyFigure(label=k.label, value=ranged.get(k.label) or k.value) for k in key_figures(result)]


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
        caption=(f"Adding nodes of {curve.gpus_per_node} {curve.gpu} with this job's sharding and network; the gap to "
                 f"perfect scaling is time lost to communication ({eff:.0%} efficiency at {gpus[-1]:g} GPUs)."
                 if gpus else "No node count of this GPU can run the job.") + _batch_limit(curve),
        series=[Series(name="planned", values=curve.tokens_per_s),
                Series(name="perfect scaling", values=[base * g for g in gpus], style="dashed")])


def _batch_limit(curve: ScalingCurve) -> str:
    """Why the curve stops: past it, data-parallel replicas would outnumber the sequences of one step."""
    if not curve.dropped_nodes:
        return ""
    first = min(curve.dropped_nodes) * curve.gpus_per_node
    return (f" Not drawn from {first:g} GPUs on: more data-parallel replicas × micro-batch than the global batch of "
            f"{curve.global_batch} sequences, so the extra GPUs would have nothing to train.")


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


def step_rows(compute: ComputeResult) -> list[tuple[str, float, float]]:
    """(name, seconds, share of the step) for each kind of work that takes any time; a zero row says nothing.

    The share is of the step time the plan reports (the parts add up to it); when that is 0 the parts' own sum
    is used, so a share never divides by zero.
    """
    parts = [(name, float(getattr(compute.step_breakdown_s, key))) for key, name in STEP_PARTS]
    total = compute.step_time_s if compute.step_time_s > 0 else sum(v for _n, v in parts)
    return [(name, v, v / total if total > 0 else 0.0) for name, v in parts if v > 0]


def step_seconds(value: float) -> str:
    """'0.0123 s', '1.25 s', '312 s': three significant figures, a long step in whole seconds."""
    return f"{value:,.0f} s" if value >= 100 else f"{value:.3g} s"


def measured_step_text(compute: ComputeResult) -> str | None:
    """'measured on HOST (GPU, date): X s; planned Y s (Z% slower)' when a measured step set the plan's step time
    (the probe's step suite, applied), else None: the CLI, the window and the PDF say it alike."""
    planned = compute.planned_step_time_s
    if planned is None or planned <= 0:
        return None
    ratio = compute.step_time_s / planned
    how = (f"{ratio:.3g}× the planned time" if ratio > 2 else "as planned" if abs(ratio - 1) < 0.005 else
           f"{abs(ratio - 1):.0%} {'slower' if ratio > 1 else 'faster'} than planned")
    return (f"{compute.step_source}: {step_seconds(compute.step_time_s)}; planned {step_seconds(planned)} "
            f"({how})")


def share_text(share: float) -> str:
    """'42%', and '<1%' for a part too small to round to one percent but not nothing."""
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def step_table_rows(compute: ComputeResult) -> list[list[str]]:
    return [[name, step_seconds(v), share_text(share)] for name, v, share in step_rows(compute)]


def utilisation_text(compute: ComputeResult) -> str:
    """'achieved model-FLOPs utilisation (MFU) 32%', with the hardware-FLOPs figure when the plan has one."""
    text = f"achieved model-FLOPs utilisation (MFU) {compute.mfu:.0%}"
    return text + (f", hardware-FLOPs utilisation (HFU) {compute.hfu:.0%}" if compute.hfu > 0 else "")


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else fmt_hours(s / 3600)


def wall_time_parts(result: PlanResult) -> str:
    """'steps 13.8 min + start-up 10.0 min (…) + evaluation none (…) + checkpoint writes 0 s (…) + failures 0 s':
    what the wall time is made of (time.breakdown_s), with the defaults that decide a part; the CLI's Parts line
    and the report's Time section say it alike."""
    b, a = result.time.breakdown_s, result.request.assumptions
    evaluation = (f"evaluation {_seconds(b.evaluation)}" if b.evaluation > 0 else
                  "evaluation none (assumptions.eval_every_steps 0)")
    return (f"steps {_seconds(b.steps)} + start-up {_seconds(b.start_up)} (assumptions.restart_minutes "
            f"{a.restart_minutes:g}) + {evaluation} + checkpoint writes {_seconds(b.checkpoint_writes)} (to "
            f"{a.checkpoint_tier.value}) + failures {_seconds(b.failures)}")


def time_section(result: PlanResult) -> Section:
    """One optimizer step: how long, how fast, and where its time goes (the zero parts left out)."""
    c = result.compute
    blocks: list[Block] = [Paragraph(text=(
        f"One optimizer step of {c.tokens_per_step:,} tokens takes {step_seconds(c.step_time_s)}; "
        f"{c.tokens_per_second:,.0f} tokens/s over the job; {utilisation_text(c)}.")),
        Paragraph(text=f"The wall time of {fmt_hours(result.time.hours)}: {wall_time_parts(result)}.")]
    measured = measured_step_text(c)
    if measured:
        blocks.append(Paragraph(text=f"Planned vs measured: the step was {measured}; the parts below are the "
                                     "measured layer's, and communication, host transfers and the bubble as planned."))
    rows = step_table_rows(c)
    if rows:
        blocks.append(Table(header=STEP_HEADER, rows=rows, widths=[2, 1, 1]))
    return Section(title="Time", blocks=blocks)


def sharding_text(c: Candidate) -> str:
    """'zero3', or 'zero3/fsdp' where other shardings give the same memory, time and cost (the row's variants)."""
    return "/".join(s.value for s in (c.sharding, *c.variants))


def candidate_label(c: Candidate) -> str:
    """'8× H100-SXM zero3' on one node, '4 nodes × 8 H100-SXM fsdp' on several, '… tp 8 × pp 4' with model
    parallelism, '8× H100-SXM zero3/fsdp' when shardings alike give the same outcome."""
    gpus = f"{c.nodes} nodes × {c.gpus_per_node} {c.gpu}" if c.nodes > 1 else f"{c.gpus_per_node}× {c.gpu}"
    split = c.tensor_parallel * c.pipeline_parallel > 1
    layout = f" tp {c.tensor_parallel} × pp {c.pipeline_parallel}" if split else ""
    return f"{gpus} {sharding_text(c)}{layout}"


def seconds(value: float) -> str:
    """'0.3 s', '12 s': a sub-second checkpoint write is not '0 s'."""
    return f"{value:.1f} s" if value < 10 else f"{value:,.0f} s"


def price_age_days(result: PlanResult, today: dt.date) -> int | None:
    if not result.cost.price_date:
        return None
    return (today - dt.date.fromisoformat(result.cost.price_date)).days


def _preemption_risk(result: PlanResult) -> list[str]:
    """What spot preemptions cost; nothing for a plan that cannot run (no price, so no priced risk)."""
    c, a = result.cost, result.request.assumptions
    if c.unpriced_reason:
        return []
    if c.compute_usd.spot is None:
        return ["Preemption: no spot price for this GPU and provider, so no preemption risk is priced."]
    return [f"Preemption: spot at {a.spot_preemptions_per_hour:g} preemptions per hour loses about "
            f"{fmt_gpu_hours(c.spot_expected_lost_hours or 0)} GPU-hours to redone work and restarts; spot "
            f"costs {fmt_usd(c.compute_usd.spot)} against {fmt_usd(c.compute_usd.on_demand)} on-demand."]


def _price_age(result: PlanResult, today: dt.date) -> list[str]:
    """How old the chosen price is; nothing where no price was chosen (a plan that cannot run has none)."""
    c = result.cost
    if c.unpriced_reason or not c.provider:
        return []
    age = price_age_days(result, today)
    where = f" {offer_place(c)}" if c.instance else ""
    if age is None:
        return [f"Price age: the {c.provider}{where} price has no date in its source; check it before committing."]
    stale = f" — stale (older than {STALE_AFTER_DAYS} days), check it" if age > STALE_AFTER_DAYS else ""
    return [f"Price age: {c.provider}{where} price seen {c.price_date}, {age} days ago{stale}."]


def _risks(result: PlanResult, today: dt.date) -> list[str]:
    ck, a = result.checkpoint, result.request.assumptions
    # A spot plan's checkpoints are planned for failures and preemptions together (plan.py): say so.
    spot = result.request.pricing.mode.value == "spot"
    events = "job-killing failure or preemption" if spot else "job-killing failure"
    rates = (f"one failure per {a.gpu_mtbf_hours:,.0f} GPU-hours"
             + (f" and {a.spot_preemptions_per_hour:g} spot preemptions per hour" if spot else ""))
    return [
        *_preemption_risk(result),
        f"Failures: one {events} every {fmt_hours(ck.job_mtbf_hours)} on {plural(result.hardware.gpus, 'GPU')} "
        f"({rates}); expect {ck.expected_failures:.2f} during the run.",
        f"Checkpoint plan: {fmt_bytes(ck.size_bytes)} every {ck.interval_minutes:.0f} min "
        f"(Young/Daly optimum{' for failures and preemptions' if spot else ''}), "
        f"{seconds(ck.write_seconds)} per write, {ck.overhead_fraction:.1%} time overhead.",
        *_price_age(result, today),
    ]


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
    "Compute cost = GPU-hours billed × price per GPU-hour × (1 − discount); a node is one whole instance, so "
    "GPU-hours billed = hours × nodes × the instance's GPUs (a 2-GPU node on an 8-GPU instance pays for 8); spot "
    "bills the expected lost work too.",
    "Buy vs rent: owned cost per used GPU-hour = (capex × (1 − residual) ÷ years + power × PUE + colocation + "
    "operations) ÷ (8,766 h × utilisation); break-even utilisation = yearly owned cost ÷ (8,766 × rent).",
]


def price_table(figures: Figures, today: dt.date) -> Table:
    """Every price the provider comparison uses, with its seen date and whether it is stale or undated."""
    rows = [[p.provider_name, mode.replace("_", "-"), f"${price:.2f}", seen_text(p.dates.get(mode), today)]
            for p in figures.providers for mode in MODES
            if (price := getattr(p.usd_per_gpu_hour, mode)) is not None]
    return Table(header=["provider", "mode", "USD per GPU-hour", "seen"], rows=rows, widths=[2, 1, 1, 2])


def _cost_sentence(r: PlanResult) -> str:
    """The summary's cost line; a plan without a price in its mode (or in any) says so, not "— at no provider"."""
    mode = r.request.pricing.mode.value.replace("_", "-")
    if r.cost.unpriced_reason:
        return f"Cost: none; {r.cost.unpriced_reason}."
    if cost_range(r) is None:
        return "Cost: no price for this configuration in any pricing mode (the sanity checks say why)."
    if r.cost.total_usd is None:
        at = f" at {r.cost.provider}" if r.cost.provider else ""
        return f"Cost by pricing mode: {cost_range_text(r)}; no {mode} price{at}."
    total = likely_cost(r) or fmt_usd(r.cost.total_usd)
    return f"Cost by pricing mode: {cost_range_text(r)}; {total} {mode} at {r.cost.provider}."


def build_report(analysis: Analysis, today: dt.date | None = None, name: str | None = None) -> Report:
    """The report's content: sections of paragraphs, bullets, tables and charts, in reading order. ``name``: the
    plan's name in the library, which the title then carries (the launch files' headers do too)."""
    today = today or dt.date.today()
    r, f = analysis.result, analysis.figures
    t = r.request.training
    m = r.memory
    summary = [
        f"Model: {r.model_name}, {fmt_count(r.compute.params_total)} parameters"
        + (f" ({fmt_count(r.compute.params_active)} active)" if r.compute.params_active != r.compute.params_total
           else "") + f", {fmt_count(r.compute.params_trainable)} trained ({t.method.value}).",
        f"Data: {fmt_count(r.request.data.tokens)} tokens × {plural(r.request.data.epochs, 'epoch')} at "
        f"{r.request.data.seq_len} tokens per sequence; {r.compute.steps:,} steps of "
        f"{r.compute.tokens_per_step:,} tokens.",
        f"Memory: {fmt_bytes(m.per_gpu.total)} per GPU of {fmt_bytes(m.gpu_memory)} "
        f"({'fits' if m.fits else 'does not fit'}); largest micro-batch {m.max_micro_batch}, longest sequence "
        f"{m.max_seq_len:,}.",
        f"Time: {likely_hours(r) or fmt_hours(r.time.hours)} wall, {fmt_gpu_hours(r.time.gpu_hours)} GPU-hours at "
        f"{r.compute.tokens_per_second:,.0f} tokens/s (achieved MFU {r.compute.mfu:.0%}, scaling "
        f"{r.compute.scaling_efficiency:.0%}).",
        _cost_sentence(r),
        *([source] if (source := band_source(r)) else []),
    ]
    memory_rows = [[p, fmt_bytes(getattr(m.per_gpu, p))] for p in (*MEMORY_PARTS, "total")]
    cost_rows = [[line.item, fmt_usd(line.usd), line.detail, seen_text(line.date, today) if line.source else "—"]
                 for line in r.cost.items]  # a line priced from nothing has no price to date
    sections = [
        Section(title="Executive summary", blocks=[Bullets(items=summary)]),
        *([Section(title="Sanity checks", blocks=[Bullets(items=[w.message for w in r.sanity])])] if r.sanity else []),
        Section(title="Memory", blocks=[
            Table(header=["component", "per GPU"], rows=memory_rows, widths=[2, 1]), memory_chart(f),
            *([Bullets(items=m.suggestions)] if m.suggestions else [])]),
        time_section(r),
        Section(title="Cost", blocks=[
            Table(header=["item", "USD", "detail", "price date"], rows=cost_rows, widths=[2, 1, 4, 1.3]),
            *([price_table(f, today)] if f.providers else []),
            *([provider_chart(f)] if f.providers and r.memory.fits else []),  # no bars of $0 for what cannot run
            *([break_even_chart(f.break_even)] if f.break_even else [])]),
    ]
    hw_blocks: list[Block] = []
    if f.candidates:
        hw_blocks.append(pareto_chart(f))
        hw_blocks.append(Table(header=["configuration", "time", "cost", "why"], widths=[2, 1, 1, 4], rows=[
            [candidate_label(c), fmt_hours(c.hours), fmt_usd(c.cost_usd), c.why]
            for c in search.shown_candidates(f.candidates, 10)]))
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
    named = " ".join((name or "").split())  # one line in the title and the page footers
    title = f"Fine-tuning plan “{named}”: " if named else "Fine-tuning plan: "
    return Report(title=f"{title}{r.model_name} ({t.method.value})", date=today.isoformat(),
                  conclusion=conclusion(r), key_figures=shown_key_figures(r), sections=sections)
