"""The plan report's content, independent of drawing: the report's sections, in reading order.

It builds a ``core.document.Report``; the window shows the same charts and ``gui/pdf.py`` draws the
document, so a number on screen and in the PDF agree. Every figure comes from
``core.planner.analysis``; the charts are core/planner/report_charts.py's, the Time section
core/planner/report_time.py's, the likely ranges' words core/planner/likely_ranges.py's; this module
chooses the sections, tables, risks and words around them.
"""

from __future__ import annotations

import datetime as dt

from core.catalog import STALE_AFTER_DAYS
from core.document import Block, Bullets, Report, Section, Table
from core.planner.analysis import MODES, Analysis, Figures
from core.planner.choose import search
from core.planner.headline import conclusion, cost_range, cost_range_text
from core.planner.likely_ranges import band_source, likely_cost, likely_hours, shown_key_figures
from core.planner.money.plan_cost import offer_place
from core.planner.money.sanity import seen_text
from core.planner.report_charts import (
    MEMORY_PARTS,
    break_even_chart,
    candidate_label,
    memory_chart,
    pareto_chart,
    provider_chart,
    scaling_chart,
)
from core.planner.report_time import time_section
from core.planner.result import PlanResult
from core.units import fmt_bytes, fmt_count, fmt_gpu_hours, fmt_hours, fmt_usd, plural


def seconds(value: float) -> str:
    """'0.3 s', '12 s': a sub-second checkpoint write is not '0 s'."""
    return f"{value:.1f} s" if value < 10 else f"{value:,.0f} s"


def price_age_days(result: PlanResult, today: dt.date) -> int | None:
    if not result.cost.price_date:
        return None
    return (today - dt.date.fromisoformat(result.cost.price_date)).days


def _preemption_risk(result: PlanResult) -> list[str]:
    """What spot preemptions cost; nothing for a plan that cannot run (no price, so no priced
    risk)."""
    c, a = result.cost, result.request.assumptions
    if c.unpriced_reason:
        return []
    if c.compute_usd.spot is None:
        return [
            "Preemption: no spot price for this GPU and provider, so no preemption risk is priced."
        ]
    return [
        f"Preemption: spot at {a.spot_preemptions_per_hour:g} preemptions per hour loses about "
        f"{fmt_gpu_hours(c.spot_expected_lost_hours or 0)} GPU-hours to redone work and restarts; "
        f"spot costs {fmt_usd(c.compute_usd.spot)} against {fmt_usd(c.compute_usd.on_demand)} "
        "on-demand."
    ]


def _price_age(result: PlanResult, today: dt.date) -> list[str]:
    """How old the chosen price is; nothing where no price was chosen (a plan that cannot run has
    none)."""
    c = result.cost
    if c.unpriced_reason or not c.provider:
        return []
    age = price_age_days(result, today)
    where = f" {offer_place(c)}" if c.instance else ""
    if age is None:
        return [
            f"Price age: the {c.provider}{where} price has no date in its source; check it before "
            "committing."
        ]
    stale = (
        f" — stale (older than {STALE_AFTER_DAYS} days), check it" if age > STALE_AFTER_DAYS else ""
    )
    return [f"Price age: {c.provider}{where} price seen {c.price_date}, {age} days ago{stale}."]


def _risks(result: PlanResult, today: dt.date) -> list[str]:
    ck, a = result.checkpoint, result.request.assumptions
    # A spot plan's checkpoints are planned for failures and preemptions together (plan.py): say so.
    spot = result.request.pricing.mode.value == "spot"
    events = "job-killing failure or preemption" if spot else "job-killing failure"
    rates = f"one failure per {a.gpu_mtbf_hours:,.0f} GPU-hours" + (
        f" and {a.spot_preemptions_per_hour:g} spot preemptions per hour" if spot else ""
    )
    return [
        *_preemption_risk(result),
        f"Failures: one {events} every {fmt_hours(ck.job_mtbf_hours)} on "
        f"{plural(result.hardware.gpus, 'GPU')} ({rates}); expect {ck.expected_failures:.2f} "
        "during the run.",
        f"Checkpoint plan: {fmt_bytes(ck.size_bytes)} every {ck.interval_minutes:.0f} min "
        f"(Young/Daly optimum{' for failures and preemptions' if spot else ''}), "
        f"{seconds(ck.write_seconds)} per write, {ck.overhead_fraction:.1%} time overhead.",
        *_price_age(result, today),
    ]


FORMULAS = [
    "Memory per GPU = weights + gradients + optimizer states + activations + logits + overhead, "
    "each divided by the sharding degree where ZeRO/FSDP shards it; peak composed as the step "
    "runs.",
    "Weights: parameters × bytes per parameter (2 for bf16, ~0.5 + quantization constants for "
    "NF4).",
    "Optimizer (AdamW): 2 states × 4 bytes per trainable parameter (+4 for fp32 master weights in "
    "mixed precision).",
    "FLOPs per token ≈ 6 × parameters (+ attention term); 8 × with full activation recomputation; "
    "LoRA skips the frozen weights' gradient matmuls.",
    "Time = trained tokens × FLOPs per token ÷ (GPUs × peak FLOP/s × MFU) + exposed communication.",
    "Checkpoint interval (Young/Daly): τ ≈ √(2 δ M) − δ, with δ the write time and M the job MTBF "
    "(GPU MTBF ÷ GPUs, with spot preemptions added).",
    "Compute cost = GPU-hours billed × price per GPU-hour × (1 − discount); a node is one whole "
    "instance, so GPU-hours billed = hours × nodes × the instance's GPUs (a 2-GPU node on an "
    "8-GPU instance pays for 8); spot bills the expected lost work too.",
    "Buy vs rent: owned cost per used GPU-hour = (capex × (1 − residual) ÷ years + power × PUE + "
    "colocation + operations) ÷ (8,766 h × utilisation); break-even utilisation = yearly owned "
    "cost ÷ (8,766 × rent).",
]


def price_table(figures: Figures, today: dt.date) -> Table:
    """Every price the provider comparison uses, with its seen date and whether it is stale or
    undated."""
    rows = [
        [
            p.provider_name,
            mode.replace("_", "-"),
            f"${price:.2f}",
            seen_text(p.dates.get(mode), today),
        ]
        for p in figures.providers
        for mode in MODES
        if (price := getattr(p.usd_per_gpu_hour, mode)) is not None
    ]
    return Table(
        header=["provider", "mode", "USD per GPU-hour", "seen"], rows=rows, widths=[2, 1, 1, 2]
    )


def _cost_sentence(r: PlanResult) -> str:
    """The summary's cost line; a plan without a price in its mode (or in any) says so, not "— at no
    provider"."""
    mode = r.request.pricing.mode.value.replace("_", "-")
    if r.cost.unpriced_reason:
        return f"Cost: none; {r.cost.unpriced_reason}."
    if cost_range(r) is None:
        return (
            "Cost: no price for this configuration in any pricing mode (the sanity checks say why)."
        )
    if r.cost.total_usd is None:
        at = f" at {r.cost.provider}" if r.cost.provider else ""
        return f"Cost by pricing mode: {cost_range_text(r)}; no {mode} price{at}."
    total = likely_cost(r) or fmt_usd(r.cost.total_usd)
    return f"Cost by pricing mode: {cost_range_text(r)}; {total} {mode} at {r.cost.provider}."


def build_report(
    analysis: Analysis, today: dt.date | None = None, name: str | None = None
) -> Report:
    """The report's content: sections of paragraphs, bullets, tables and charts, in reading order.
    ``name``: the plan's name in the library, which the title then carries (the launch files'
    headers do too)."""
    today = today or dt.date.today()
    r, f = analysis.result, analysis.figures
    t = r.request.training
    m = r.memory
    summary = [
        f"Model: {r.model_name}, {fmt_count(r.compute.params_total)} parameters"
        + (
            f" ({fmt_count(r.compute.params_active)} active)"
            if r.compute.params_active != r.compute.params_total
            else ""
        )
        + f", {fmt_count(r.compute.params_trainable)} trained ({t.method.value}).",
        f"Data: {fmt_count(r.request.data.tokens)} tokens × "
        f"{plural(r.request.data.epochs, 'epoch')} at {r.request.data.seq_len} tokens per "
        f"sequence; {r.compute.steps:,} steps of {r.compute.tokens_per_step:,} tokens.",
        f"Memory: {fmt_bytes(m.per_gpu.total)} per GPU of {fmt_bytes(m.gpu_memory)} "
        f"({'fits' if m.fits else 'does not fit'}); largest micro-batch {m.max_micro_batch}, "
        f"longest sequence {m.max_seq_len:,}.",
        f"Time: {likely_hours(r) or fmt_hours(r.time.hours)} wall, "
        f"{fmt_gpu_hours(r.time.gpu_hours)} GPU-hours at {r.compute.tokens_per_second:,.0f} "
        f"tokens/s (achieved MFU {r.compute.mfu:.0%}, scaling {r.compute.scaling_efficiency:.0%}).",
        _cost_sentence(r),
        *([source] if (source := band_source(r)) else []),
    ]
    memory_rows = [[p, fmt_bytes(getattr(m.per_gpu, p))] for p in (*MEMORY_PARTS, "total")]
    cost_rows = [
        [
            line.item,
            fmt_usd(line.usd),
            line.detail,
            seen_text(line.date, today) if line.source else "—",
        ]
        for line in r.cost.items
    ]  # a line priced from nothing has no price to date
    sections = [
        Section(title="Executive summary", blocks=[Bullets(items=summary)]),
        *(
            [Section(title="Sanity checks", blocks=[Bullets(items=[w.message for w in r.sanity])])]
            if r.sanity
            else []
        ),
        Section(
            title="Memory",
            blocks=[
                Table(header=["component", "per GPU"], rows=memory_rows, widths=[2, 1]),
                memory_chart(f),
                *([Bullets(items=m.suggestions)] if m.suggestions else []),
            ],
        ),
        time_section(r),
        Section(
            title="Cost",
            blocks=[
                Table(
                    header=["item", "USD", "detail", "price date"],
                    rows=cost_rows,
                    widths=[2, 1, 4, 1.3],
                ),
                *([price_table(f, today)] if f.providers else []),
                # no bars of $0 for what cannot run
                *([provider_chart(f)] if f.providers and r.memory.fits else []),
                *([break_even_chart(f.break_even)] if f.break_even else []),
            ],
        ),
    ]
    hw_blocks: list[Block] = []
    if f.candidates:
        hw_blocks.append(pareto_chart(f))
        hw_blocks.append(
            Table(
                header=["configuration", "time", "cost", "why"],
                widths=[2, 1, 1, 4],
                rows=[
                    [candidate_label(c), fmt_hours(c.hours), fmt_usd(c.cost_usd), c.why]
                    for c in search.shown_candidates(f.candidates, 10)
                ],
            )
        )
    if f.scaling:
        hw_blocks.append(scaling_chart(f.scaling))
    if hw_blocks:
        sections.append(Section(title="Hardware options", blocks=hw_blocks))
    sections.append(Section(title="Risks", blocks=[Bullets(items=_risks(r, today))]))
    if r.warnings:
        sections.append(Section(title="Warnings", blocks=[Bullets(items=r.warnings)]))
    sections.append(
        Section(
            title="Assumptions",
            blocks=[
                Table(
                    header=["assumption", "value", "source", "date"],
                    widths=[2, 2, 4, 1.2],
                    rows=[[a.name, a.value, a.source, a.date or "—"] for a in r.assumptions],
                )
            ],
        )
    )
    sections.append(Section(title="Appendix: formulas", blocks=[Bullets(items=FORMULAS)]))
    named = " ".join((name or "").split())  # one line in the title and the page footers
    title = f"Fine-tuning plan “{named}”: " if named else "Fine-tuning plan: "
    return Report(
        title=f"{title}{r.model_name} ({t.method.value})",
        date=today.isoformat(),
        conclusion=conclusion(r),
        key_figures=shown_key_figures(r),
        sections=sections,
    )
