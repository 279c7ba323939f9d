"""Which AdamW kernel a plan steps with, and what each costs (core/planner/model/states.py:
adamw_kernel, core/planner/speed/kernels.py: optimizer_bytes_per_param).

Expected byte counts by hand from PyTorch's multi-tensor AdamW (torch/optim/adam.py,
_multi_tensor_adam), one pass per operation over every weight it steps, with W the stepped weight's
bytes, s one state's, G the gradient's:
  _foreach_mul_(params, 1 - lr*wd)                 read W, write W         2W
  _foreach_lerp_(exp_avgs, grads, 1 - beta1)       read s + G, write s     2s + G
  _foreach_mul_(exp_avg_sqs, beta2)                read s, write s         2s
  _foreach_addcmul_(exp_avg_sqs, grads, grads)     read s + G, write s     2s + G
  _foreach_sqrt(exp_avg_sqs) into a new list       read s, write s         2s
  _foreach_div_ / _foreach_add_ on that list       2s each                 4s
  _foreach_addcdiv_(params, exp_avgs, denom)       read W + 2s, write W    2W + 2s
  total 4W + 12s + 2G: pure bf16 (W = s = G = 2) 36 B; mixed precision (fp32 master and states,
  16-bit gradient, the 16-bit copy written back: + 2) 16 + 48 + 4 + 2 = 70 B.
A fused kernel reads and writes each once: 14 B and 28 B.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from core.planner.model.states import adamw_kernel
from core.planner.plan import plan
from core.planner.request import Optimizer, OptimizerKernel, PlanRequest, Precision
from core.planner.speed import kernels
from core.validation import validation_message


def _request(**training: Any) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.2-3b"},
            "data": {"tokens": 1e8, "seq_len": 512},
            "training": {"method": "full", "micro_batch_size": 2, **training},
            "hardware": {"gpu": "L40S", "gpus_per_node": 1, "nodes": 1},
        }
    )


@pytest.mark.parametrize(
    ("precision", "fused", "foreach"),
    [(Precision.pure_bf16, 14.0, 36.0), (Precision.amp_bf16, 28.0, 70.0)],
)
def test_the_multi_tensor_path_moves_a_pass_per_operation(
    precision: Precision, fused: float, foreach: float
) -> None:
    assert kernels.optimizer_bytes_per_param(Optimizer.adamw, precision) == fused
    assert kernels.optimizer_bytes_per_param(Optimizer.adamw, precision, foreach=True) == foreach


def test_only_adamw_has_the_two_paths() -> None:
    """bitsandbytes' 8-bit Adam is one kernel whatever is asked."""
    eight_bit = kernels.optimizer_bytes_per_param(Optimizer.adamw_8bit, Precision.amp_bf16)
    assert (
        kernels.optimizer_bytes_per_param(Optimizer.adamw_8bit, Precision.amp_bf16, foreach=True)
        == eight_bit
    )


@pytest.mark.parametrize(
    ("training", "kernel"),
    [
        ({}, OptimizerKernel.foreach),  # torch.optim.AdamW as built by default
        ({"sharding": "zero3"}, OptimizerKernel.fused),  # DeepSpeed's FusedAdam
        ({"framework": "megatron"}, OptimizerKernel.fused),
        ({"framework": "torchtitan", "sharding": "none"}, OptimizerKernel.fused),
        ({"framework": "deepspeed"}, OptimizerKernel.fused),
        ({"optimizer_kernel": "fused"}, OptimizerKernel.fused),
        ({"framework": "megatron", "optimizer_kernel": "foreach"}, OptimizerKernel.foreach),
        ({"optimizer": "adamw_8bit"}, None),
    ],
)
def test_the_kernel_is_the_requests_else_the_stacks(
    training: dict[str, Any], kernel: OptimizerKernel | None
) -> None:
    assert adamw_kernel(_request(**training).training) is kernel


def test_a_foreach_step_takes_the_extra_passes_at_the_gpus_memory_bandwidth() -> None:
    """Llama 3.2 3B (3,212,749,824 parameters, its tied head counted once) in pure bf16 on one
    L40S (864 GB/s GDDR6, NVIDIA's L40S datasheet): 22 B more a parameter, 70.7 GB, at the
    planner's achieved share of that bandwidth."""
    unclipped = {"precision": "pure_bf16", "gradient_clipping": False}
    fused = plan(_request(optimizer_kernel="fused", **unclipped))
    foreach = plan(_request(optimizer_kernel="foreach", **unclipped))
    ratio = foreach.compute.step_breakdown_s.optimizer / fused.compute.step_breakdown_s.optimizer
    assert ratio == pytest.approx(36 / 14)
    assert foreach.compute.step_time_s > fused.compute.step_time_s
    extra = foreach.compute.step_time_s - fused.compute.step_time_s
    assert extra > 3_212_749_824 * 22 / 864e9


def test_only_the_foreach_path_holds_a_sqrt_v_temporary() -> None:
    def temporaries(kernel: str) -> str:
        result = plan(_request(precision="pure_bf16", optimizer_kernel=kernel))
        return next(a.value for a in result.assumptions if a.name == "optimizer step temporaries")

    assert temporaries("foreach").startswith("6.43 GB per GPU")  # 3.2127e9 parameters × 2 B
    assert temporaries("fused").startswith("none")


def test_a_kernel_for_another_optimizer_is_refused_in_one_sentence() -> None:
    with pytest.raises(ValidationError) as caught:
        _request(optimizer="adamw_8bit", optimizer_kernel="fused")
    assert validation_message(caught.value) == (
        "training.optimizer_kernel applies to optimizer adamw only (optimizer is adamw_8bit)"
    )


def test_a_request_that_leaves_it_out_saves_without_it() -> None:
    assert "optimizer_kernel" not in _request().model_dump(mode="json")["training"]
    kept = _request(optimizer_kernel="foreach").model_dump(mode="json")
    assert kept["training"]["optimizer_kernel"] == "foreach"
