"""FLOPs per token: the model's (what the method must compute) and the hardware's (what the GPUs run).

Model FLOPs follow PaLM's definition (Chowdhery et al. 2022, Appendix B) with causal attention: 6·N per token
for a full fine-tune (forward 2N, backward 4N; Transformer Math 101) plus attention, no recomputation. For
LoRA/QLoRA the frozen weights have no weight-gradient GEMMs, so the model FLOPs are 4·N + 6·T (forward, input
gradients, and the adapters' three passes) plus attention: the work the method cannot avoid, so that achieved
MFU stays comparable across methods and never exceeds the GEMM efficiency. Hardware FLOPs add recomputation
(full checkpointing repeats the forward; selective only the attention core) and, for eager attention, the
masked half of the score matmuls. Time is not computed here: see kernels.py and step_time.py.
"""

from __future__ import annotations

from typing import Any

from core.planner.models import Attention, Method, TrainingSpec
from core.planner.params import Architecture

Num = Any


def matmul_params(arch: Architecture) -> float:
    """Active parameters that take part in matmuls: the input embedding is a lookup, the LM head is not."""
    return float(arch.active_params - arch.embedding_params + arch.vocab * arch.hidden)


def attention_span(arch: Architecture, seq_len: Num) -> Num:
    """Keys each query attends to, at most: the sequence, or the sliding window where the model has one."""
    return seq_len if not arch.sliding_window else min(seq_len, arch.sliding_window) + 0 * seq_len


def attention_forward_flops(arch: Architecture, seq_len: Num) -> Num:
    """Causal attention forward FLOPs per token, all layers: 2 matmuls × 2·s·a·d, halved by the mask."""
    return 2.0 * arch.layers * arch.heads * arch.head_dim * attention_span(arch, seq_len)


def model_flops_per_token(arch: Architecture, training: TrainingSpec, seq_len: Num, trainable: float) -> Num:
    """6N + causal attention (full) or 4N + 6T + causal attention (LoRA/QLoRA); no recomputation."""
    n = matmul_params(arch)
    attention = 3.0 * attention_forward_flops(arch, seq_len)  # forward + backward (2×), PaLM's convention
    if training.method is Method.full:
        return 6.0 * n + attention
    return 4.0 * n + 6.0 * trainable + attention


def flops_per_token(arch: Architecture, training: TrainingSpec, seq_len: Num, trainable: float) -> Num:
    """Hardware FLOPs per trained token: model FLOPs + recomputation + eager attention's masked half."""
    n = matmul_params(arch)
    attn_fwd = attention_forward_flops(arch, seq_len)
    total = model_flops_per_token(arch, training, seq_len, trainable)
    if training.attention is Attention.eager:
        total = total + 3.0 * attn_fwd  # no causal skip: the full s² scores, forward and backward
    regime = training.checkpointing
    attn_rerun = attn_fwd * (2.0 if training.attention is Attention.eager else 1.0)
    if regime == "full":
        adapters = 0.0 if training.method is Method.full else 2.0 * trainable
        total = total + 2.0 * n + adapters + attn_rerun
    elif regime == "selective":
        total = total + attn_rerun
    return total
