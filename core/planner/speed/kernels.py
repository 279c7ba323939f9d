"""How long each kind of GPU work takes: GEMMs, attention, memory-bound passes, launches, the
optimizer step.

The step model (core/planner/speed/step_time.py) times a training step as the sum of explicit costs
instead of one utilisation factor, because the costs scale differently: a LoRA adapter GEMM of rank
16 moves more bytes than it computes (it is memory-bound at any size), a norm or a residual add is
pure HBM traffic, and attention runs in its own kernel at its own efficiency. Every function takes
scalars or NumPy arrays that broadcast (GPU type × GPUs per node × nodes × micro-batch), like the
rest of the planner. Sources: docs/formulas.md, "Compute".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.catalog.records import GPU
from core.planner.model.states import master_bytes, optimizer_state_bytes, weight_bytes
from core.planner.request import Attention, Optimizer, Precision
from core.planner.speed import efficiency

Num = Any

MAMF_SOURCE = (
    "stas00/ml-engineering compute/accelerator/README.md, 'Maximum Achievable Matmul FLOPS "
    "comparison table' (matmul TFLOP/s, mean of 100 iterations, best shape, ÷ dense peak)"
)
# No published MAMF row nor measured rate (L40S, A10, V100, T4, H100 PCIe/NVL, user GPUs):
# heuristic, the low end of the NVIDIA rows of the MAMF table (GB200 72.9% … A100 SXM 86.9%),
# because such cards run power-limited.
FALLBACK_MATMUL_EFFICIENCY = 0.70

# Attention kernel efficiency, forward + backward, as a fraction of the dense peak, by GPU
# architecture. FlashAttention-2 (Dao 2023, arXiv:2307.08691): "50-73% of the theoretical maximum
# FLOPs/s on A100"; the 73% is the forward pass at long sequences and training is dominated by the
# backward (5 of its 7 matmuls), so the low end is used. On H100 the same kernels reach "up to 335
# TFLOPs/s" (§4.1, Fig. 8): 335 / 989.5 = 0.339. torch SDPA on sm80+ dispatches to these
# FlashAttention-2 kernels, so `sdpa` and `flash` share the figure. On an RTX 4090 (Ada) the
# FlashAttention-2 kernels, causal, head dim 128, 2k tokens, run 151.19 TFLOP/s forward and 99.23
# backward (apache/tvm tl_doc/flash_perf.md, the "Flash_attn" column, CUDA 12.2); with the backward
# 2.5× the forward's FLOPs: 3.5 ÷ (1/151.19 + 2.5/99.23) = 110.0 TFLOP/s = 66.6% of 165.2. Every Ada
# card takes that figure, held at the card's own matmul rate (gpu_rates.rates): an L4 cannot run
# attention's matmuls faster than its power cap lets it run any other.
ADA_ATTENTION_TFLOPS = 3.5 / (1 / 151.19 + 2.5 / 99.23)
ATTENTION_EFFICIENCY = {
    "ampere": 0.50,
    "hopper": 335 / 989.5,
    "adalovelace": ADA_ATTENTION_TFLOPS / 165.2,
}
ATTENTION_SOURCE = {
    "ampere": "FlashAttention-2 (arXiv:2307.08691): 50–73% of A100 peak; the low end "
    "(backward-dominated)",
    "hopper": "FlashAttention-2 (arXiv:2307.08691 §4.1): up to 335 TFLOP/s on H100 = 34% of 989.5",
    "adalovelace": "FlashAttention-2 on an RTX 4090, causal, head dim 128 "
    "(github.com/apache/tvm/blob/bd6f9570/tl_doc/flash_perf.md): 151.19 TFLOP/s forward, "
    "99.23 backward = 110.0 fwd+bwd, 67% of 165.2",
}
# Heuristic for every other architecture (Blackwell, AMD, Gaudi, Volta/Turing): no published fwd+bwd
# figure at hand; the Hopper value, a kernel not tuned for the chip.
FALLBACK_ATTENTION_EFFICIENCY = 335 / 989.5

# Eager attention: the score matrix passes of transformers' eager_attention_forward (scale, mask
# add, softmax upcast to fp32, cast back) read and write 2+2, 2+2, 2+4, 4+2 = 20 bytes per score
# element forward; backward ≈ 2× the forward traffic (the same passes in reverse plus the gradient
# of each).
EAGER_SCORE_BYTES_FORWARD = 20.0
# Megatron's own attention core (megatron/core/transformer/dot_product_attention.py) runs the score
# passes as one fused kernel, FusedScaleMaskSoftmax (scaled_upper_triang_masked_softmax: reads the
# 16-bit scores, writes 16-bit probabilities, fp32 only in registers) = 2+2 bytes, then its
# attention dropout (default 0.1, --attention-dropout in megatron/training/arguments.py; NeMo's GPT
# configs keep it) reads 2, writes 2 and a 1-byte mask = 5: 9 bytes per score element forward.
FUSED_SOFTMAX_SCORE_BYTES_FORWARD = 4.0 + 5.0
# FlashAttention-2 §4.1: "2 matmuls in the forward pass and 5 matmuls in the backward"
BACKWARD_FLASH_FACTOR = 2.5
# elementwise backward reads the saved input and the incoming gradient, writes one
BACKWARD_BYTES_FACTOR = 2.0

# Launch floor. Heuristic: a few microseconds per kernel, the order NVIDIA's CUDA Graphs post
# measures for back-to-back launches of short kernels (developer.nvidia.com/blog/cuda-graphs/),
# before PyTorch's own dispatch.
LAUNCH_S = 4e-6
# QLoRA: NF4 weights are dequantized to bf16 before each use: read ½ byte (+ the constants), write 2
# bytes.
DEQUANT_BYTES_PER_PARAM = 0.5 + 2.0
HBM_FALLBACK_GBS = 1000.0  # heuristic: a GPU whose catalog entry gives no memory bandwidth


def _arch_key(architecture: str) -> str:
    return architecture.lower().replace(" ", "").replace("-", "")


def matmul_efficiency(
    gpu: GPU, precision: Precision, measured_tflops: float | None = None
) -> tuple[float, str]:
    """E_mm and where it comes from: the probe's measured matmul ÷ peak, the MAMF table, or the
    heuristic."""
    peak = gpu.peak_tflops(precision.value)
    if measured_tflops:
        return min(
            1.0, measured_tflops / peak
        ), f"measured: {measured_tflops:,.0f} TFLOP/s ÷ {peak:,.0f} peak"
    fp8 = precision is Precision.fp8 and gpu.fp8_tflops is not None
    value = gpu.matmul_efficiency_fp8 if fp8 else gpu.matmul_efficiency_bf16
    key = "matmul_efficiency_fp8" if fp8 else "matmul_efficiency_bf16"
    if value is not None:
        return value, gpu.notes.get(key) or f"{MAMF_SOURCE}: {gpu.sources.get(key, gpu.id)}"
    return FALLBACK_MATMUL_EFFICIENCY, (
        f"heuristic: no published MAMF for {gpu.id}; {FALLBACK_MATMUL_EFFICIENCY:.0%}, the low "
        "end of the "
        "table's NVIDIA rows"
    )


def attention_efficiency(architecture: str) -> tuple[float, str]:
    """Flash/SDPA forward + backward efficiency (fraction of peak) for a GPU architecture, with its
    source."""
    key = _arch_key(architecture)
    if key in ATTENTION_EFFICIENCY:
        return ATTENTION_EFFICIENCY[key], ATTENTION_SOURCE[key]
    return (
        FALLBACK_ATTENTION_EFFICIENCY,
        "heuristic: the FlashAttention-2 H100 figure (no published one for it)",
    )


def hbm_bytes_per_s(gpu: GPU) -> float:
    return (gpu.memory_bandwidth_gbs or HBM_FALLBACK_GBS) * 1e9


# ----------------------------------------------------------------------------- rooflines


def gemm_seconds(m: Num, n: Num, k: Num, peak_flops: Num, hbm: Num, elem: float = 2.0) -> Num:
    """One GEMM (m×k)·(k×n): max(2mnk ÷ (peak·E_mm·f(d)), (mk + kn + mn)·elem ÷ HBM) — the roofline.

    `peak_flops` is already peak × E_mm (FLOP/s); `hbm` is bytes/s. f(d) = d ÷ (d + D½) for the
    smallest dimension d (efficiency.gemm_size_factor): a small GEMM fills fewer tiles and waves
    than the benchmark's best shape. A GEMM with a small dimension (a LoRA adapter of rank r, a
    micro-batch of a few tokens) has low arithmetic intensity and usually lands on the HBM side
    anyway.
    """
    flops = 2.0 * m * n * k / efficiency.gemm_size_factor(m, n, k)
    traffic = (m * k + k * n + m * n) * elem
    return np.maximum(flops / peak_flops, traffic / hbm)


def causal_attention_flops(
    tokens: Num, seq_len: Num, heads: Num, head_dim: Num, causal: bool = True
) -> Num:
    """Forward FLOPs of attention's two matmuls (QKᵀ and PV) for `tokens` tokens of sequences of
    `seq_len`.

    Per token per layer: 2 matmuls × 2 FLOPs × s × a·d non-causal (FlashAttention-2 §4.1: 4·s²·d·a
    per sequence); causal masking skips the masked tiles, half of them.
    """
    full = 4.0 * tokens * seq_len * heads * head_dim
    return full / 2.0 if causal else full


def attention_seconds(
    kind: Attention,
    tokens: Num,
    seq_len: Num,
    heads: Num,
    head_dim: Num,
    forward_runs: float,
    peak: Num,
    attn_eff: Num,
    mm_eff: Num,
    hbm: Num,
    fused_softmax: bool = False,
) -> Num:
    """The attention core of one micro-batch: `forward_runs` forwards (2 when recomputed) and one
    backward.

    flash/sdpa: causal FLOPs at the kernel's efficiency, backward = 2.5 × forward (FlashAttention-2
    §4.1: 5 matmuls in the backward vs 2 in the forward); no s² traffic, the tiles stay on chip.
    eager: the full s² matmuls (no causal skip) at GEMM efficiency, each a roofline because its s×s
    output goes to HBM, plus the score softmax/mask passes as memory-bound bytes (transformers'
    separate passes, or Megatron's fused softmax and dropout under `fused_softmax`); its backward
    runs 4 matmuls (2×).
    """
    if kind is not Attention.eager:
        flops = causal_attention_flops(tokens, seq_len, heads, head_dim)
        return (forward_runs + BACKWARD_FLASH_FACTOR) * flops / (peak * attn_eff)
    sequences = tokens / seq_len
    qk = gemm_seconds(seq_len, seq_len, head_dim, peak * mm_eff, hbm)  # (s×d)·(d×s) per head
    pv = gemm_seconds(seq_len, head_dim, seq_len, peak * mm_eff, hbm)  # (s×s)·(s×d) per head
    per_score = FUSED_SOFTMAX_SCORE_BYTES_FORWARD if fused_softmax else EAGER_SCORE_BYTES_FORWARD
    scores = sequences * heads * seq_len * seq_len * per_score / hbm
    return (forward_runs + BACKWARD_BYTES_FACTOR) * (sequences * heads * (qk + pv) + scores)


def memory_seconds(bytes_moved: Num, hbm: Num) -> Num:
    return bytes_moved / hbm


def launch_floor_seconds(kernels: Num) -> Num:
    return kernels * LAUNCH_S


# ----------------------------------------------------------------------------- optimizer


def optimizer_bytes_per_param(
    optimizer: Optimizer, precision: Precision, foreach: bool = False
) -> float:
    """HBM bytes one optimizer step moves per trainable parameter.

    Fused (one kernel): read and write the stepped weight (the fp32 master under mixed precision),
    read the gradient, read and write every state, and write the 16-bit working copy when a master
    exists. AdamW, amp_bf16: 4+4 + 2 + 8+8 + 2 = 28 B; pure bf16: 2+2 + 2 + 4+4 = 14 B; 8-bit
    Adam: 4+4 + 2 + 2+2 + 2 = 16 B.

    `foreach` (AdamW only): PyTorch's multi-tensor AdamW makes one pass per operation
    (torch/optim/adam.py, _multi_tensor_adam): weight decay `_foreach_mul_(params)` (2p),
    `_foreach_lerp_(exp_avgs, grads)` (2s + g), `_foreach_mul_(exp_avg_sqs)` (2s),
    `_foreach_addcmul_(exp_avg_sqs, grads, grads)` (2s + g), `_foreach_sqrt(exp_avg_sqs)` into a
    new list (2s), `_foreach_div_` and `_foreach_add_` on it (2s each), and
    `_foreach_addcdiv_(params, exp_avgs, denom)` (2p + 2s): 4p + 12s + 2g, with the working copy.
    Pure bf16: 8 + 24 + 4 = 36 B; amp_bf16: 16 + 48 + 4 + 2 = 70 B.
    """
    master = master_bytes(precision)
    stepped = master or weight_bytes(precision)
    state = optimizer_state_bytes(optimizer, precision)
    grad = weight_bytes(precision)
    copy = weight_bytes(precision) if master else 0.0
    if foreach and optimizer is Optimizer.adamw:
        one_state = state / 2
        return 4 * stepped + 12 * one_state + 2 * grad + copy
    return 2 * stepped + grad + 2 * state + copy


def clipping_bytes_per_param(precision: Precision) -> float:
    """HBM bytes the gradient-norm clipping before each step moves per trainable parameter.

    Every stack planned here clips by the global norm by default (transformers' `max_grad_norm`
    1.0, torchtitan's `max_norm` 1.0, Megatron's `--clip-grad` 1.0, nanoGPT's `grad_clip` 1.0).
    `torch.nn.utils.clip_grad_norm_` reads every gradient once for the per-tensor norms
    (`torch._foreach_norm`) and then scales all of them by the clamped coefficient
    (`torch._foreach_mul_`, read and write), whether or not the norm exceeded the threshold
    (torch/nn/utils/clip_grad.py): 3·G. Megatron-Core's `clip_grad_by_total_norm_fp32` scales
    only when the norm is over the threshold (megatron/core/optimizer/clip_grads.py), so for it
    3·G is the step's cost while gradients are being clipped, G once they are not.
    """
    return 3 * weight_bytes(precision)


def optimizer_seconds(
    trainable_per_gpu: Num,
    optimizer: Optimizer,
    precision: Precision,
    hbm: Num,
    foreach: bool = False,
    clipped: bool = True,
) -> Num:
    """One optimizer step on the GPU, with the gradient clipping before it when `clipped`:
    memory-bound (a handful of FLOPs per byte), at HBM bandwidth."""
    step = optimizer_bytes_per_param(optimizer, precision, foreach)
    clip = clipping_bytes_per_param(precision) if clipped else 0.0
    return trainable_per_gpu * (step + clip) / hbm
