"""What one data-parallel collective costs beyond its bytes, and the domain a GB200 rack is
(core/planner/speed/comms.py: latency_seconds, bucket_bytes).

Expected figures by hand from NCCL's own cost model for the Simple protocol (NVIDIA/nccl
src/graph/tuning.cc, ncclTunerConstantsDefaults: base 8.4 µs, a ring step 3.4 µs over NVLink) and
NVIDIA's GB200 NVL72 page (72 GPUs on one NVLink switch fabric).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from core.planner.plan import plan
from core.planner.request import Framework, PlanRequest
from core.planner.speed import comms
from core.validation import validation_message


def _request(**training: Any) -> PlanRequest:
    """Llama 3.1 8B pre-training on one GB200 NVL72 rack, Megatron with its distributed optimizer:
    MLPerf Training v5.1's llama31_8b layout (CP 2, global batch 36)."""
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 1e9, "seq_len": 8192},
            "training": {
                "method": "full",
                "framework": "megatron",
                "precision": "fp8",
                "sharding": "zero1",
                "gradient_checkpointing": False,
                "micro_batch_size": 1,
                "global_batch_size": 36,
                "context_parallel": 2,
                **training,
            },
            "hardware": {"gpu": "GB200", "gpus_per_node": 72, "nodes": 1},
        }
    )


def test_an_nvl72_rack_is_one_nvlink_domain_of_72() -> None:
    hardware = _request().hardware
    assert hardware is not None and hardware.gpus_per_node == 72
    with pytest.raises(ValidationError) as caught:
        PlanRequest.model_validate(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": 1e9},
                "hardware": {"gpu": "GB200", "gpus_per_node": 73},
            }
        )
    assert validation_message(caught.value) == (
        "hardware.gpus_per_node: 73 is out of range: use 1 to 72"
    )


def test_a_call_across_72_nvlink_gpus_pays_142_ring_steps() -> None:
    assert comms.latency_seconds(72, 1) == pytest.approx(8.4e-6 + 142 * 3.4e-6)


def test_a_stated_bucket_replaces_the_stacks_default() -> None:
    # Megatron's default: max(40M, 1M × 36 replicas) = 40M parameters of 4-byte gradients
    assert comms.bucket_bytes(Framework.megatron, 4.0, 36) == pytest.approx(160e6)
    assert comms.bucket_bytes(Framework.megatron, 4.0, 36, 768_000_000) == pytest.approx(3.072e9)


def test_fewer_larger_buckets_pay_the_latency_fewer_times() -> None:
    """8.03e9 parameters' fp32 gradients (32.1 GB) in 160 MB buckets are 201 calls of each of
    ZeRO-1's two collectives, in 3.07 GB buckets 11. Context-parallel pairs leave 36 GPUs in the
    data-parallel group: 8.4 + 2·35 × 3.4 = 246.4 µs a call, so the step's data-parallel time falls
    by (201 − 11) × 2 × 246.4 µs = 93.6 ms."""
    default = plan(_request()).compute
    large = plan(_request(gradient_bucket_elements=768_000_000)).compute
    saved = default.comm_time_s - large.comm_time_s
    assert saved == pytest.approx(190 * 2 * 246.4e-6, rel=0.01)
    assert large.step_time_s < default.step_time_s


def test_gradients_reduced_in_bf16_move_half_the_bytes_of_fp32() -> None:
    """Megatron reduces in fp32 unless told otherwise (--grad-reduce-in-bf16; MLPerf's NeMo
    configs sync in bf16): with the bucket fixed, ZeRO-1's reduce-scatter carries 2 bytes a
    gradient instead of 4, and the parameter all-gather stays as it was."""
    bucket = {"gradient_bucket_elements": 768_000_000}
    fp32 = plan(_request(**bucket)).compute
    bf16 = plan(_request(gradient_reduce_dtype="bf16", **bucket)).compute
    assert bf16.comm_time_s < fp32.comm_time_s
    assert "gradient_reduce_dtype" not in _request().model_dump(mode="json")["training"]
