"""The planner against every published training run, validated leave-one-source-out.

    python -m bench.calibrate [--markdown | --json] [--write-bands] [--write-docs [FILE]]

Every run of tests/fixtures/planner/throughput_cases.json and published_runs.json is turned into the
plan request it describes (bench/calibrate_cases.py), planned with its hardware given (no search)
and compared with the published figure in the source's own unit. The only fitted quantity of the
step model, each framework's sustained efficiency (core/planner/speed/sustained.py), is fitted once
per publishing source on every other source, and that source's runs are predicted with it
(bench/calibrate_fit.py): every throughput figure in the tables and every coverage a band states
(bench/calibrate_bands.py) is an out-of-source prediction. Memory has no fitted constant. Beside
each table: the flat 50%-of-peak guess and llm-analysis 0.2.2 (bench/calibrate_compare.py).

Goals (issue "Plan truth III"): throughput within ±20% on at least 70% of runs overall and 60% in
each method class; memory within ±10% on at least 80%; bands covering at least 80% at a median width
≤ ×1.6.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import calibrate_bands, calibrate_compare, calibrate_fit, calibrate_report
from bench.calibrate_cases import Built, build, source_of
from bench.calibrate_rows import BEGIN, END, MEMORY_TOLERANCE, THROUGHPUT_TOLERANCE, Row
from core.catalog import Catalog, load_catalog
from core.planner.model import memory
from core.planner.plan import PlanError, plan
from core.planner.result import PlanResult
from core.planner.speed import bands, sustained
from core.planner.speed.frameworks import effective_training

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/planner/throughput_cases.json"
FIXTURES = (FIXTURE, ROOT / "tests/fixtures/planner/published_runs.json")
EFFICIENCY_PATH = ROOT / "resources/calibration/efficiency.json"
DOC = ROOT / "docs/formulas.md"
# plan(today=...): fixed, so price-staleness warnings never change a figure
PLAN_DATE = dt.date(2026, 12, 1)

MEMORY_GOAL = 0.80
THROUGHPUT_GOAL, CLASS_GOAL = 0.70, 0.60
TIME_METRICS = ("wall_time_s", "gpu_hours")

# What each source's memory figure measures (tests/fixtures/planner/THROUGHPUT.md "Units"); a run of
# published_runs.json may say so itself (other_settings.measure):
#   allocated: torch.cuda.max_memory_allocated()           → memory.allocated_peak
#   reserved:  torch.cuda.(max_)memory_reserved()           → memory.per_gpu.total − the CUDA
#   context
#   device:    nvidia-smi "used" (context and reserve in)   → memory.per_gpu.total
MEMORY_MEASURE: dict[str, str] = {
    # max_memory_allocated()/1e9 (litgpt's fit/print of "Memory used")
    "Lightning-AI/litgpt": "allocated",
    # train.py logs device_mem_stats.max_reserved_gib as "memory: …GiB"
    "pytorch/torchtitan": "reserved",
    "rasbt/LLMs-from-scratch": "reserved",  # torch.cuda.memory_reserved()/1024**3
    "huggingface/transformers": "device",  # pynvml used memory, incl. ~1.3 GB of CUDA context
    # "22 GB/GPU", a rounded nvidia-smi-level figure
    "philschmid/deep-learning-pytorch-huggingface": "device",
}


def load_cases(paths: Sequence[Path] = FIXTURES) -> list[dict[str, Any]]:
    """Every run of the fixtures; a figure copied into both (same source, metric and value) counts
    once."""
    seen: set[tuple[str, str, float]] = set()
    cases = []
    for path in paths:
        for case in json.loads(path.read_text(encoding="utf-8")):
            key = (source_of(case), case["metric"], float(case["value"]))
            if key not in seen:
                seen.add(key)
                cases.append(case)
    return cases


def method_class(case: dict[str, Any]) -> str:
    """'full' (full fine-tuning and pre-training), 'LoRA' or 'QLoRA': the classes the goals are
    judged in."""
    text = case["method"].lower()
    return "QLoRA" if text == "qlora" else "LoRA" if text == "lora" else "full"


def planned_figure(built: Built, result: PlanResult) -> float:
    """The plan's figure in the unit and sense of the case's metric."""
    metric = built.metric
    c = result.compute
    gpus = result.hardware.gpus
    if metric == "tokens_per_s_per_gpu":
        return c.tokens_per_second * timed_steps_share(built, result) / gpus
    if metric == "tokens_per_s_total":
        return c.tokens_per_second * timed_steps_share(built, result)
    if metric == "achieved_tflops_per_gpu":
        # Megatron's "per-GPU teraFLOP/s" is its MFU × 989: model FLOPs (6N + attention, no
        # recompute).
        return c.model_flops_per_token * c.tokens_per_second / gpus / 1e12
    if metric in TIME_METRICS:
        assert built.tokens is not None
        # the training steps only: no start-up, no checkpoints
        seconds = built.tokens / c.tokens_per_second
        return seconds if metric == "wall_time_s" else seconds * gpus / 3600
    measure = built.case["other_settings"].get("measure") or MEMORY_MEASURE[source_of(built.case)]
    m = result.memory
    if measure == "allocated":
        used = float(m.allocated_peak)
    elif measure == "reserved":
        used = float(m.per_gpu.total) - float(memory.CUDA_CONTEXT_BYTES)
    else:
        used = float(m.per_gpu.total) + stated_context_excess(built.case)
    return used / (1e9 if metric == "peak_mem_gb_per_gpu" else 2**30)


def timed_steps_share(built: Built, result: PlanResult) -> float:
    """The share of the timed runtime its training steps fill, where the source's rate divides the
    trained samples by a runtime that also holds an evaluation pass (published_runs.json
    `timed_evaluation`).

    transformers' Trainer reports train_samples_per_second = max_steps × batch ÷ train_runtime, and
    with evaluation_strategy "epoch" the epoch that max_steps ends is evaluated inside that runtime.
    The pass is the planner's own evaluation time (core/planner/speed/wall_time.py: forward-only
    tokens, 2N of the step's model FLOPs per token, at the step's rate), so any sustained efficiency
    scales steps and evaluation alike."""
    timed = built.case["other_settings"].get("timed_evaluation")
    c = result.compute
    if not timed or c.tokens_per_second <= 0 or c.model_flops_per_token <= 0:
        return 1.0
    steps_s = float(timed["steps"]) * c.tokens_per_step / c.tokens_per_second
    eval_s = (
        float(timed["tokens"])
        * 2.0
        * c.params_active
        / c.model_flops_per_token
        / c.tokens_per_second
    )
    return steps_s / (steps_s + eval_s)


def stated_context_excess(case: dict[str, Any]) -> float:
    """Bytes a device-level (nvidia-smi) figure holds beyond the planner's CUDA context, where its
    source measured the empty process itself.

    The context is the driver's state plus every loaded kernel image. Since CUDA 11.7 the driver can
    load a module's kernels on first use (CUDA_MODULE_LOADING=LAZY, CUDA C++ Programming Guide "Lazy
    Loading"), which recent PyTorch builds turn on; before that every kernel of cuBLAS, cuDNN and
    PyTorch is loaded when the context is made. The Hugging Face perf doc shows it: `torch.ones((1,
    1)).to("cuda")` alone occupies 1343 MB on its V100 (other_settings.cuda_context_mib), against
    the planner's 0.75 GiB.
    """
    stated = case["other_settings"].get("cuda_context_mib")
    return 0.0 if stated is None else float(stated) * 2**20 - float(memory.CUDA_CONTEXT_BYTES)


def with_factor(metric: str, figure: float, log_factor: float) -> float:
    """A throughput figure planned at sustained efficiency 1, at speed × e^log_factor instead."""
    return (
        figure / math.exp(log_factor) if metric in TIME_METRICS else figure * math.exp(log_factor)
    )


BASELINE_MFU = 0.5  # the flat guess the planner must beat: model FLOPs ÷ (peak × 50%)


def _baseline(built: Built, catalog: Catalog) -> float | None:
    """The case's figure from the same request with the step forced to model FLOPs ÷ (peak ×
    50%)."""
    assert built.request is not None
    request = built.request.model_copy(
        update={"assumptions": built.request.assumptions.model_copy(update={"mfu": BASELINE_MFU})}
    )
    try:
        return planned_figure(built, plan(request, catalog, today=PLAN_DATE))
    except (PlanError, ValueError):
        return None


def _keys(built: Built, catalog: Catalog) -> tuple[list[str], list[str]]:
    """(its sustained-efficiency groups, its band regimes), finest first."""
    req = built.request
    assert req is not None and req.hardware is not None
    t = effective_training(req.training)
    arch = catalog.gpu(req.hardware.gpu).architecture
    return (
        sustained.group_keys(t.framework, t.method, arch),
        bands.regime_keys(t, req.hardware.gpus, req.hardware.nodes),
    )


def compare(built: Built, catalog: Catalog, baseline: bool = True) -> Row:
    """The case planned with the sustained efficiency in place (and at a flat 50% MFU with
    `baseline`)."""
    case = built.case
    row = Row(
        id=built.id,
        source=source_of(case),
        method=method_class(case),
        metric=built.metric,
        published=float(case["value"]),
        planned=None,
        assumed=built.assumed,
        measured=case.get("measured_or_formula") == "measured",
    )
    if built.request is None:
        return replace(row, reason=built.reason)
    if (
        row.kind == "memory"
        and row.source not in MEMORY_MEASURE
        and not case["other_settings"].get("measure")
    ):
        return replace(row, reason="what the memory figure measures is not known for this source")
    try:
        result = plan(built.request, catalog, today=PLAN_DATE)
        groups, regimes = _keys(built, catalog)
    except (PlanError, ValueError, KeyError) as exc:
        return replace(row, reason=f"the planner refused it: {exc}")
    figure = planned_figure(built, result)
    if not math.isfinite(figure) or figure <= 0:
        return replace(row, reason=f"the planner gave {figure} for {built.metric}")
    flat = _baseline(built, catalog) if baseline and row.kind == "throughput" else None
    return replace(
        row, planned=figure, prior=figure, baseline=flat, group=groups[0], regimes=tuple(regimes)
    )


def _residuals(
    rows: Sequence[Row], built: dict[str, Built], catalog: Catalog
) -> list[calibrate_fit.Residual]:
    out = []
    for r in rows:
        if r.kind == "throughput" and r.prior is not None:
            groups, _ = _keys(built[r.id], catalog)
            # A run its data flags as unexplained (published_runs.json `caution`:
            # universal-llm-trainer's QLoRA, 4-5× slower than its LoRA for no stated reason) is
            # predicted and counted, never fitted on: it is what one stack measured, not what the
            # method costs (PUBLISHED_RUNS.md).
            steers = not built[r.id].case["other_settings"].get("caution")
            out.append(
                calibrate_fit.Residual(
                    r.id,
                    r.source,
                    tuple(groups),
                    calibrate_bands.residual(r.metric, r.published, r.prior),
                    steers,
                )
            )
    return out


@dataclass(frozen=True)
class Evaluation:
    """Every run compared out of source, the residuals the fit used, and the table fitted on every
    source."""

    rows: list[Row]
    residuals: list[calibrate_fit.Residual]
    shipped: dict[str, Any]
    folds: dict[str, dict[str, Any]]


def evaluate(
    cases: Iterable[dict[str, Any]] | None = None,
    catalog: Catalog | None = None,
    comparators: bool = True,
) -> Evaluation:
    """Every case planned at the prior, then each throughput figure predicted with its source left
    out."""
    catalog = catalog or load_catalog()
    built = {b.id: b for b in (build(c) for c in (load_cases() if cases is None else cases))}
    with calibrate_fit.table_in_place(calibrate_fit.PRIOR_TABLE):
        rows = [compare(b, catalog, baseline=comparators) for b in built.values()]
    residuals = _residuals(rows, built, catalog)
    folds = calibrate_fit.folds(residuals)
    held = calibrate_fit.held_out(residuals, folds)
    others = (
        calibrate_compare.figures(
            [built[r.id] for r in rows if r.kind == "throughput" and r.prior is not None], catalog
        )
        if comparators
        else {}
    )
    out = []
    for r in rows:
        if r.id in held and r.prior is not None:
            log_factor, group = held[r.id]
            r = replace(
                r,
                planned=with_factor(r.metric, r.prior, log_factor),
                group=group,
                llm_analysis=others.get(r.id),
            )
        out.append(r)
    return Evaluation(out, residuals, calibrate_fit.fit_table(residuals), folds)


def held_rows(ev: Evaluation) -> list[calibrate_fit.Residual]:
    """The bands' input: each planned throughput run's out-of-source residual and its regimes."""
    return [
        calibrate_fit.Residual(
            r.id, r.source, r.regimes, calibrate_bands.residual(r.metric, r.published, r.planned)
        )
        for r in ev.rows
        if r.kind == "throughput" and r.planned is not None
    ]


def bands_content(ev: Evaluation, today: dt.date) -> dict[str, Any]:
    return calibrate_bands.build_bands(held_rows(ev), today, {"folds": sorted(ev.folds)})


def write_efficiency(table: dict[str, Any], today: dt.date, path: Path = EFFICIENCY_PATH) -> None:
    content = {
        "provenance": {
            "written_by": "python -m bench.calibrate --write-bands",
            "date": today.isoformat(),
            "method": "per group, the source-weighted median of ln(published ÷ planned tokens/s) "
            "at factor 1, pooled "
            f"with its parent group's factor (weight {calibrate_fit.SHRINK:g} sources; "
            "bench/calibrate_fit.py)",
        },
        **table,
    }
    path.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write_docs(path: Path, section: str) -> None:
    """Replace the text between the markers, or add the section at the end of '## Calibration'."""
    text = path.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + section.rstrip("\n") + tail
    else:
        marker = "\n## Sources\n"
        if marker not in text:
            raise ValueError(
                f"{path} has neither the calibrate markers nor a '## Sources' heading to insert "
                "before"
            )
        head, tail = text.split(marker, 1)
        text = head.rstrip("\n") + "\n\n" + section + marker + tail
    path.write_text(text, encoding="utf-8")


def as_json(ev: Evaluation) -> dict[str, Any]:
    return {
        "goals": {
            "memory": {"tolerance": MEMORY_TOLERANCE, "share": MEMORY_GOAL},
            "throughput": {
                "tolerance": THROUGHPUT_TOLERANCE,
                "share": THROUGHPUT_GOAL,
                "per_method_class": CLASS_GOAL,
            },
        },
        "summary": calibrate_report.summary(ev.rows),
        "rows": [
            {**asdict(r), "kind": r.kind, "error": r.error, "within": r.within} for r in ev.rows
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.calibrate", description=(__doc__ or "").splitlines()[0]
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="the tables as markdown")
    out.add_argument("--json", action="store_true", help="every row and the summaries as JSON")
    parser.add_argument(
        "--write-docs",
        nargs="?",
        const=DOC,
        type=Path,
        metavar="FILE",
        help=f"rewrite the calibration section of FILE (default {DOC.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--write-bands",
        action="store_true",
        help="write resources/calibration/efficiency.json and bands.json from every source",
    )
    args = parser.parse_args(argv)
    if args.write_docs and not calibrate_compare.VENV_PYTHON.exists():
        # The published tables carry llm-analysis's column: written without it, they would lose it
        # in silence.
        parser.error(
            f"--write-docs needs llm-analysis's environment at {calibrate_compare.VENV_PYTHON} "
            "(see bench/calibrate_compare.py for the two commands that make it)"
        )
    ev = evaluate(catalog=load_catalog())
    if args.json:
        print(json.dumps(as_json(ev), indent=1))
    elif args.markdown:
        print(calibrate_report.markdown(ev.rows))
    else:
        print(calibrate_report.text_report(ev.rows))
    today = dt.date.today()
    if args.write_bands:
        write_efficiency(ev.shipped, today)
        calibrate_bands.write(bands_content(ev, today))
        bands.shipped_table.cache_clear()
        sustained.shipped_table.cache_clear()
        print(f"wrote {EFFICIENCY_PATH} and {calibrate_bands.BANDS_PATH}", file=sys.stderr)
    if args.write_docs:
        write_docs(args.write_docs, calibrate_report.doc_section(ev.rows, today))
        print(f"wrote the calibration section of {args.write_docs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
