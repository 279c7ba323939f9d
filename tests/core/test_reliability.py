"""Checkpoint interval and failure math against the published values (Young 1974, Daly 2006,
Databricks)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.planner.money.reliability import (
    daly_interval_s,
    expected_failures,
    expected_wall_hours,
    failure_probability,
    job_mtbf_hours,
    optimal_interval_s,
    plan_checkpoints,
    young_interval_s,
)

MIN = 60.0
HOUR = 3600.0


def test_young_interval_is_sqrt_2_delta_m():
    # delta = 5 min, M = 24 h: sqrt(2 * 300 * 86,400) = sqrt(51,840,000) = 7,200 s exactly.
    assert young_interval_s(300.0, 86_400.0) == pytest.approx(7_200.0)


@pytest.mark.parametrize(
    ("mtbf_min", "expected_min", "digits"),
    [
        (24 * 60, 117, 0),  # Daly 2006: M = 24 h, delta = 5 min -> 117 min
        (6 * 60, 57, 0),  # M = 6 h -> 57 min
        (15, 9.1, 1),  # M = 15 min -> 9.1 min
    ],
)
def test_daly_interval_matches_dalys_published_values(mtbf_min, expected_min, digits):
    tau_min = daly_interval_s(5 * MIN, mtbf_min * MIN) / MIN
    assert round(tau_min, digits) == expected_min


def test_daly_interval_vectorised_over_arrays():
    tau = daly_interval_s(np.full(3, 5 * MIN), np.array([24 * 60, 6 * 60, 15]) * MIN)
    assert isinstance(tau, np.ndarray)
    assert tau.shape == (3,)
    assert np.round(tau[:2] / MIN).tolist() == [117, 57]
    assert round(float(tau[2]) / MIN, 1) == 9.1


def test_daly_interval_is_m_when_writes_take_longer_than_2m():
    assert daly_interval_s(1_000.0, 400.0) == pytest.approx(400.0)


def test_free_checkpoints_and_no_failures_give_no_overhead():
    # delta = 0 and M = inf: the interval is 0 (not NaN) and the wall time is the solve time.
    assert young_interval_s(0.0, math.inf) == 0.0
    assert daly_interval_s(0.0, math.inf) == 0.0
    assert (
        expected_wall_hours(5.0, optimal_interval_s(0.0, math.inf, 5.0), 0.0, 600.0, math.inf)
        == 5.0
    )


def test_daly_is_shorter_than_young_for_the_same_inputs():
    # The -delta term dominates the higher-order corrections: Daly checkpoints a little more often.
    assert daly_interval_s(300.0, 86_400.0) < young_interval_s(300.0, 86_400.0)


@given(
    delta=st.floats(min_value=0.0, max_value=1e6, allow_nan=False),
    mtbf=st.floats(min_value=1.0, max_value=1e9, allow_nan=False),
)
def test_daly_interval_never_exceeds_mtbf(delta, mtbf):
    assert daly_interval_s(delta, mtbf) <= mtbf * (1 + 1e-12)


def test_job_mtbf_from_llama3_scale():
    # 50,700 GPU-hours per failure over 16,384 GPUs: one interruption every ~3.1 h (Llama 3 §3.3.4).
    assert job_mtbf_hours(50_700.0, 16_384) == pytest.approx(3.1, abs=0.01)


def test_job_mtbf_adds_preemption_rate():
    # 10 GPUs at 1,000 h each -> 0.01/h; plus 0.01 preemptions/h -> 0.02/h -> 50 h.
    assert job_mtbf_hours(1_000.0, 10, 0.01) == pytest.approx(50.0)


def test_job_mtbf_vectorised():
    out = job_mtbf_hours(100.0, np.array([1.0, 2.0, 4.0]))
    assert out.tolist() == pytest.approx([100.0, 50.0, 25.0])


def test_job_mtbf_rejects_zero_gpus():
    with pytest.raises(ValueError, match="gpus"):
        job_mtbf_hours(50_700.0, 0)


def test_expected_wall_hours_hand_value():
    # T_s = 100 h, tau = 1 h, delta = 0.1 h, R = 0.2 h, M = 10 h (all in hours, ratios unit-free):
    # 10 * e^0.02 * (e^0.11 - 1) * 100 / 1 = 10 * 1.020201 * 0.116278 * 100 = 118.63 h
    wall = expected_wall_hours(100.0, 1 * HOUR, 0.1 * HOUR, 0.2 * HOUR, 10 * HOUR)
    assert wall == pytest.approx(118.63, abs=0.01)


@pytest.mark.parametrize("mtbf_s", [1e15, math.inf])
def test_expected_wall_hours_without_failures_is_solve_plus_writes(mtbf_s):
    # M -> inf: T_w -> T_s (1 + delta/tau) = 10 h * (1 + 360/3600) = 11 h.
    assert expected_wall_hours(10.0, 3_600.0, 360.0, 600.0, mtbf_s) == pytest.approx(11.0, rel=1e-6)


def test_expected_failures_is_wall_over_mtbf():
    assert expected_failures(100.0, 25.0) == pytest.approx(4.0)


def test_failure_probability_databricks_1024_gpus_30_days():
    # Databricks: 1 % annual GPU failure -> 57 % chance of at least one failure for 1,024 GPUs in 30
    # days.
    assert failure_probability(1_024, 30) == pytest.approx(0.57, abs=0.005)


def test_failure_probability_rejects_bad_rate():
    with pytest.raises(ValueError, match="annual_rate"):
        failure_probability(8, 30, annual_rate=1.5)


def test_optimal_interval_capped_at_job_length():
    # 8 GPUs at 50,700 h -> M = 6,337.5 h; Daly's optimum is days, the job 2 h: checkpoint once, at
    # the end.
    assert optimal_interval_s(60.0, 6_337.5 * HOUR, 2.0) == pytest.approx(2 * HOUR)


def test_plan_checkpoints_short_small_job():
    result = plan_checkpoints(
        size_bytes=97e9,
        write_seconds=60.0,
        solve_hours=2.0,
        gpu_mtbf_hours=50_700.0,
        gpus=8,
        preemptions_per_hour=0.0,
        restart_s=600.0,
    )
    assert result.size_bytes == 97_000_000_000
    assert result.job_mtbf_hours == pytest.approx(6_337.5)
    assert result.interval_minutes == pytest.approx(120.0)
    # Overhead ~ delta / tau = 60 / 7,200 = 0.83 %, plus a tiny failure term (T/M ~ 3e-4).
    assert result.overhead_fraction == pytest.approx(0.0083, abs=0.0005)
    assert result.expected_failures == pytest.approx(2.0 / 6_337.5, rel=0.02)


def test_plan_checkpoints_with_preemptions_uses_daly_interval():
    # M = 1 / (8/1e12 + 0.5) = 2 h; delta = 200 s -> Daly 1,566 s (hand: see test_cost spot case).
    result = plan_checkpoints(
        size_bytes=1e9,
        write_seconds=200.0,
        solve_hours=10.0,
        gpu_mtbf_hours=1e12,
        gpus=8,
        preemptions_per_hour=0.5,
        restart_s=600.0,
    )
    assert result.interval_minutes == pytest.approx(1_566.34 / 60, rel=1e-4)
    assert result.overhead_fraction == pytest.approx(0.3891, abs=0.001)


def _daly_minutes(delta_s: float, mtbf_s: float) -> float:
    """Daly 2006, eq. (37), written out again here: τ = √(2δM)·[1 + ⅓√(δ/2M) + (δ/2M)/9] − δ for δ <
    2M."""
    x = delta_s / (2 * mtbf_s)
    return (math.sqrt(2 * delta_s * mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - delta_s) / 60


def test_a_spot_plan_checkpoints_for_preemptions_and_failures_an_on_demand_plan_for_failures():
    """Issue: a 2-node spot plan checkpointed once, at its last step, while its cost billed
    preemptions."""
    from core.planner.plan import plan
    from core.planner.request import PlanRequest

    raw = {
        "model": {"preset": "llama-3.1-70b"},
        "data": {"tokens": 2e9, "seq_len": 4096},
        "training": {"method": "full", "sharding": "zero3", "offload": "optimizer_and_params"},
        "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 2},
        "pricing": {"provider": "aws", "mode": "spot"},
        "assumptions": {"spot_preemptions_per_hour": 0.1, "gpu_mtbf_hours": 50_700},
    }
    spot = plan(PlanRequest.model_validate(raw))
    on_demand = plan(
        PlanRequest.model_validate({**raw, "pricing": {"provider": "aws", "mode": "on_demand"}})
    )
    # 1/M = N/M_gpu + λ (DESIGN: job MTBF), with N = 16 GPUs and λ = 0.1 per hour.
    m_spot_h = 1 / (16 / 50_700 + 0.1)
    assert spot.checkpoint.job_mtbf_hours == pytest.approx(m_spot_h, rel=1e-9)
    assert on_demand.checkpoint.job_mtbf_hours == pytest.approx(50_700 / 16, rel=1e-9)
    delta = spot.checkpoint.write_seconds
    assert spot.checkpoint.interval_minutes == pytest.approx(
        _daly_minutes(delta, m_spot_h * 3600), rel=1e-9
    )
    assert spot.checkpoint.interval_minutes < on_demand.checkpoint.interval_minutes
    # not once at the end
    assert spot.checkpoint.interval_minutes * 60 < spot.compute.step_time_s * spot.compute.steps
    # The wall time a spot plan states is the one its spot cost bills; the on-demand price is not
    # raised by it.
    assert spot.cost.spot_expected_lost_hours is not None
    assert spot.time.hours > on_demand.time.hours
    assert spot.cost.compute_usd.on_demand == pytest.approx(
        on_demand.cost.compute_usd.on_demand, rel=1e-9
    )
