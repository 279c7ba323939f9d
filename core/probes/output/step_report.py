"""The probe report's "Training step" section: what one layer of the plan took on the box and, at
the plan's own shapes, the step built from it beside the planned one, part by part
(core.probes.step_spec.measured_step)."""

from __future__ import annotations

from core.document import Block, Bullets, Paragraph, Section, Table
from core.probes.step_spec import StepResult, comparable, gap_text, measured_step, seconds_text


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.4g} ms"


def step_section(result: StepResult) -> Section:
    lay = result.layer
    rate = f", {result.tflops:.3g} TFLOP/s" if result.tflops else ""
    memory = (
        f"peak {result.peak_allocated / 2**30:.2f} GiB allocated and "
        f"{result.peak_reserved / 2**30:.2f} GiB "
        "reserved"
        if result.peak_allocated is not None and result.peak_reserved is not None
        else result.memory_source
    )
    blocks: list[Block] = [
        Paragraph(
            text=(
                f"One layer of {result.planned.model if result.planned else 'the plan'} "
                f"({result.shape}, {result.dtype}) on {result.where}: forward + backward "
                f"{_ms(lay.median_s)} (median of {lay.reps}, "
                f"{_ms(lay.min_s)}–{_ms(lay.max_s)}){rate}; output layer and loss "
                f"{_ms(result.head.median_s)}; optimizer step {_ms(result.optimizer.median_s)} "
                f"over {result.trainable_layer:,} trainable parameters; {memory}."
            )
        )
    ]
    why = comparable(result)
    planned = result.planned
    if why is not None or planned is None:
        blocks.append(Paragraph(text=f"Not compared with the plan: {why}."))
    else:
        step = measured_step(result, planned)
        rest = step.layers_s + step.head_s - (step.gemm_s or 0.0) - (step.attention_s or 0.0)
        rows = [
            ["the step", seconds_text(step.step_s), seconds_text(planned.step_s)],
            ["GEMMs", seconds_text(step.gemm_s or 0.0), seconds_text(planned.gemm_s)],
            ["attention", seconds_text(step.attention_s or 0.0), seconds_text(planned.attention_s)],
            [
                "the rest of the layer and the output layer",
                seconds_text(max(rest, 0.0)),
                seconds_text(planned.memory_bound_s),
            ],
            ["optimizer", seconds_text(step.optimizer_s), seconds_text(planned.optimizer_s)],
            [
                "communication, host transfers, bubble (as planned)",
                seconds_text(step.other_s),
                seconds_text(planned.other_s),
            ],
        ]
        blocks += [
            Paragraph(
                text=f"Measured {gap_text(step.step_s, planned.step_s)} against the plan "
                f"({planned.gpu}), per optimizer step of {planned.accumulation:g} micro-batches "
                f"over {planned.layers:g} layers:"
            ),
            Table(header=["part", "measured", "planned"], rows=rows, widths=[2.4, 1, 1]),
        ]
    if result.notes:
        blocks.append(Bullets(items=result.notes))
    return Section(title="Training step", blocks=blocks)
