"""FLOPs, achieved throughput and the default MFU.

Training FLOPs per token ≈ 6·N (forward 2N, backward 4N) plus attention 12·L·a·d·s (PaLM's model-FLOPs
definition); full recomputation repeats the forward (8N). LoRA skips the frozen weights' gradient matmuls
(≈ 4N plus the adapters). Time = FLOPs ÷ (GPUs × peak × MFU). See docs/formulas.md, "Compute".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.planner.models import Method, TrainingSpec
from core.planner.params import Architecture

Num = Any

# MFU by GPU architecture for dense full training at scale, from published runs (docs/formulas.md):
# A100: Llama 1/2 model cards imply 45–55% counting attention; H100: Llama 3 405B reports 38–43%.
BASE_MFU = {
    "ampere": 0.48,
    "hopper": 0.40,
    "blackwell": 0.35,
    "adalovelace": 0.40,
    "ada": 0.40,
    "volta": 0.35,
    "turing": 0.30,
    "cdna3": 0.30,
    "cdna2": 0.30,
}
FALLBACK_MFU = 0.35
BASE_MFU_SOURCE = "Llama 2 model card (A100, ≈45% implied); Llama 3 paper §3.3 (H100, 38–43%)"
# Adapters cost throughput: small matmuls and (QLoRA) dequantisation on every forward and backward.
METHOD_MFU_FACTOR = {Method.full: 1.0, Method.lora: 0.8, Method.qlora: 0.6}
FULL_EFFICIENCY_TOKENS = 2048  # micro-batch tokens per GPU below which kernels run under-occupied


def matmul_params(arch: Architecture) -> float:
    """Active parameters that take part in matmuls: the input embedding is a lookup, the LM head is not."""
    return float(arch.active_params - arch.embedding_params + arch.vocab * arch.hidden)


def flops_per_token(arch: Architecture, training: TrainingSpec, seq_len: Num, trainable: float) -> Num:
    """Hardware FLOPs per trained token, including recomputation when checkpointing."""
    n = matmul_params(arch)
    attention = 12.0 * arch.layers * arch.heads * arch.head_dim * seq_len
    if training.method is Method.full:
        per_token = 6.0 * n + attention
        recompute = 2.0 * n + attention / 3.0
    else:
        per_token = 4.0 * n + 6.0 * trainable + attention
        recompute = 2.0 * n + attention / 3.0
    if training.checkpointing == "selective":
        recompute = attention / 3.0  # only the attention core's forward is repeated (Korthikanti et al. 2022 §5)
    return per_token + recompute * (training.checkpointing != "none")


def base_mfu(architecture: str) -> float:
    """The generation's MFU; catalog names like 'CDNA 3' or 'Ada Lovelace' match without spaces."""
    return BASE_MFU.get(architecture.lower().replace(" ", "").replace("-", ""), FALLBACK_MFU)


def default_mfu(architecture: str, method: Method, micro_batch_tokens: Num) -> Num:
    """MFU for a GPU generation and job, before communication; lower for adapters and tiny micro-batches."""
    base = base_mfu(architecture)
    occupancy = np.minimum(1.0, (np.asarray(micro_batch_tokens, dtype=float) / FULL_EFFICIENCY_TOKENS) ** 0.25)
    return base * METHOD_MFU_FACTOR[method] * occupancy


def compute_seconds(tokens: Num, flops_token: Num, gpus: Num, peak_tflops: Num, mfu: Num) -> Num:
    return tokens * flops_token / (gpus * peak_tflops * 1e12 * mfu)
