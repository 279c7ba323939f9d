"""Memory of sharded full fine-tunes: torchtitan's per-op selective checkpointing, its compiled
loss, FSDP's gradients (not yet allocated at the activation peak) and state sharding over
context-parallel ranks.

Expected figures are hand arithmetic from Llama 3.1 8B's config.json shapes (h 4,096, F 14,336, 32
layers, 32 heads, 8 KV heads × 128, vocabulary 128,256, 8,030,261,248 parameters) and the
frameworks' documented behaviour, written out below, or a published measurement with its source;
none is produced by the code under test.
"""

from __future__ import annotations

import pytest

from core.catalog import load_catalog
from core.planner.model import activations, memory, savers, states
from core.planner.model.params import Architecture
from core.planner.plan import plan
from core.planner.request import PlanRequest, TrainingSpec
from core.planner.speed.frameworks import effective_training

CATALOG = load_catalog()
LLAMA31_8B = Architecture.from_hf_config(CATALOG.model("llama-3.1-8b").config)
GIB = 2**30
H, F, KV, HEADS, LAYERS, V = 4096, 14336, 1024, 32, 32, 128_256
PARAMS = 8_030_261_248


def _torchtitan(**overrides: object) -> TrainingSpec:
    """torchtitan's llama3_8b.toml: FSDP2, bf16 compute with fp32 sharded parameters, AdamW,
    selective 'op' AC."""
    return effective_training(
        TrainingSpec.model_validate(
            {
                "method": "full",
                "precision": "amp_bf16",
                "framework": "torchtitan",
                "micro_batch_size": 2,
                **overrides,
            }
        )
    )


def test_op_sac_keeps_every_other_matmul_output_the_attention_output_and_the_block_input() -> None:
    """torchtitan `_save_list` (aten.mm, SDPA flash/efficient) "except every second mm", counted per
    block.

    Llama's matmuls in call order: wq (h), wk (kv), wv (kv), wo (h), w1 (F), w3 (F), w2 (h): the
    1st, 3rd, 5th and 7th are kept: q 4,096 + v 1,024 + w1 14,336 + w2 4,096. The flash-attention
    output (4,096) and its fp32 log-sum-exp (32 heads × 4 B = 64 two-byte elements), and the block's
    input (4,096) for the recomputation.
    """
    rest, split, kv = savers.op_sac_parts(LLAMA31_8B, _torchtitan())
    assert rest + split + kv == 4096 + 1024 + 14336 + 4096 + (4096 + 64) + 4096 == 31_808
    assert kv == 1024  # the v projection's output, the only key/value-width tensor kept


def test_torchtitan_selective_activations_are_the_op_policy_not_the_attention_core() -> None:
    """2 × 8,192 tokens, 32 blocks × 31,808 elements × 2 B, the final norm (3h × 2 B per token) and
    one block's backward transients: far below Megatron-style selective recompute, which with flash
    attention keeps every tensor (what the engine planned before: 101 GiB)."""
    tokens = 2 * 8192
    kept = LAYERS * 31_808 * 2 * tokens
    act = activations.activation_bytes(LLAMA31_8B, _torchtitan(), 2, 8192)
    whole = activations.activation_bytes(
        LLAMA31_8B, _torchtitan(gradient_checkpointing=False), 2, 8192
    )
    one_block = whole / (LAYERS + 1)
    assert act == pytest.approx(kept + 3 * H * 2 * tokens + one_block, rel=0.01)
    assert kept / GIB == pytest.approx(31.06, abs=0.01)
    megatron = activations.activation_bytes(LLAMA31_8B, _torchtitan(framework="megatron"), 2, 8192)
    assert megatron > 2.5 * act


def test_a_compiled_torchtitan_loss_keeps_the_16_bit_logits_and_writes_a_16_bit_gradient() -> None:
    """torchtitan compiles `cross_entropy(pred.float(), labels)` with the model. AOTAutograd saves
    the bf16 logits and two fp32 numbers per token (row max, log-sum-exp; checked with torch 2.13's
    saved-tensor hooks: (2, 64, 1000) bf16, (128, 1) fp32 twice); the fused backward writes the bf16
    gradient. Eager saves the fp32 log-softmax and peaks at three fp32 logits-sized tensors in its
    backward: 12 B per logit."""
    tokens = 2 * 8192
    compiled = savers.logits_bytes(LLAMA31_8B, _torchtitan(compile=True), 2, 8192)
    assert compiled == tokens * V * (2 + 2) + tokens * 8
    assert savers.logits_bytes(LLAMA31_8B, _torchtitan(), 2, 8192) == tokens * V * 12
    # transformers' Trainer does not compile a separate loss: torch_compile there leaves the 12 B.
    hf = TrainingSpec(method="full", compile=True)
    assert savers.logits_bytes(LLAMA31_8B, hf, 2, 8192) == tokens * V * 12


def test_fsdp_gradients_are_not_alive_at_the_activation_peak_without_accumulation() -> None:
    """zero_grad() sets gradients to None and FSDP writes each shard in its post-backward: with one
    micro-batch per step the peak (start of backward) holds fp32 parameter shards 4 B and AdamW's 8
    B over 8 GPUs, no gradient; with accumulation the 4 B fp32 gradient shards are there too."""
    t = _torchtitan()
    one = memory.estimate(
        LLAMA31_8B, t, dp=8, gpus_per_node=8, micro_batch=2, seq_len=8192, accumulation=1
    )
    four = memory.estimate(
        LLAMA31_8B, t, dp=8, gpus_per_node=8, micro_batch=2, seq_len=8192, accumulation=4
    )
    assert float(one.gradients) == pytest.approx(PARAMS * 4 / 8)
    assert float(four.allocated - one.allocated) == pytest.approx(PARAMS * 4 / 8)
    # DeepSpeed's fp32 gradient partition is allocated once and stays: accumulation changes nothing.
    z3 = TrainingSpec(method="full", sharding="zero3")
    a1 = memory.estimate(
        LLAMA31_8B, z3, dp=8, gpus_per_node=8, micro_batch=1, seq_len=2048, accumulation=1
    )
    a4 = memory.estimate(
        LLAMA31_8B, z3, dp=8, gpus_per_node=8, micro_batch=1, seq_len=2048, accumulation=4
    )
    assert float(a1.allocated) == float(a4.allocated)


def test_fsdp_shards_the_states_over_context_parallel_ranks_too() -> None:
    """torchtitan's "FSDP 1, CP 8" (8 GPUs, 262,144 tokens): FSDP2 shards over the flattened
    dp_shard × cp mesh, so each GPU holds 1/8 of the fp32 parameters (4 B), gradients (4 B) and
    AdamW states (8 B)."""
    cp8 = _torchtitan(context_parallel=8, micro_batch_size=1)
    held = states.model_states(LLAMA31_8B, cp8, dp=1)
    per_param = (held.weights + held.gradients + held.optimizer) / PARAMS
    assert per_param == pytest.approx(16 / 8, rel=0.01)


def _torchtitan_reserved_gib(gpus: int) -> float:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 1e9, "seq_len": 8192},
            "training": {
                "method": "full",
                "precision": "amp_bf16",
                "framework": "torchtitan",
                "micro_batch_size": 2,
                "global_batch_size": 2 * gpus,
            },
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": gpus // 8},
        }
    )
    result = plan(request, CATALOG)
    return (result.memory.per_gpu.total - memory.CUDA_CONTEXT_BYTES) / GIB


def test_torchtitan_published_peak_reserved_on_128_gpus() -> None:
    """torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 3: Llama 3.1 8B, 128 H100s,
    FSDP, local batch 2, selective AC: "| FSDP | 5,605 | 67.0 |" (Memory GiB, torchtitan's logged
    max_reserved). A figure the calibration does not contain (its 128-GPU row is throughput
    only)."""
    assert _torchtitan_reserved_gib(128) == pytest.approx(67.0, rel=0.10)


def test_more_fsdp_gpus_lower_the_torchtitan_peak_by_the_state_shards() -> None:
    """Tables 1 and 3 of the same benchmark: 82.4 GiB on 8 GPUs, 67.0 on 128. The states differ by
    the fp32 parameter shard and AdamW's two states, 12 B × 8.03e9 × (1/8 − 1/128) = 10.5 GiB
    allocated (the gradients are not alive at the peak), plus the allocator reserve on it."""
    drop = _torchtitan_reserved_gib(8) - _torchtitan_reserved_gib(128)
    states = 12 * PARAMS * (1 / 8 - 1 / 128) / GIB
    assert drop == pytest.approx(states * (1 + memory.ALLOCATOR_RESERVE), rel=0.02)
    assert 0 < drop < 82.4 - 67.0


# ----------------------------------------------------------------------------- paged optimizer
# states


def _paged_qlora(micro_batch: int) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 1e7, "seq_len": 2048},
            "training": {
                "method": "qlora",
                "optimizer": "paged_adamw_32bit",
                "precision": "pure_bf16",
                "micro_batch_size": micro_batch,
                "gradient_checkpointing": True,
            },
            "hardware": {"gpu": "RTX-4090", "gpus_per_node": 1, "nodes": 1},
        }
    )


def test_paged_states_that_fit_are_never_paged_out_and_cost_no_host_time() -> None:
    """Llama 3.1 8B QLoRA r16 all-linear on a 24 GB card, checkpointing on, micro-batch 1: the
    adapters' 32-bit AdamW states, 8 B × 41,943,040 = 0.34 GB, fit next to the peak. The driver
    evicts unified memory only when the GPU is full, so nothing moves and the plan says nothing
    about paging."""
    result = plan(_paged_qlora(1), CATALOG)
    assert result.memory.fits
    assert result.compute.step_breakdown_s.host_transfer == 0.0
    assert result.memory.cpu_ram_needed == 0
    assert not [w for w in result.warnings if "paged optimizer states" in w]


def test_paged_states_spill_only_the_part_that_does_not_fit_and_the_plan_says_so() -> None:
    """A 12 GB card with 10 GB of paged states and 5 GB of everything else keeps 7 GB and pages 3 GB
    out; the step moves the 3 GB back and out again (6 GB over PCIe, waited for), and the warning
    says so."""
    est_spill = 3e9
    assert float(savers.paged_resident(10e9, 5e9, 12e9)) == 10e9 - est_spill
    note = savers.paged_spill_warning(10e9, est_spill)
    assert note is not None and "3.0 of 10.0 GB" in note and "6.0 GB over PCIe" in note
    assert savers.paged_spill_warning(10e9, 0.0) is None
    t = TrainingSpec(method="qlora", optimizer="paged_adamw_32bit", precision="pure_bf16")
    arch = LLAMA31_8B
    roomy = memory.estimate(
        arch, t, dp=1, gpus_per_node=1, micro_batch=1, seq_len=2048, gpu_memory=80e9
    )
    tight = memory.estimate(
        arch,
        t,
        dp=1,
        gpus_per_node=1,
        micro_batch=1,
        seq_len=2048,
        gpu_memory=float(roomy.total) - float(roomy.paged) / 2,
    )
    assert float(roomy.paged_spilled) == 0.0 and float(roomy.host_exposed_bytes_per_step) == 0.0
    assert float(tight.paged_spilled) == pytest.approx(float(roomy.paged) / 2)
    assert float(tight.host_exposed_bytes_per_step) == pytest.approx(float(roomy.paged))
