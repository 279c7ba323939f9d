"""Models as they ship: the real config.json files of three checkpoints
(tests/fixtures/planner/configs/, sources in SOURCES.md) plan with the parameter counts their owners
published and with notes for what the plan reads or leaves out. Expected counts are the owners'
(published_models.json), never the planner's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.planner.model import lora
from core.planner.model.hf_config import TEXT_DEFAULTS, transformers_view
from core.planner.model.params import Architecture
from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.planner.result import PlanResult

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests/fixtures/planner/configs"
PUBLISHED = {
    e["id"]: e
    for e in json.loads((ROOT / "tests/fixtures/planner/published_models.json").read_text())
}


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))


def _plan(name: str, **training: object) -> PlanResult:
    return plan(
        PlanRequest.model_validate(
            {
                "model": {"hf_config": str(CONFIGS / f"{name}.json")},
                "data": {"tokens": "100M", "seq_len": 2048},
                "training": {"method": "lora", **training},
                "hardware": {"gpu": "H100-SXM"},
            }
        )
    )


def test_gemma3_multimodal_config_takes_transformers_defaults_and_names_its_vision_tower() -> None:
    # Gemma 3 report (arXiv 2503.19786) Table 1, 4B: vision encoder 417M, embedding 675M,
    # non-embedding 3,209M.
    breakdown = PUBLISHED["gemma-3-4b"]["published_params_source"]["quote"]
    assert "417M | 675M | 3,209M" in breakdown
    arch = Architecture.from_hf_config(_config("gemma-3-4b-it"), "gemma-3-4b-it")
    assert arch.vocab == 262_208  # Gemma3TextConfig's default: the file has no vocab_size
    assert arch.total_params - arch.embedding_params == pytest.approx(3_209e6, rel=5e-4)
    # The report's embedding count is 675M; 262,208 × 2,560 = 671M (the report counts the vision
    # embeddings too).
    assert arch.embedding_params == pytest.approx(675e6, rel=0.01)
    view = transformers_view(_config("gemma-3-4b-it"))
    assert view.vision_params == pytest.approx(417e6, rel=2e-3)
    result = _plan("gemma-3-4b-it")
    assert result.model_name == "gemma-3-4b-it"
    assert any("vocab_size 262,208" in w for w in result.warnings)
    assert any(
        "vision tower" in w and "417M parameters" in w and "left out" in w for w in result.warnings
    )


def test_gpt_oss_config_reads_its_mxfp4_quantization_config() -> None:
    # the gpt-oss README: "21B parameters with 3.6B active parameters"
    published = PUBLISHED["gpt-oss-20b"]
    arch = Architecture.from_hf_config(_config("gpt-oss-20b"), "gpt-oss-20b")
    assert arch.total_params == pytest.approx(published["published_params"], rel=0.01)
    # 3.6B active is the count without the input embedding (a lookup, no matmul): 201,088 × 2,880
    # elements.
    assert arch.active_params - arch.vocab * arch.hidden == pytest.approx(
        published["published_active_params"], rel=0.01
    )
    result = _plan("gpt-oss-20b")
    assert any(
        w.startswith("quantization_config:") and "MXFP4" in w and "dequantized to bf16" in w
        for w in result.warnings
    )


def test_qwen3_moe_config_plans_with_its_published_counts() -> None:
    # Qwen3 card: 30.5B in total and 3.3B activated; 29.9B non-embedding
    published = PUBLISHED["qwen3-30b-a3b"]
    arch = Architecture.from_hf_config(_config("qwen3-30b-a3b"), "qwen3-30b-a3b")
    assert arch.total_params == pytest.approx(published["published_params"], rel=0.005)
    assert arch.active_params == pytest.approx(published["published_active_params"], rel=0.02)
    assert arch.total_params - arch.embedding_params == pytest.approx(29.9e9, rel=0.005)
    result = _plan("qwen3-30b-a3b", method="qlora")
    assert result.compute.params_total == arch.total_params
    assert not any("quantization_config" in w or "vision" in w for w in result.warnings)


def test_plan_command_shows_the_notes() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli",
            "plan",
            "--model",
            str(CONFIGS / "gemma-3-4b-it.json"),
            "--tokens",
            "100M",
            "--gpu",
            "H100-SXM",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "gemma-3-4b-it" in done.stdout
        and "vision tower" in done.stdout
        and "262,208" in done.stdout
    )


@settings(max_examples=30, deadline=None)
@given(
    left_out=st.sets(
        st.sampled_from(
            [
                "vocab_size",
                "num_attention_heads",
                "num_key_value_heads",
                "head_dim",
                "intermediate_size",
            ]
        ),
        min_size=1,
    )
)
def test_any_key_a_gemma3_config_leaves_out_takes_the_default(left_out: set[str]) -> None:
    text = {
        "hidden_size": 2560,
        "num_hidden_layers": 34,
        "model_type": "gemma3_text",
        "vocab_size": 262_208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "intermediate_size": 9216,
    }
    full = Architecture.from_hf_config({"model_type": "gemma3", "text_config": text})
    cut = {k: v for k, v in text.items() if k not in left_out}
    read = Architecture.from_hf_config({"model_type": "gemma3", "text_config": cut})
    # the values above are Gemma3TextConfig's defaults
    assert read.total_params == full.total_params
    assert all(k in " ".join(read.notes) for k in left_out)
    assert TEXT_DEFAULTS["gemma3_text"]["vocab_size"] == 262_208


def test_embed_tokens_is_a_lora_target() -> None:
    arch = Architecture.from_hf_config(_config("qwen3-30b-a3b"))
    rank = 16
    with_embed = lora.lora_params(arch, rank, ["q_proj", "v_proj", "embed_tokens"])
    without = lora.lora_params(arch, rank, ["q_proj", "v_proj"])
    # PEFT's lora.Embedding: lora_embedding_A (r, num_embeddings) and lora_embedding_B
    # (embedding_dim, r).
    assert with_embed - without == rank * (151_936 + 2048)
    result = _plan(
        "qwen3-30b-a3b", method="qlora", lora_targets=["q_proj", "v_proj", "embed_tokens"]
    )
    assert result.compute.params_trainable == with_embed


@settings(max_examples=60, deadline=None)
@given(
    vision=st.dictionaries(
        st.sampled_from(
            [
                "model_type",
                "hidden_size",
                "intermediate_size",
                "num_hidden_layers",
                "patch_size",
                "image_size",
                "vision_use_head",
            ]
        ),
        st.one_of(
            st.integers(-5, 5000),
            st.text(max_size=5),
            st.none(),
            st.booleans(),
            st.floats(allow_nan=True),
            st.just("siglip_vision_model"),
        ),
    ),
    quant=st.one_of(
        st.none(),
        st.text(max_size=5),
        st.dictionaries(
            st.sampled_from(["quant_method", "modules_to_not_convert"]),
            st.one_of(st.text(max_size=8), st.none(), st.lists(st.text(max_size=4))),
        ),
    ),
)
def test_any_vision_config_or_quantization_config_is_a_note_never_a_crash(
    vision: dict, quant: object
) -> None:
    cfg = {**_config("gemma-3-4b-it"), "vision_config": vision, "quantization_config": quant}
    arch = Architecture.from_hf_config(cfg)
    assert arch.vocab == 262_208
    assert all(isinstance(n, str) and n for n in arch.notes)
