"""Activations per GPU: the tensors autograd saves for backward, layer by layer.

Per token and layer by attention implementation and method (a frozen linear saves no input; LoRA
dropout keeps its own copies), split by tensor/context/pipeline parallelism, and kept whole,
selectively or only at layer inputs by gradient checkpointing; plus one layer of transients and
PEFT's merged expert weights. `memory.estimate` adds them to the model states; docs/formulas.md,
"Activations", gives the sources.
"""

from __future__ import annotations

from typing import Any

from core.planner.model import parallel, savers
from core.planner.model.lora import expert_parameters, target_parameter_kinds, target_set
from core.planner.model.params import Architecture
from core.planner.model.states import weight_bytes
from core.planner.request import Attention, Framework, Method, TrainingSpec

Num = Any  # a float or a NumPy array, broadcast together


def activation_elements_per_token_layer(
    arch: Architecture, training: TrainingSpec, seq_len: Num, attention_core: bool = True
) -> Num:
    """16-bit elements autograd keeps per token per transformer layer (no recompute, one GPU);
    `attention_core=False` leaves out what selective recomputation recomputes."""
    rest, split, kv = activation_parts(arch, training, seq_len, attention_core)
    return rest + split + kv


def parallel_elements_per_token_layer(
    arch: Architecture, training: TrainingSpec, seq_len: Num, attention_core: bool = True
) -> Num:
    """The same per GPU under tensor parallelism (Korthikanti et al. 2022, Table 2).

    What tp shards (attention and MLP interior) ÷ tp; grouped-query K and V ÷ min(tp, kv_heads)
    (replicated beyond); norms and the linears' shared inputs ÷ tp only with sequence parallelism.
    """
    rest, split, kv = activation_parts(arch, training, seq_len, attention_core)
    by = parallel.activation_split(arch, training)
    return rest / by.rest + split / by.split + kv / by.kv


def activation_parts(
    arch: Architecture, training: TrainingSpec, seq_len: Num, attention_core: bool = True
) -> tuple[Num, Num, Num]:
    """16-bit elements per token per layer as (replicated by tp, sharded by tp, key/value): their
    sum is the layer.

    ``attention_core=False`` leaves out what selective recomputation rebuilds in backward
    (Korthikanti et al. 2022 §5: the softmax scores, probabilities and their dropout, the 5as/h term
    of sbh(34 + 5as/h)); with flash/SDPA attention nothing of it is kept in the first place.

    Following Korthikanti et al. 2022 per-op accounting, adapted to blocks without dropout in the
    model: RMSNorm (unfused) saves an fp32 copy of its input (2 elements·h) and, when its weight
    trains, the normalized x; LayerNorm saves its 16-bit input (h); attention saves q, k, v and its
    output, plus the s² probabilities when not flash/SDPA (2·a·s); a gated MLP saves gate, up and
    act outputs (3F), a plain one its activation's input (F); a linear keeps its input only when its
    weight trains (see `_linear_inputs`). A QLoRA base layer keeps nothing: bitsandbytes' MatMul4Bit
    holds only the packed weight (ctx.tensors = (None, B)) since 0.43.2.
    """
    h, q_w, o_w = arch.hidden, arch.q_width, arch.o_width
    full = training.method is Method.full

    # Mixture of experts: each token's MLP activations exist once per selected expert.
    moe_frac = arch.moe_fraction
    mlp_width = arch.active_mlp_width

    norm = h if arch.layer_norm else 2 * h + h * full
    qkv_in = _linear_inputs(arch, training, ("q", "k", "v"), h, fused=arch.fused_qkv)
    mlp_in = _linear_inputs(arch, training, ("gate", "up") if arch.gated_mlp else ("up",), h)
    down_width = mlp_width
    expert_down = 0.0
    if arch.experts_fused and not full:
        # Fused experts carry no adapter from lora_targets (see lora.py): only dense layers and
        # shared experts keep MLP inputs. An expert weight named in lora_target_parameters trains
        # through W + ΔW, so the experts' matmul keeps its input for the weight gradient (gate_up:
        # the hidden state; down: the activation).
        wrapped = target_parameter_kinds(training.lora_target_parameters)
        mlp_in = mlp_in * ((1 - moe_frac) + moe_frac * (arch.shared_intermediate > 0))
        mlp_in = mlp_in + (h * moe_frac if "experts_gate_up" in wrapped else 0)
        down_width = arch.intermediate * (1 - moe_frac) + arch.shared_intermediate * moe_frac
        expert_down = mlp_width - down_width if "experts_down" in wrapped else 0.0
    if arch.parallel_block and qkv_in == h and mlp_in == h:
        mlp_in = 0  # one shared norm output feeds both
    attn = q_w + o_w  # q and the output (also the o-projection's raw input); k and v below
    # Keys and values are saved once per token whatever the layer's window or chunk: a window limits
    # which keys a query reads, not which tokens have keys. MLA saves its keys and values expanded
    # per head (k_width).
    kv = arch.k_width + arch.v_width
    if training.attention is Attention.eager and attention_core:
        # Eager attention materialises every layer's s×s probabilities, windowed or not:
        # transformers' eager_attention_forward multiplies q by all keys and adds the (sliding) mask
        # before the softmax.
        attn = attn + arch.heads * seq_len * eager_probability_bytes(arch, training) / weight_bytes(
            training.precision
        )
    o_in = _linear_inputs(arch, training, ("o",), o_w, input_saved=True)
    attn = attn + (o_in if o_in != o_w else 0)
    mlp = (
        (3 if arch.gated_mlp else 1) * mlp_width
        + (_linear_inputs(arch, training, ("down",), down_width) if down_width else 0)
        + expert_down
    )
    router = arch.experts * 2 * moe_frac  # fp32 router logits
    norms = norm if arch.parallel_block else 2 * norm
    if arch.uses_mla:
        norms = norms + _mla_latents(arch, training)
    # Tensor parallelism shards attention and the MLP interior; the norms, the column-parallel
    # linears' shared inputs and the router (it reads the replicated hidden state) stay whole on
    # every tp rank.
    return norms + qkv_in + mlp_in + router, attn + mlp, kv


def eager_probability_bytes(arch: Architecture, training: TrainingSpec) -> float:
    """Bytes eager attention keeps for backward per probability (one head, one query, one key).

    transformers' eager_attention_forward (and Qwen's and BERT's own attention): `softmax(scores,
    dtype=float32)` saves its fp32 output (4 B, what softmax's backward reads) and
    `.to(query.dtype)` makes the 16-bit copy the P·V matmul saves (2 B; in fp32 it is the same
    tensor). A dropout with p > 0 on the probabilities adds its 1-byte mask and the dropped copy the
    matmul saves (ATen's dropout returns its input untouched at p = 0). 16-bit: 6 B (9 B with
    dropout); fp32: 4 B (9 B with dropout).
    """
    wb = weight_bytes(training.precision)
    kept = 4.0 + (wb if wb < 4.0 else 0.0)
    return kept + (1.0 + wb if arch.attention_dropout > 0 else 0.0)


def _mla_latents(arch: Architecture, training: TrainingSpec) -> Num:
    """MLA's low-rank latents per token: the q latent (q_lora_rank) and the kv latent (kv_lora_rank)
    each pass an RMSNorm (an fp32 copy, 2 elements per value, + the normalized value when its weight
    trains) and feed an up-projection that keeps its input when it trains (transformers'
    DeepseekV3Attention: q_a_layernorm → q_b_proj, kv_a_layernorm → kv_b_proj). Replicated under
    tensor parallelism, like the down-projections."""
    full = training.method is Method.full
    latents = [(("q",), arch.q_lora_rank)] if arch.q_lora_rank else []
    latents.append((("v",), arch.kv_lora_rank or 512))
    return sum(2 * r + r * full + _linear_inputs(arch, training, kinds, r) for kinds, r in latents)


def _linear_inputs(
    arch: Architecture,
    training: TrainingSpec,
    kinds: tuple[str, ...],
    width: Num,
    fused: bool = False,
    input_saved: bool = False,
) -> Num:
    """Elements a group of linears sharing one input keeps for backward.

    Trained weights (full fine-tune, or LoRA without dropout) keep the raw input once for the group.
    With LoRA dropout each adapter keeps its own dropped-out 16-bit copy plus a 1-byte mask (1.5
    elements); a fused module (one qkv linear) has one adapter for all three. Frozen layers keep
    nothing, except 4-bit ones under bitsandbytes before 0.43.2 (`quantized_inputs_kept`): its
    MatMul4Bit kept `ctx.tensors = (A, B)`, the input as well as the packed weight, until
    bitsandbytes PR #1270 ("fix QLoRA mem bug: delete useless buffered activation", commit 9e75374,
    first in 0.43.2) made it `(None, B)`. The group shares one input tensor, so it is kept once
    beside the adapters' dropped-out copies; `input_saved`: another op already keeps that tensor
    (the attention output the o-projection reads).
    """
    if training.method is Method.full:
        return width
    kept_by_bnb = (
        training.method is Method.qlora and bool(training.quantized_inputs_kept) and not input_saved
    )
    raw = width if kept_by_bnb else 0
    adapted = [k for k in kinds if k in target_set(training.lora_targets)]
    if not adapted:
        return raw
    if training.lora_dropout <= 0:
        return width
    return 1.5 * width * (1 if fused else len(adapted)) + raw


def activation_bytes(
    arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num
) -> Num:
    """Saved activations on the GPU for one micro-batch, by recomputation regime.

    none: every layer's saved tensors. full: each layer keeps only its input (h per token; with
    activation offload only the few in flight, `savers.inputs_kept_on_gpu`) and one layer is
    recomputed at a time during backward. selective: every layer's tensors except the attention
    core, which is recomputed (Megatron); under torchtitan its per-op policy
    (`savers.op_sac_parts`). A layer's worth of transient gradient tensors is always added.
    """
    elem = weight_bytes(training.precision)
    by = parallel.activation_split(arch, training)
    # context parallelism: each GPU holds 1/cp of the sequence
    tokens = micro_batch * seq_len / by.tokens
    per_layer = parallel_elements_per_token_layer(arch, training, seq_len) * elem * tokens
    # Pipeline: the busiest stage's layers, for every micro-batch 1F1B keeps in flight there.
    layers = parallel.activation_layers(arch, training)
    recomputed = training.checkpointed_fraction(arch.layers)
    # per layer, kept like activations
    merged = merged_expert_weight_bytes(arch, training) * arch.moe_fraction
    if training.checkpointing == "full":
        # The layer inputs of the checkpointed layers (all L under true, ⌊L/k⌋ with
        # checkpoint_every_k_blocks; or the few in flight when offloaded), scaled to this GPU's
        # share; the other blocks keep everything. A recomputed block's tensors add at the peak when
        # the last block is one of them (backward starts by recomputing it); later in backward the
        # blocks already freed make room (torchtitan: block L is checkpointed when k divides L).
        inputs = savers.inputs_kept_on_gpu(arch, training, micro_batch, seq_len)
        last_recomputed = arch.layers % (training.checkpoint_every_k_blocks or 1) == 0
        stored = (
            recomputed * inputs * layers / arch.layers / (by.rest * by.tokens)
            + (1 - recomputed) * layers * (per_layer + merged)
            + (per_layer if last_recomputed else 0.0)
        )
    elif training.checkpointing == "selective":
        kept = (
            parallel_elements_per_token_layer(arch, training, seq_len, attention_core=False)
            * elem
            * tokens
        )
        if training.framework is Framework.torchtitan:  # its selective default is the per-op policy
            rest, split, kv = savers.op_sac_parts(arch, training)
            kept = (rest / by.rest + split / by.split + kv / by.kv) * elem * tokens
        stored = layers * (kept + merged)
    else:
        stored = layers * (per_layer + merged)
    final_norm = 3 * arch.hidden / by.rest * elem * tokens
    # PEFT's ParamWrapper builds ΔW and, in backward, the gradient of W + ΔW for one layer at a time
    # (and W + ΔW again for a recomputed layer).
    wrapped_transient = merged_expert_weight_bytes(arch, training) * (2 + (recomputed > 0))
    # + one layer of transient gradient tensors
    return stored + final_norm + per_layer + wrapped_transient


def quantized_inputs_bytes(
    arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num
) -> Num:
    """The inputs a QLoRA step's 4-bit linears hold as MatMul4Bit attributes under bitsandbytes
    before 0.43.2 (`quantized_inputs_kept`), on the blocks that are not recomputed, this GPU's
    share.

    Per token and block: the normed input of the q/k/v linears and of the MLP's first linears (one
    tensor when the block is parallel) and the down projection's input; the o-projection's input is
    the attention output. bitsandbytes kept them as `ctx.tensors = (A, B)`, an attribute of the
    autograd node rather than a saved tensor, so backward does not free them: they live as long as
    the graph does (`memory.previous_graph_bytes`).
    """
    if training.method is not Method.qlora or not training.quantized_inputs_kept:
        return 0.0
    by = parallel.activation_split(arch, training)
    tokens = micro_batch * seq_len / by.tokens
    normed = arch.hidden * (1 if arch.parallel_block else 2)
    down = (
        arch.intermediate * (1 - arch.moe_fraction) + arch.shared_intermediate * arch.moe_fraction
    )
    per_layer = (normed / by.rest + down / by.split) * weight_bytes(training.precision) * tokens
    kept_layers = parallel.activation_layers(arch, training) * (
        1 - training.checkpointed_fraction(arch.layers)
    )
    return per_layer * kept_layers


def merged_expert_weight_bytes(arch: Architecture, training: TrainingSpec) -> float:
    """W + ΔW of the fused expert weights one MoE layer adapts through ``lora_target_parameters``,
    per GPU.

    PEFT's ParamWrapper (peft/tuners/lora/layer.py, ``_activate_lora``) parametrizes the expert
    weight as W + B·A for the forward; the experts' matmul saves that merged tensor for backward, so
    every MoE layer whose activations are kept holds a copy the size of its expert weights (÷ tp,
    and ÷ ep: each rank has its experts).
    """
    if (
        training.method is Method.full
        or not training.lora_target_parameters
        or not arch.experts_fused
    ):
        return 0.0
    elements = sum(p.elements for p in expert_parameters(arch, training.lora_target_parameters))
    return (
        elements
        * weight_bytes(training.precision)
        / (training.tensor_parallel * training.expert_parallel)
    )
