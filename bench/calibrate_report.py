"""The calibration's tables: per method class, out of source, with the two simple guesses beside the
planner.

bench/calibrate.py computes the rows; this module only counts and writes them (text, markdown, the
docs/formulas.md section).
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bench import calibrate_bands, calibrate_fit
from core.planner.speed import bands, sustained

if TYPE_CHECKING:
    from bench.calibrate_rows import Row

CLASSES = ("full", "LoRA", "QLoRA")
CLASS_TITLE = {"full": "full fine-tuning and pre-training", "LoRA": "LoRA", "QLoRA": "QLoRA"}


def _share(hits: Sequence[bool | None]) -> dict[str, Any]:
    judged = [h for h in hits if h is not None]
    return {
        "within": sum(judged),
        "of": len(judged),
        "share": (sum(judged) / len(judged)) if judged else None,
    }


def summary(rows: Sequence[Row]) -> dict[str, Any]:
    """Within-tolerance counts: throughput overall and per method class (planner, flat 50%,
    llm-analysis on the runs each can express), memory (measured figures only)."""
    tp = [r for r in rows if r.kind == "throughput" and r.planned is not None]
    out: dict[str, Any] = {"throughput": {"all": _share([r.within for r in tp])}}
    for cls in CLASSES:
        mine = [r for r in tp if r.method == cls]
        both = [r for r in mine if r.llm_analysis is not None]
        out["throughput"][cls] = {
            "planner": _share([r.within for r in mine]),
            "flat_50": _share([r.other_within(r.baseline) for r in mine]),
            "llm_analysis": _share([r.other_within(r.llm_analysis) for r in both]),
            "planner_on_llm_analysis_runs": _share([r.within for r in both]),
        }
    mem = [r for r in rows if r.kind == "memory" and r.planned is not None and r.measured]
    out["memory"] = _share([r.within for r in mem])
    out["not_planned"] = sum(r.planned is None for r in rows)
    out["runs"] = len(rows)
    out["sources"] = len({r.source for r in rows})
    return out


def _pct(s: dict[str, Any]) -> str:
    return "—" if s["share"] is None else f"{s['within']} of {s['of']} ({s['share']:.0%})"


def summary_lines(rows: Sequence[Row]) -> list[str]:
    s = summary(rows)
    t = s["throughput"]
    lines = [
        f"Throughput within ±20%, every run predicted with its source left out: {_pct(t['all'])}."
    ]
    for cls in CLASSES:
        c = t[cls]
        lines.append(
            f"- {CLASS_TITLE[cls]}: planner {_pct(c['planner'])}; flat 50% of peak "
            f"{_pct(c['flat_50'])}; llm-analysis 0.2.2 {_pct(c['llm_analysis'])} (the planner on "
            f"those same runs: {_pct(c['planner_on_llm_analysis_runs'])})"
        )
    lines.append(f"Memory within ±10% (measured figures): {_pct(s['memory'])}.")
    lines.append(f"Not planned: {s['not_planned']} of {s['runs']} runs ({s['sources']} sources).")
    return lines


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    if x >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}" if x < 10 else f"{x:.1f}"


def _err(figure: float | None, published: float) -> str:
    return "—" if figure is None else f"{figure / published - 1:+.0%}"


LABEL = {
    "tokens_per_s_per_gpu": "tokens/s/GPU",
    "tokens_per_s_total": "tokens/s (all GPUs)",
    "achieved_tflops_per_gpu": "TFLOP/s/GPU",
    "wall_time_s": "wall time (s)",
    "gpu_hours": "GPU-hours",
    "peak_mem_gb_per_gpu": "peak GB/GPU",
    "peak_mem_gib_per_gpu": "peak GiB/GPU",
}


def markdown(rows: Sequence[Row]) -> str:
    out = ["Summary (out of source):", "", *summary_lines(rows), ""]
    for cls in CLASSES:
        mine = [r for r in rows if r.method == cls and r.planned is not None]
        out += [
            f"#### {CLASS_TITLE[cls]}",
            "",
            "| run | source | figure | published | planned (source left out) | error | flat 50% | "
            "llm-analysis | within |",
            "|---|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in mine:
            flag = "yes" if r.within else "no"
            if not r.measured:
                flag += " (reported, not measured)"
            out.append(
                f"| {r.id} | {r.source} | {LABEL[r.metric]} | {_num(r.published)} | "
                f"{_num(r.planned)} | {_err(r.planned, r.published)} | "
                f"{_err(r.baseline, r.published)} | {_err(r.llm_analysis, r.published)} | {flag} |"
            )
        out.append("")
    skipped = [r for r in rows if r.planned is None]
    if skipped:
        out += ["Not planned:", ""] + [f"- {r.id}: {r.reason}" for r in skipped]
    return "\n".join(out) + "\n"


def text_report(rows: Sequence[Row]) -> str:
    lines = [*summary_lines(rows), ""]
    for r in rows:
        if r.planned is None:
            lines.append(f"  {r.id:58} not planned: {r.reason}")
        else:
            lines.append(
                f"  {r.id:58} {LABEL[r.metric]:14} {_num(r.published):>9} {_num(r.planned):>9} "
                f"{_err(r.planned, r.published):>6} {'ok' if r.within else 'MISS'}  (flat "
                f"{_err(r.baseline, r.published)}, llm-analysis "
                f"{_err(r.llm_analysis, r.published)})"
            )
    return "\n".join(lines)


METHOD = (
    "Produced on {today} by `python -m bench.calibrate --write-bands --write-docs` from "
    "`tests/fixtures/planner/throughput_cases.json` and `published_runs.json` ({runs} published "
    "runs from {sources} sources, each with its pinned source URL and the quoted figure; "
    "`THROUGHPUT.md` and `PUBLISHED_RUNS.md` give the units and caveats). Each run becomes the "
    "plan request it describes (`bench/calibrate_cases.py`), planned with its hardware, and the "
    "plan's figure is taken in the source's unit. **Validation is leave one source out**: the "
    "step model's one fitted quantity, each framework's sustained efficiency "
    "(`core/planner/speed/sustained.py`: framework × method × GPU family, falling back to "
    "framework × family, family, all), is fitted once per source on every other source (closed "
    "form: the source-weighted median log residual, `bench/calibrate_fit.py`) and that source's "
    "runs are predicted with it. Every throughput figure below and every coverage a band states "
    "is such an out-of-source prediction; no run has an allowed miss. Beside the planner: the "
    "flat guess (the same request with the step forced to model FLOPs ÷ (peak × 50%)) and "
    "llm-analysis 0.2.2 (driven as PUBLISHED_RUNS.md says, on the runs it can express: not LoRA "
    "or QLoRA; `bench/calibrate_compare.py`). Goals: throughput within ±20% on ≥ 70% of runs and "
    "≥ 60% in each method class; memory within ±10% on ≥ 80%; bands covering ≥ 80% at a median "
    "width ≤ ×1.6."
)


def doc_section(rows: Sequence[Row], today: dt.date) -> str:
    """The docs/formulas.md section, between its markers."""
    from bench.calibrate_rows import BEGIN, END

    method = textwrap.fill(
        METHOD.format(
            today=today.isoformat(), runs=len(rows), sources=len({r.source for r in rows})
        ),
        width=112,
        break_on_hyphens=False,
        break_long_words=False,
    )
    return (
        "\n".join(
            [
                BEGIN,
                "### Throughput and memory from published runs (leave one source out)",
                "",
                method,
                "",
                markdown(rows).rstrip("\n"),
                "",
                "#### Sustained efficiency per framework (resources/calibration/efficiency.json, "
                "fitted on every source)",
                "",
                calibrate_fit.groups_markdown(sustained.shipped_table()),
                "",
                "#### Step-model constants (core/planner/speed/efficiency.py, priors)",
                "",
                calibrate_fit.constants_markdown(),
                "",
                "#### Error band (resources/calibration/bands.json)",
                "",
                calibrate_bands.bands_markdown(bands.shipped_table()),
                END,
            ]
        )
        + "\n"
    )


def median_abs_log_error(rows: Sequence[Row]) -> float:
    errors = [
        abs(math.log(r.planned / r.published))
        for r in rows
        if r.kind == "throughput" and r.planned is not None and r.planned > 0
    ]
    return statistics.median(errors) if errors else math.inf
