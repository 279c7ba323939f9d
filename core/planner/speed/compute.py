"""FLOPs per token: the model's (what the method must compute) and the hardware's (what the GPUs
run).

Model FLOPs follow PaLM's definition (Chowdhery et al. 2022, Appendix B) with causal attention: 6·N
per token for a full fine-tune (forward 2N, backward 4N; Transformer Math 101) plus attention, no
recomputation. For LoRA/QLoRA the frozen weights have no weight-gradient GEMMs, so the model FLOPs
are 4·N + 6·T (forward, input gradients, and the adapters' three passes) plus attention: the work
the method cannot avoid, so that achieved MFU stays comparable across methods and never exceeds the
GEMM efficiency. Hardware FLOPs add recomputation (full checkpointing repeats the forward; selective
only the attention core) and, for eager attention, the masked half of the score matmuls. Time is not
computed here: see kernels.py and step_time.py.
"""

from __future__ import annotations

from typing import Any

from core.planner.model import attention_layers, lora
from core.planner.model.params import Architecture
from core.planner.request import Attention, Method, TrainingSpec

Num = Any


def matmul_params(arch: Architecture) -> float:
    """Active parameters that take part in matmuls: the input embedding is a lookup, the LM head is
    not."""
    return float(arch.active_params - arch.embedding_params + arch.vocab * arch.hidden)


def attention_span(arch: Architecture, seq_len: Num) -> Num:
    """Full-causal-equivalent span: 2 × the keys a query reads on average, over the model's layers.

    s for full causal attention; each layer's window (sliding) or chunk (Llama 4) shortens its own
    term only (attention_layers.layer_span derives each kind), so Gemma 3's five local layers per
    global one, gpt-oss's alternating 128-token windows and Mistral v0.1's window on every layer
    each count what they read.
    """
    return attention_layers.mean_span(arch.attention_pattern, seq_len)


def attention_forward_flops(arch: Architecture, seq_len: Num) -> Num:
    """Causal attention forward FLOPs per token, all layers: QKᵀ (2·d_qk per key) and PV (2·d_v per
    key) per head over the mean keys k̄ = span/2 of each query: L · a · (d_qk + d_v) · span.

    d_qk = d_v = head_dim except under MLA, whose queries and keys are nope + rope wide (192 for
    DeepSeek-V3) and values v_head_dim (128).
    """
    return (
        arch.layers
        * arch.heads
        * (arch.qk_head_dim + arch.value_head_dim)
        * attention_span(arch, seq_len)
    )


def eager_attention_forward_flops(arch: Architecture, seq_len: Num) -> Num:
    """Forward FLOPs of eager attention per token: the full s×s score and PV matmuls of every layer,
    whatever the mask or window (transformers' eager_attention_forward multiplies q by every key,
    then adds the mask): L · a · (d_qk + d_v) · 2s."""
    return arch.layers * arch.heads * (arch.qk_head_dim + arch.value_head_dim) * 2.0 * seq_len


def model_flops_per_token(
    arch: Architecture, training: TrainingSpec, seq_len: Num, trainable: float
) -> Num:
    """6N + causal attention (full) or 4N + 6T + causal attention (LoRA/QLoRA); no recomputation."""
    n = matmul_params(arch)
    # forward + backward (2×), PaLM's convention
    attention = 3.0 * attention_forward_flops(arch, seq_len)
    if training.method is Method.full:
        return 6.0 * n + attention
    return 4.0 * n + 6.0 * trainable + attention


def flops_per_token(
    arch: Architecture, training: TrainingSpec, seq_len: Num, trainable: float
) -> Num:
    """Hardware FLOPs per trained token: model FLOPs + recomputation + eager attention's masked
    half."""
    n = matmul_params(arch)
    attn_fwd = attention_forward_flops(arch, seq_len)
    total = model_flops_per_token(arch, training, seq_len, trainable)
    attn_rerun = attn_fwd
    if training.attention is Attention.eager:
        eager = eager_attention_forward_flops(arch, seq_len)
        # no causal or window skip: the full s² scores, fwd and bwd
        total = total + 3.0 * (eager - attn_fwd)
        attn_rerun = eager
    regime = training.checkpointing
    if regime == "full":
        # Every block recomputes its forward under true; ⌊L/k⌋ of the L blocks with
        # checkpoint_every_k_blocks k.
        recomputed = training.checkpointed_fraction(arch.layers)
        adapters = 0.0 if training.method is Method.full else 2.0 * trainable
        total = total + recomputed * (2.0 * n + adapters + attn_rerun)
    elif regime == "selective":
        total = total + attn_rerun
    return total + wrapped_expert_flops_per_token(arch, training, seq_len)


def wrapped_expert_flops_per_token(arch: Architecture, training: TrainingSpec, seq_len: Num) -> Num:
    """What PEFT's ParamWrapper adds for the fused expert weights ``lora_target_parameters`` names:
    their full weight gradient (2 FLOPs per active expert weight per token), and ΔW = B·A built for
    every expert in each forward and turned back into A's and B's gradients in backward (3 ×
    2·E·d_in·d_out·r per MoE layer and sequence: counted per sequence of seq_len tokens, an upper
    bound for larger micro-batches)."""
    if (
        training.method is Method.full
        or not training.lora_target_parameters
        or not arch.experts_fused
    ):
        return 0.0 * seq_len
    rank = training.lora_rank or 16
    wgrad = 0.0
    delta = 0.0
    for p in lora.expert_parameters(arch, training.lora_target_parameters):
        wgrad += 2.0 * p.d_in * p.d_out * arch.experts_per_token * arch.moe_layers
        delta += 3.0 * 2.0 * p.elements * rank * arch.moe_layers
    return wgrad + delta / seq_len
