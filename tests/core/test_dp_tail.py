"""Data-parallel traffic no compute can hide (core/planner/speed/comms.py: data_parallel_tail).

Expected figures by hand: Llama 2 7B's 6.74B parameters in bf16 are 13.5 GB; 32 A100s in 4 nodes
all-gather them over 8 rails of 200 Gbit/s HDR each, ×0.96 (nccl-tests, PROBES.md §2.1): 192 GB/s
bus bandwidth; an all-gather moves (n − 1)/n of the bytes: 31/32 × 13.5 GB ÷ 192 GB/s ≈ 68 ms.
"""

from __future__ import annotations

import pytest

from bench import calibrate_fit
from core.planner.plan import plan
from core.planner.request import PlanRequest


def _exposed(framework: str, nodes: int = 4) -> float:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-2-7b"},
            "data": {"tokens": 1e10, "seq_len": 2048},
            "training": {
                "method": "full",
                "framework": framework,
                "sharding": "zero1",
                "micro_batch_size": 4,
                "global_batch_size": 32 * nodes,
                "gradient_checkpointing": True,
            },
            "hardware": {
                "gpu": "A100-80GB-SXM",
                "gpus_per_node": 8,
                "nodes": nodes,
                "interconnect": "infiniband",
            },
        }
    )
    return plan(request).compute.step_breakdown_s.exposed_comm


def test_zero1_pays_its_post_step_parameter_gather_unless_the_stack_overlaps_it() -> None:
    """At the kernel model's own speed (every framework's sustained efficiency at 1, which would
    scale both). Their last gradient buckets differ too, and nothing hides either: DeepSpeed's
    reduce_bucket_size of 5e8 bf16 elements (1 GB) against Megatron-Core's 40M fp32 parameters (160
    MB), all-reduced, 2 × 31/32 × (1e9 − 160e6) ÷ 192 GB/s ≈ 8.5 ms."""
    busbw = 8 * 200e9 / 8 * 0.96
    params_bytes = 6.74e9 * 2
    gather = 31 / 32 * params_bytes / busbw
    last_buckets = 2 * 31 / 32 * (5e8 * 2 - 40e6 * 4) / busbw
    with calibrate_fit.table_in_place(calibrate_fit.PRIOR_TABLE):
        deepspeed, megatron = _exposed("deepspeed"), _exposed("megatron")
    assert deepspeed - megatron == pytest.approx(gather + last_buckets, rel=0.05)


def test_the_gather_grows_towards_its_full_size_with_the_replicas() -> None:
    assert (
        _exposed("deepspeed", nodes=1)
        < _exposed("deepspeed", nodes=4)
        <= _exposed("deepspeed", nodes=64)
    )
