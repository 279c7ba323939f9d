"""The model presets against their owners' published counts, and attention by layer kind against
hand arithmetic.

Every expected count is the figure the model's owner published (quote and URL beside it); every
expected FLOP figure is written out from the config.json shapes: per query and head, QKᵀ costs
2·d_qk FLOPs a key and PV 2·d_v, times the keys a query reads on average (s/2 for full causal
attention, w − w²/(2s) for a window w < s, (q·c² + r²)/(2s) for chunks of c with s = q·c + r;
docs/formulas.md "Attention by layer kind").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.catalog import load_catalog
from core.planner.model import activations, attention_layers
from core.planner.model.config_shape import ConfigError
from core.planner.model.params import Architecture
from core.planner.request import Attention, Method, TrainingSpec
from core.planner.speed import compute

ROOT = Path(__file__).parents[2]


def arch(preset: str) -> Architecture:
    return Architecture.from_hf_config(load_catalog().model(preset).config, preset)


# (preset, which count, published figure, half a unit of the label's last digit). A count may miss
# the published one by 1% or by the label's own rounding, whichever is wider: "3B" covers 2.5B-3.5B.
PUBLISHED = [
    # "Llama 4 Scout (17Bx16E) ... 17B (Activated) 109B (Total)" — the total includes the vision
    # encoder and projector, which the text backbone leaves out; 2% covers them (see the Scout total
    # test below). https://github.com/meta-llama/llama-models/blob/main/models/llama4/MODEL_CARD.md
    ("llama-4-scout-17b-16e", "active", 17e9, 0.5e9),
    # same card: "17B (Activated) 400B (Total)"
    ("llama-4-maverick-17b-128e", "total", 400e9, 0.5e9),
    ("llama-4-maverick-17b-128e", "active", 17e9, 0.5e9),
    # "Gemma 3 270M comprises 270 million parameters: 170 million embedding parameters ... and 100
    # million for our transformer blocks."
    # https://developers.googleblog.com/en/introducing-gemma-3-270m/
    ("gemma-3-270m", "total", 270e6, 5e6),
    ("gemma-3-270m", "non_embedding", 100e6, 5e6),
    # The R1 distills keep their bases' shapes (https://github.com/deepseek-ai/DeepSeek-R1 README,
    # distill table). Qwen2.5 cards: "Number of Parameters: 1.54B; (Non-Embedding): 1.31B" — the
    # 1.5B distill unties the embeddings, so only the non-embedding count is comparable.
    # https://huggingface.co/Qwen/Qwen2.5-1.5B
    ("deepseek-r1-distill-qwen-1.5b", "non_embedding", 1.31e9, 0.005e9),
    # Qwen2.5-7B: 7.61B; non-embedding 6.53B
    ("deepseek-r1-distill-qwen-7b", "total", 7.61e9, 0.005e9),
    ("deepseek-r1-distill-qwen-7b", "non_embedding", 6.53e9, 0.005e9),
    # Qwen2.5-14B: 14.7B; non-embedding 13.1B
    ("deepseek-r1-distill-qwen-14b", "total", 14.7e9, 0.05e9),
    ("deepseek-r1-distill-qwen-14b", "non_embedding", 13.1e9, 0.05e9),
    # Qwen2.5-32B: 32.5B; non-embedding 31.0B
    ("deepseek-r1-distill-qwen-32b", "total", 32.5e9, 0.05e9),
    ("deepseek-r1-distill-qwen-32b", "non_embedding", 31.0e9, 0.05e9),
    # Llama 3.1 model card: "8B, 70B and 405B sizes"
    ("deepseek-r1-distill-llama-8b", "total", 8e9, 0.5e9),
    ("deepseek-r1-distill-llama-70b", "total", 70e9, 0.5e9),  # Llama 3.3 model card: "in 70B"
    # "Phi-4-mini-instruct is a lightweight open model ... with 3.8B parameters"
    # https://huggingface.co/microsoft/Phi-4-mini-instruct
    ("phi-4-mini", "total", 3.8e9, 0.05e9),
    # "SmolLM2 is a family of compact language models available in three size: 135M, 360M, and 1.7B
    # parameters." "SmolLM3 is a 3B parameter language model"
    # https://github.com/huggingface/smollm/blob/main/README.md
    ("smollm2-135m", "total", 135e6, 0.5e6),
    ("smollm2-360m", "total", 360e6, 0.5e6),
    ("smollm2-1.7b", "total", 1.7e9, 0.05e9),
    ("smollm3-3b", "total", 3e9, 0.5e9),
    # "Granite-3.3-8B-Instruct is a 8-billion parameter 128K context length language model"
    # https://huggingface.co/ibm-granite/granite-3.3-8b-instruct
    ("granite-3.3-8b", "total", 8e9, 0.5e9),
    # https://github.com/THUDM/GLM-4 README: "GLM-4-9B-0414 ... 9B"
    ("glm-4-9b-0414", "total", 9e9, 0.5e9),
    # "GLM-4.5-Air adopts a more compact design with 106 billion total parameters and 12 billion
    # active parameters." https://github.com/zai-org/GLM-4.5 README. Its 12B leaves the embeddings
    # out.
    ("glm-4.5-air", "total", 106e9, 0.5e9),
    ("glm-4.5-air", "active_non_embedding", 12e9, 0.5e9),
    # MLA in the parameter count. "Total parameters: 671B; Activation parameters: 36.6B (including
    # 0.9B for the output Head)" — the input embedding (a lookup) is not activated. DeepSeek-V3
    # README_WEIGHTS.md (copy:
    # https://github.com/tenstorrent/tt-metal/blob/f3712cc6f089cb59d2c8379118a0701de6dd1ade/models/demos/deepseek_v3/reference/README_WEIGHTS.md)
    ("deepseek-v3", "total", 671e9, 0.5e9),
    ("deepseek-v3", "active_without_input_embedding", 36.6e9, 0.05e9),
    # "DeepSeek-V2-Lite | 15.7B | 2.4B"
    # https://github.com/deepseek-ai/DeepSeek-V2/blob/main/README.md. Its activated count is 2.451B
    # without the input embedding, on the edge of what "2.4B" rounds from, so only the total is
    # compared.
    ("deepseek-v2-lite", "total", 15.7e9, 0.05e9),
]


def count(a: Architecture, which: str) -> int:
    return {
        "total": a.total_params,
        "active": a.active_params,
        "non_embedding": a.total_params - a.embedding_params,
        "active_non_embedding": a.active_params - a.embedding_params,
        "active_without_input_embedding": a.active_params - a.vocab * a.hidden,
    }[which]


@pytest.mark.parametrize(
    ("preset", "which", "published", "half_unit"),
    PUBLISHED,
    ids=[f"{p}-{w}" for p, w, _, _ in PUBLISHED],
)
def test_parameter_counts_match_the_published_ones(
    preset: str, which: str, published: float, half_unit: float
) -> None:
    assert count(arch(preset), which) == pytest.approx(
        published, abs=max(0.01 * published, half_unit)
    )


def test_llama4_scout_total_is_the_text_backbone() -> None:
    """109B (Total) counts the vision encoder too; the text backbone lands within 2% under it, not
    over."""
    total = arch("llama-4-scout-17b-16e").total_params
    assert 0.98 * 109e9 < total < 109e9


def test_llama4_interleaves_moe_and_dense_layers() -> None:
    """Scout: every layer MoE (interleave_moe_layer_step 1); Maverick: layers 1, 3, ..., 47 (step
    2), and its dense layers are intermediate_size_mlp (16384) wide, its experts and shared expert
    intermediate_size (8192)."""
    scout, maverick = arch("llama-4-scout-17b-16e"), arch("llama-4-maverick-17b-128e")
    assert (scout.moe_layers, maverick.moe_layers) == (48, 24)
    assert (maverick.intermediate, maverick.expert_intermediate, maverick.shared_intermediate) == (
        16384,
        8192,
        8192,
    )


# ----------------------------------------------------------------------------- layer patterns


def test_layer_patterns_follow_the_config_keys() -> None:
    # Gemma 3 1B: sliding_window_pattern 6, 26 layers: full where (i + 1) % 6 == 0, i = 5, 11, 17,
    # 23.
    assert arch("gemma-3-1b").attention_pattern == tuple(
        ("full", 0) if i in (5, 11, 17, 23) else ("sliding", 512) for i in range(26)
    )
    # Gemma 2: no key; Gemma2Config alternates, sliding first.
    assert arch("gemma-2-9b").attention_pattern[:4] == (("sliding", 4096), ("full", 0)) * 2
    # gpt-oss-20b: layer_types alternate sliding_attention (128) / full_attention.
    assert arch("gpt-oss-20b").attention_pattern == (("sliding", 128), ("full", 0)) * 12
    # Mistral v0.1: one window on every layer.
    assert set(arch("mistral-7b-v0.1").attention_pattern) == {("sliding", 4096)}
    # Llama 4: no_rope_layer_interval 4 → layers 3, 7, ... global (NoPE), the rest chunked at 8192.
    assert arch("llama-4-scout-17b-16e").attention_pattern[:4] == (("chunked", 8192),) * 3 + (
        ("full", 0),
    )
    # Qwen 2.5 sets sliding_window but use_sliding_window false; SmolLM3's NoPE layers stay full
    # attention.
    assert set(arch("qwen2.5-7b").attention_pattern) == {("full", 0)}
    assert set(arch("smollm3-3b").attention_pattern) == {("full", 0)}


def test_a_layer_types_list_of_the_wrong_length_is_one_sentence() -> None:
    cfg = {**load_catalog().model("gpt-oss-20b").config, "layer_types": ["full_attention"] * 3}
    with pytest.raises(ConfigError, match="layer_types must list one type per layer"):
        Architecture.from_hf_config(cfg)
    with pytest.raises(
        ConfigError, match="chunked attention layers but no positive attention_chunk_size"
    ):
        Architecture.from_hf_config({**cfg, "layer_types": ["chunked_attention"] * 24})
    # Qwen3-Next's linear-attention layers (gated DeltaNet) have no memory or FLOP term here: said,
    # not guessed.
    with pytest.raises(
        ConfigError, match="has 'linear_attention' layers, which the planner does not model"
    ):
        Architecture.from_hf_config(
            {**cfg, "layer_types": ["linear_attention", "full_attention"] * 12}
        )


# ----------------------------------------------------------------------------- attention FLOPs


def test_gemma3_attention_flops_equal_hand_arithmetic() -> None:
    """Gemma 3 1B at s = 4096: 4 global layers read 4096/2 keys a query, 22 local ones 512 −
    512²/(2·4096) = 480; 4 heads, q/k and v heads of 256: 2·256 + 2·256 FLOPs a key."""
    per_key = 2 * 256 + 2 * 256
    expected = 4 * 4 * per_key * (4096 / 2) + 22 * 4 * per_key * (512 - 512**2 / (2 * 4096))
    assert expected == 76_808_192
    assert compute.attention_forward_flops(arch("gemma-3-1b"), 4096) == pytest.approx(
        expected, rel=1e-12
    )


def test_gpt_oss_attention_flops_equal_hand_arithmetic() -> None:
    """gpt-oss-20b at s = 2048: 12 full layers read 1024 keys, 12 windowed ones 128 − 128²/(2·2048)
    = 124; 64 heads of 64."""
    per_key = 2 * 64 + 2 * 64
    expected = 12 * 64 * per_key * 1024 + 12 * 64 * per_key * (128 - 128**2 / (2 * 2048))
    assert expected == 225_705_984
    assert compute.attention_forward_flops(arch("gpt-oss-20b"), 2048) == pytest.approx(
        expected, rel=1e-12
    )


def test_a_window_at_least_the_sequence_is_full_causal() -> None:
    """Mistral v0.1's 4096 window at s = 2048 and 4096 is plain causal attention: 32 layers × 32
    heads × (2·128 + 2·128) × s/2; at 8192 the window reads 4096 − 4096²/(2·8192) = 3072 keys a
    query."""
    mistral = arch("mistral-7b-v0.1")
    for s in (2048, 4096):
        assert compute.attention_forward_flops(mistral, s) == pytest.approx(
            32 * 32 * 512 * s / 2, rel=1e-12
        )
    assert compute.attention_forward_flops(mistral, 8192) == pytest.approx(
        32 * 32 * 512 * 3072, rel=1e-12
    )
    vectorised = compute.attention_forward_flops(mistral, np.array([2048.0, 8192.0]))
    assert vectorised == pytest.approx([32 * 32 * 512 * 1024, 32 * 32 * 512 * 3072], rel=1e-12)


def test_llama4_chunked_attention_flops_equal_hand_arithmetic() -> None:
    """Scout at s = 20,000 = 2·8192 + 3616: a chunked layer reads (2·8192² + 3616²)/(2·20000) keys a
    query, the 12 global layers 10,000; 40 heads of 128."""
    per_key = 2 * 128 + 2 * 128
    chunked = (2 * 8192**2 + 3616**2) / (2 * 20_000)
    expected = 36 * 40 * per_key * chunked + 12 * 40 * per_key * 10_000
    assert compute.attention_forward_flops(arch("llama-4-scout-17b-16e"), 20_000) == pytest.approx(
        expected
    )


@pytest.mark.parametrize(
    ("kind", "size"), [("sliding", 512), ("sliding", 4096), ("chunked", 1000), ("full", 0)]
)
def test_the_mean_keys_are_within_half_a_key_of_counting_them(kind: str, size: int) -> None:
    """Counting every query's keys one by one (query i reads min(i, w), or its chunk up to itself,
    or i) gives the exact mean; the span's area convention stays within half a key of it."""
    for s in (100, 777, 4096, 10_000):
        i = np.arange(1, s + 1)
        keys = {"sliding": np.minimum(i, size), "chunked": (i - 1) % max(size, 1) + 1, "full": i}[
            kind
        ]
        k_bar = attention_layers.layer_span(kind, size, s) / 2
        assert abs(keys.mean() - k_bar) <= 0.5


def test_mla_attention_uses_its_192_and_128_head_dims() -> None:
    """DeepSeek-V3 at s = 4096: 61 layers × 128 heads × (2·(128 + 64) + 2·128) FLOPs a key × 2048
    keys."""
    v3 = arch("deepseek-v3")
    assert compute.attention_forward_flops(v3, 4096) == pytest.approx(
        61 * 128 * (2 * 192 + 2 * 128) * 2048
    )


def test_mla_saves_expanded_keys_and_values_and_its_latents() -> None:
    """Per token and layer under LoRA (flash, q/v adapted, no dropout): keys 128 heads × 192 and
    values 128 × 128; the two latents (1536 and 512) each through an RMSNorm (fp32 copy, 2 elements
    a value) and, for the adapted q_b/kv_b, their inputs again."""
    training = TrainingSpec(method=Method.lora, lora_targets="qv", attention=Attention.flash)
    rest, split, kv = activations.activation_parts(arch("deepseek-v3"), training, 4096)
    assert kv == 128 * 192 + 128 * 128
    # The query 128 × 192 and output 128 × 128, and the MLP's gate, up and act outputs over the
    # width a token runs through: 8 routed + 1 shared expert of 2048 in 58 MoE layers, the 18432
    # dense MLP in 3.
    mlp_width = (8 + 1) * 2048 * 58 / 61 + 18432 * 3 / 61
    assert split == pytest.approx(128 * 192 + 128 * 128 + 3 * mlp_width, rel=1e-12)
    hidden = 7168
    norms = 2 * (2 * hidden) + (2 * 1536 + 1536) + (2 * 512 + 512)
    # fp32 logits of 256 experts in 58 of the 61 layers (first_k_dense_replace 3)
    router = 256 * 2 * 58 / 61
    qkv_input = hidden  # the one shared input of the adapted q_a / kv_a projections
    assert rest == pytest.approx(norms + router + qkv_input, rel=1e-12)


def test_eager_scores_stay_s_squared_under_a_window() -> None:
    """Eager attention materialises every layer's s×s probabilities, windowed or not: a·s of them a
    token, each kept as the fp32 softmax output and its bf16 copy (6 B = 3 bf16 elements;
    transformers' eager_attention_forward)."""
    gemma = arch("gemma-3-1b")
    eager = activations.activation_parts(gemma, TrainingSpec(attention=Attention.eager), 8192)
    flash = activations.activation_parts(gemma, TrainingSpec(attention=Attention.flash), 8192)
    assert eager[1] - flash[1] == 3 * 4 * 8192


# ----------------------------------------------------------------------------- the listing


def test_catalog_models_lists_every_new_family() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "catalog", "models", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    ids = {m["id"] for m in json.loads(proc.stdout)}
    for preset in (
        "llama-4-scout-17b-16e",
        "llama-4-maverick-17b-128e",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "gemma-3-270m",
        "gemma-3-27b",
        "deepseek-r1-distill-qwen-1.5b",
        "deepseek-r1-distill-qwen-7b",
        "deepseek-r1-distill-qwen-14b",
        "deepseek-r1-distill-qwen-32b",
        "deepseek-r1-distill-llama-8b",
        "deepseek-r1-distill-llama-70b",
        "deepseek-v3",
        "phi-4-mini",
        "smollm2-135m",
        "smollm2-360m",
        "smollm2-1.7b",
        "smollm3-3b",
        "granite-3.3-8b",
        "glm-4-9b-0414",
        "glm-4.5-air",
    ):
        assert preset in ids
    text = subprocess.run(
        [sys.executable, "-m", "cli", "catalog", "models"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    ).stdout
    assert "meta-llama/Llama-4-Scout-17B-16E" in text and "zai-org/GLM-4.5-Air" in text


def test_short_names_resolve() -> None:
    cat = load_catalog()
    assert cat.model("llama-4-scout").id == "llama-4-scout-17b-16e"
    assert cat.model("SmolLM3").id == "smollm3-3b"
    assert cat.model("phi-4-mini-instruct").id == "phi-4-mini"
