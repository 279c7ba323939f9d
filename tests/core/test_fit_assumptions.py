"""A sharded full fine-tune states what decides whether it fits: the dtype its weights are held in
and the optimizer step's temporaries (core/planner/plan_assumptions.py: fit_assumptions).

Expected figures: PyTorch's multi-tensor AdamW (torch/optim/adamw.py, `_multi_tensor_adamw`)
computes `torch._foreach_sqrt(device_exp_avg_sqs)` for a whole parameter group, one fp32 state's
worth of the GPU's shard: trainable parameters × 4 B ÷ shards. DeepSpeed's fused Adam steps in
place.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.planner.plan import plan
from core.planner.request import PlanRequest


def _lines(**training: Any) -> dict[str, str]:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-70b"},
            "data": {"tokens": 1e7, "seq_len": 2048},
            "training": {
                "method": "full",
                "sharding": "fsdp",
                "gradient_checkpointing": True,
                **training,
            },
            "hardware": {"gpu": "A100-80GB-SXM", "gpus_per_node": 8, "nodes": 2},
        }
    )
    result = plan(request)
    return {a.name: a.value for a in result.assumptions}


def test_fsdp_mixed_precision_says_fp32_and_how_to_hold_half() -> None:
    lines = _lines()
    assert lines["weights held as"].startswith("fp32 parameters, gradients and states, sharded")
    assert "training.precision pure_bf16" in lines["weights held as"]
    params = 70.55e9  # Llama 3.1 70B (its config.json: 70.55B with the untied head)
    expected_gb = params * 4 / 16 / 1e9
    stated = float(lines["optimizer step temporaries"].split(" GB")[0])
    assert stated == pytest.approx(expected_gb, rel=0.01)


def test_a_model_held_in_bf16_and_an_in_place_step_say_so() -> None:
    assert _lines(precision="pure_bf16")["weights held as"].startswith("bf16 parameters")
    zero3 = _lines(sharding="zero3")
    assert zero3["optimizer step temporaries"].startswith("none: the step works in place")
