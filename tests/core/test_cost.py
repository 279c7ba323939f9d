"""Compute, spot, idle, egress and buy-vs-rent money against hand calculations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.planner.money.cost import (
    buy_vs_rent,
    compute_costs,
    egress_cost,
    idle_cost,
    owned_cost_curve,
    spot_cost,
    spot_wall_hours,
)
from core.planner.request_assumptions import BuySpec

# REFERENCES.md defaults: H100 $25-30k, 10.2 kW per 8-GPU node (1.275 kW/GPU), PUE 1.56, colo
# $150-250 per kW-month (200 used), 3 years, residual 30 %, 80 % average load, $0.10/kWh. Yearly
# cost of one GPU at $25,000:
#   depreciation 25,000 x 0.7 / 3              = 5,833.33
#   power        1.275 x 0.8 x 1.56 x 8,766 x 0.10 = 1,394.85
#   colocation   1.275 x 200 x 12              = 3,060.00
#   total                                       = 10,288.18
YEARLY_25K = 10_288.18


def test_compute_costs_each_mode():
    cost = compute_costs(100.0, on_demand=2.0, spot=0.8, reserved=1.5)
    assert (cost.on_demand, cost.spot, cost.reserved) == pytest.approx((200.0, 80.0, 150.0))


def test_compute_costs_none_where_no_price_and_discount():
    cost = compute_costs(100.0, on_demand=2.0, spot=None, reserved=None, discount=0.1)
    assert cost.on_demand == pytest.approx(180.0)
    assert cost.spot is None and cost.reserved is None


def test_compute_costs_bills_spot_hours_separately():
    assert compute_costs(100.0, 2.0, 1.0, None, spot_gpu_hours=125.0).spot == pytest.approx(125.0)


def test_compute_costs_rejects_discount_of_one():
    with pytest.raises(ValueError, match="discount"):
        compute_costs(1.0, 1.0, None, None, discount=1.0)


@given(
    hours=st.floats(min_value=0, max_value=1e7, allow_nan=False),
    price=st.floats(min_value=0, max_value=1e3, allow_nan=False),
)
def test_cost_is_hours_times_price_in_every_mode(hours, price):
    cost = compute_costs(hours, price, price, price)
    for value in (cost.on_demand, cost.spot, cost.reserved):
        assert value == pytest.approx(hours * price)


def test_spot_without_failures_pays_only_the_final_checkpoint():
    # No failures, no preemption: one checkpoint at the end, tau = 10 h = 36,000 s, delta = 36 s ->
    # wall = 10 x (1 + 36/36,000) = 10.01 h; 8 GPUs x 10.01 h x $1 = $80.08; 0.08 GPU-hours beyond
    # the work.
    spot = spot_cost(
        solve_hours=10.0,
        gpus=8,
        spot_usd_per_gpu_hour=1.0,
        gpu_mtbf_hours=1e15,
        preemptions_per_hour=0.0,
        checkpoint_write_s=36.0,
        restart_s=600.0,
    )
    assert spot.wall_hours == pytest.approx(10.01, rel=1e-6)
    assert spot.usd == pytest.approx(80.08, rel=1e-6)
    assert spot.lost_gpu_hours == pytest.approx(0.08, rel=1e-4)


def test_spot_with_preemptions_hand_value():
    # lambda = 0.5/h, hardware negligible -> M = 2 h = 7,200 s; delta = 200 s; R = 600 s; T_s = 10
    # h. Daly: delta/2M = 0.013889; sqrt(2 delta M) = 1,697.06; x [1 + 0.117851/3 + 0.013889/9] =
    # 1,766.34;
    #       tau = 1,766.34 - 200 = 1,566.34 s.
    # T_w = 7,200 x e^(600/7,200) x (e^(1,766.34/7,200) - 1) x 36,000 / 1,566.34
    #     = 7,200 x 1.086904 x 0.278046 x 22.9834 = 50,008 s = 13.891 h.
    spot = spot_cost(
        solve_hours=10.0,
        gpus=8,
        spot_usd_per_gpu_hour=2.0,
        gpu_mtbf_hours=1e12,
        preemptions_per_hour=0.5,
        checkpoint_write_s=200.0,
        restart_s=600.0,
    )
    assert spot.wall_hours == pytest.approx(13.891, abs=0.001)
    assert spot.usd == pytest.approx(13.891 * 8 * 2.0, abs=0.02)
    assert spot.lost_gpu_hours == pytest.approx(3.891 * 8, abs=0.01)
    assert spot.job_mtbf_hours == pytest.approx(2.0)


def test_spot_cost_none_without_price():
    spot = spot_cost(
        solve_hours=1.0,
        gpus=1,
        spot_usd_per_gpu_hour=None,
        gpu_mtbf_hours=50_700.0,
        preemptions_per_hour=0.05,
        checkpoint_write_s=10.0,
        restart_s=600.0,
    )
    assert spot.usd is None
    assert spot.wall_hours > 1.0


def test_spot_wall_hours_vectorised():
    out = spot_wall_hours(
        np.array([10.0, 10.0]),
        np.array([8.0, 8.0]),
        1e12,
        np.array([0.0, 0.5]),
        np.array([36.0, 200.0]),
        600.0,
    )
    assert isinstance(out, np.ndarray)
    assert out.tolist() == pytest.approx([10.01, 13.891], abs=0.001)


@given(
    solve=st.floats(min_value=0.01, max_value=1e4),
    gpus=st.integers(min_value=1, max_value=65_536),
    lam=st.floats(min_value=0.0, max_value=2.0),
    delta=st.floats(min_value=0.0, max_value=3_600.0),
    restart=st.floats(min_value=0.0, max_value=3_600.0),
)
def test_spot_expected_hours_never_below_solve_hours(solve, gpus, lam, delta, restart):
    assert spot_wall_hours(solve, gpus, 50_700.0, lam, delta, restart) >= solve * (1 - 1e-12)


def test_idle_cost_gb_month():
    # 500 GB of gp3 at $0.08/GB-month: a full month (730 h) = $40, 73 h = $4.
    assert idle_cost(730.0, 500e9, 0.08) == pytest.approx(40.0)
    assert idle_cost(73.0, 500e9, 0.08) == pytest.approx(4.0)
    assert idle_cost(73.0, 500e9, None) is None


def test_egress_cost_with_free_allowance():
    # AWS first tier $0.09/GB, 100 GB free: 1,000 GB -> 900 x 0.09 = $81.
    assert egress_cost(1_000.0, 0.09, free_gb=100.0) == pytest.approx(81.0)
    assert egress_cost(50.0, 0.09, free_gb=100.0) == 0.0
    assert egress_cost(50.0, None) is None


def test_buy_vs_rent_h100_defaults():
    result = buy_vs_rent(BuySpec(), 25_000.0, 2.50)
    # 10,288.18 / (8,766 x 0.6) = 1.956 USD per GPU-hour; break-even 10,288.18 / (8,766 x 2.50) =
    # 0.4695.
    assert result.usd_per_gpu_hour_owned == pytest.approx(1.956, abs=0.001)
    assert result.usd_per_gpu_hour_rented == 2.50
    assert result.break_even_utilization == pytest.approx(0.4695, abs=0.0001)


def test_buy_vs_rent_never_breaks_even_when_rent_is_cheap():
    # At $1/GPU-hour the owned GPU would need 10,288 / 8,766 = 117 % utilisation.
    assert buy_vs_rent(BuySpec(), 25_000.0, 1.00).break_even_utilization is None
    assert buy_vs_rent(BuySpec(), 25_000.0, None).break_even_utilization is None


def test_users_capex_wins_over_catalog_default():
    # 30,000 x 0.7 / 3 = 7,000 + 1,394.85 + 3,060 = 11,454.85 / 5,259.6 = 2.178.
    result = buy_vs_rent(BuySpec(capex_usd_per_gpu=30_000.0), 25_000.0, 2.50)
    assert result.usd_per_gpu_hour_owned == pytest.approx(2.178, abs=0.001)


def test_buy_vs_rent_needs_a_capex():
    with pytest.raises(ValueError, match="capex"):
        buy_vs_rent(BuySpec(), None, 2.50)


def test_owned_cost_curve_hand_values():
    curve = owned_cost_curve(BuySpec(), 25_000.0, np.array([0.5, 1.0]))
    # 10,288.18 / 4,383 = 2.3473; / 8,766 = 1.1736
    assert curve.tolist() == pytest.approx([YEARLY_25K / 4_383, YEARLY_25K / 8_766], rel=1e-5)
    assert curve.tolist() == pytest.approx([2.3473, 1.1736], abs=1e-4)


def test_owned_cost_curve_rejects_zero_utilisation():
    with pytest.raises(ValueError, match="utilisations"):
        owned_cost_curve(BuySpec(), 25_000.0, np.array([0.0, 0.5]))
