"""The step model's named efficiencies: a handful of physical constants, each at its cited prior.

The explicit costs (step_time.py) take their rates from benchmarks: the best-shape matmul (MAMF
table), the FlashAttention-2 paper, HBM bandwidth. Each constant below names one way a training run
differs from a benchmark and holds its prior with the source. None is fitted any more: fitting six
constants by search could not be repeated once per held-out source (leave-one-source-out,
docs/formulas.md "Calibration"), and the one Hopper factor fitted on Composer and AutoModel runs
made Megatron pre-training 18–25% too slow. What a stack keeps of the modelled step is now the
framework's own sustained efficiency (sustained.py), fitted in closed form per framework × method ×
GPU family, so every fold refits it exactly.

The planner reads every constant as `efficiency.NAME` at run time (never copied at import) so that a
study can patch it. No constant is per case or per model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.planner.request import Framework

Num = Any


@dataclass(frozen=True)
class Constant:
    """One efficiency: what it means, its prior and source, and the range a study may patch it
    within."""

    name: str
    meaning: str
    prior: float
    low: float
    high: float
    source: str


# ----------------------------------------------------------------------------- the values (priors)

# Sustained GEMM rate in training ÷ the best-shape benchmark (MAMF, or the probe's matmul), per GPU
# family.
GEMM_SUSTAINED_HOPPER = 1.0
GEMM_SUSTAINED_AMPERE = 1.0
# Ada cards share one silicon generation but not one power budget: an L4 has 72 W for a 121 TFLOP/s
# dense BF16 nameplate, an RTX 4090 450 W for 165. Their sustained rate is the nameplate × the clock
# fraction the power cap allows, min(1, TDP × this ÷ nameplate): dense BF16 nameplate TFLOP/s one
# watt sustains (prior: the L4's own datasheet ratio, so no listed card is throttled until runs of
# more than one power-capped card say otherwise).
ADA_TFLOPS_PER_WATT = 121 / 72
# Volta, Turing, AMD and Gaudi keep the benchmark rate; Blackwell takes Hopper's (`gemm_sustained`).
GEMM_SUSTAINED_OTHER = 1.0
# The GEMM dimension at which a matmul runs at half its large-shape rate: factor d ÷ (d + D½), d =
# the GEMM's smallest dimension (tokens, d_in or d_out).
GEMM_HALF_DIM = 128.0
# Flash/SDPA attention in training ÷ the FlashAttention-2 paper's figures
# (kernels.ATTENTION_EFFICIENCY).
ATTENTION_SCALE = 1.0
# Host-side seconds per decoder layer per micro-batch (forward + backward) of a Hugging Face model:
# module hooks, PEFT wrappers, FSDP's per-module pre/post hooks, the Python of every unfused op.
HF_LAYER_OVERHEAD_S = 1e-4

FAMILY_KEYS = ("hopper", "blackwell", "ampere", "ada", "other")

CONSTANTS: tuple[Constant, ...] = (
    Constant(
        "GEMM_SUSTAINED_HOPPER",
        "sustained GEMM rate ÷ MAMF, Hopper (and Blackwell)",
        1.0,
        0.6,
        1.05,
        "prior 1: the MAMF table as measured (stas00/ml-engineering, 'Maximum Achievable Matmul "
        "FLOPS', best shape, 100 iterations); H100's 700 W cap lowers clocks under sustained load",
    ),
    Constant(
        "GEMM_SUSTAINED_AMPERE",
        "sustained GEMM rate ÷ MAMF, Ampere",
        1.0,
        0.6,
        1.05,
        "prior 1: the MAMF table as measured (A100 SXM 86.9%)",
    ),
    Constant(
        "ADA_TFLOPS_PER_WATT",
        "Ada: dense BF16 nameplate TFLOP/s sustained per watt of TDP (power-capped clock)",
        121 / 72,
        0.5,
        2.5,
        "prior 1.68: the L4 datasheet's 121 TFLOP/s within its 72 W, i.e. the "
        "nameplate held at TDP; a card whose TDP ÷ nameplate is above the fitted value runs "
        "unthrottled",
    ),
    Constant(
        "GEMM_HALF_DIM",
        "GEMM dimension at half the large-shape rate",
        128.0,
        16.0,
        1024.0,
        "prior 128: NVIDIA Matrix Multiplication Background User's Guide (tile quantization; "
        "128-wide thread-block tiles leave a GEMM dimension below a tile mostly idle)",
    ),
    Constant(
        "ATTENTION_SCALE",
        "flash/SDPA fwd+bwd in training ÷ the FlashAttention-2 paper's rate",
        1.0,
        0.4,
        1.3,
        "prior 1: FlashAttention-2 (arXiv:2307.08691) 50% of A100 peak, 335 TFLOP/s on H100",
    ),
    Constant(
        "HF_LAYER_OVERHEAD_S",
        "host seconds per layer per micro-batch, Hugging Face stacks",
        1e-4,
        1e-6,
        1e-3,
        "prior 100 µs: ~10 µs of eager dispatch per module call (CUDA Graphs post, developer.nvidia"
        ".com/blog/cuda-graphs/: launch overheads of a few µs) × ~10 calls per layer forward and "
        "backward",
    ),
)

# Framework profiles whose model is a Hugging Face transformers module (hooks, PEFT wrappers): they
# pay HF_LAYER_OVERHEAD_S. Megatron-Core, torchtitan, litgpt and torchtune run their own module
# trees: no extra host time (what each stack keeps beyond that is its sustained efficiency,
# sustained.py).
HF_MODEL_FRAMEWORKS = frozenset(
    {Framework.hf_trainer, Framework.axolotl, Framework.deepspeed, Framework.unsloth}
)

# Frameworks whose default recipes run fused elementwise kernels (norm, RoPE, activation) without
# torch.compile: Megatron-Core with Transformer Engine (TE's LayerNormLinear fuses the norm into the
# GEMM; `apply_rope_fusion` and `bias_activation_fusion` default True in megatron/core/transformer/
# transformer_config.py). A documented default, not fitted.
FUSED_FRAMEWORKS = frozenset({Framework.megatron})


def overlaps_param_gather(framework: Framework) -> bool:
    """Whether the stack overlaps ZeRO-1/2's post-step parameter all-gather with the next forward:
    Megatron-Core's distributed optimizer with --overlap-param-gather, which NeMo's and
    Megatron-Bridge's recipes set (their performance recipes: overlap_param_gather=True). DeepSpeed
    ZeRO-1/2 and PyTorch's ZeroRedundancyOptimizer gather after the step."""
    return framework in FUSED_FRAMEWORKS


def fused_softmax(framework: Framework) -> bool:
    """Whether the stack's eager attention runs Megatron's fused scale-mask-softmax
    (kernels.FUSED_SOFTMAX_SCORE_BYTES_FORWARD) rather than transformers' separate score passes."""
    return framework in FUSED_FRAMEWORKS


def family(architecture: str) -> str:
    """The GPU family key of a catalog architecture name ('Hopper' → 'hopper').

    Blackwell is a family of its own: published runs on it (NVIDIA's MLPerf LoRA runs on B200 and
    GB200, universal-llm-trainer's on the RTX PRO 6000) fit its sustained efficiency, and a plan on
    a stack with no Blackwell run of its own falls back to the family's, as for any family. Its
    sustained-GEMM prior is Hopper's: the MAMF row is measured the same way and both lose clocks to
    their power caps under sustained load.
    """
    key = architecture.lower().replace(" ", "")
    if key.startswith("ada"):
        return "ada"
    return key if key in ("hopper", "blackwell", "ampere") else "other"


def gemm_sustained(architecture: str) -> float:
    """The sustained-GEMM factor of a GPU family (Ada's is its power-capped clock,
    `power_clock`)."""
    key = family(architecture)
    if key == "ada":
        return 1.0
    return float(
        {
            "hopper": GEMM_SUSTAINED_HOPPER,
            "blackwell": GEMM_SUSTAINED_HOPPER,
            "ampere": GEMM_SUSTAINED_AMPERE,
        }.get(key, GEMM_SUSTAINED_OTHER)
    )


def power_clock(architecture: str, tdp_w: float | None, bf16_tflops: float | None) -> float:
    """The clock fraction an Ada card's power cap allows under tensor load, min(1, TDP ×
    ADA_TFLOPS_PER_WATT ÷ nameplate): it slows GEMMs and attention alike. One constant covers the
    family because what differs between an L4 and an RTX 4090 is the watts per nameplate TFLOP/s,
    which the catalog states per card."""
    if family(architecture) != "ada" or not tdp_w or not bf16_tflops:
        return 1.0
    return min(1.0, tdp_w * ADA_TFLOPS_PER_WATT / bf16_tflops)


def gemm_size_factor(m: Num, n: Num, k: Num) -> Num:
    """d ÷ (d + D½) for the GEMM's smallest dimension d: small GEMMs fill fewer tiles and waves (≤
    1)."""
    d = np.minimum(np.minimum(m, n), k)
    return d / (d + GEMM_HALF_DIM)


def layer_overhead_s(framework: Framework) -> float:
    """Host seconds per layer per micro-batch pass (forward + backward) for a framework profile."""
    return HF_LAYER_OVERHEAD_S if framework in HF_MODEL_FRAMEWORKS else 0.0


def fused_elementwise(framework: Framework, compiled: bool) -> bool:
    """Whether the norm/RoPE/activation passes run fused: torch.compile, or a framework that fuses
    them."""
    return compiled or framework in FUSED_FRAMEWORKS


def constants() -> list[tuple[Constant, float]]:
    """Every constant with its shipped value, in table order."""
    return [(c, float(globals()[c.name])) for c in CONSTANTS]
