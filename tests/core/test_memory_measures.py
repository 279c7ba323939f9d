"""What a published memory figure holds, read the way its source measured it.

The expected numbers come from the sources themselves (the Hugging Face perf doc's own empty-process
reading, ms-swift's and universal-llm-trainer's stated LoRA dropout, the transformers commit the
perf doc pins), worked out by hand below; none is computed by the planner.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import calibrate
from bench.calibrate import load_cases
from bench.calibrate_cases import build
from core.planner.model import activations, memory, states
from core.planner.model.config_shape import ConfigError
from core.planner.model.params import Architecture
from core.planner.request import TrainingSpec

BY_ID = {c["id"]: c for c in load_cases()}


def test_the_perf_docs_own_cuda_context_replaces_the_planners() -> None:
    """perf_train_gpu_one: `torch.ones((1, 1)).to("cuda")` alone shows "GPU memory occupied: 1343
    MB" (MiB, pynvml `used // 1024**2`) on its V100. 1343 MiB = 1,408,237,568 B; the planner's
    context is 0.75 GiB = 805,306,368 B; the nvidia-smi figure therefore holds 602,931,200 B more
    than the plan's total."""
    for case_id in (
        "hf-perfdoc-bert-large-fp32-bs4-v100-mem",
        "hf-perfdoc-bert-large-fp16-gc-adam8bit-v100-mem",
    ):
        assert calibrate.stated_context_excess(BY_ID[case_id]) == 602_931_200


def test_a_figure_without_a_measured_context_keeps_the_planners() -> None:
    assert calibrate.stated_context_excess(BY_ID["swift-qwen7b-lora-a100-2048-mem"]) == 0.0


def test_bert_at_the_pinned_transformers_commit_is_planned_with_eager_attention() -> None:
    """BertSelfAttention computed softmax(QK^T) in PyTorch ops until transformers#28802 (2024) added
    SDPA; the perf doc pins a 2022 commit, so its s × s probabilities are saved for backward."""
    for case_id in (
        "hf-perfdoc-bert-large-fp32-bs4-v100-mem",
        "hf-perfdoc-bert-large-fp32-bs4-v100-walltime",
        "hf-perfdoc-bert-large-fp16-gc-adam8bit-v100-mem",
    ):
        request = build(BY_ID[case_id]).request
        assert request is not None and request.training.attention.value == "eager"


def test_a_runs_stated_lora_dropout_reaches_its_plan() -> None:
    """ms-swift's `--lora_dropout_p` default 0.05 and universal-llm-trainer's llm_lora_config.yaml
    `lora_dropout: 0.05` are written in each run's `lora` block; PEFT then keeps each adapter's
    dropped-out input for backward."""
    for case_id in (
        "swift-qwen7b-lora-a100-2048-mem",
        "swift-qwen7b-lora-eager-nogc-a100-2048-mem",
        "ult-llama31-8b-lora-h100-8192-mem",
    ):
        request = build(BY_ID[case_id]).request
        assert request is not None and request.training.lora_dropout == 0.05


# ----------------------------------------------------------------------------- mechanisms, worked
# by hand

QWEN7B_V1 = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 151936,
    "intermediate_size": 11008,
}


def _probability_bytes(attention: str, precision: str, config: dict[str, object]) -> float:
    """Bytes per token per layer eager keeps beyond flash, per query's key (÷ heads · s)."""
    arch = Architecture.from_hf_config(config)
    s = 2048

    def layer(kind: str) -> float:
        t = TrainingSpec(method="full", attention=kind, precision=precision)
        return float(
            activations.activation_elements_per_token_layer(arch, t, s)
        ) * states.weight_bytes(t.precision)

    return (layer(attention) - layer("flash")) / (arch.heads * s)


def test_eager_keeps_the_fp32_softmax_and_its_16_bit_copy() -> None:
    """Qwen's own _attn and transformers' eager_attention_forward: `softmax(w.float())` saves its
    fp32 output (4 B) for softmax's backward, `.type(query.dtype)` a bf16 copy (2 B) that matmul(P,
    V) saves; Qwen-7B's attn_dropout_prob is 0.0 and ATen's dropout returns its input untouched at p
    = 0: 6 B a probability."""
    assert _probability_bytes("eager", "amp_bf16", QWEN7B_V1) == 6.0


def test_eager_with_dropout_keeps_its_mask_and_its_output() -> None:
    """bert-large-uncased (attention_probs_dropout_prob 0.1), fp32, at the perf doc's 2022 commit:
    softmax output (4 B), `self.dropout(attention_probs)`'s bool mask (1 B) and its output (4 B),
    which matmul(P, V) saves: 9 B; in bf16 the fp32 softmax (4 B), its bf16 copy (2 B), the mask (1
    B) and the dropped bf16 copy (2 B): 9 B."""
    bert = {
        **QWEN7B_V1,
        "model_type": "gpt2",
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "vocab_size": 30522,
        "intermediate_size": 4096,
        "hidden_act": "gelu",
        "attention_probs_dropout_prob": 0.1,
    }
    assert _probability_bytes("eager", "fp32", bert) == 9.0
    assert _probability_bytes("eager", "amp_bf16", bert) == 9.0
    assert _probability_bytes("eager", "fp32", {**bert, "attention_probs_dropout_prob": 0.0}) == 4.0


@given(st.one_of(st.floats(allow_nan=True), st.text(max_size=5), st.booleans()))
def test_a_bad_attention_dropout_is_one_sentence_naming_the_key(value: object) -> None:
    if isinstance(value, float) and not isinstance(value, bool) and 0 <= value < 1:
        assert (
            Architecture.from_hf_config({**QWEN7B_V1, "attn_pdrop": value}).attention_dropout
            == value
        )
        return
    with pytest.raises(ConfigError) as err:
        Architecture.from_hf_config({**QWEN7B_V1, "attn_pdrop": value})
    assert str(err.value).startswith("config.json key attn_pdrop must be a probability")
    assert "\n" not in str(err.value)


def _live_gradients(accumulation: int, dp: int = 1, **kw: object) -> float:
    t = TrainingSpec(method="full", **kw)
    return float(memory.grads_at_activation_peak(t, 16.06e9, accumulation, dp))


def test_one_bare_gpu_holds_no_gradient_while_its_activations_peak() -> None:
    """torch.Tensor.grad is None until a backward computes it, and optimizer.zero_grad() sets it
    back to None (set_to_none=True, PyTorch ≥ 2.0): with one micro-batch per step, no gradient of
    Llama-3.1-8B's 16.06 GB exists at the start of backward. With accumulation it persists; DDP's
    Reducer allocates its buckets at construction; Megatron-Core keeps a contiguous gradient
    buffer."""
    assert _live_gradients(1) == 0.0
    assert _live_gradients(2) == 16.06e9
    assert _live_gradients(1, dp=2) == 16.06e9
    assert _live_gradients(1, framework="megatron") == 16.06e9
    assert _live_gradients(1, dp=8, sharding="fsdp") == 0.0


GEMMA_7B = {
    "model_type": "gemma",
    "hidden_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "head_dim": 256,
    "vocab_size": 256000,
    "intermediate_size": 24576,
    "tie_word_embeddings": True,
}


def test_litgpt_qlora_dequantizes_its_lm_head() -> None:
    """Lightning Fabric's BitsandbytesPrecision (litgpt's --quantize bnb.nf4) replaces every
    torch.nn.Linear not in ignore_modules, the LM head included: Gemma-7B's 256,000 × 3,072 =
    786,432,000-weight head is then the largest matrix MatMul4Bit dequantizes (the MLP's 24,576 ×
    3,072 = 75,497,472 otherwise); transformers keeps the head 16-bit. Its 4-bit copy (4 + 32/64
    bits a weight without double quantization) sits beside the tied embedding."""
    arch = Architecture.from_hf_config(GEMMA_7B)
    litgpt = TrainingSpec(method="qlora", framework="litgpt", double_quant=False)
    peft = TrainingSpec(method="qlora", framework="hf_trainer", double_quant=False)
    assert states.dequantized_matrix_params(arch, litgpt) == 786_432_000
    assert states.dequantized_matrix_params(arch, peft) == 75_497_472
    extra = (
        states.model_states(arch, litgpt, 1).weights - states.model_states(arch, peft, 1).weights
    )
    assert extra == 786_432_000 * 4.5 / 8


LLAMA2_7B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "intermediate_size": 11008,
}


def test_bitsandbytes_before_0_43_2_keeps_each_4bit_linears_input() -> None:
    """bitsandbytes' MatMul4Bit set `ctx.tensors = (A, B)` until PR #1270 (commit 9e75374, first in
    0.43.2) made it `(None, B)`. litgpt's Llama-2-7B QLoRA (LoRA on q and v with dropout, 1 × 1304
    tokens, no recompute) then also keeps, per layer and token, the normed input of the q/k/v linear
    (4,096), of gate/up (4,096, one tensor for both) and the down projection's 11,008-wide input;
    the o-projection reads the attention output, kept already: 32 layers × 1,304 tokens × 19,200
    elements × 2 B = 1,602,355,200 B."""
    arch = Architecture.from_hf_config(LLAMA2_7B)
    today = TrainingSpec(
        method="qlora",
        lora_targets="q,v",
        lora_dropout=0.05,
        precision="pure_bf16",
        gradient_checkpointing=False,
    )
    old = today.model_copy(update={"quantized_inputs_kept": True})
    grown = activations.activation_bytes(arch, old, 1, 1304) - activations.activation_bytes(
        arch, today, 1, 1304
    )
    # activation_bytes adds one more layer's worth as the backward's transient tensors: 33 layers in
    # all.
    assert grown == pytest.approx(1_602_355_200 * 33 / 32, rel=1e-9)


def test_the_runs_that_state_an_old_bitsandbytes_are_planned_with_it() -> None:
    """litgpt's 2023 resource tables ran bitsandbytes 0.41.1 and its 2024 config-hub table 0.42.0
    (its pyproject.toml pin); ms-swift's benchmark names 0.41.3.post2. universal-llm-trainer's QLoRA
    row states none: today's."""
    for case_id in (
        "litgpt-a100-40g-llama2-7b-qlora-nf4-mem",
        "litgpt-a10g-llama3-8b-qlora-mem",
        "swift-qwen7b-qlora-bnb4-a100-2048-mem",
    ):
        request = build(BY_ID[case_id]).request
        assert request is not None and request.training.quantized_inputs_kept
    request = build(BY_ID["ult-llama31-8b-qlora-a100-8192-mem"]).request
    assert request is not None and not request.training.quantized_inputs_kept


def test_litgpt_keeps_the_previous_micro_batchs_4bit_inputs_until_the_next_forward_returns() -> (
    None
):
    """litgpt's fit loop keeps `logits` and `loss`, and with them the last graph, until the next
    forward returns; backward freed its saved tensors but not MatMul4Bit's `ctx.tensors = (A, B)`
    attribute (bitsandbytes before 0.43.2). Llama-2-7B, 1 × 1304 tokens, no recompute: the same 32 ×
    1,304 × 19,200 × 2 B = 1,602,355,200 B again (no transient layer this time: a graph holds its
    blocks' inputs, not backward's temporaries). A Hugging Face Trainer step drops its graph (it
    returns loss.detach()), and a recomputed block's graph ends with its backward."""
    arch = Architecture.from_hf_config(LLAMA2_7B)
    old = TrainingSpec(
        method="qlora",
        lora_targets="q,v",
        lora_dropout=0.05,
        precision="pure_bf16",
        gradient_checkpointing=False,
        quantized_inputs_kept=True,
        framework="litgpt",
    )
    assert memory.previous_graph_bytes(arch, old, 1, 1304) == pytest.approx(1_602_355_200, rel=1e-9)
    trainer = old.model_copy(update={"framework": "hf_trainer"})
    assert memory.previous_graph_bytes(arch, trainer, 1, 1304) == 0.0
    recomputed = old.model_copy(update={"gradient_checkpointing": True})
    assert memory.previous_graph_bytes(arch, recomputed, 1, 1304) == 0.0
    today = old.model_copy(update={"quantized_inputs_kept": None})
    assert memory.previous_graph_bytes(arch, today, 1, 1304) == 0.0
