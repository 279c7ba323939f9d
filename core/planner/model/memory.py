"""Memory per GPU, component by component, the way a training step really holds it.

Every function takes plain numbers or NumPy arrays for the data-parallel degree, micro-batch and sequence
length, so the hardware search evaluates thousands of candidates in one call (see search.py).

Accounting (docs/formulas.md, "Memory"):
* weights     – the 16-bit (or fp32) working copy; NF4 + constants for QLoRA's frozen base.
* gradients   – one per trainable weight, in the weights' dtype; DeepSpeed adds an fp32 partition.
* optimizer   – fp32 master copy (mixed precision) + optimizer states; what ZeRO stage 1 shards.
* activations – tensors autograd saves for backward, per layer, by attention implementation, method
                (a frozen linear saves no input) and gradient checkpointing; plus one layer of transients.
* logits      – the (tokens × vocab) logits and loss buffers: gigabytes with 128k–256k vocabularies.
* overhead    – CUDA context, allocator reserve, gathered ZeRO-3/FSDP buffers, comm buckets, dequant buffers,
                the optimizer step's workspace where it outgrows the freed activations.
The result predicts *reserved* memory as nvidia-smi shows it; `allocated_peak` drops context and reserve
(what torch.cuda.max_memory_allocated reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.planner.model import parallel, savers
from core.planner.model.lora import (
    expert_parameters,
    largest_trainable_matrix,
    target_parameter_kinds,
    target_set,
    trainable_params,
)
from core.planner.model.params import Architecture
from core.planner.model.savers import logits_bytes
from core.planner.request import (
    Attention,
    Framework,
    Method,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    TrainingSpec,
)

Num = Any  # a float or a NumPy array, broadcast together

GIB = 2**30
CUDA_CONTEXT_BYTES = int(0.75 * GIB)  # calculators use 0.65–1 GiB (REFERENCES.md, "Peak composition")
ALLOCATOR_RESERVE = 0.10  # reserved exceeds allocated by 10–25% in published runs; lower end for steady loops
COMM_BUCKET_BYTES = 25 * 2**20 * 2  # PyTorch DDP bucket_cap_mb=25, double-buffered
NF4_BITS = 4.0
NF4_CONSTANT_BITS = {True: 8 / 64 + 32 / (64 * 256), False: 32 / 64}  # QLoRA §3, double quantization or not
PAGED_OPTIMIZERS = (Optimizer.paged_adamw_8bit, Optimizer.paged_adamw_32bit)
DEEPSPEED_PINNED_FACTOR = 1.5  # DeepSpeed's additional_buffer_factor for pinned CPU-offload buffers


# ----------------------------------------------------------------------------- bytes per parameter


def weight_bytes(precision: Precision) -> float:
    return 4.0 if precision is Precision.fp32 else 2.0


def master_bytes(precision: Precision) -> float:
    """Mixed precision keeps an fp32 master copy of trainable weights (ZeRO's K counts it)."""
    return 4.0 if precision in (Precision.amp_bf16, Precision.amp_fp16, Precision.fp8) else 0.0


def optimizer_state_bytes(optimizer: Optimizer, precision: Precision) -> float:
    """States per trainable parameter. Pure bf16 (litgpt bf16-true, torchtune) keeps them in bf16."""
    state = 2.0 if precision is Precision.pure_bf16 else 4.0
    return {
        Optimizer.adamw: 2 * state,
        Optimizer.paged_adamw_32bit: 8.0,  # bitsandbytes keeps 32-bit states whatever the weights' dtype
        Optimizer.adamw_8bit: 2.0,
        Optimizer.paged_adamw_8bit: 2.0,
        Optimizer.sgd: 0.0,
        Optimizer.sgd_momentum: state,
        Optimizer.lion: state,
        Optimizer.adafactor: 0.1,  # factored second moment: 4·(rows+cols) per matrix; no first moment
    }[optimizer]


def checkpoint_bytes(arch: Architecture, training: TrainingSpec) -> float:
    """A resumable checkpoint: the trained parameters' 16-bit (or fp32) weights, fp32 master and optimizer
    states; for LoRA/QLoRA only the adapters' (the frozen base is reloaded from the hub)."""
    precision = training.precision
    per_param = weight_bytes(precision) + master_bytes(precision) + optimizer_state_bytes(training.optimizer, precision)
    return trainable_params(arch, training) * per_param


# ----------------------------------------------------------------------------- model states


@dataclass(frozen=True)
class ModelStates:
    weights: Num
    gradients: Num
    optimizer: Num  # on the GPU through the caching allocator (paged states excluded)
    gathered: Num  # ZeRO-3/FSDP all-gathered parameters in flight (counted in overhead)
    cpu_offloaded: Num  # bytes per GPU held in host RAM instead
    step_workspace: Num = 0.0  # temporaries of the optimizer step, alive once activations are gone
    paged: Num = 0.0  # paged optimizer states (unified memory, outside the allocator)
    host_step_bytes: Num = 0.0  # CPU offload: bytes over the host link once per optimizer step
    host_micro_bytes: Num = 0.0  # CPU offload of parameters: bytes over the host link per micro-batch


def shard_degree(sharding: Sharding, dp: Num, gpus_per_node: Num) -> Num:
    if sharding is Sharding.none:
        return np.ones_like(np.asarray(dp, dtype=float)) if isinstance(dp, np.ndarray) else 1.0
    if sharding is Sharding.hsdp:
        return np.minimum(dp, gpus_per_node)
    return dp


def model_states(
    arch: Architecture,
    training: TrainingSpec,
    dp: Num,
    gpus_per_node: Num = 8,
    zero_accounting: str = "deepspeed",
    total_params: float | None = None,
    largest_layer_params: float | None = None,
) -> ModelStates:
    """Weights, gradients and optimizer states per GPU for any sharding and offload.

    ZeRO paper (arXiv:1910.02054): DP (2+2+K)Ψ; stage 1 2Ψ+2Ψ+KΨ/N; stage 2 2Ψ+(2+K)Ψ/N; stage 3 (2+2+K)Ψ/N.
    DeepSpeed's implementation also holds an fp32 gradient partition (its estimator's 18 = 2+4+4+8) and
    gathers 2 × the largest layer in 16-bit under stage 3; FSDP keeps fp32 shards (16Ψ/N) plus 2 units.
    """
    precision, method, sharding = training.precision, training.method, training.sharding
    total = float(total_params if total_params is not None else arch.total_params)
    largest = float(largest_layer_params if largest_layer_params is not None else arch.largest_layer_params)
    trainable = total if method is Method.full else trainable_params(arch, training)
    frozen = 0.0 if method is Method.full else total
    # Context-parallel ranks hold the same weights: FSDP2 (torchtitan shards over its "dp_shard_cp" mesh),
    # Megatron's distributed optimizer and ZeRO with Ulysses shard the states over data × context parallel.
    n = shard_degree(sharding, dp * training.context_parallel, gpus_per_node)
    stage = {
        Sharding.none: 0,
        Sharding.zero1: 1,
        Sharding.zero2: 2,
        Sharding.zero3: 3,
        Sharding.fsdp: 3,
        Sharding.hsdp: 3,
    }[sharding]
    deepspeed = zero_accounting == "deepspeed" and sharding in (Sharding.zero1, Sharding.zero2, Sharding.zero3)

    wb = weight_bytes(precision)
    if method is Method.qlora:
        nf4 = (NF4_BITS + NF4_CONSTANT_BITS[training.double_quant]) / 8
        quantized = float(arch.quantizable_params)
        frozen_bytes = quantized * nf4 + (frozen - quantized) * wb
        if quantizes_lm_head(training):
            # The head becomes a 4-bit linear of its own; a tied model's embedding stays a 16-bit table beside it.
            head = float(arch.vocab * arch.hidden)
            frozen_bytes += head * nf4 - (0.0 if arch.tied_embeddings else head * wb)
    else:
        frozen_bytes = frozen * wb
    # A trainable 16-bit working copy; fp32 precision trains the fp32 weights directly.
    train_w = trainable * wb
    grad = trainable * wb
    fp32_grad = trainable * 4.0 if deepspeed and master_bytes(precision) else 0.0
    opt = trainable * (master_bytes(precision) + optimizer_state_bytes(training.optimizer, precision))

    weights = (frozen_bytes + train_w) / (n if stage >= 3 else 1)
    if deepspeed and stage >= 3 and fp32_grad:
        grad = 0.0  # stage 3 reduce-scatters straight into the fp32 partition: 2P/N + 16P/N = 18P/N
    grads = grad / (n if stage >= 2 else 1) + fp32_grad / n
    if sharding in (Sharding.fsdp, Sharding.hsdp) and master_bytes(precision):
        # FSDP mixed precision shards the fp32 parameters themselves: no separate 16-bit copy or master.
        weights = (frozen_bytes + trainable * 4.0) / n
        grads = trainable * 4.0 / n
        opt = trainable * optimizer_state_bytes(training.optimizer, precision)
    optimizer = opt / (n if stage >= 1 else 1)
    gathered = gathered_bytes(arch, training, largest, wb)
    if training.optimizer_in_backward:
        # Each gradient is stepped and freed as soon as it is produced: one matrix's gradient at a time.
        one = largest_trainable_matrix(arch, training) * wb
        grads = np.minimum(grads, one / (n if stage >= 2 else 1))

    n_opt = n if stage >= 1 else 1
    moved = _host_side(training, trainable, wb, n_opt, weights, grads, optimizer)
    weights, grads, optimizer = moved.weights, moved.grads, moved.optimizer
    workspace = 0.0 * optimizer
    torch_adamw = training.optimizer is Optimizer.adamw and not deepspeed and not training.optimizer_in_backward
    if torch_adamw and training.offload is Offload.none:
        # PyTorch's multi-tensor AdamW (the default on GPUs) materialises sqrt(v) for every weight it steps
        # at once: one state's worth. DeepSpeed's fused Adam and a per-weight step in backward work in place.
        workspace = trainable * (2.0 if precision is Precision.pure_bf16 else 4.0) / n_opt
    states = ModelStates(weights, grads, optimizer, gathered, moved.offloaded, workspace, moved.paged, moved.host_step,
                         moved.host_micro)
    return parallel_split(states, arch, training)


@dataclass(frozen=True)
class _HostSide:
    """The GPU's states once offload or paging has moved some of them to host memory, and the traffic."""

    weights: Num
    grads: Num
    optimizer: Num
    offloaded: Num
    paged: Num
    host_step: Num
    host_micro: Num


def _host_side(training: TrainingSpec, trainable: float, wb: float, n_opt: Num, weights: Num, grads: Num,
               optimizer: Num) -> _HostSide:
    """What ZeRO-Offload moves to the host (optimizer and gradients, parameters too) or bitsandbytes pages."""
    zero_w, zero_g, zero_o = 0.0 * weights, 0.0 * grads, 0.0 * optimizer  # the shapes the grid broadcasts
    if training.offload is not Offload.none:
        # ZeRO-Offload (arXiv:2101.06840 §4.1): each step moves this GPU's 16-bit gradient partition to the
        # host and the updated 16-bit parameters back (2 + 2 bytes per parameter of the partition).
        host_step = 2 * trainable * wb / n_opt
        if training.offload is Offload.optimizer_and_params:
            # Offloaded parameters are fetched to the GPU for the forward and again for the backward.
            return _HostSide(zero_w, zero_g, zero_o, optimizer + grads + weights, zero_o, host_step, 2 * weights)
        return _HostSide(weights, zero_g, zero_o, optimizer + grads, zero_o, host_step, zero_w)
    if training.optimizer in PAGED_OPTIMIZERS:
        # bitsandbytes pages its optimizer states (cudaMallocManaged): outside PyTorch's caching allocator,
        # evicted to host RAM under pressure. The fp32 master copy, where there is one, is an ordinary tensor.
        paged = trainable * optimizer_state_bytes(training.optimizer, training.precision) / n_opt
        return _HostSide(weights, grads, optimizer - paged, zero_w, paged, zero_w, zero_w)
    return _HostSide(weights, grads, optimizer, zero_w, zero_o, zero_w, zero_w)


def parallel_split(states: ModelStates, arch: Architecture, training: TrainingSpec) -> ModelStates:
    """Tensor, pipeline and expert parallelism split the model before ZeRO/FSDP shards it over dp.

    Every state scales by the busiest GPU's share of the parameters (`parallel.state_share`: the first stage's
    embedding + layers/pp, ÷ tp, experts ÷ ep); ZeRO-3/FSDP gather one layer's tensor-parallel shard (÷ tp).
    """
    share = parallel.state_share(arch, training)
    if share == 1.0:
        return states
    return ModelStates(
        weights=states.weights * share,
        gradients=states.gradients * share,
        optimizer=states.optimizer * share,
        gathered=states.gathered / training.tensor_parallel,
        cpu_offloaded=states.cpu_offloaded * share,
        step_workspace=states.step_workspace * share,
        paged=states.paged * share,
        host_step_bytes=states.host_step_bytes * share,
        host_micro_bytes=states.host_micro_bytes * share,
    )


def quantizes_lm_head(training: TrainingSpec) -> bool:
    """litgpt's QLoRA quantizes the LM head too: its finetune scripts pass Lightning Fabric's
    BitsandbytesPrecision, whose convert_module replaces every torch.nn.Linear (the head included; only
    `ignore_modules` are spared, and litgpt names none). transformers' bitsandbytes integration keeps the head
    16-bit (`llm_int8_skip_modules` defaults to the output embedding)."""
    return training.method is Method.qlora and training.framework is Framework.litgpt


def dequantized_matrix_params(arch: Architecture, training: TrainingSpec) -> int:
    """The largest weight bitsandbytes dequantizes to 16-bit at once (MatMul4Bit's forward, and again in
    backward): the largest block matrix, or the LM head where it is quantized too."""
    if quantizes_lm_head(training):
        return max(arch.largest_matrix_params, arch.vocab * arch.hidden)
    return arch.largest_matrix_params


def gathered_bytes(arch: Architecture, training: TrainingSpec, largest: float, wb: float) -> float:
    """Parameters ZeRO-3/FSDP holds gathered at once: two units (the current one and the prefetched next).

    QLoRA under FSDP gathers the packed NF4 blocks, not 16-bit weights: bitsandbytes' Params4bit stored with
    quant_storage=bfloat16 lets FSDP shard and all-gather the 4-bit data and its constants (Answer.AI
    fsdp_qlora; Hugging Face PEFT "FSDP+QLoRA"). The embedding and LM head stay 16-bit and may be the larger unit.
    """
    if training.sharding not in (Sharding.zero3, Sharding.fsdp, Sharding.hsdp):
        return 0.0
    if training.method is not Method.qlora:
        return 2 * largest * wb
    nf4 = (NF4_BITS + NF4_CONSTANT_BITS[training.double_quant]) / 8
    block_q = arch.quantizable_params / arch.layers
    block = block_q * nf4 + (arch.block_params - block_q) * wb
    return 2 * max(block, arch.vocab * arch.hidden * wb)


# ----------------------------------------------------------------------------- activations


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

    What tp shards (attention and MLP interior) ÷ tp; grouped-query K and V ÷ min(tp, kv_heads) (replicated
    beyond); norms and the linears' shared inputs ÷ tp only with sequence parallelism.
    """
    rest, split, kv = activation_parts(arch, training, seq_len, attention_core)
    by = parallel.activation_split(arch, training)
    return rest / by.rest + split / by.split + kv / by.kv


def activation_parts(
    arch: Architecture, training: TrainingSpec, seq_len: Num, attention_core: bool = True
) -> tuple[Num, Num, Num]:
    """16-bit elements per token per layer as (replicated by tp, sharded by tp, key/value): their sum is the layer.

    ``attention_core=False`` leaves out what selective recomputation rebuilds in backward (Korthikanti et al.
    2022 §5: the softmax scores, probabilities and their dropout, the 5as/h term of sbh(34 + 5as/h)); with
    flash/SDPA attention nothing of it is kept in the first place.

    Following Korthikanti et al. 2022 per-op accounting, adapted to blocks without dropout in the model:
    RMSNorm (unfused) saves an fp32 copy of its input (2 elements·h) and, when its weight trains, the
    normalized x; LayerNorm saves its 16-bit input (h);
    attention saves q, k, v and its output, plus the s² probabilities when not flash/SDPA (2·a·s);
    a gated MLP saves gate, up and act outputs (3F), a plain one its activation's input (F);
    a linear keeps its input only when its weight trains (see `_linear_inputs`). A QLoRA base layer keeps
    nothing: bitsandbytes' MatMul4Bit holds only the packed weight (ctx.tensors = (None, B)).
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
        # Fused experts carry no adapter from lora_targets (see lora.py): only dense layers and shared experts keep
        # MLP inputs. An expert weight named in lora_target_parameters trains through W + ΔW, so the experts'
        # matmul keeps its input for the weight gradient (gate_up: the hidden state; down: the activation).
        wrapped = target_parameter_kinds(training.lora_target_parameters)
        mlp_in = mlp_in * ((1 - moe_frac) + moe_frac * (arch.shared_intermediate > 0))
        mlp_in = mlp_in + (h * moe_frac if "experts_gate_up" in wrapped else 0)
        down_width = arch.intermediate * (1 - moe_frac) + arch.shared_intermediate * moe_frac
        expert_down = mlp_width - down_width if "experts_down" in wrapped else 0.0
    if arch.parallel_block and qkv_in == h and mlp_in == h:
        mlp_in = 0  # one shared norm output feeds both
    attn = q_w + o_w  # q and the output (also the o-projection's raw input); k and v below
    # Keys and values are saved once per token whatever the layer's window or chunk: a window limits which keys
    # a query reads, not which tokens have keys. MLA saves its keys and values expanded per head (k_width).
    kv = arch.k_width + arch.v_width
    if training.attention is Attention.eager and attention_core:
        # Eager attention materialises every layer's s×s probabilities, windowed or not: transformers'
        # eager_attention_forward multiplies q by all keys and adds the (sliding) mask before the softmax.
        attn = attn + arch.heads * seq_len * eager_probability_bytes(arch, training) / weight_bytes(training.precision)
    o_in = _linear_inputs(arch, training, ("o",), o_w)
    attn = attn + (o_in if o_in != o_w else 0)
    mlp = (3 if arch.gated_mlp else 1) * mlp_width + (_linear_inputs(arch, training, ("down",), down_width)
                                                       if down_width else 0) + expert_down
    router = arch.experts * 2 * moe_frac  # fp32 router logits
    norms = norm if arch.parallel_block else 2 * norm
    if arch.uses_mla:
        norms = norms + _mla_latents(arch, training)
    # Tensor parallelism shards attention and the MLP interior; the norms, the column-parallel linears' shared
    # inputs and the router (it reads the replicated hidden state) stay whole on every tp rank.
    return norms + qkv_in + mlp_in + router, attn + mlp, kv


def eager_probability_bytes(arch: Architecture, training: TrainingSpec) -> float:
    """Bytes eager attention keeps for backward per probability (one head, one query, one key).

    transformers' eager_attention_forward (and Qwen's and BERT's own attention): `softmax(scores, dtype=float32)`
    saves its fp32 output (4 B, what softmax's backward reads) and `.to(query.dtype)` makes the 16-bit copy the
    P·V matmul saves (2 B; in fp32 it is the same tensor). A dropout with p > 0 on the probabilities adds its
    1-byte mask and the dropped copy the matmul saves (ATen's dropout returns its input untouched at p = 0).
    16-bit: 6 B (9 B with dropout); fp32: 4 B (9 B with dropout).
    """
    wb = weight_bytes(training.precision)
    kept = 4.0 + (wb if wb < 4.0 else 0.0)
    return kept + (1.0 + wb if arch.attention_dropout > 0 else 0.0)


def _mla_latents(arch: Architecture, training: TrainingSpec) -> Num:
    """MLA's low-rank latents per token: the q latent (q_lora_rank) and the kv latent (kv_lora_rank) each pass an
    RMSNorm (an fp32 copy, 2 elements per value, + the normalized value when its weight trains) and feed an
    up-projection that keeps its input when it trains (transformers' DeepseekV3Attention: q_a_layernorm →
    q_b_proj, kv_a_layernorm → kv_b_proj). Replicated under tensor parallelism, like the down-projections."""
    full = training.method is Method.full
    latents = [(("q",), arch.q_lora_rank)] if arch.q_lora_rank else []
    latents.append((("v",), arch.kv_lora_rank or 512))
    return sum(2 * r + r * full + _linear_inputs(arch, training, kinds, r) for kinds, r in latents)


def _linear_inputs(
    arch: Architecture, training: TrainingSpec, kinds: tuple[str, ...], width: Num, fused: bool = False
) -> Num:
    """Elements a group of linears sharing one input keeps for backward.

    Trained weights (full fine-tune, or LoRA without dropout) keep the raw input once for the group. With
    LoRA dropout each adapter keeps its own dropped-out 16-bit copy plus a 1-byte mask (1.5 elements); a fused
    module (one qkv linear) has one adapter for all three. Frozen layers keep nothing.
    """
    if training.method is Method.full:
        return width
    adapted = [k for k in kinds if k in target_set(training.lora_targets)]
    if not adapted:
        return 0
    if training.lora_dropout <= 0:
        return width
    return 1.5 * width * (1 if fused else len(adapted))


def activation_bytes(arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num) -> Num:
    """Saved activations on the GPU for one micro-batch, by recomputation regime.

    none: every layer's saved tensors. full: each layer keeps only its input (h per token; with activation
    offload only the few in flight, `savers.inputs_kept_on_gpu`) and one layer is recomputed at a time during
    backward. selective: every layer's tensors except the attention core, which is recomputed (Megatron); under
    torchtitan its per-op policy (`savers.op_sac_parts`). A layer's worth of transient gradient tensors is
    always added.
    """
    elem = weight_bytes(training.precision)
    by = parallel.activation_split(arch, training)
    tokens = micro_batch * seq_len / by.tokens  # context parallelism: each GPU holds 1/cp of the sequence
    per_layer = parallel_elements_per_token_layer(arch, training, seq_len) * elem * tokens
    # Pipeline: the busiest stage's layers, for every micro-batch 1F1B keeps in flight there.
    layers = parallel.activation_layers(arch, training)
    recomputed = training.checkpointed_fraction(arch.layers)
    merged = merged_expert_weight_bytes(arch, training) * arch.moe_fraction  # per layer, kept like activations
    if training.checkpointing == "full":
        # The layer inputs of the checkpointed layers (all L under true, ⌊L/k⌋ with checkpoint_every_k_blocks;
        # or the few in flight when offloaded), scaled to this GPU's share; the other blocks keep everything.
        # A recomputed block's tensors add at the peak when the last block is one of them (backward starts by
        # recomputing it); later in backward the blocks already freed make room (torchtitan: block L is
        # checkpointed when k divides L).
        inputs = savers.inputs_kept_on_gpu(arch, training, micro_batch, seq_len)
        last_recomputed = arch.layers % (training.checkpoint_every_k_blocks or 1) == 0
        stored = (recomputed * inputs * layers / arch.layers / (by.rest * by.tokens)
                  + (1 - recomputed) * layers * (per_layer + merged) + (per_layer if last_recomputed else 0.0))
    elif training.checkpointing == "selective":
        kept = parallel_elements_per_token_layer(arch, training, seq_len, attention_core=False) * elem * tokens
        if training.framework is Framework.torchtitan:  # its selective default is the per-op policy
            rest, split, kv = savers.op_sac_parts(arch, training)
            kept = (rest / by.rest + split / by.split + kv / by.kv) * elem * tokens
        stored = layers * (kept + merged)
    else:
        stored = layers * (per_layer + merged)
    final_norm = 3 * arch.hidden / by.rest * elem * tokens
    # PEFT's ParamWrapper builds ΔW and, in backward, the gradient of W + ΔW for one layer at a time (and W + ΔW
    # again for a recomputed layer).
    wrapped_transient = merged_expert_weight_bytes(arch, training) * (2 + (recomputed > 0))
    return stored + final_norm + per_layer + wrapped_transient  # + one layer of transient gradient tensors


def merged_expert_weight_bytes(arch: Architecture, training: TrainingSpec) -> float:
    """W + ΔW of the fused expert weights one MoE layer adapts through ``lora_target_parameters``, per GPU.

    PEFT's ParamWrapper (peft/tuners/lora/layer.py, ``_activate_lora``) parametrizes the expert weight as
    W + B·A for the forward; the experts' matmul saves that merged tensor for backward, so every MoE layer whose
    activations are kept holds a copy the size of its expert weights (÷ tp, and ÷ ep: each rank has its experts).
    """
    if training.method is Method.full or not training.lora_target_parameters or not arch.experts_fused:
        return 0.0
    elements = sum(p.elements for p in expert_parameters(arch, training.lora_target_parameters))
    return elements * weight_bytes(training.precision) / (training.tensor_parallel * training.expert_parallel)


# ----------------------------------------------------------------------------- the whole GPU


@dataclass(frozen=True)
class MemoryEstimate:
    weights: Num
    gradients: Num
    optimizer: Num
    activations: Num
    logits: Num
    overhead: Num
    allocated: Num
    total: Num  # reserved, as nvidia-smi shows (plus context)
    cpu_ram: Num
    paged: Num = 0.0  # paged optimizer states (unified memory): bytes that may spill to host under pressure
    host_bytes_per_step: Num = 0.0  # bytes each GPU moves over its host link per optimizer step (offload)
    host_exposed_bytes_per_step: Num = 0.0  # the part of them the next compute waits for (not overlapped)
    paged_spilled: Num = 0.0  # paged states paged out to host RAM under memory pressure (0 while they fit)
    step_workspace: Num = 0.0  # the optimizer step's temporaries (in overhead once they outgrow the activations)


def grads_at_activation_peak(training: TrainingSpec, gradients: Num, accumulation: Num, dp: Num = 1) -> Num:
    """The gradient bytes alive with every activation, at the start of backward.

    A gradient is allocated by the backward that first computes it ("None by default and becomes a Tensor the first
    time a call to backward() computes gradients", torch.Tensor.grad docs), and `optimizer.zero_grad()` sets them
    back to None (set_to_none=True, its default since PyTorch 2.0; the Trainer, torchtitan and plain loops call it
    every step). PyTorch FSDP (1 and 2) writes each sharded gradient in its unit's post-backward reduce-scatter the
    same way. So with one micro-batch per step no gradient exists while the activations are all alive, and the
    gradients grow only as the layers' activations are freed; with accumulation they persist. The same holds for
    one GPU with no wrapper. DDP's buckets (its Reducer allocates them at construction), DeepSpeed's flat fp32
    partitions and Megatron-Core's contiguous gradient buffer are allocated once and stay.
    """
    if training.offload is not Offload.none:
        return gradients
    fsdp = training.sharding in (Sharding.fsdp, Sharding.hsdp)
    bare = (training.sharding is Sharding.none and training.framework is not Framework.megatron
            and training.tensor_parallel * training.pipeline_parallel * training.expert_parallel == 1)
    if not (fsdp or bare):
        return gradients
    fresh = np.asarray(accumulation) <= 1
    if bare:
        fresh = fresh & (np.asarray(dp) * training.context_parallel <= 1)
    if np.ndim(fresh) == 0 and np.ndim(gradients) == 0:
        return 0.0 if bool(fresh) else gradients
    return np.where(fresh, 0.0 * gradients, gradients)


def no_sync_gradients(arch: Architecture, training: TrainingSpec, gradients: Num, dp: Num, accumulation: Num) -> Num:
    """The gradients alive while a litgpt FSDP run accumulates: unsharded, and for LoRA its frozen weights' too.

    litgpt's finetune scripts wrap every accumulating micro-batch in Lightning Fabric's `no_backward_sync`,
    which on FSDP (1) is `FullyShardedDataParallel.no_sync`: gradients then "accumulate in unsharded form" until
    the synchronising micro-batch (torch.distributed.fsdp docs). They wrap whole `Block`s, so a LoRA layer's
    frozen weights share a flat parameter with its adapters (use_orig_params=True), and FSDP then keeps their
    gradients as well, "equivalent to not freezing those parameters" (same docs). The embeddings and head sit
    in the root unit, all frozen under LoRA, and get none.
    """
    if training.framework is not Framework.litgpt or training.sharding is not Sharding.fsdp:
        return gradients
    unit = float(arch.quantizable_params) if training.method is Method.lora else float(arch.total_params)
    full = (unit + (trainable_params(arch, training) if training.method is Method.lora else 0.0)) * weight_bytes(
        training.precision)
    syncing = (np.asarray(dp) > 1) & (np.asarray(accumulation) > 1) & (training.method is not Method.qlora)
    return np.where(syncing, np.maximum(full, gradients), gradients)


def estimate(
    arch: Architecture,
    training: TrainingSpec,
    *,
    dp: Num,
    gpus_per_node: Num,
    micro_batch: Num,
    seq_len: Num,
    zero_accounting: str = "deepspeed",
    accumulation: Num = 1,
    gpu_memory: Num | None = None,
) -> MemoryEstimate:
    """Peak memory per GPU.

    Peak = weights + optimizer + working buffers + max(live gradients + activations + logits, gradients +
    optimizer-step workspace): with gradient accumulation (or persistent DDP/DeepSpeed buffers) the gradients
    are alive with the next micro-batch's activations and add; FSDP's, without accumulation, are not yet
    allocated then (`grads_at_activation_peak`).
    Reserved = allocated × (1 + allocator reserve) + CUDA context, plus the paged optimizer states that stay
    resident: they live outside the allocator and fill what `gpu_memory` leaves free (all of them when it is
    not given); the rest spills to host RAM. `accumulation` (micro-batches per optimizer step) scales the host
    traffic of activation offload and parameter offload.
    """
    states = model_states(arch, training, dp, gpus_per_node, zero_accounting)
    act = activation_bytes(arch, training, micro_batch, seq_len)
    # Vocab-parallel cross-entropy (Megatron, torchtitan loss_parallel) splits the logits over tp; cp splits the
    # tokens. Counted on the peak GPU even when the last pipeline stage holds them: an upper bound for pp > 1.
    logits = logits_bytes(arch, training, micro_batch, seq_len) / (training.tensor_parallel * training.context_parallel)
    working = states.gathered + COMM_BUCKET_BYTES * (np.asarray(dp) > 1)
    if training.method is Method.qlora:
        working = working + 2 * dequantized_matrix_params(arch, training) * 2  # dequantized bf16 weight, fwd + bwd
    # The optimizer step runs after backward has freed the activations: the gradients it reads and its workspace
    # only add beyond them (the gradients alive at the activation peak are counted there).
    fresh = grads_at_activation_peak(training, states.gradients, accumulation, dp)
    live_grads = no_sync_gradients(arch, training, fresh, dp, accumulation)
    gradients = np.maximum(states.gradients, live_grads)  # more only while no_sync keeps them whole
    step_excess = np.maximum(states.gradients + states.step_workspace - live_grads - act - logits, 0.0)
    allocated = states.weights + live_grads + states.optimizer + act + logits + working + step_excess
    reserve = allocated * ALLOCATOR_RESERVE
    fixed = allocated + reserve + CUDA_CONTEXT_BYTES
    resident = savers.paged_resident(states.paged, fixed, gpu_memory)
    spilled = states.paged - resident
    overhead = working + step_excess + reserve + CUDA_CONTEXT_BYTES
    # This GPU's share of the offloaded layer inputs: its pipeline stage's layers, its 1/cp of the tokens, and
    # 1/tp of the hidden size with sequence parallelism (as activation_bytes keeps them on the GPU).
    by = parallel.activation_split(arch, training)
    offloaded_act = savers.offloaded_activation_bytes(arch, training, micro_batch, seq_len) * (
        parallel.stage_layers(arch, training) / arch.layers / (by.rest * by.tokens))
    # Host RAM per node: DeepSpeed's pinned offload buffers, the spilled paged pages, the offloaded activations.
    cpu = (states.cpu_offloaded * DEEPSPEED_PINNED_FACTOR + spilled + offloaded_act) * gpus_per_node
    # Host link per optimizer step. Overlapped with compute: ZeRO-Offload's gradients going out during backward
    # (arXiv:2101.06840 §4.2), prefetched offloaded parameters, each micro-batch's activations copied out in
    # forward and back in backward. Waited for: the updated parameters coming back after the CPU step, and the
    # spilled paged pages the optimizer step faults in and writes back.
    exposed_host = states.host_step_bytes / 2 + 2 * spilled
    hidden_host = states.host_step_bytes / 2 + (states.host_micro_bytes + 2 * offloaded_act) * accumulation
    return MemoryEstimate(
        states.weights, gradients, states.optimizer + resident, act, logits, overhead, allocated,
        fixed + resident, cpu, states.paged, hidden_host + exposed_host, exposed_host, spilled,
        states.step_workspace,
    )
