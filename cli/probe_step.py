"""The step probe on the command line: the layer taken from ``--plan REQUEST.json``, the lines the
probe prints about it, and `tuneplan plan REQUEST.json --probe-run RUN` (a run's measurements
applied to a plan).

Kept apart from cli.probe so that the probe command's own wiring stays small: `options_step` turns
the plan into the `StepSpec` the run carries (and adds ``step`` to the full suite), `step_lines`
says what was measured and how it compares with the plan.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cli.common import CliError
from core.validation import validation_message


def read_plan_request(path: str) -> Any:
    """The PlanRequest in a request file; CliError with one sentence naming the file and the
    field."""
    from cli.plan_request import load_request
    from core.planner import PlanRequest

    try:
        return PlanRequest.model_validate(load_request(path))
    except ValidationError as exc:
        raise CliError(f"{path}: {validation_message(exc)}") from None


def options_step(values: dict[str, Any], plan: str | None, step_scale: int | None) -> None:
    """Put the plan's layer into the run's options: ``step`` is run on its own, or in ``full`` once
    a plan is given; naming ``step`` without a plan is a usage error (one sentence)."""
    from core.probes import SUITES, resolve_probes

    suite = values["suite"]
    try:
        names = resolve_probes(suite)
    except ValueError:
        return  # RunOptions says what is wrong with the suite
    if plan is None:
        if "step" in names:
            raise CliError(
                "--suite step needs --plan REQUEST.json: the layer it times is the plan's"
            )
        return
    from core.probes import step_spec_for

    try:
        values["step"] = step_spec_for(read_plan_request(plan))
    except ValueError as exc:
        raise CliError(f"{plan}: {exc}") from None
    if suite == "full":
        values["suite"] = [*SUITES["full"], "step"]
    elif "step" not in names:
        raise CliError(
            "--plan is for the step probe: add it to --suite (e.g. --suite step, or full)"
        )
    if step_scale is not None:
        values["step_cpu_scale"] = step_scale


def step_lines(doc: dict[str, Any]) -> list[str]:
    """What the step probe measured and, at the plan's own shapes, the step against the plan; empty
    without it."""
    from core.probes import StepResult, comparable, differences, measured_step, step_sentence

    raw = (doc.get("evidence") or {}).get("step")
    if not raw:
        return []
    result = StepResult.model_validate(raw)
    lay, head, opt = result.layer, result.head, result.optimizer
    memory = (
        f"peak {result.peak_allocated / 2**30:.2f} GiB allocated, "
        f"{result.peak_reserved / 2**30:.2f} GiB reserved (max_memory_allocated / "
        "max_memory_reserved)"
        if result.peak_allocated is not None and result.peak_reserved is not None
        else result.memory_source
    )
    rate = f", {result.tflops:.3g} TFLOP/s" if result.tflops else ""
    lines = [
        "",
        f"step: one layer of {result.planned.model if result.planned else 'the plan'} on "
        f"{result.where}: {result.shape} ({result.dtype})",
        f"  layer    {lay.median_s * 1000:.4g} ms forward + backward (median of {lay.reps}; "
        f"{lay.min_s * 1000:.4g}–{lay.max_s * 1000:.4g} ms, spread {lay.spread:.0%}){rate}",
        f"  output   {head.median_s * 1000:.4g} ms (output layer and loss at the plan's "
        "vocabulary)",
        f"  optim    {opt.median_s * 1000:.4g} ms over {result.trainable_layer:,} trainable "
        "parameters",
        f"  memory   {memory}",
        *(f"  note     {n}" for n in result.notes),
    ]
    why = comparable(result)
    if why is not None or result.planned is None:
        return [*lines, f"  not applied to the plan: {why}"]
    step = measured_step(result, result.planned)
    lines.append("  " + step_sentence(result, step.step_s, result.planned.step_s))
    return lines + [f"    {d}" for d in differences(result, step, result.planned)]


def applied_request(request: Any, run: str, db: str | None) -> tuple[Any, list[str]]:
    """The request with probe run RUN's measurements applied (`tuneplan plan … --probe-run RUN`),
    and the notes."""
    from cli.probe_report import load_record
    from core.probes import apply_to_plan

    record = load_record(run, db)
    try:
        return apply_to_plan(request, record.evidence)
    except ValidationError as exc:
        raise CliError(f"run {run} cannot be applied: {validation_message(exc)}") from None
