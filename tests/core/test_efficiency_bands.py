"""The step model's efficiencies (efficiency.py, sustained.py) and the error band
(core/planner/speed/bands.py).

Expected figures here come from outside the code under test: the flat-MFU baseline from the catalog
peak and the definition of MFU, the band's ends from a hand-written table, the shipped bands.json
and efficiency.json from a fresh leave-one-source-out run of the calibration harness over the
published cases.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench import calibrate, calibrate_bands, calibrate_fit
from core.catalog import load_catalog
from core.planner.plan import plan
from core.planner.request import Framework, Method, PlanRequest, Precision, TrainingSpec
from core.planner.speed import bands, efficiency, gpu_rates, kernels, sustained

CATALOG = load_catalog()


def _request(**training: Any) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 1e8, "seq_len": 2048},
            "training": {"method": "lora", **training},
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 1},
        }
    )


def test_every_constant_sits_within_its_bounds_and_names_a_source() -> None:
    for c, value in efficiency.constants():
        assert c.low <= c.prior <= c.high, c.name
        assert c.low <= value <= c.high, f"{c.name} = {value} outside {c.low}–{c.high}"
        assert len(c.source) > 20


def test_a_small_gemm_runs_slower_per_flop_than_a_large_one() -> None:
    """Same FLOPs, one dimension 64 instead of 4096: it must take longer on the compute side (tile
    fill)."""
    peak, hbm = 800e12, 1e20  # HBM made infinite so only the compute side counts
    big = kernels.gemm_seconds(4096, 4096, 4096, peak, hbm)
    small = kernels.gemm_seconds(4096 * 64, 64, 4096, peak, hbm)  # 2·m·n·k equal
    assert small > big * 1.5
    # a large GEMM runs near the rate it is given
    assert big == pytest.approx(2 * 4096**3 / peak, rel=0.05)


def test_the_sustained_factor_lowers_the_matmul_efficiency_a_plan_states(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """H100 MAMF is 80.3% (catalog, stas00's table); the plan's line is that × the Hopper factor."""
    monkeypatch.setattr(efficiency, "GEMM_SUSTAINED_HOPPER", 0.9)
    result = plan(_request())
    line = next(a for a in result.assumptions if a.name == "matmul efficiency")
    assert line.value == f"{0.803 * 0.9:.1%} of peak"
    slow = plan(_request()).compute.tokens_per_second
    monkeypatch.setattr(efficiency, "GEMM_SUSTAINED_HOPPER", efficiency.GEMM_SUSTAINED_HOPPER / 2)
    assert plan(_request()).compute.tokens_per_second < slow * 0.8


def test_an_ada_card_is_slowed_by_its_power_cap_only_when_its_watts_are_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Datasheets: L4 72 W for 121 dense BF16 TFLOP/s, RTX 4090 450 W for 165, L40S 350 W for 362.
    Under one watts-per-TFLOP/s constant the L4 (0.6 W per TFLOP/s) runs below its nameplate clock
    and the 4090 (2.7) at it; the 4090's GEMMs then run at their measured rate, the L4's below its
    own, and the L4's attention too. Measured torch.mm rates (zzc0721/torch-performance-test-data
    issues #78 and #120, the best size that runs for seconds): RTX 4090 160.17 of 165.2 TFLOP/s, L4
    59.40 of 121."""
    l4 = gpu_rates.rates(CATALOG.gpu("L4"), Precision.amp_bf16)
    rtx = gpu_rates.rates(CATALOG.gpu("RTX-4090"), Precision.amp_bf16)
    assert rtx.matmul_efficiency == pytest.approx(160.17 / 165.2, abs=5e-4)
    # the prior holds 121 at 72 W: no more
    assert l4.matmul_efficiency == pytest.approx(59.40 / 121, abs=5e-4)
    monkeypatch.setattr(efficiency, "ADA_TFLOPS_PER_WATT", 1.0)
    l4 = gpu_rates.rates(CATALOG.gpu("L4"), Precision.amp_bf16)
    assert l4.matmul_efficiency == pytest.approx(59.40 / 121 * 72 * 1.0 / 121, abs=5e-4)
    assert (
        l4.matmul_efficiency < rtx.matmul_efficiency
        and l4.attention_efficiency < rtx.attention_efficiency
    )
    assert "the clock its 72 W cap allows" in l4.matmul_source and "allows" not in rtx.matmul_source
    # The family factor of Hopper and Ampere is untouched by watts: an H100 PCIe (350 W) is not
    # throttled here.
    assert efficiency.power_clock("Hopper", 350, 756.5) == 1.0


def test_ada_attention_runs_at_the_4090_flash_rate_held_at_each_card_s_matmul_rate() -> None:
    """FlashAttention-2 on an RTX 4090, causal, head dim 128 (apache/tvm tl_doc/flash_perf.md):
    151.19 TFLOP/s forward, 99.23 backward, the backward 2.5× the forward's FLOPs (FlashAttention-2
    §4.1). The L4 sustains 59.40 of 121 TFLOP/s in matmuls (issue #120), below that: its attention
    is held at its own matmul rate."""
    rtx = gpu_rates.rates(CATALOG.gpu("RTX-4090"), Precision.amp_bf16)
    l4 = gpu_rates.rates(CATALOG.gpu("L4"), Precision.amp_bf16)
    assert rtx.attention_efficiency == pytest.approx(
        3.5 / (1 / 151.19 + 2.5 / 99.23) / 165.2, rel=1e-6
    )
    assert 0.66 < rtx.attention_efficiency < 0.67
    assert l4.attention_efficiency == pytest.approx(59.40 / 121, abs=5e-4)
    assert "held at this card's matmul rate" in l4.attention_source
    assert "held" not in rtx.attention_source
    h100 = gpu_rates.rates(CATALOG.gpu("H100-SXM"), Precision.amp_bf16)
    # below its 80.3% MAMF: unchanged
    assert h100.attention_efficiency == pytest.approx(335 / 989.5, rel=1e-6)


def test_the_hf_layer_overhead_reaches_hf_stacks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    hf = plan(_request()).compute.step_time_s
    titan = plan(_request(framework="torchtitan", sharding="none")).compute.step_time_s
    monkeypatch.setattr(efficiency, "HF_LAYER_OVERHEAD_S", efficiency.HF_LAYER_OVERHEAD_S + 1e-3)
    # llama-3.1-8b has 32 layers: 1 ms more per layer per micro-batch pass adds ≥ 32 ms ×
    # micro-batches
    assert plan(_request()).compute.step_time_s > hf + 0.032
    assert plan(
        _request(framework="torchtitan", sharding="none")
    ).compute.step_time_s == pytest.approx(titan)


def test_the_flat_baseline_is_half_the_peak_over_the_model_flops() -> None:
    """tokens/s/GPU at 50% MFU = 0.5 × 989 TFLOP/s (H100 dense BF16, the catalog's datasheet peak) ÷
    FLOPs/token."""
    case = next(
        c for c in calibrate.load_cases() if c["id"] == "automodel-llama3.1-8b-lora-h100-1g-tps"
    )
    built = calibrate.build(case)
    row = calibrate.compare(built, CATALOG)
    assert row.baseline is not None
    assert built.request is not None
    fpt = plan(built.request, CATALOG, today=calibrate.PLAN_DATE).compute.model_flops_per_token
    assert row.baseline == pytest.approx(0.5 * 989e12 / fpt, rel=0.01)


TABLE = {
    "regimes": {
        "all": {
            "log_low": -0.2,
            "log_high": 0.3,
            "cases": 25,
            "sources": 9,
            "coverage": 0.5,
            "coverage_sources": 9,
        },
        # every residual positive
        "full": {
            "log_low": 0.1,
            "log_high": 0.4,
            "cases": 6,
            "sources": 4,
            "coverage": 0.7,
            "coverage_sources": 4,
        },
        "hf_trainer · full · 1 node": {
            "log_low": -0.1,
            "log_high": 0.05,
            "cases": 5,
            "sources": 3,
            "coverage": 0.8,
            "coverage_sources": 3,
        },
    }
}


def test_the_finest_regime_held_is_used_then_coarser_ones() -> None:
    t = TrainingSpec(method="full")
    tps, hours = bands.time_bands(t, 8, 1, 1000.0, 10.0, 0.0, TABLE)
    assert tps is not None and hours is not None
    assert tps.regime == "hf_trainer · full · 1 node" and tps.coverage == 0.8 and tps.cases == 5
    assert tps.sources == 3
    assert tps.low == pytest.approx(1000 * math.exp(-0.1)) and tps.high == pytest.approx(
        1000 * math.exp(0.05)
    )
    # A finer regime without a band of its own takes the coarser one, widened by WIDEN, and says so.
    multi = bands.time_bands(t, 16, 2, 1000.0, 10.0, 0.0, TABLE)[0]
    assert multi is not None and multi.regime.startswith(
        "full (widened: hf_trainer · full · multi-node has fewer"
    )
    assert multi.high == pytest.approx(1000 * math.exp(0.4 * bands.WIDEN)) and multi.sources == 4
    lora = bands.time_bands(TrainingSpec(method="lora"), 1, 1, 1000.0, 10.0, 0.0, TABLE)[0]
    assert lora is not None and lora.regime.startswith("all (widened")


def test_the_band_holds_the_point_even_when_every_residual_has_one_sign() -> None:
    table = {
        "regimes": {**TABLE["regimes"], "hf_trainer · full · multi-node": TABLE["regimes"]["full"]}
    }
    tps, hours = bands.time_bands(TrainingSpec(method="full"), 16, 2, 1000.0, 10.0, 1.0, table)
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
    tps, hours, cost = (
        result.compute.tokens_per_second_range,
        result.time.hours_range,
        result.cost.total_usd_range,
    )
    assert tps is not None and hours is not None and cost is not None
    assert tps.low <= result.compute.tokens_per_second <= tps.high
    assert hours.low <= result.time.hours <= hours.high
    assert result.cost.total_usd is not None and cost.low <= result.cost.total_usd <= cost.high
    assert 0 < tps.coverage <= 1 and tps.regime and tps.sources >= bands.MIN_SOURCES


def test_the_shipped_bands_and_efficiencies_are_what_the_calibration_writes_today() -> None:
    """resources/calibration/{bands,efficiency}.json must be rewritten (--write-bands) whenever the
    model moves."""
    shipped = bands.shipped_table()
    assert shipped is not None
    ev = calibrate.evaluate(catalog=CATALOG, comparators=False)
    fresh = calibrate.bands_content(ev, calibrate.PLAN_DATE)
    assert shipped["regimes"] == fresh["regimes"]
    assert (
        shipped["provenance"]["coverage_out_of_source"]
        == fresh["provenance"]["coverage_out_of_source"]
    )
    efficiency_file = sustained.shipped_table()
    assert efficiency_file is not None and efficiency_file["groups"] == ev.shipped["groups"]


def test_every_stated_coverage_was_measured_out_of_source_on_at_least_three_sources() -> None:
    shipped = bands.shipped_table()
    assert shipped is not None
    for key, entry in shipped["regimes"].items():
        assert (
            entry["sources"] >= bands.MIN_SOURCES and entry["coverage_sources"] >= bands.MIN_SOURCES
        ), key


def test_coverage_checks_each_source_against_bands_built_without_it() -> None:
    """Three sources with residuals 0.0, 0.1 and 1.0: with one left out, the other two set the band,
    so the far source falls outside it; in-sample it would have been inside its own band."""
    rows = [
        calibrate_fit.Residual(f"r{i}", f"s{i}", ("x", "all"), r)
        for i, r in enumerate((0.0, 0.1, 1.0))
    ]
    hits = calibrate_bands.coverage(rows)
    assert hits["r2"] is False and hits["r0"] is True
    in_sample = calibrate_bands.band_table(rows)
    assert (
        calibrate_bands.inside(rows[2], in_sample) is False
        or in_sample["regimes"]["all"]["log_high"] >= 0.9
    )


def test_blackwell_is_a_family_of_its_own_with_hoppers_gemm_prior() -> None:
    """Its runs (MLPerf B200/GB200, the RTX PRO 6000) fit Blackwell's groups, not Hopper's; a stack
    with none of its own falls back to the family's, then to all."""
    assert efficiency.family("Blackwell") == "blackwell"
    assert efficiency.family("Hopper") == "hopper"
    assert efficiency.gemm_sustained("Blackwell") == efficiency.gemm_sustained("Hopper")
    assert sustained.group_keys(Framework.hf_trainer, Method.lora, "Blackwell") == [
        "hf_trainer · adapter · blackwell",
        "hf_trainer · blackwell",
        "blackwell",
        sustained.ALL,
    ]


def test_the_sustained_factor_multiplies_the_step_speed() -> None:
    """A table saying hf_trainer LoRA on Hopper keeps half its modelled speed halves the plan's
    tokens/s."""
    base = plan(_request()).compute.tokens_per_second
    halved = {"log_factor": math.log(0.5), "runs": 2, "sources": 2}
    with calibrate_fit.table_in_place(
        {
            "groups": {
                "hf_trainer · adapter · hopper": halved,
                "all": {"log_factor": 0.0, "runs": 2, "sources": 2},
            }
        }
    ):
        half = plan(_request()).compute.tokens_per_second
        titan = sustained.factor(Framework.torchtitan, Method.lora, "Hopper")
    with calibrate_fit.table_in_place(calibrate_fit.PRIOR_TABLE):
        prior = plan(_request()).compute.tokens_per_second
    assert half == pytest.approx(prior * 0.5, rel=1e-6) and titan == 1.0
    assert base > 0


def test_the_bands_keep_their_word_out_of_source() -> None:
    """Measured 2026-12-07, each source checked against bands built without it: 79% of 130 runs
    inside at a median width of ×1.617 (docs/formulas.md, Error band). It was ×1.582 over 85 runs,
    ×1.604 over 102 with the fms-acceleration runs, ×1.813 once BLOOM's two ramp-up runs came in
    planned 64-83% too fast; planned with the fp32 gradients their optimizer all-reduces after the
    pipeline's last backward, over the Omni-Path the BLOOM paper states, they land within 1% (×1.604
    over 105, 85% covered). Six more sources took it to ×1.726 over 130 at 80% covered; Blackwell
    as a GPU family of its own (docs/formulas.md, "Sustained efficiency per framework") to ×1.617 at
    79%: Juniper's one-node Llama 2 70B LoRA run (MLPerf v4.0), planned 40% too fast with Hopper's
    groups refitted without the RTX PRO 6000 runs, widened `hf_trainer · adapter · 1 node`, and the
    median run now sits in `torchtitan · full · 1 node`. Five more sources, NCCL's own per-call
    latencies, GB200 runs on their NVL72 NVLink domains and the sources' gradient buckets (test
    _throughput_calibration's regress guard) took it to 82% of 179 runs from 31 sources at ×1.603;
    MLPerf v3.0 and v3.1's GPT-3 175B runs (NVIDIA's software 9% faster per GPU between the two
    rounds on the same 512 H100s) to 80% of 188 from 33 at ×1.654, the median run in `megatron ·
    full · multi-node`. On 2026-12-08 the reduction's wider window under an interleaved pipeline
    (MLPerf v3.1's GPT-3 175B no longer planned slower with scale) and Megatron's fused softmax in
    its eager attention took it to 81% at ×1.597: both goals (≥ 80% covered, median ≤ ×1.6)."""
    shipped = bands.shipped_table()
    assert shipped is not None
    prov = shipped["provenance"]
    assert prov["coverage_out_of_source"] >= 0.80
    assert prov["median_width"] <= 1.6
