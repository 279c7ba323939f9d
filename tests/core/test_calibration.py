"""The planner against published figures (tests/fixtures/planner/calibration_cases.json).

Each expectation is a measurement or a formula value printed by its source (paper, DeepSpeed docs, litgpt's
README, model cards) and quoted in the fixture; none is computed by tuneplan.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.catalog import load_catalog
from core.models import Assumptions, DataSpec, HardwareSpec, PlanRequest, TrainingSpec
from core.planner import compute, memory
from core.planner.params import Architecture
from core.planner.plan import plan

CASES = {
    c["id"]: c for c in json.loads((Path(__file__).parents[1] / "fixtures/planner/calibration_cases.json").read_text())
}
GIB = 2**30


def _states(
    params: float, sharding: str, offload: str = "none", accounting: str = "deepspeed", largest: float = 0.0, n: int = 8
) -> float:
    arch = Architecture.from_param_count(params)
    training = TrainingSpec(method="full", precision="amp_fp16", optimizer="adamw", sharding=sharding, offload=offload)
    s = memory.model_states(
        arch,
        training,
        dp=n,
        gpus_per_node=8,
        zero_accounting=accounting,
        total_params=params,
        largest_layer_params=largest,
    )
    return float(s.weights + s.gradients + s.optimizer + s.gathered)


@pytest.mark.parametrize(
    ("case", "sharding"),
    [
        ("zero-paper-7.5b-baseline", "none"),
        ("zero-paper-7.5b-pos", "zero1"),
        ("zero-paper-7.5b-posg", "zero2"),
        ("zero-paper-7.5b-posgp", "zero3"),
    ],
)
def test_zero_paper_table(case: str, sharding: str) -> None:
    """ZeRO paper Figure 1: Ψ = 7.5B, N_d = 64, K = 12 → 120 / 31.4 / 16.6 / 1.9 GB."""
    got = _states(7.5e9, sharding, accounting="paper", n=64) / 1e9
    assert got == pytest.approx(CASES[case]["value"], rel=0.03)


@pytest.mark.parametrize(
    ("case", "sharding", "offload", "expected_gib"),
    [
        # The doc's 15.93 GiB predates DeepSpeed PR #5099 (4P + 16P/N); the current estimator prints 2P + 18P/N,
        # the figure the case note gives (11.28 GiB), and that is what DeepSpeed actually allocates.
        ("ds-doc-t5-3b-zero2-no-offload", "zero2", "none", 11.28),
        ("ds-doc-t5-3b-zero2-offload", "zero2", "optimizer", None),
        ("ds-doc-t5-3b-zero3-no-offload", "zero3", "none", None),
        ("ds-doc-t5-3b-zero3-offload-opt", "zero3", "optimizer", None),
        ("ds-doc-t5-3b-zero3-offload-all", "zero3", "optimizer_and_params", None),
    ],
)
def test_deepspeed_estimator_examples(case: str, sharding: str, offload: str, expected_gib: float | None) -> None:
    """DeepSpeed memory docs, T5-3B: 2851M params, largest layer 32M, 8 GPUs (GiB)."""
    got = _states(2851e6, sharding, offload, largest=32e6, n=8) / GIB
    assert got == pytest.approx(expected_gib or CASES[case]["value"], rel=0.03)


def _litgpt_request(case: dict) -> tuple[Architecture, TrainingSpec]:
    m = case["model"]
    name = m["name"].lower()
    cfg = {
        "hidden_size": m["hidden"],
        "num_hidden_layers": m["layers"],
        "num_attention_heads": m["heads"],
        "num_key_value_heads": m["kv_heads"],
        "vocab_size": m["vocab"],
        "intermediate_size": m["intermediate"] or 4 * m["hidden"],
        "model_type": "llama",
    }
    if "falcon" in name:
        cfg.update(model_type="falcon", tie_word_embeddings=True)
    elif "phi-2" in name:
        cfg.update(model_type="phi")
    elif "stablelm-base-alpha" in name:
        cfg.update(model_type="gpt_neox")
    elif "gemma" in name:
        cfg.update(tie_word_embeddings=True)
    lora = case["other_settings"].get("lora")
    method = {"LoRA": "lora", "QLoRA": "qlora", "full": "full"}[case["method"]]
    training = TrainingSpec(
        method=method,
        lora_rank=lora["r"] if lora else None,
        lora_targets=",".join(lora["targets"]) if lora else "all-linear",
        lora_dropout=lora["dropout"] if lora else 0.0,
        precision="pure_bf16",  # litgpt bf16-true
        optimizer="paged_adamw_32bit" if method == "qlora" else "adamw",
        gradient_checkpointing=False,
        attention="sdpa",
        micro_batch_size=case["micro_batch"],
        double_quant=False,
    )  # bnb.nf4, not nf4-dq
    return Architecture.from_hf_config(cfg, m["name"]), training


# Known gaps, kept visible instead of tuned away: litgpt's QLoRA peaks sit 15–25% above what the physics of
# NF4 weights + saved activations gives (the excess grows with the model, ~0.3–0.5 B per quantized parameter).
# litgpt itself tracked QLoRA using *more* memory than LoRA as a bug (Lightning-AI/litgpt#1112: TinyLlama
# 18.15 GB with bnb.nf4 vs 14.49 GB without), so these rows measure an implementation overhead we do not model.
# Phi-2's all-linear LoRA with the LM head is over-predicted by ~16% (litgpt fuses q, k, v: one dropout copy
# where PEFT keeps three). strict=True: the marker fails as soon as the model gets them right.
KNOWN_GAPS = {
    "litgpt-falcon-7b-qlora",
    "litgpt-gemma-7b-qlora",
    "litgpt-llama2-7b-qlora",
    "litgpt-llama3-8b-qlora",
    "litgpt-mistral-7b-qlora",
    "litgpt-phi2-lora",
}
LITGPT = [
    pytest.param(k, marks=pytest.mark.xfail(strict=True, reason="documented calibration gap")) if k in KNOWN_GAPS else k
    for k in sorted(k for k in CASES if k.startswith("litgpt-"))
]


@pytest.mark.parametrize("case_id", LITGPT)
def test_litgpt_measured_peak_allocated(case_id: str) -> None:
    """litgpt reports torch.cuda.max_memory_allocated()/1e9 on one A10G: predict *allocated* memory."""
    case = CASES[case_id]
    arch, training = _litgpt_request(case)
    est = memory.estimate(
        arch, training, dp=1, gpus_per_node=1, micro_batch=case["micro_batch"], seq_len=case["seq_len"]
    )
    assert float(est.allocated) / 1e9 == pytest.approx(case["value"], rel=0.15)


GPU_HOURS = sorted(k for k in CASES if k.endswith("-gpu-hours"))


@pytest.mark.parametrize("case_id", GPU_HOURS)
def test_pretraining_gpu_hours_with_default_mfu(case_id: str) -> None:
    """Llama 1/2 model cards: A100-80GB GPU-hours for 1–2T tokens, against FLOPs ÷ (peak × default MFU)."""
    case = CASES[case_id]
    m = case["model"]
    cfg = {
        "hidden_size": m["hidden"],
        "num_hidden_layers": m["layers"],
        "num_attention_heads": m["heads"],
        "num_key_value_heads": m["kv_heads"] or m["heads"],
        "vocab_size": m["vocab"],
        "intermediate_size": m["intermediate"],
        "model_type": "llama",
    }
    arch = Architecture.from_hf_config(cfg)
    tokens = case["other_settings"]["tokens"]
    seq = case["seq_len"]
    request = PlanRequest(
        model={"params": arch.total_params},
        data=DataSpec(tokens=tokens, seq_len=seq),
        training=TrainingSpec(method="full", gradient_checkpointing=False, micro_batch_size=1),
        hardware=HardwareSpec(gpu="A100-80GB-SXM", gpus_per_node=8, nodes=256),
    )
    gpu = load_catalog().gpu("A100-80GB-SXM")
    fpt = compute.flops_per_token(arch, request.training, seq, float(arch.total_params))
    mfu = compute.default_mfu(gpu.architecture, request.training.method, seq)
    hours = compute.compute_seconds(tokens, fpt, 1, gpu.peak_tflops("amp_bf16"), mfu) / 3600
    assert float(hours) == pytest.approx(case["value"], rel=0.20)


def test_worked_budget_example() -> None:
    """REFERENCES.md: 7B × 5e8 tokens at 100 TFLOP/s achieved on one A100 → 6·7e9·5e8 / 1e14 s ≈ 58 h.

    The engine also counts attention FLOPs (12·L·h·s per token, +7% at 2k context), so allow 10%."""
    gpu = load_catalog().gpu("A100-80GB-SXM")
    request = PlanRequest(
        model={"params": 7e9},
        data={"tokens": 5e8, "seq_len": 2048},
        training={"method": "full", "gradient_checkpointing": False, "precision": "amp_bf16"},
        hardware={"gpu": gpu.id, "gpus_per_node": 1, "nodes": 1},
        assumptions=Assumptions(mfu=100 / gpu.peak_tflops("amp_bf16")),
    )
    result = plan(request)
    solve_hours = result.compute.steps * result.compute.step_time_s / 3600
    assert solve_hours == pytest.approx(58.3, rel=0.10)
    # 8 GPUs: "≈ 7 h ideal" before communication.
    eight = plan(request.model_copy(update={"hardware": HardwareSpec(gpu=gpu.id, gpus_per_node=8)}))
    assert eight.compute.steps * eight.compute.step_time_s / 3600 == pytest.approx(58.3 / 8, rel=0.15)
