"""Step: one decoder layer of the planned model, timed forward + backward + optimizer on the host.

The layer comes from the plan (``RunOptions.step``, a `StepSpec` made by
core.probes.apply.step_spec); the remote script builds it in plain PyTorch and times it after
warm-up, streaming each repetition (the Live tab's series ``step_ms``). On a GPU the plan's own
shapes are measured; without one the shapes are divided by ``RunOptions.step_cpu_scale`` so a CPU
finishes in seconds, and the result says so, as it says that a CPU's memory is not measured. A layer
that cannot fit is the script's one sentence, the probe's failure; QLoRA without bitsandbytes on a
GPU is skipped with the reason.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import ValidationError

from core.probes.checks.base import (
    ProbeContext,
    ProbeFailed,
    ProbeSkipped,
    TransportError,
    q,
    short_error,
)
from core.probes.checks.compute import as_float, json_lines
from core.probes.checks.torchrun import torch_caches_in
from core.probes.step_spec import StepResult, StepSpec

SERIES = "step_ms"
STARTUP_S = 120.0  # importing torch and building the layer, on top of the script's own time bound


def eta(ctx: ProbeContext) -> float:
    spec = ctx.options.step
    return 20.0 if spec is None else min(spec.max_seconds, 60.0) + 15.0


def _rep(ctx: ProbeContext, record: dict[str, Any]) -> None:
    seconds = as_float(record.get("seconds"))
    if seconds is not None:
        index = float(as_float(record.get("index")) or 0.0)
        ctx.point(SERIES, index, seconds * 1000.0, str(record.get("part") or "layer"))


def run(ctx: ProbeContext) -> None:
    spec = ctx.options.step
    if spec is None:
        raise ProbeSkipped(
            "the step probe needs a plan to take its layer from (open or choose one; on the "
            "command line --plan REQUEST.json)"
        )
    python = ctx.facts.python
    if python is None:
        raise ProbeSkipped(
            "no Python interpreter was found on the host, so no layer could be built"
        )
    if python.torch is None:
        raise ProbeSkipped(f"torch cannot be imported by {python.path}, so no layer could be built")
    on_gpu = ctx.facts.cuda
    scale = spec.scale if on_gpu else max(ctx.options.step_cpu_scale, spec.scale)
    script = ctx.upload("step.py")
    marker = "tuneplan-step-" + ctx.workdir.rsplit("/", 1)[-1]
    command = (
        f"{torch_caches_in(ctx.workdir)}{q(python.path)} {q(script)} measure --marker {q(marker)} "
        f"--spec {q(spec.script_json(scale, 'auto' if on_gpu else 'cpu'))}"
    )
    records: list[dict[str, Any]] = []
    stream = ctx.stream(command, timeout=spec.max_seconds + STARTUP_S)
    try:
        for line in stream:
            for record in json_lines(line):
                records.append(record)
                if record.get("event") == "rep":
                    _rep(ctx, record)
    # the connection dropped: the repetitions timed so far are said, not graded
    except TransportError:
        reps = [r for r in records if r.get("event") == "rep" and r.get("part") == "layer"]
        ctx.evidence.partial["step"] = (
            f"{len(reps)} timed repetition{'s' * (len(reps) != 1)} of the layer before the drop"
            if reps
            else "no repetition had been timed"
        )
        raise
    result = read_result(
        records,
        spec,
        stream.result.exit_code if stream.result else None,
        short_error(stream.result) if stream.result else "no output",
    )
    if not result.on_gpu:
        shapes = (
            f"the plan's shapes divided by {result.scale}"
            if result.scale > 1
            else "the plan's own shapes"
        )
        ctx.warn(
            f"no CUDA GPU: timed on the CPU in {result.dtype} at {shapes}; {result.memory_source}"
        )
    ctx.evidence.step = result


def read_result(
    records: list[dict[str, Any]], spec: StepSpec | None, exit_code: int | None, tail: str
) -> StepResult:
    """The script's result as evidence; its skip or its one-sentence error as the probe's outcome
    (whatever the host printed: anything else is a `ProbeFailed` in one sentence)."""
    by_kind = {str(r.get("event")): r for r in records}
    if "skipped" in by_kind:
        raise ProbeSkipped(
            str(by_kind["skipped"].get("reason") or "the layer cannot be measured here")
        )
    if "result" not in by_kind:
        error = by_kind.get("error", {}).get("message")
        raise ProbeFailed(
            str(error) if error else f"the step script gave no result (exit {exit_code}: {tail})"
        )
    backend = by_kind.get("backend", {})
    try:
        result = StepResult.model_validate(
            {
                **{k: v for k, v in by_kind["result"].items() if k in StepResult.model_fields},
                "host": str(backend.get("host") or ""),
                "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "planned": spec.planned if spec is not None else None,
                "notes": list(spec.planned.notes)
                if spec is not None and spec.planned is not None
                else [],
            }
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise ProbeFailed(
            f"the step script's result could not be read: {where}: {error['msg']}"
        ) from None
    return result
