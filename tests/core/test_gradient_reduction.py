"""What the data-parallel wire carries per step (core/planner/speed/comms.py: gradient_bytes,
step_comm_bytes).

Expected ratios by hand from the byte counts, not from the code: Llama 2 7B has 6.74B parameters.
- ZeRO-1 reduce-scatters the gradients and all-gathers the stepped parameters, half an all-reduce
  each. In 16-bit both halves move 2 B a parameter: one all-reduce of 2 B. Megatron reduces its
  gradients in fp32 (megatron/training/arguments.py: "bfloat16 requires gradient accumulation and
  all-reduce to be done in fp32"; NeMo's and Megatron-Bridge's recipes set grad_reduce_in_fp32): ½·4
  + ½·2 = 3 B, 1.5 × DeepSpeed's ZeRO-1 in bf16.
- DeepSpeed's BF16_Optimizer all-reduces the whole fp32 gradient, then all-gathers the bf16
  parameters (DeepSpeed runtime/pipe/engine.py, _bf16_reduce_grads): 4 + ½·2 = 5 B, 5/3 × Megatron's
  distributed optimizer.
- PyTorch DDP under autocast keeps fp32 parameters, so it all-reduces fp32 gradients: 2 × the bytes
  of a model cast to bf16.
The tests compare the per-step payload each layout puts on the wire (all-reduce-equivalent bytes;
the plan's collective time is that over the bus bandwidth, plus per-call latency).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.planner.speed import comms
from core.validation import validation_message


def _request(**training: Any) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-2-7b"},
            "data": {"tokens": 1e9, "seq_len": 2048},
            "training": {
                "method": "full",
                "micro_batch_size": 1,
                "global_batch_size": 64,
                "gradient_checkpointing": True,
                **training,
            },
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
        }
    )


def _payload(**training: Any) -> float:
    """All-reduce-equivalent bytes per GPU per step for Llama 2 7B's 6.74B parameters."""
    t = _request(**training).training
    params = 6.74e9
    return float(
        comms.step_comm_bytes(
            t.sharding,
            params * comms.gradient_bytes(t),
            params * 2,
            accumulation=8,
            stepped_param_bytes=params * 2,
            gradients_all_reduced=bool(t.gradients_all_reduced),
        )
    )


def test_megatron_moves_half_as_much_again_as_deepspeed_because_its_gradients_travel_in_fp32() -> (
    None
):
    deepspeed = _payload(framework="deepspeed", sharding="zero1", precision="amp_bf16")
    megatron = _payload(framework="megatron", sharding="zero1", precision="amp_bf16")
    assert deepspeed == pytest.approx(6.74e9 * 2)
    assert megatron / deepspeed == pytest.approx(1.5)


def test_bf16_optimizers_whole_gradient_all_reduce_moves_five_thirds_of_a_reduce_scatter() -> None:
    scattered = _payload(framework="megatron", sharding="zero1", precision="amp_bf16")
    all_reduced = _payload(
        framework="megatron", sharding="zero1", precision="amp_bf16", gradients_all_reduced=True
    )
    assert all_reduced / scattered == pytest.approx(5 / 3)


def test_ddp_under_autocast_all_reduces_fp32_gradients() -> None:
    autocast = _payload(framework="hf_trainer", sharding="none", precision="amp_bf16")
    cast = _payload(framework="hf_trainer", sharding="none", precision="pure_bf16")
    assert autocast / cast == pytest.approx(2.0)


def test_the_plan_of_a_stack_that_reduces_in_fp32_spends_longer_on_the_wire() -> None:
    def comm_s(framework: str) -> float:
        request = _request(framework=framework, sharding="zero1", precision="amp_bf16")
        return plan(request).compute.comm_time_s

    assert comm_s("megatron") > comm_s("deepspeed")


def test_the_whole_gradient_all_reduce_is_refused_where_there_is_no_sharded_optimizer() -> None:
    with pytest.raises(ValidationError) as caught:
        _request(sharding="fsdp", gradients_all_reduced=True)
    assert validation_message(caught.value) == (
        "training.gradients_all_reduced needs sharding zero1 or zero2: DDP always all-reduces and "
        "ZeRO-3, FSDP and HSDP reduce-scatter (sharding is fsdp)"
    )


def test_a_request_that_leaves_it_out_saves_without_it() -> None:
    assert "gradients_all_reduced" not in _request().model_dump(mode="json")["training"]
    kept = _request(sharding="zero1", gradients_all_reduced=True).model_dump(mode="json")
    assert kept["training"]["gradients_all_reduced"] is True
