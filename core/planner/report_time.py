"""How one step's time reads: where it goes (the step breakdown), planned against measured, what
fills the wall time.

The command line, the window's step view and the report's Time section say these alike; the rows and
sentences are worked out here, apart from the report's other sections (core/planner/report.py),
because the window and the command line use them without a report.
"""

from __future__ import annotations

from core.document import Block, Paragraph, Section, Table
from core.planner.result import ComputeResult, PlanResult
from core.units import fmt_hours

# The kinds of work in ComputeResult.step_breakdown_s, in the order a step runs them, as a reader
# names them.
STEP_PARTS = (
    ("gemm", "matmuls (GEMM)"),
    ("attention", "attention"),
    ("memory_bound", "memory-bound kernels"),
    ("optimizer", "optimizer step"),
    ("host_transfer", "host transfer"),
    ("exposed_comm", "exposed communication"),
    ("bubble", "pipeline bubble"),
)


STEP_HEADER = ["part of the step", "seconds", "share of the step"]


def step_rows(compute: ComputeResult) -> list[tuple[str, float, float]]:
    """(name, seconds, share of the step) for each kind of work that takes any time; a zero row says
    nothing.

    The share is of the step time the plan reports (the parts add up to it); when that is 0 the
    parts' own sum is used, so a share never divides by zero.
    """
    parts = [(name, float(getattr(compute.step_breakdown_s, key))) for key, name in STEP_PARTS]
    total = compute.step_time_s if compute.step_time_s > 0 else sum(v for _n, v in parts)
    return [(name, v, v / total if total > 0 else 0.0) for name, v in parts if v > 0]


def step_seconds(value: float) -> str:
    """'0.0123 s', '1.25 s', '312 s': three significant figures, a long step in whole seconds."""
    return f"{value:,.0f} s" if value >= 100 else f"{value:.3g} s"


def measured_step_text(compute: ComputeResult) -> str | None:
    """'measured on HOST (GPU, date): X s; planned Y s (Z% slower)' when a measured step set the
    plan's step time (the probe's step suite, applied), else None: the CLI, the window and the PDF
    say it alike."""
    planned = compute.planned_step_time_s
    if planned is None or planned <= 0:
        return None
    ratio = compute.step_time_s / planned
    how = (
        f"{ratio:.3g}× the planned time"
        if ratio > 2
        else "as planned"
        if abs(ratio - 1) < 0.005
        else f"{abs(ratio - 1):.0%} {'slower' if ratio > 1 else 'faster'} than planned"
    )
    return (
        f"{compute.step_source}: {step_seconds(compute.step_time_s)}; planned "
        f"{step_seconds(planned)} ({how})"
    )


def share_text(share: float) -> str:
    """'42%', and '<1%' for a part too small to round to one percent but not nothing."""
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def step_table_rows(compute: ComputeResult) -> list[list[str]]:
    return [[name, step_seconds(v), share_text(share)] for name, v, share in step_rows(compute)]


def utilisation_text(compute: ComputeResult) -> str:
    """'achieved model-FLOPs utilisation (MFU) 32%', with the hardware-FLOPs figure when the plan
    has one."""
    text = f"achieved model-FLOPs utilisation (MFU) {compute.mfu:.0%}"
    return text + (
        f", hardware-FLOPs utilisation (HFU) {compute.hfu:.0%}" if compute.hfu > 0 else ""
    )


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else fmt_hours(s / 3600)


def wall_time_parts(result: PlanResult) -> str:
    """'steps 13.8 min + start-up 10.0 min (…) + evaluation none (…) + checkpoint writes 0 s (…) +
    failures 0 s': what the wall time is made of (time.breakdown_s), with the defaults that decide a
    part; the CLI's Parts line and the report's Time section say it alike."""
    b, a = result.time.breakdown_s, result.request.assumptions
    evaluation = (
        f"evaluation {_seconds(b.evaluation)}"
        if b.evaluation > 0
        else "evaluation none (assumptions.eval_every_steps 0)"
    )
    return (
        f"steps {_seconds(b.steps)} + start-up {_seconds(b.start_up)} (assumptions.restart_minutes "
        f"{a.restart_minutes:g}) + {evaluation} + checkpoint writes "
        f"{_seconds(b.checkpoint_writes)} (to {a.checkpoint_tier.value}) + failures "
        f"{_seconds(b.failures)}"
    )


def time_section(result: PlanResult) -> Section:
    """One optimizer step: how long, how fast, and where its time goes (the zero parts left out)."""
    c = result.compute
    blocks: list[Block] = [
        Paragraph(
            text=(
                f"One optimizer step of {c.tokens_per_step:,} tokens takes "
                f"{step_seconds(c.step_time_s)}; {c.tokens_per_second:,.0f} tokens/s over the "
                f"job; {utilisation_text(c)}."
            )
        ),
        Paragraph(
            text=f"The wall time of {fmt_hours(result.time.hours)}: {wall_time_parts(result)}."
        ),
    ]
    measured = measured_step_text(c)
    if measured:
        blocks.append(
            Paragraph(
                text=f"Planned vs measured: the step was {measured}; the parts below are the "
                "measured layer's, and communication, host transfers and the bubble as planned."
            )
        )
    rows = step_table_rows(c)
    if rows:
        blocks.append(Table(header=STEP_HEADER, rows=rows, widths=[2, 1, 1]))
    return Section(title="Time", blocks=blocks)
