"""The step probe's line on the scorecard, what applying a scaled-down run does to a plan, and what
the client makes of anything a host prints in place of the script's result.

No GPU is here, so the GPU runs below are written by hand in the script's result shape (each figure
stated, not computed by the code under test): a layer of 40 ms, an output layer of 30 ms and an
optimizer step of 2 ms over 1,000,000 trainable parameters, in a plan of 32 layers, 8 micro-batches
per step, 4,000,000 trainable parameters per GPU and 0.5 s of other work. The measured step is then
(0.040 · 32 + 0.030) · 8 + 0.002 ÷ 1e6 · 4e6 + 0.5 = 10.988 s.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main as cli_main
from core.planner.request import PlanRequest
from core.probes.apply import apply_to_plan, nothing_to_apply
from core.probes.checks.base import ProbeFailed, ProbeSkipped
from core.probes.checks.step import read_result
from core.probes.evidence import CheckStatus, ProbeEvidence
from core.probes.scorecard import score
from core.probes.step_spec import StepPlanned, StepResult

MEASURED_STEP = 10.988


def timing(seconds: float) -> dict[str, Any]:
    return {"median_s": seconds, "min_s": seconds, "max_s": seconds, "spread": 0.0, "reps": 5}


def gpu_result(
    planned_step_s: float, scale: int = 1, reserved: int | None = 30 * 10**9
) -> StepResult:
    planned = StepPlanned(
        model="llama-3.1-8b",
        layers=32,
        accumulation=8,
        trainable_per_gpu=4e6,
        step_s=planned_step_s,
        gemm_s=6.0,
        attention_s=2.0,
        memory_bound_s=1.0,
        optimizer_s=0.01,
        other_s=0.5,
        gpu="H100-SXM",
        memory_per_gpu=40 * 10**9,
    )
    return StepResult(
        device="cuda",
        name="NVIDIA H100 80GB HBM3",
        dtype="bfloat16",
        scale=scale,
        host="box",
        date="2026-12-01 10:00 UTC",
        params_layer=218_112_000,
        trainable_layer=1_000_000,
        layer=timing(0.040),
        optimizer=timing(0.002),
        head=timing(0.030),
        attention=timing(0.010),
        gemm=timing(0.025),
        peak_allocated=reserved,
        peak_reserved=reserved,
        planned=planned,
        memory_source="max_memory_allocated / max_memory_reserved",
    )


def step_line(result: StepResult) -> Any:
    card = score(ProbeEvidence(step=result))
    return next(c for c in card.checks if c.name == "Step time (planned vs measured)")


def test_a_step_within_a_quarter_of_the_plan_passes() -> None:
    line = step_line(gpu_result(planned_step_s=10.0))  # 10.988 s is 10% slower
    assert line.status is CheckStatus.passed
    assert line.measured.startswith(
        "11 s per step (one layer 40 ms (median of 5, spread 0%) on the GPU)"
    )
    assert line.expected == "10 s planned (warn beyond 12.5 s)"
    assert line.reason == "the step takes 110% of the planned time"


def test_a_step_more_than_a_quarter_slower_warns_with_the_likely_reasons() -> None:
    line = step_line(gpu_result(planned_step_s=8.0))  # 10.988 ÷ 8: 37% slower
    assert line.status is CheckStatus.warn
    # the GEMMs measured 0.025 · 32 · 8 = 6.4 s against 6.0 planned; attention 2.56 against 2.0; the
    # rest of the layer and the output layer (0.040 − 0.035) · 256 + 0.24 = 1.52 against 1.0:
    # attention's gap (0.56) is the largest
    assert line.reason.startswith(
        "the step is 37% slower than planned; most of it: attention 2.56 s measured vs "
        "2 s planned; likely clocks held down"
    )


def test_a_step_several_times_slower_is_said_as_a_multiple() -> None:
    line = step_line(gpu_result(planned_step_s=2.0))  # 10.988 ÷ 2 = 5.49
    assert line.status is CheckStatus.warn and line.reason.startswith(
        "the step is 5.49× the planned time; most"
    )


def test_a_cpu_run_at_the_plans_shapes_is_shown_but_not_graded_against_a_gpu_plan() -> None:
    result = gpu_result(planned_step_s=2.0).model_copy(update={"device": "cpu", "name": "cpu"})
    line = step_line(result)
    assert line.status is CheckStatus.info
    assert (
        line.reason
        == "not graded: timed on a CPU (5.49× the planned time), and the plan is for H100-SXM"
    )


def test_a_layer_reserving_more_than_the_plans_whole_gpu_warns() -> None:
    card = score(ProbeEvidence(step=gpu_result(planned_step_s=10.0, reserved=50 * 10**9)))
    line = next(c for c in card.checks if c.name == "Step memory (one layer)")
    assert line.status is CheckStatus.warn and line.measured == "50.0 GB reserved by one layer"


def test_a_scaled_down_run_is_not_graded_and_not_applied() -> None:
    result = gpu_result(planned_step_s=10.0, scale=32)
    line = step_line(result)
    assert line.status is CheckStatus.info and line.reason.startswith(
        "not graded: measured at shapes divided by 32"
    )
    evidence = ProbeEvidence(step=result)
    assert nothing_to_apply(evidence, __import__("core.catalog").catalog.load_catalog()) is not None
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": "1M"},
            "hardware": {"gpu": "H100-SXM"},
        }
    )
    new, notes = apply_to_plan(request, evidence)
    assert new.hardware is not None and new.hardware.measured_step is None
    assert notes == [
        "Step time unchanged: the step was measured at shapes divided by 32 on the GPU, so it "
        "says how the probe works, not how long the plan's step takes."
    ]


def test_a_gpu_run_at_the_plans_shapes_is_applied_with_the_sentence() -> None:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": "1M"},
            "hardware": {"gpu": "H100-SXM"},
        }
    )
    new, notes = apply_to_plan(request, ProbeEvidence(step=gpu_result(planned_step_s=10.0)))
    assert new.hardware is not None and new.hardware.measured_step is not None
    assert new.hardware.measured_step.layer_s == 0.040 and new.hardware.measured_step.source == (
        "box (NVIDIA H100 80GB HBM3, 2026-12-01)"
    )
    assert notes == [
        f"Step measured on box (NVIDIA H100 80GB HBM3, 2026-12-01): {MEASURED_STEP:.3g} s; planned "
        "10 s (10% slower)."
    ]
    _new, notes = apply_to_plan(
        request, ProbeEvidence(step=gpu_result(planned_step_s=10.0, reserved=50 * 10**9))
    )
    assert notes[-1] == (
        "Memory: one layer alone reserved 50.0 GB on the box, more than the plan's 40.0 GB per "
        "GPU: the plan underestimates it."
    )


# -- whatever a host prints
# -----------------------------------------------------------------------------------

JSON_VALUES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=4)
    | st.lists(st.integers(), max_size=2)
)
TIMING = st.builds(timing, st.floats(min_value=0, max_value=10)) | JSON_VALUES
RECORD = st.fixed_dictionaries(
    {"event": st.sampled_from(["result", "backend", "rep", "error", "skipped", "x"])},
    optional={
        "layer": TIMING,
        "head": TIMING,
        "optimizer": TIMING,
        "device": JSON_VALUES,
        "message": JSON_VALUES,
        "reason": JSON_VALUES,
        "scale": JSON_VALUES,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(RECORD, max_size=4))
def test_any_output_is_a_result_or_one_sentence(records: list[dict[str, Any]]) -> None:
    try:
        result = read_result(records, None, 1, "exit status 1")
    except (ProbeFailed, ProbeSkipped) as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(result, StepResult)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scale=st.integers(max_value=0) | st.integers(min_value=1025))
def test_a_step_scale_out_of_range_is_one_sentence_naming_the_flag(
    scale: int, tmp_path_factory: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path_factory.mktemp("scale")
    plan = folder / "request.json"
    plan.write_text('{"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "1M"}}')
    code = cli_main(
        [
            "probe",
            "--local",
            "--suite",
            "step",
            "--plan",
            str(plan),
            "--step-scale",
            str(scale),
            "--db",
            str(folder / "p.db"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("tuneplan: --step-scale: ") and err.count("\n") == 1


def test_the_probe_report_puts_the_measured_step_beside_the_planned_one_part_by_part() -> None:
    from core.probes.output.report import build_probe_report
    from core.probes.output.run_record import ProbeRunRecord

    record = ProbeRunRecord(
        host="box", evidence=ProbeEvidence(step=gpu_result(planned_step_s=10.0))
    )
    section = next(s for s in build_probe_report(record).sections if s.title == "Training step")
    table = next(b for b in section.blocks if b.kind == "table")
    # the hand figures of the module docstring: GEMMs 0.025 · 32 · 8, attention 0.010 · 256, the
    # rest 1.52, the optimizer 0.002 ÷ 1e6 · 4e6, and the 0.5 s of other work carried as planned
    assert table.rows == [
        ["the step", "11 s", "10 s"],
        ["GEMMs", "6.4 s", "6 s"],
        ["attention", "2.56 s", "2 s"],
        ["the rest of the layer and the output layer", "1.52 s", "1 s"],
        ["optimizer", "0.008 s", "0.01 s"],
        ["communication, host transfers, bubble (as planned)", "0.5 s", "0.5 s"],
    ]
    first = section.blocks[0].text  # type: ignore[union-attr]
    assert (
        first.startswith("One layer of llama-3.1-8b (")
        and "forward + backward 40 ms (median of 5" in first
    )
    assert first.endswith("peak 27.94 GiB allocated and 27.94 GiB reserved.")
