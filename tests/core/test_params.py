"""Parameter counts from config.json against the counts the model owners published."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.catalog import load_catalog
from core.planner.model.config_shape import ConfigError
from core.planner.model.params import Architecture
from core.units import parse_count

PUBLISHED = json.loads(
    (Path(__file__).parents[1] / "fixtures/planner/published_models.json").read_text()
)


def _published_total(entry: dict) -> float | None:
    if entry["published_params"]:
        return float(entry["published_params"])
    parts = entry.get("published_params_breakdown") or {}
    # Gemma 3 reports publish the language model as embedding + non-embedding, e.g. '3,209M'.
    nums = [parse_count(str(v)) for k, v in parts.items() if "embedding" in k]
    return float(sum(nums)) if len(nums) >= 2 else None


@pytest.mark.parametrize("entry", PUBLISHED, ids=[e["id"] for e in PUBLISHED])
def test_total_params_match_published_count(entry: dict) -> None:
    published = _published_total(entry)
    if published is None:
        pytest.skip(f"{entry['id']}: owner publishes no total")
    arch = Architecture.from_hf_config(entry, entry["id"])
    # Nominal labels ("7B") are rounded by their owners; 5% covers them (Llama-2-7B is 6.74B, Phi-4
    # 14.7B).
    assert arch.total_params == pytest.approx(published, rel=0.05)


def test_exact_counts_where_published_exactly() -> None:
    """Counts published to the parameter (litgpt/HF cards): Llama-2-7B 6,738,415,616; TinyLlama
    1,100,048,384."""
    cat = load_catalog()
    llama = Architecture.from_hf_config(cat.model("llama-2-7b").config)
    tiny = Architecture.from_hf_config(cat.model("tinyllama-1.1b").config)
    assert llama.total_params == pytest.approx(6_738_415_616, rel=1e-4)
    assert tiny.total_params == pytest.approx(1_100_048_384, rel=1e-4)


@pytest.mark.parametrize(
    ("preset", "active"),
    [
        ("mixtral-8x7b", 12.9e9),  # Mistral: "12.9B active parameters"
        ("mixtral-8x22b", 39e9),  # Mistral: "39B active"
        ("qwen3-30b-a3b", 3.3e9),  # Qwen3 card: 3.3B activated
        ("qwen3-235b-a22b", 22e9),  # Qwen3 card: 22B activated
        ("deepseek-v3", 37e9),  # DeepSeek-V3 report: 37B activated per token
    ],
)
def test_moe_active_params(preset: str, active: float) -> None:
    arch = Architecture.from_hf_config(load_catalog().model(preset).config)
    assert arch.is_moe
    assert arch.active_params == pytest.approx(active, rel=0.05)
    assert arch.active_params < arch.total_params / 3


def test_gqa_and_tied_embeddings_change_the_count() -> None:
    base = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
        "intermediate_size": 11008,
        "model_type": "llama",
    }
    mha = Architecture.from_hf_config(base)
    gqa = Architecture.from_hf_config({**base, "num_key_value_heads": 8})
    tied = Architecture.from_hf_config({**base, "tie_word_embeddings": True})
    # k and v shrink from 4096×4096 to 4096×1024 each: 2 × 4096 × 3072 × 32 layers fewer.
    assert mha.total_params - gqa.total_params == 2 * 4096 * 3072 * 32
    assert mha.total_params - tied.total_params == 32000 * 4096


@pytest.mark.parametrize(
    ("cfg", "key"),
    [
        ({}, "hidden_size"),
        ({"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 1}, "num_hidden_layers"),
        (
            {"hidden_size": -1, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10},
            "hidden_size",
        ),
        (
            {
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 6,
                "num_key_value_heads": 4,
                "vocab_size": 10,
            },
            "num_key_value_heads",
        ),
    ],
)
def test_malformed_config_names_the_key(cfg: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        Architecture.from_hf_config(cfg)


def test_param_count_only_infers_a_shape_of_that_size() -> None:
    arch = Architecture.from_param_count(7e9)
    assert arch.inferred
    assert arch.total_params == pytest.approx(7e9, rel=0.03)


@pytest.mark.parametrize(
    ("preset", "layer_norm", "fused_qkv"),
    [("llama-3.1-8b", False, False), ("falcon-7b", True, True), ("phi-3-mini-4k", False, True)],
)
def test_norm_kind_and_fused_qkv_follow_the_model_family(
    preset: str, layer_norm: bool, fused_qkv: bool
) -> None:
    """Falcon uses LayerNorm and one query_key_value module; Llama RMSNorm and q/k/v_proj; Phi-3
    fuses qkv_proj."""
    arch = Architecture.from_hf_config(load_catalog().model(preset).config)
    assert (arch.layer_norm, arch.fused_qkv) == (layer_norm, fused_qkv)


def test_phi2_config_reads_as_layer_norm() -> None:
    """microsoft/phi-2 config.json: model_type phi, layer_norm_eps (no rms_norm_eps)."""
    cfg = {
        "model_type": "phi",
        "hidden_size": 2560,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 51200,
        "intermediate_size": 10240,
        "layer_norm_eps": 1e-5,
    }
    assert Architecture.from_hf_config(cfg).layer_norm


def test_mpt_config_reads_its_own_keys() -> None:
    """MPT's config.json says d_model, n_heads, n_layers and expansion_ratio; its MLP is a plain
    GELU 4× one and its embedding is tied. llm-foundry's benchmark table
    (scripts/train/benchmarking/README.md, MPT-7b at seq 2048) prints NumParams 6,658,859,008, which
    includes a learned position table of 2048 × 4096 that the planner does not count: 6,658,859,008
    − 8,388,608 = 6,650,470,400."""
    cfg = {
        "model_type": "mpt",
        "d_model": 4096,
        "n_heads": 32,
        "n_layers": 32,
        "expansion_ratio": 4,
        "vocab_size": 50432,
        "max_seq_len": 2048,
    }
    arch = Architecture.from_hf_config(cfg, "mpt-7b")
    assert not arch.gated_mlp and arch.tied_embeddings and arch.layer_norm
    assert arch.intermediate == 4 * 4096
    assert arch.total_params == pytest.approx(6_650_470_400, rel=1e-3)
