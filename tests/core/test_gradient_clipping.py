"""The clipping pass over the gradients before each optimizer step (core/planner/speed/kernels.py:
clipping_bytes_per_param).

Expected bytes by hand from torch.nn.utils.clip_grad_norm_ (torch/nn/utils/clip_grad.py), with G the
gradient's bytes: `torch._foreach_norm(grads)` reads each gradient once (G), and
`torch._foreach_mul_(grads, clip_coef_clamped)` reads and writes each (2G), clipped or not: 3G.
Pure bf16 (G = 2): 6 B a parameter, beside the fused AdamW step's 14 B (read and write the weight
and both states, read the gradient: 2·2 + 2 + 2·4).
"""

from __future__ import annotations

from typing import Any

import pytest

from core.planner.plan import plan
from core.planner.request import PlanRequest, Precision
from core.planner.speed import kernels


def _request(**training: Any) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.2-3b"},
            "data": {"tokens": 1e8, "seq_len": 512},
            "training": {
                "method": "full",
                "micro_batch_size": 2,
                "precision": "pure_bf16",
                "optimizer_kernel": "fused",
                **training,
            },
            "hardware": {"gpu": "L40S", "gpus_per_node": 1, "nodes": 1},
        }
    )


def test_clipping_reads_the_gradients_once_and_scales_them_in_place() -> None:
    assert kernels.clipping_bytes_per_param(Precision.pure_bf16) == 6.0


def test_a_clipped_step_moves_the_gradients_three_more_times() -> None:
    """Llama 3.2 3B on one L40S: the fused step's 14 B a parameter plus clipping's 6 B."""
    clipped = plan(_request())
    unclipped = plan(_request(gradient_clipping=False))
    ratio = (
        clipped.compute.step_breakdown_s.optimizer / unclipped.compute.step_breakdown_s.optimizer
    )
    assert ratio == pytest.approx(20 / 14)
    assert clipped.compute.step_time_s > unclipped.compute.step_time_s


def test_clipping_is_left_out_of_a_saved_request_unless_turned_off() -> None:
    assert "gradient_clipping" not in _request().model_dump(mode="json")["training"]
    kept = _request(gradient_clipping=False).model_dump(mode="json")
    assert kept["training"]["gradient_clipping"] is False
