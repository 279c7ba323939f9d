"""The plan in words: one-sentence conclusion, the key figures, the hardware label and the cost by
pricing mode.

The wizard's summary page, the command line's text output and the PDF's first page say the same
sentences from these functions; they read a finished PlanResult only (no catalog, no planning), so
they stand apart from the analysis that gathers chart data (core/planner/analysis.py).
"""

from __future__ import annotations

from core.document import KeyFigure
from core.planner.money import sanity
from core.planner.request import HardwareSpec
from core.planner.result import PlanResult
from core.units import fmt_bytes, fmt_gpu_hours, fmt_hours, fmt_usd


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
    # each end names its pricing mode: beside the estimate's 'likely X (estimate range A–B)' it
    # reads as another kind of range, the cheapest mode to the dearest, not as the estimate's spread
    return f"{fmt_usd(lo)} {sanity.mode_name(lo_mode)} to {fmt_usd(hi)} {sanity.mode_name(hi_mode)}"


def about_hours(hours: float) -> str:
    """'about 3.2 h', and 'about 2,300 years' where fmt_hours already says 'about' (never 'about
    about')."""
    text = fmt_hours(hours)
    return text if text.startswith("about ") else f"about {text}"


def conclusion(result: PlanResult) -> str:
    """One sentence: what to rent, how long, how much, and whether it fits; a plan that does not fit
    says that, by how much and what would, and gives no cost."""
    t, m = result.request.training, result.memory
    what = (
        f"Fine-tune {result.model_name} with {t.method.value} on {hardware_label(result.hardware)}"
    )
    if not m.fits:
        text = sanity.not_fit_text(result) or ""
        return f"{what}: {text[:1].lower()}{text[1:]}"
    mode = result.request.pricing.mode.value.replace("_", "-")
    total = (
        fmt_usd(result.cost.total_usd) if result.cost.total_usd is not None else "an unknown cost"
    )
    where = f" at {result.cost.provider}" if result.cost.provider else ""
    return (
        f"{what}: {about_hours(result.time.hours)} and {total} {mode}{where}; it fits in "
        f"{fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)} per GPU."
    )


def key_figures(result: PlanResult) -> list[KeyFigure]:
    c, t, m = result.compute, result.time, result.memory
    return [
        KeyFigure(label="Hardware", value=hardware_label(result.hardware)),
        KeyFigure(label="Wall time", value=fmt_hours(t.hours)),
        KeyFigure(label="GPU-hours", value=fmt_gpu_hours(t.gpu_hours)),
        KeyFigure(label=MODE_COSTS, value=cost_range_text(result)),
        KeyFigure(label="Total cost", value=fmt_usd(result.cost.total_usd) if m.fits else NOT_FIT),
        KeyFigure(
            label="Memory per GPU",
            value=f"{fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)}"
            + ("" if m.fits else " (does not fit)"),
        ),
        KeyFigure(label="Throughput", value=f"{c.tokens_per_second:,.0f} tokens/s"),
        KeyFigure(label="MFU", value=f"{c.mfu:.0%}"),
    ]
