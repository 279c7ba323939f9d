"""The memory savers: PEFT target lists, loss kernels, paged states, activation offload, selective
recompute, QLoRA gathers under FSDP and framework profiles.

Expected figures are hand arithmetic from the model's config.json shapes written out below, or a
published measurement with its source; none is produced by the code under test.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.catalog import load_catalog
from core.planner.model import activations, memory, savers, states
from core.planner.model.lora import lora_params, target_set
from core.planner.model.params import Architecture
from core.planner.plan import plan
from core.planner.request import PlanRequest, TrainingSpec
from core.planner.speed import compute
from core.planner.speed.frameworks import effective_training
from core.validation import validation_message

CATALOG = load_catalog()
LLAMA31_8B = Architecture.from_hf_config(CATALOG.model("llama-3.1-8b").config)
GPT_OSS_20B = Architecture.from_hf_config(CATALOG.model("gpt-oss-20b").config)
MIXTRAL = Architecture.from_hf_config(CATALOG.model("mixtral-8x7b").config)
TOKENS = 2 * 2048  # micro-batch 2 × 2,048
V = 128_256  # Llama 3.1 vocabulary


# ----------------------------------------------------------------------------- LoRA targets


def test_a_peft_target_list_equals_the_short_names() -> None:
    assert (
        target_set(["q_proj", "v_proj"])
        == target_set("qv")
        == target_set("q,v")
        == frozenset({"q", "v"})
    )
    assert lora_params(LLAMA31_8B, 16, ["q_proj", "v_proj"]) == lora_params(LLAMA31_8B, 16, "qv")
    # Llama 3.1 8B, r = 16: q 4096→4096, v 4096→1024 per layer, 32 layers.
    assert lora_params(LLAMA31_8B, 16, ["q_proj", "v_proj"]) == 32 * 16 * (
        (4096 + 4096) + (4096 + 1024)
    )
    assert lora_params(LLAMA31_8B, 16, ["lm_head"]) == 16 * (4096 + V)


def test_all_linear_leaves_out_the_lm_head_as_peft_does() -> None:
    every = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]
    with_head = lora_params(LLAMA31_8B, 16, every)
    assert with_head - lora_params(LLAMA31_8B, 16, "all-linear") == 16 * (4096 + V)


def test_unknown_module_names_the_field_the_name_and_what_is_allowed() -> None:
    raw = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 1e8},
        "training": {"lora_targets": ["qproj"]},
    }
    with pytest.raises(ValidationError) as caught:
        PlanRequest.model_validate(raw)
    message = validation_message(caught.value)
    assert "training.lora_targets" in message and "'qproj'" in message and "q_proj" in message
    assert "\n" not in message


def test_gpt_oss_experts_are_parameters_so_all_linear_adapts_attention_only() -> None:
    """gpt-oss-20b config: h 2,880, 64 heads × 64 = 4,096 query width, 8 KV heads × 64 = 512, 24
    layers.

    transformers' GptOssExperts holds gate_up_proj/down_proj as nn.Parameter: PEFT's all-linear
    finds no nn.Linear there. Per layer, r = 16: q (2880+4096) + k (2880+512) + v (2880+512) + o
    (4096+2880).
    """
    assert GPT_OSS_20B.experts_fused and not MIXTRAL.experts_fused
    per_layer = 16 * ((2880 + 4096) + (2880 + 512) + (2880 + 512) + (4096 + 2880))
    assert lora_params(GPT_OSS_20B, 16, "all-linear") == 24 * per_layer == 7_962_624
    assert lora_params(GPT_OSS_20B, 16, ["gate_proj", "up_proj", "down_proj"]) == 0
    # bitsandbytes quantizes nn.Linear only: the NF4 part is the attention, 24 × (2·2880·4096 +
    # 2·2880·512).
    assert GPT_OSS_20B.quantizable_params == 24 * (2 * 2880 * 4096 + 2 * 2880 * 512)


def test_mixtral_experts_are_linear_modules_and_each_gets_an_adapter() -> None:
    """Mixtral 8x7B: 8 experts of 4096 → 14336 (gate, up) and 14336 → 4096 (down) in each of 32
    layers."""
    mlp = lora_params(MIXTRAL, 16, ["gate_proj", "up_proj", "down_proj"])
    assert mlp == 32 * 8 * 3 * 16 * (4096 + 14336)


# ----------------------------------------------------------------------------- cross-entropy


def _training(**kw: object) -> TrainingSpec:
    return TrainingSpec.model_validate({"micro_batch_size": 2, **kw})


def test_standard_logits_are_twelve_bytes_per_logit() -> None:
    """16-bit logits 2 + fp32 upcast 4 + fp32 log-softmax 4 + 16-bit gradient 2 (transformers'
    ForCausalLMLoss)."""
    got = savers.logits_bytes(LLAMA31_8B, _training(), 2, 2048)
    assert got == TOKENS * V * 12 == 6_304_038_912


def test_chunked_keeps_the_16_bit_logits_and_the_fp32_log_probabilities() -> None:
    """torchtune CEWithChunkedOutputLoss, 8 chunks: 2 + 4 (saved log-softmax) + 4/8 (one chunk's
    upcast)."""
    got = savers.logits_bytes(LLAMA31_8B, _training(cross_entropy="chunked"), 2, 2048)
    assert got == TOKENS * V * (2 + 4 + 4 / 8) == 3_414_687_744
    compiled = savers.logits_bytes(
        LLAMA31_8B, _training(cross_entropy="chunked", compile=True), 2, 2048
    )
    assert compiled == TOKENS * V * (2 + 4 / 8)  # 16-bit logits whole + one chunk in fp32


def test_fused_holds_one_chunk_and_the_hidden_gradient_under_a_gigabyte() -> None:
    """Liger: inc_factor = ceil(128256/4096) = 32, chunk = next_pow2(ceil(4096/32)) = 128 tokens."""
    got = savers.logits_bytes(LLAMA31_8B, _training(cross_entropy="fused"), 2, 2048)
    assert got == 128 * V * 2 + TOKENS * 4096 * 2 + TOKENS * 4 == 66_404_352
    assert got < 1e9


def test_an_8b_lora_on_a_24_gb_card_fits_with_a_fused_loss() -> None:
    """The new user's case: Llama 3.1 8B LoRA, 2 × 2048, one 24 GB card; the logits are what does
    not fit."""

    def total(ce: str) -> float:
        t = _training(cross_entropy=ce)
        return float(
            memory.estimate(LLAMA31_8B, t, dp=1, gpus_per_node=1, micro_batch=2, seq_len=2048).total
        )

    assert total("standard") > 24e9 > total("fused")
    # The saving is the logits difference plus its 10% allocator reserve: (6,304,038,912 −
    # 66,404,352) × 1.1.
    assert total("standard") - total("fused") == pytest.approx(
        (6_304_038_912 - 66_404_352) * 1.1, rel=1e-9
    )


# ----------------------------------------------------------------------------- paged optimizers


def test_paged_states_fill_what_is_left_and_spill_the_rest() -> None:
    # 10 GB of paged states, 5 GB of everything else on a 12 GB card: 7 GB stay, 3 GB go to the
    # host.
    assert float(savers.paged_resident(10e9, 5e9, 12e9)) == pytest.approx(7e9)
    assert float(savers.paged_resident(10e9, 13e9, 12e9)) == 0.0
    assert float(savers.paged_resident(10e9, 1e9, 80e9)) == pytest.approx(10e9)


def test_torchtune_8b_full_finetune_on_a_4090() -> None:
    """torchtune README (github.com/pytorch/torchtune, commit 0031bfb, Sep 2024): "Llama 3.1 8B |
    Full finetune | 1x 4090 | 18.9 GiB", batch 2, packed to 2,048, torch compile on, config
    llama3_1/8B_full_single_device: bf16, bitsandbytes PagedAdamW8bit, optimizer_in_bwd, activation
    checkpointing, chunked cross-entropy.

    The paged states are 2 B × 8,030,261,248 parameters and not in the allocator's peak; the rest is
    compared with the published peak (±15%; the README does not say whether it reports active or
    reserved memory).
    """
    t = _training(
        method="full",
        precision="pure_bf16",
        optimizer="paged_adamw_8bit",
        optimizer_in_backward=True,
        cross_entropy="chunked",
        compile=True,
    )
    est = memory.estimate(
        LLAMA31_8B, t, dp=1, gpus_per_node=1, micro_batch=2, seq_len=2048, gpu_memory=24e9
    )
    assert float(est.paged) == 2 * 8_030_261_248
    assert float(est.allocated) == pytest.approx(18.9 * 2**30, rel=0.15)
    # pure bf16 keeps no master: the optimizer row is paged
    spilled = float(est.paged) - float(est.optimizer)
    assert float(est.cpu_ram) == pytest.approx(spilled)
    # read and written back once a step
    assert float(est.host_bytes_per_step) == pytest.approx(2 * spilled)


def test_qlora_paged_states_leave_the_allocated_peak() -> None:
    base = {"method": "qlora", "lora_targets": "all-linear", "gradient_checkpointing": False}
    plain = memory.estimate(
        LLAMA31_8B,
        _training(**base, optimizer="adamw_8bit"),
        dp=1,
        gpus_per_node=1,
        micro_batch=2,
        seq_len=1024,
    )
    paged = memory.estimate(
        LLAMA31_8B,
        _training(**base, optimizer="paged_adamw_8bit"),
        dp=1,
        gpus_per_node=1,
        micro_batch=2,
        seq_len=1024,
    )
    adapters = lora_params(LLAMA31_8B, 16, "all-linear")
    assert float(paged.paged) == adapters * 2  # 8-bit Adam: two 1-byte states per parameter
    assert float(plain.allocated) - float(paged.allocated) == pytest.approx(adapters * 2)


# ----------------------------------------------------------------------------- activation offload,
# recompute


def test_activation_offload_keeps_five_layer_inputs_and_moves_the_rest() -> None:
    """32 layers × 4,096 × 2 B × 4,096 tokens of inputs; torchtune keeps max_fwd_stash_size = 5 in
    flight."""
    on = _training(activation_offload=True)
    off = _training()
    inputs = 32 * 4096 * 2 * TOKENS
    a_on = activations.activation_bytes(LLAMA31_8B, on, 2, 2048)
    a_off = activations.activation_bytes(LLAMA31_8B, off, 2, 2048)
    assert a_off - a_on == pytest.approx(inputs * 27 / 32)
    est = memory.estimate(
        LLAMA31_8B, on, dp=1, gpus_per_node=1, micro_batch=2, seq_len=2048, accumulation=4
    )
    assert float(est.cpu_ram) == pytest.approx(inputs)
    # out and back, 4 micro-batches
    assert float(est.host_bytes_per_step) == pytest.approx(2 * inputs * 4)


def test_activation_offload_without_checkpointing_is_refused_in_one_sentence() -> None:
    with pytest.raises(ValidationError) as caught:
        TrainingSpec(activation_offload=True, gradient_checkpointing=False)
    assert "training.activation_offload needs gradient_checkpointing" in validation_message(
        caught.value
    )


def test_selective_recompute_saves_less_than_full_and_more_than_none() -> None:
    """Eager attention keeps a·s probabilities per token per layer, each as the fp32 softmax output
    and the bf16 copy the P·V matmul saves (4 + 2 B: transformers' eager_attention_forward,
    softmax(dtype=float32).to(bf16)); selective drops exactly those (Korthikanti et al. 2022 §5).
    Llama 3.1 8B at s = 2048: 32 layers × 32·2048 probabilities × 6 B × 4,096 tokens."""

    def act(ckpt: object) -> float:
        t = _training(attention="eager", gradient_checkpointing=ckpt)
        return float(activations.activation_bytes(LLAMA31_8B, t, 2, 2048))

    assert act(False) > act("selective") > act(True)
    assert act(False) - act("selective") == 32 * 32 * 2048 * 6 * TOKENS
    # With flash attention the core keeps nothing to drop.
    flash = [_training(gradient_checkpointing=c) for c in (False, "selective")]
    assert activations.activation_bytes(
        LLAMA31_8B, flash[0], 2, 2048
    ) == activations.activation_bytes(LLAMA31_8B, flash[1], 2, 2048)


def test_selective_recompute_repeats_only_the_attention_forward() -> None:
    """A = 12·L·a·d·s forward + backward (PaLM, no mask); its forward third, halved by the causal
    mask that flash kernels skip, is what selective recompute repeats."""
    attention = 12 * 32 * 32 * 128 * 2048
    none = compute.flops_per_token(LLAMA31_8B, _training(gradient_checkpointing=False), 2048, 0.0)
    sel = compute.flops_per_token(
        LLAMA31_8B, _training(gradient_checkpointing="selective"), 2048, 0.0
    )
    assert sel - none == pytest.approx(attention / 3 / 2)


# ----------------------------------------------------------------------------- QLoRA under FSDP


def test_qlora_fsdp_gathers_packed_nf4_blocks() -> None:
    """Mixtral 8x7B block: attention 2·4096² + 2·4096·1024 + 8 experts × 3·4096·14336 + router
    4096·8; NF4 with double quantization is (4 + 8/64 + 32/16384)/8 B per parameter; the router
    stays 16-bit. Its 32,000 × 4,096 embedding in bf16 (0.26 GB) is the smaller unit. Two units are
    in flight."""
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    experts = 8 * 3 * 4096 * 14336
    router = 4096 * 8
    nf4 = (4 + 8 / 64 + 32 / (64 * 256)) / 8
    expected = 2 * ((attn + experts) * nf4 + router * 2)
    t = TrainingSpec(method="qlora", sharding="fsdp")
    got = states.model_states(MIXTRAL, t, dp=8, gpus_per_node=8).gathered
    assert float(got) == pytest.approx(expected, rel=1e-6)
    lora16 = states.model_states(
        MIXTRAL, TrainingSpec(method="lora", sharding="fsdp"), dp=8, gpus_per_node=8
    )
    assert float(lora16.gathered) > 3.5 * float(got)


# ----------------------------------------------------------------------------- framework profiles


def test_a_profile_fills_only_what_the_request_left_unset() -> None:
    tt = effective_training(TrainingSpec(framework="torchtune"))
    assert (
        tt.precision.value == "pure_bf16"
        and tt.cross_entropy.value == "chunked"
        and tt.checkpointing == "full"
    )
    mine = effective_training(
        TrainingSpec(framework="torchtune", cross_entropy="fused", precision="amp_bf16")
    )
    assert mine.cross_entropy.value == "fused" and mine.precision.value == "amp_bf16"
    assert effective_training(tt) == tt  # applying twice changes nothing


def test_the_default_framework_changes_nothing() -> None:
    t = TrainingSpec(method="lora", lora_rank=8)
    assert effective_training(t) is t


def test_unsloth_offload_yields_to_a_user_who_turned_checkpointing_off() -> None:
    t = effective_training(TrainingSpec(framework="unsloth", gradient_checkpointing=False))
    assert t.checkpointing == "none" and not t.activation_offload
    assert effective_training(TrainingSpec(framework="unsloth")).activation_offload


def test_plan_applies_the_profile() -> None:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 1e7, "seq_len": 2048},
            "training": {"framework": "torchtune", "micro_batch_size": 2},
            "hardware": {"gpu": "RTX-4090"},
        }
    )
    result = plan(request)
    assert result.request.training.cross_entropy.value == "chunked"
    # pure bf16 chunked loss: 4,096 tokens × 128,256 × (2 + 4 + 4/8) B
    assert result.memory.per_gpu.logits == TOKENS * V * 6.5


def test_a_plan_that_does_not_fit_suggests_the_loss_kernels_with_their_saving() -> None:
    """Llama 3.1 8B LoRA, 2 × 2048 on a 24 GB card: fused saves 6,304,038,912 − 66,404,352 B = 6.2
    GB of logits, chunked 6,304,038,912 − 3,414,687,744 B = 2.9 GB."""
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 1e7, "seq_len": 2048},
            "training": {"micro_batch_size": 2},
            "hardware": {"gpu": "RTX-4090"},
        }
    )
    advice = plan(request).memory.suggestions
    assert any("training.cross_entropy fused" in a and "saves 6.2 GB" in a for a in advice)
    assert any("training.cross_entropy chunked" in a and "saves 2.9 GB" in a for a in advice)
