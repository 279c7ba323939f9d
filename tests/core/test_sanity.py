"""The sanity layer: each rule fires on a plan built to trip it and stays quiet on one that does
not.

Prices are the shipped rows of resources/catalog/prices.json for the H100 SXM (read by hand, listed
in the comments); thresholds are the issue's: a quarter of the providers' median, 5% memory
headroom, 30 days, $10M, 90 days of price age.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.planner.analysis import analyse
from core.planner.plan import plan
from core.planner.report import build_report
from core.planner.request import PlanRequest
from core.planner.result import PlanResult

ROOT = Path(__file__).resolve().parents[2]
# every dated H100 row used below is under 90 days old on this day except Mithril's
TODAY = dt.date(2026, 11, 15)


def request(**parts: Any) -> PlanRequest:
    base: dict[str, Any] = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 2e8, "seq_len": 4096},
        "training": {"method": "lora"},
        "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
        "pricing": {"provider": "lambda"},
    }
    base.update(parts)
    return PlanRequest.model_validate(base)


def kinds(result: PlanResult) -> list[str]:
    return [w.kind for w in result.sanity]


def one(result: PlanResult, kind: str) -> str:
    found = [w.message for w in result.sanity if w.kind == kind]
    assert len(found) == 1, f"{kind}: {found}"
    return found[0]


# --------------------------------------------------------------------------- price outlier

# H100-SXM list prices per provider, on demand, the cheapest record of each (marketplace and
# serverless rows left out): AWS 6.88, Google Cloud 10.9791, Azure 12.29, Lambda 3.99 (8x; 1x is
# 4.29), CoreWeave 6.155, Nebius 4.50, RunPod 3.99 (Secure Cloud), Mithril 3.5825, Paperspace 5.95.
# Sorted: 3.5825, 3.99, 3.99, 4.50, 5.95, 6.155, 6.88, 10.9791, 12.29 -> the median of nine is the
# fifth, $5.95; a quarter of it is $1.4875.
H100_ON_DEMAND_MEDIAN = 5.95


@pytest.mark.parametrize("price", [0.10, 1.48])
def test_a_price_below_a_quarter_of_the_median_is_an_outlier(price):
    r = plan(
        request(
            hardware={"gpu": "H100-SXM", "gpus_per_node": 1}, pricing={"usd_per_gpu_hour": price}
        ),
        today=TODAY,
    )
    message = one(r, "price_outlier")
    assert (
        f"${price:.2f}/GPU-h" in message
        and f"${H100_ON_DEMAND_MEDIAN:.2f} median of 9 providers" in message
    )
    assert "outlier, check it" in message


@pytest.mark.parametrize("price", [1.49, 3.99])
def test_a_price_at_or_above_a_quarter_of_the_median_is_not(price):
    r = plan(
        request(
            hardware={"gpu": "H100-SXM", "gpus_per_node": 1}, pricing={"usd_per_gpu_hour": price}
        ),
        today=TODAY,
    )
    assert "price_outlier" not in kinds(r)


def test_spot_floor_is_compared_with_spot_prices():
    # H100-SXM spot: AWS 2.2036, Google Cloud 2.5056, CoreWeave 2.4638, Nebius 0.79 -> median of
    # four (2.2036 + 2.4638) / 2 = 2.3337; a quarter is 0.5834: Nebius's 0.79 is low but not an
    # outlier.
    r = plan(request(pricing={"provider": "nebius", "mode": "spot"}), today=TODAY)
    assert r.cost.usd_per_gpu_hour.spot == pytest.approx(0.79)
    assert "price_outlier" not in kinds(r)
    low = plan(
        request(pricing={"provider": "nebius", "mode": "spot", "usd_per_gpu_hour": 0.5}),
        today=TODAY,
    )
    assert "$2.33 median of 4 providers" in one(low, "price_outlier")


# --------------------------------------------------------------------------- rentable as planned


def test_a_node_larger_than_any_instance_cannot_be_rented():
    # Lambda rents H100-SXM as 1x and 8x instances: a 16-GPU node is no instance of theirs, so no
    # Lambda price can be used (the plan pays whole instances) and the check names the largest
    # instance there is
    r = plan(request(hardware={"gpu": "H100-SXM", "gpus_per_node": 16}), today=TODAY)
    message = one(r, "not_rentable")
    assert message == (
        "No on-demand offer for H100-SXM at Lambda has instances of 16 GPUs (the largest holds 8): "
        "it cannot be rented as planned; use at most 8 GPUs per node."
    )


def test_an_nvl72_rack_is_rented_as_the_trays_its_nvlink_fabric_joins():
    """GB200's NVLink fabric spans the 18 four-GPU trays of an NVL72 rack (NVIDIA's GB200 NVL72
    page), so CoreWeave's "GB200 NVL72 (4-GPU node)" rows (prices.json: $10.50 on demand) rent a
    72-GPU node as 18 of them: no not-rentable check, and 72 GPUs paid per node."""
    r = plan(
        request(hardware={"gpu": "GB200", "gpus_per_node": 72}, pricing={"provider": "coreweave"}),
        today=TODAY,
    )
    assert "not_rentable" not in kinds(r)
    assert r.cost.usd_per_gpu_hour.on_demand == pytest.approx(10.5)
    # a 70-GPU node pays for whole trays: 18 × 4 = 72 GPUs
    seventy = plan(
        request(hardware={"gpu": "GB200", "gpus_per_node": 70}, pricing={"provider": "coreweave"}),
        today=TODAY,
    )
    assert "pays for 72 GPUs per node" in str(seventy.cost.model_dump())


def test_a_node_an_instance_holds_is_rentable():
    for gpus in (1, 8):
        assert "not_rentable" not in kinds(
            plan(request(hardware={"gpu": "H100-SXM", "gpus_per_node": gpus}), today=TODAY)
        )


# --------------------------------------------------------------------------- memory headroom

# 5% of the H100's 80 GB (NVIDIA H100 datasheet) is 4.0 GB: a plan using more than 76.0 GB per GPU
# trips it.


def test_under_five_percent_headroom_is_flagged():
    r = plan(
        request(
            hardware={"gpu": "H100-SXM", "gpus_per_node": 1},
            training={"method": "lora", "micro_batch_size": 6, "global_batch_size": 64},
        ),
        today=TODAY,
    )
    assert r.memory.fits and r.memory.per_gpu.total > 76.0e9
    assert "under 5%" in one(r, "low_headroom")


def test_ample_headroom_is_quiet():
    r = plan(
        request(
            hardware={"gpu": "H100-SXM", "gpus_per_node": 1},
            training={"method": "lora", "micro_batch_size": 4, "global_batch_size": 64},
        ),
        today=TODAY,
    )
    assert r.memory.fits and r.memory.per_gpu.total < 76.0e9
    assert "low_headroom" not in kinds(r)


# --------------------------------------------------------------------------- long and costly runs


def test_a_run_over_thirty_days_is_flagged():
    # LoRA on Llama 3.1 8B: about 4 × 8.03e9 = 3.2e10 FLOPs per token (README: 4N + attention). 1e11
    # tokens on one H100 at its full 989 TFLOP/s dense bf16 take 3.2e21 / 9.89e14 = 3.2e6 s = 900 h:
    # past 720 h at any MFU.
    r = plan(
        request(hardware={"gpu": "H100-SXM", "gpus_per_node": 1}, data={"tokens": 1e11}),
        today=TODAY,
    )
    assert r.time.hours > 720
    assert "longer than 30 days" in one(r, "long_run")
    # 2e8 tokens: 6.4e18 / 9.89e14 = 6.5e3 s = 1.8 h at full peak; under 720 h at any MFU above
    # 0.25%.
    assert "long_run" not in kinds(
        plan(request(hardware={"gpu": "H100-SXM", "gpus_per_node": 1}), today=TODAY)
    )


def test_a_total_beyond_ten_million_is_flagged():
    # Full fine-tune of Llama 3.1 405B: 6 × 405e9 = 2.43e12 FLOPs per token. 2e12 tokens: 4.86e24
    # FLOPs, at the H100's full 989 TFLOP/s 4.91e9 GPU-s = 1.365e6 GPU-h; × $6.88 (AWS p5.48xlarge
    # per GPU) = $9.39M at 100% MFU, so beyond $10M at any MFU under 93%. 1e11 tokens: 6.83e4 GPU-h
    # = $0.47M at 100%; $10M would need an MFU under 4.7%.
    def big(tokens: float) -> PlanResult:
        return plan(
            request(
                model={"preset": "llama-3.1-405b"},
                data={"tokens": tokens},
                training={"method": "full", "sharding": "fsdp", "global_batch_size": 1024},
                hardware={"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 64},
                pricing={"provider": "aws"},
            ),
            today=TODAY,
        )

    huge = big(2e12)
    assert (
        huge.compute.mfu < 0.93 and huge.cost.total_usd is not None and huge.cost.total_usd > 10e6
    )
    assert "beyond $10M" in one(huge, "huge_cost")
    small = big(1e11)
    assert small.compute.mfu > 0.047
    assert "huge_cost" not in kinds(small)


# --------------------------------------------------------------------------- the cost range


def test_cost_range_names_the_modes_it_spans():
    # AWS H100 per GPU-hour: spot 2.2036 < reserved 4.23808 < on-demand 6.88 (spot adds redone work,
    # not 2x).
    r = plan(request(pricing={"provider": "aws"}), today=TODAY)
    assert "spans spot to on-demand, reserved between" in one(r, "cost_range")


def test_on_demand_only_names_who_has_spot_and_reserved():
    # Lambda lists H100-SXM on demand only. The cheapest spot offer that holds an 8-GPU node: AWS
    # 2.2036 (8), Google Cloud 2.5056 (8), CoreWeave 2.4638 (8), Nebius 0.79 (1 or 8) -> Nebius.
    # Reserved: SF Compute's 2.11 is sold by the GPU only (1), so CoreWeave's 2.462 (8) beats Nebius
    # 2.925, AWS 4.23808 and 4.9162.
    message = one(plan(request(), today=TODAY), "cost_range")
    assert (
        "on-demand only" in message
        and "no spot or reserved price for H100-SXM at Lambda" in message
    )
    assert "Nebius has spot H100-SXM at $0.79/GPU-h" in message
    assert "CoreWeave has reserved H100-SXM at $2.46/GPU-h" in message


def test_the_analysis_names_its_priced_alternative():
    # TensorWave rents the MI300X on demand only (per GPU: a 1-GPU node) and no provider lists an
    # MI300X spot price, so the option with spot is another GPU: the one the analysis's priced
    # alternatives found.
    a = analyse(request(hardware={"gpu": "MI300X", "gpus_per_node": 1}, pricing={}), today=TODAY)
    spot = next(o for o in a.figures.priced_alternatives if o.mode == "spot")
    message = one(a.result, "cost_range")
    assert "the cheapest option with spot is" in message and spot.hardware.gpu in message


# --------------------------------------------------------------------------- stale and undated
# prices


def test_a_price_is_stale_after_ninety_days():
    # Lambda's H100 rows were seen 2026-09-20; 90 days later is 2026-12-19 (10 + 31 + 30 + 19).
    assert "stale_price" not in kinds(plan(request(), today=dt.date(2026, 12, 19)))
    r = plan(request(), today=dt.date(2026, 12, 20))
    assert "seen 2026-09-20, 91 days ago" in one(r, "stale_price")
    assert not any("days old" in w for w in r.warnings)  # no longer a plain warning


def test_an_undated_price_is_marked():
    # Google Cloud's a3-highgpu-8g rows (on-demand 10.9791, spot 2.5056) carry no date in their
    # source.
    r = plan(request(pricing={"provider": "gcp"}), today=TODAY)
    undated = [w.message for w in r.sanity if w.kind == "undated_price"]
    assert undated == [
        "The Google Cloud on-demand and spot prices for H100-SXM have no date in their source: "
        "check before you rent."
    ]  # one sentence per provider
    assert not any("no date" in w for w in r.warnings)
    assert not {"undated_price", "stale_price"} & set(kinds(plan(request(), today=TODAY)))


def test_a_price_override_is_not_flagged_for_the_row_it_replaces():
    r = plan(
        request(pricing={"provider": "gcp", "mode": "on_demand", "usd_per_gpu_hour": 9.0}),
        today=TODAY,
    )
    assert [m for m in (w.message for w in r.sanity if w.kind == "undated_price")] == [
        "The Google Cloud spot price for H100-SXM has no date in its source: check before you rent."
    ]


# --------------------------------------------------------------------------- where they show


def test_the_text_output_json_and_report_carry_them(tmp_path):
    req = tmp_path / "req.json"
    req.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": 2e8},
                "training": {"method": "lora"},
                "hardware": {"gpu": "H100-SXM", "gpus_per_node": 16},
                "pricing": {"provider": "lambda"},
            }
        )
    )
    cmd = [sys.executable, "-m", "cli", "plan", str(req)]
    # no price overrides of the user's
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    text = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True, env=env).stdout
    assert "\nCheck:\n" in text and "cannot be rented as planned" in text
    out = json.loads(
        subprocess.run(
            [*cmd, "--json"], capture_output=True, text=True, cwd=ROOT, check=True, env=env
        ).stdout
    )
    assert "not_rentable" in [w["kind"] for w in out["sanity"]]
    a = analyse(request(), today=dt.date(2026, 12, 20))
    report = build_report(a, dt.date(2026, 12, 20))
    checks = next(s for s in report.sections if s.title == "Sanity checks")
    assert any("91 days ago" in str(b) for b in checks.blocks)
    cost = next(s for s in report.sections if s.title == "Cost")
    assert "2026-09-20 · stale (91 days)" in str(cost.blocks[0])
