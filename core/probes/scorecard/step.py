"""Does one step take as long as the plan says? The measured layer, built into a step, against the
planned step.

The step is the plan's own decomposition with its compute measured
(core.probes.step_spec.measured_step); it is graded only when it was measured at the plan's own
shapes. A measured step more than 25% slower than planned is a WARN with the likely reasons (where
measured and planned differ most, and what slows a box down), never a FAIL: the plan is an estimate,
and the box may still train as planned once warmed or tuned. A CPU or scaled-down run gets an INFO
line that says what it measured and why it is not graded.
"""

from __future__ import annotations

from core.probes.evidence import Check
from core.probes.scorecard.common import INFO, PASS, WARN, check
from core.probes.step_spec import (
    StepResult,
    comparable,
    differences,
    gap_text,
    measured_step,
    seconds_text,
)

SLOWER_WARN = 0.25  # measured more than 25% slower than planned: WARN
SOURCE = (
    "the plan's step time (tuneplan planner) against the layer timed here; WARN beyond 25% slower"
)
LIKELY = (
    "clocks held down (power or thermal limits), another process on the GPU, or kernels slower "
    "than the planner assumes (no flash attention, an older torch)"
)


def _timing_text(result: StepResult) -> str:
    lay = result.layer
    rate = f", {result.tflops:.3g} TFLOP/s" if result.tflops else ""
    return (
        f"one layer {lay.median_s * 1000:.3g} ms (median of {lay.reps}, spread "
        f"{lay.spread:.0%}){rate} on {'the GPU' if result.on_gpu else 'the CPU'}"
    )


def check_step(result: StepResult | None) -> list[Check]:
    if result is None:
        return []
    why = comparable(result)
    if why is not None or result.planned is None:
        return [
            check(
                "performance",
                "Step time (planned vs measured)",
                INFO,
                _timing_text(result),
                "—",
                SOURCE,
                f"not graded: {why}",
            )
        ]
    planned = result.planned
    step = measured_step(result, planned)
    ratio = step.step_s / planned.step_s
    measured = f"{seconds_text(step.step_s)} per step ({_timing_text(result)})"
    expected = (
        f"{seconds_text(planned.step_s)} planned (warn beyond "
        f"{seconds_text(planned.step_s * (1 + SLOWER_WARN))})"
    )
    if not result.on_gpu:
        return [
            check(
                "performance",
                "Step time (planned vs measured)",
                INFO,
                measured,
                expected,
                SOURCE,
                f"not graded: timed on a CPU ({gap_text(step.step_s, planned.step_s)}), and the "
                f"plan is for {planned.gpu or 'a GPU'}",
            )
        ]
    status = WARN if ratio > 1 + SLOWER_WARN else PASS
    if status is WARN:
        gaps = differences(result, step, planned)
        gap = gap_text(step.step_s, planned.step_s)
        slower = gap if gap.endswith("time") else f"{gap} than planned"
        reason = (
            f"the step is {slower}"
            + (f"; most of it: {gaps[0]}" if gaps else "")
            + f"; likely {LIKELY}"
        )
    else:
        reason = f"the step takes {ratio:.0%} of the planned time"
    out = [
        check(
            "performance",
            "Step time (planned vs measured)",
            status,
            measured,
            expected,
            SOURCE,
            reason,
        )
    ]
    if (
        result.peak_reserved
        and planned.memory_per_gpu
        and result.peak_reserved > planned.memory_per_gpu
    ):
        out.append(
            check(
                "performance",
                "Step memory (one layer)",
                WARN,
                f"{result.peak_reserved / 1e9:.1f} GB reserved by one layer",
                f"within the plan's {planned.memory_per_gpu / 1e9:.1f} GB per GPU",
                "torch.cuda.max_memory_reserved",
                "one layer alone reserves more than the plan's whole "
                "memory per GPU: the plan underestimates its activations",
            )
        )
    return out
