"""The fitted efficiencies (core/planner/speed/efficiency.py) and the error band (core/planner/speed/bands.py).

Expected figures here come from outside the code under test: the flat-MFU baseline from the catalog peak and
the definition of MFU, the band's ends from a hand-written table, the shipped bands.json from a fresh run of
the calibration harness over the published cases.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench import calibrate
from core.catalog import load_catalog
from core.planner.models import PlanRequest, Precision, TrainingSpec
from core.planner.plan import plan
from core.planner.speed import bands, efficiency, gpu_rates, kernels

CATALOG = load_catalog()


def _request(**training: Any) -> PlanRequest:
    return PlanRequest.model_validate({
        "model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 1e8, "seq_len": 2048},
        "training": {"method": "lora", **training}, "hardware": {"gpu": "H100-SXM", "gpus_per_node": 1}})


def test_every_constant_sits_within_its_bounds_and_names_a_source() -> None:
    for c, value in efficiency.constants():
        assert c.low <= c.prior <= c.high, c.name
        assert c.low <= value <= c.high, f"{c.name} = {value} outside {c.low}–{c.high}"
        assert len(c.source) > 20 and c.half == "A"


def test_a_small_gemm_runs_slower_per_flop_than_a_large_one() -> None:
    """Same FLOPs, one dimension 64 instead of 4096: it must take longer on the compute side (tile fill)."""
    peak, hbm = 800e12, 1e20  # HBM made infinite so only the compute side counts
    big = kernels.gemm_seconds(4096, 4096, 4096, peak, hbm)
    small = kernels.gemm_seconds(4096 * 64, 64, 4096, peak, hbm)  # 2·m·n·k equal
    assert small > big * 1.5
    assert big == pytest.approx(2 * 4096**3 / peak, rel=0.05)  # a large GEMM runs near the rate it is given


def test_the_sustained_factor_lowers_the_matmul_efficiency_a_plan_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """H100 MAMF is 80.3% (catalog, stas00's table); the plan's line is that × the Hopper factor."""
    result = plan(_request())
    line = next(a for a in result.assumptions if a.name == "matmul efficiency")
    assert line.value == f"{0.803 * efficiency.GEMM_SUSTAINED_HOPPER:.1%} of peak"
    slow = plan(_request()).compute.tokens_per_second
    monkeypatch.setattr(efficiency, "GEMM_SUSTAINED_HOPPER", efficiency.GEMM_SUSTAINED_HOPPER / 2)
    assert plan(_request()).compute.tokens_per_second < slow * 0.8


def test_an_ada_card_is_slowed_by_its_power_cap_only_when_its_watts_are_short() -> None:
    """Datasheets: L4 72 W for 121 dense BF16 TFLOP/s, RTX 4090 450 W for 165, L40S 350 W for 362. Under one
    watts-per-TFLOP/s constant the L4 (0.6 W per TFLOP/s) runs below its nameplate clock and the 4090 (2.7) at it;
    the 4090's GEMMs then run at the plain no-MAMF heuristic, the L4's below it, and the L4's attention too."""
    l4 = gpu_rates.rates(CATALOG.gpu("L4"), Precision.amp_bf16)
    rtx = gpu_rates.rates(CATALOG.gpu("RTX-4090"), Precision.amp_bf16)
    assert rtx.matmul_efficiency == pytest.approx(kernels.FALLBACK_MATMUL_EFFICIENCY)
    capped = kernels.FALLBACK_MATMUL_EFFICIENCY * 72 * efficiency.ADA_TFLOPS_PER_WATT / 121
    assert l4.matmul_efficiency == pytest.approx(capped)
    assert l4.matmul_efficiency < rtx.matmul_efficiency and l4.attention_efficiency < rtx.attention_efficiency
    assert "72 W cap" in l4.matmul_source and "cap" not in rtx.matmul_source
    # The family factor of Hopper and Ampere is untouched by watts: an H100 PCIe (350 W) is not throttled here.
    assert efficiency.power_clock("Hopper", 350, 756.5) == 1.0


def test_the_hf_layer_overhead_reaches_hf_stacks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    hf = plan(_request()).compute.step_time_s
    titan = plan(_request(framework="torchtitan", sharding="none")).compute.step_time_s
    monkeypatch.setattr(efficiency, "HF_LAYER_OVERHEAD_S", efficiency.HF_LAYER_OVERHEAD_S + 1e-3)
    # llama-3.1-8b has 32 layers: 1 ms more per layer per micro-batch pass adds ≥ 32 ms × micro-batches
    assert plan(_request()).compute.step_time_s > hf + 0.032
    assert plan(_request(framework="torchtitan", sharding="none")).compute.step_time_s == pytest.approx(titan)


def test_the_flat_baseline_is_half_the_peak_over_the_model_flops() -> None:
    """tokens/s/GPU at 50% MFU = 0.5 × 989 TFLOP/s (H100 dense BF16, the catalog's datasheet peak) ÷ FLOPs/token."""
    case = next(c for c in calibrate.load_cases() if c["id"] == "automodel-llama3.1-8b-lora-h100-1g-tps")
    built = calibrate.build(case)
    row = calibrate.compare(built, CATALOG)
    assert built.request is not None
    fpt = plan(built.request, CATALOG, today=calibrate.PLAN_DATE).compute.model_flops_per_token
    assert row.baseline == pytest.approx(0.5 * 989e12 / fpt, rel=0.01)


TABLE = {"regimes": {
    "all": {"log_low": -0.2, "log_high": 0.3, "cases": 25, "coverage": 0.5},
    "full": {"log_low": 0.1, "log_high": 0.4, "cases": 6, "coverage": 0.7},  # every residual positive
    "hf_trainer · full · 1 node": {"log_low": -0.1, "log_high": 0.05, "cases": 5, "coverage": 0.8},
}}


def test_the_finest_regime_held_is_used_then_coarser_ones() -> None:
    t = TrainingSpec(method="full")
    tps, hours = bands.time_bands(t, 8, 1, 1000.0, 10.0, 0.0, TABLE)
    assert tps is not None and hours is not None
    assert tps.regime == "hf_trainer · full · 1 node" and tps.coverage == 0.8 and tps.cases == 5
    assert tps.low == pytest.approx(1000 * math.exp(-0.1)) and tps.high == pytest.approx(1000 * math.exp(0.05))
    assert bands.time_bands(t, 16, 2, 1000.0, 10.0, 0.0, TABLE)[0].regime == "full"  # type: ignore[union-attr]
    lora = bands.time_bands(TrainingSpec(method="lora"), 1, 1, 1000.0, 10.0, 0.0, TABLE)[0]
    assert lora is not None and lora.regime == "all"


def test_the_band_holds_the_point_even_when_every_residual_has_one_sign() -> None:
    tps, hours = bands.time_bands(TrainingSpec(method="full"), 16, 2, 1000.0, 10.0, 1.0, TABLE)
    assert tps is not None and hours is not None
    assert tps.low == pytest.approx(1000.0) and tps.high == pytest.approx(1000 * math.exp(0.4))
    # faster tokens/s → shorter hours; the 1 h start does not scale: 1 + 9 / e^0.4
    assert hours.low == pytest.approx(1 + 9 / math.exp(0.4)) and hours.high == pytest.approx(10.0)


def test_the_cost_band_scales_compute_only() -> None:
    _, hours = bands.time_bands(TrainingSpec(method="full"), 8, 1, 1000.0, 10.0, 0.0, TABLE)
    cost = bands.cost_band(hours, 10.0, compute_usd=900.0, total_usd=1000.0)
    assert cost is not None and hours is not None
    assert cost.low == pytest.approx(100 + 900 * hours.low / 10)
    assert cost.high == pytest.approx(100 + 900 * hours.high / 10)
    assert bands.cost_band(hours, 10.0, compute_usd=None, total_usd=None) is None


def test_a_plan_carries_all_three_bands_around_its_figures() -> None:
    result = plan(_request())
    tps, hours, cost = result.compute.tokens_per_second_range, result.time.hours_range, result.cost.total_usd_range
    assert tps is not None and hours is not None and cost is not None
    assert tps.low <= result.compute.tokens_per_second <= tps.high
    assert hours.low <= result.time.hours <= hours.high
    assert result.cost.total_usd is not None and cost.low <= result.cost.total_usd <= cost.high
    assert 0 < tps.coverage <= 1 and tps.regime


def test_the_shipped_bands_are_what_the_calibration_writes_today() -> None:
    """resources/calibration/bands.json must be regenerated (--write-bands) whenever the constants move."""
    shipped = bands.shipped_table()
    assert shipped is not None
    folds = shipped["provenance"]["folds"]
    # One fold per half-A source, each fitted without that source (refitting them is --write-bands' slow part;
    # planning each held-out case with its stored fold is what this checks is current).
    assert set(folds) == {calibrate.source_of(b.case) for b in calibrate.fit_cases()}
    rows = calibrate.evaluate(catalog=CATALOG)
    fresh = calibrate.bands_content(rows, calibrate.PLAN_DATE, folds, CATALOG)
    assert shipped["regimes"] == fresh["regimes"]
    assert shipped["provenance"]["efficiency"] == fresh["provenance"]["efficiency"]
    assert shipped["provenance"]["coverage_half_b"] == fresh["provenance"]["coverage_half_b"]
