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

from core.planner import parallel
from core.planner.models import Attention, Method, Offload, Optimizer, Precision, Sharding, TrainingSpec
from core.planner.params import Architecture

Num = Any  # a float or a NumPy array, broadcast together

GIB = 2**30
CUDA_CONTEXT_BYTES = int(0.75 * GIB)  # calculators use 0.65–1 GiB (REFERENCES.md, "Peak composition")
ALLOCATOR_RESERVE = 0.10  # reserved exceeds allocated by 10–25% in published runs; lower end for steady loops
COMM_BUCKET_BYTES = 25 * 2**20 * 2  # PyTorch DDP bucket_cap_mb=25, double-buffered
NF4_BITS = 4.0
NF4_CONSTANT_BITS = {True: 8 / 64 + 32 / (64 * 256), False: 32 / 64}  # QLoRA §3, double quantization or not

LORA_TARGETS = {
    "all-linear": ("q", "k", "v", "o", "gate", "up", "down"),
    "attention": ("q", "k", "v", "o"),
    "qv": ("q", "v"),
}
_ALIASES = {
    "lm_head": "head",
    "q_proj": "q",
    "k_proj": "k",
    "v_proj": "v",
    "o_proj": "o",
    "gate_proj": "gate",
    "up_proj": "up",
    "down_proj": "down",
    "query": "q",
    "key": "k",
    "value": "v",
    "proj": "o",
    "mlp": "mlp",
}
_MLA_NAMES = {"q_a": "q", "kv_a": "k", "kv": "v"}


def lora_target_set(targets: str | list[str]) -> frozenset[str]:
    """'all-linear', 'attention', 'qv' or 'q,v,down' (HF names like q_proj accepted) → matrix kinds."""
    key = ",".join(targets).lower() if isinstance(targets, list) else targets.strip().lower()
    if key in LORA_TARGETS:
        return frozenset(LORA_TARGETS[key])
    names = set()
    for raw in key.replace(" ", "").split(","):
        name = _ALIASES.get(raw, raw)
        if name == "mlp":
            names.update({"gate", "up", "down"})
        elif name in {"q", "k", "v", "o", "gate", "up", "down", "head"}:
            names.add(name)
        else:
            raise ValueError(
                f"training.lora_targets has unknown target '{raw}'; use all-linear, attention, qv or a comma list "
                "of q,k,v,o,gate,up,down,head"
            )
    if not names:
        raise ValueError("training.lora_targets is empty; use all-linear, attention or a list such as q,v")
    return frozenset(names)


def lora_params(arch: Architecture, rank: int, targets: str | list[str]) -> int:
    """r·(d_in + d_out) per adapted matrix; for MoE every expert's matrix gets its own adapter."""
    wanted = lora_target_set(targets)
    total = 0.0
    for lin in arch.linears():
        if _MLA_NAMES.get(lin.name, lin.name) in wanted:
            total += rank * (lin.d_in + lin.d_out) * lin.count_total
    head = rank * (arch.hidden + arch.vocab) if "head" in wanted else 0
    return int(total * arch.layers + head)


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


# ----------------------------------------------------------------------------- model states


@dataclass(frozen=True)
class ModelStates:
    weights: Num
    gradients: Num
    optimizer: Num
    gathered: Num  # ZeRO-3/FSDP all-gathered parameters in flight (counted in overhead)
    cpu_offloaded: Num  # bytes per GPU held in host RAM instead
    step_workspace: Num = 0.0  # temporaries of the optimizer step, alive once activations are gone


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
    trainable = (
        total if method is Method.full else float(lora_params(arch, training.lora_rank or 16, training.lora_targets))
    )
    frozen = 0.0 if method is Method.full else total
    n = shard_degree(sharding, dp, gpus_per_node)
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
        quantized = float(arch.quantizable_params)
        frozen_bytes = quantized * (NF4_BITS + NF4_CONSTANT_BITS[training.double_quant]) / 8 + (frozen - quantized) * wb
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
    gathered = 2 * largest * wb * (stage >= 3)
    if training.optimizer_in_backward:
        # Each gradient is stepped and freed as soon as it is produced: one matrix's gradient at a time.
        one = largest_trainable_matrix(arch, training) * wb
        grads = np.minimum(grads, one / (n if stage >= 2 else 1))

    offloaded = 0.0 * weights
    if training.offload is not Offload.none:
        offloaded = optimizer + grads
        optimizer, grads = 0.0 * optimizer, 0.0 * grads
        if training.offload is Offload.optimizer_and_params:
            offloaded = offloaded + weights
            weights = 0.0 * weights
    if training.optimizer in (Optimizer.paged_adamw_8bit, Optimizer.paged_adamw_32bit):
        pass  # paged states live in unified memory: counted on the GPU, spill to host only under pressure
    workspace = 0.0 * optimizer
    torch_adamw = training.optimizer is Optimizer.adamw and not deepspeed and not training.optimizer_in_backward
    if torch_adamw and training.offload is Offload.none:
        # PyTorch's multi-tensor AdamW (the default on GPUs) materialises sqrt(v) for every weight it steps
        # at once: one state's worth. DeepSpeed's fused Adam and a per-weight step in backward work in place.
        workspace = trainable * (2.0 if precision is Precision.pure_bf16 else 4.0) / (n if stage >= 1 else 1)
    return parallel_split(ModelStates(weights, grads, optimizer, gathered, offloaded, workspace), arch, training)


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
    )


def largest_trainable_matrix(arch: Architecture, training: TrainingSpec) -> int:
    """Elements of the biggest gradient a step produces at once: a weight matrix, the embedding, or an adapter."""
    if training.method is Method.full:
        return max(arch.largest_matrix_params, arch.vocab * arch.hidden)
    rank, wanted = training.lora_rank or 16, lora_target_set(training.lora_targets)
    widths = [max(lin.d_in, lin.d_out) for lin in arch.linears() if _MLA_NAMES.get(lin.name, lin.name) in wanted]
    if "head" in wanted:
        widths.append(max(arch.vocab, arch.hidden))
    return rank * max(widths, default=0)


# ----------------------------------------------------------------------------- activations


def activation_elements_per_token_layer(arch: Architecture, training: TrainingSpec, seq_len: Num) -> Num:
    """16-bit elements autograd keeps per token per transformer layer (no recompute, one GPU)."""
    rest, split, kv = activation_parts(arch, training, seq_len)
    return rest + split + kv


def parallel_elements_per_token_layer(arch: Architecture, training: TrainingSpec, seq_len: Num) -> Num:
    """The same per GPU under tensor parallelism (Korthikanti et al. 2022, Table 2).

    What tp shards (attention and MLP interior) ÷ tp; grouped-query K and V ÷ min(tp, kv_heads) (replicated
    beyond); norms and the linears' shared inputs ÷ tp only with sequence parallelism.
    """
    rest, split, kv = activation_parts(arch, training, seq_len)
    by = parallel.activation_split(arch, training)
    return rest / by.rest + split / by.split + kv / by.kv


def activation_parts(arch: Architecture, training: TrainingSpec, seq_len: Num) -> tuple[Num, Num, Num]:
    """16-bit elements per token per layer as (replicated by tp, sharded by tp, key/value): their sum is the layer.

    Following Korthikanti et al. 2022 per-op accounting, adapted to blocks without dropout in the model:
    RMSNorm (unfused) saves an fp32 copy of its input (2 elements·h) and, when its weight trains, the
    normalized x; LayerNorm saves its 16-bit input (h);
    attention saves q, k, v and its output, plus the s² probabilities when not flash/SDPA (2·a·s);
    a gated MLP saves gate, up and act outputs (3F), a plain one its activation's input (F);
    a linear keeps its input only when its weight trains (see `_linear_inputs`). A QLoRA base layer keeps
    nothing: bitsandbytes' MatMul4Bit holds only the packed weight (ctx.tensors = (None, B)).
    """
    h, q_w, kv_w = arch.hidden, arch.q_width, arch.kv_width
    full = training.method is Method.full

    # Mixture of experts: each token's MLP activations exist once per selected expert.
    moe_frac = arch.moe_layers / arch.layers if arch.is_moe else 0.0
    mlp_width = float(arch.intermediate)
    if arch.is_moe:
        mlp_width = arch.expert_intermediate * arch.experts_per_token * moe_frac + arch.intermediate * (1 - moe_frac)
    mlp_width += arch.shared_intermediate * moe_frac

    norm = h if arch.layer_norm else 2 * h + h * full
    qkv_in = _linear_inputs(arch, training, ("q", "k", "v"), h, fused=arch.fused_qkv)
    mlp_in = _linear_inputs(arch, training, ("gate", "up") if arch.gated_mlp else ("up",), h)
    if arch.parallel_block and qkv_in == h and mlp_in == h:
        mlp_in = 0  # one shared norm output feeds both
    attn = q_w + q_w  # q and the output (also the o-projection's raw input); k and v below
    kv = 2 * kv_w
    if training.attention is Attention.eager:
        attn = attn + 2 * arch.heads * seq_len
    o_in = _linear_inputs(arch, training, ("o",), q_w)
    attn = attn + (o_in if o_in != q_w else 0)
    mlp = (3 if arch.gated_mlp else 1) * mlp_width + _linear_inputs(arch, training, ("down",), mlp_width)
    router = arch.experts * 2 * moe_frac  # fp32 router logits
    norms = norm if arch.parallel_block else 2 * norm
    # Tensor parallelism shards attention and the MLP interior; the norms, the column-parallel linears' shared
    # inputs and the router (it reads the replicated hidden state) stay whole on every tp rank.
    return norms + qkv_in + mlp_in + router, attn + mlp, kv


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
    adapted = [k for k in kinds if k in lora_target_set(training.lora_targets)]
    if not adapted:
        return 0
    if training.lora_dropout <= 0:
        return width
    return 1.5 * width * (1 if fused else len(adapted))


def activation_bytes(arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num) -> Num:
    """Saved activations for one micro-batch, with or without full (per-layer) recomputation.

    With gradient checkpointing each layer keeps only its input (h per token) and one layer is
    recomputed at a time during backward; a layer's worth of transient gradients is always added.
    """
    elem = 4.0 if training.precision is Precision.fp32 else 2.0
    by = parallel.activation_split(arch, training)
    tokens = micro_batch * seq_len / by.tokens  # context parallelism: each GPU holds 1/cp of the sequence
    per_layer = parallel_elements_per_token_layer(arch, training, seq_len) * elem * tokens
    # Pipeline: the first stage's L/pp layers, for every micro-batch 1F1B keeps in flight there.
    layers = parallel.stage_layers(arch, training) * parallel.in_flight_factor(training)
    if training.gradient_checkpointing:
        stored = layers * arch.hidden / by.rest * elem * tokens + per_layer
    else:
        stored = layers * per_layer
    final_norm = 3 * arch.hidden / by.rest * elem * tokens
    return stored + final_norm + per_layer  # + one layer of transient gradient tensors


def logits_bytes(arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num) -> Num:
    """Logits and loss buffers per micro-batch: 16-bit logits, the log-softmax kept for backward and its gradient.

    Mixed precision upcasts to fp32 for the loss (transformers' ForCausalLMLoss): 2 + 4 + 4 + 2 bytes per
    logit; pure bf16 (litgpt, torchtune) computes the loss on bf16 logits: 2 + 2 + 2.
    """
    per_logit = 6.0 if training.precision is Precision.pure_bf16 else 12.0
    if training.precision is Precision.fp32:
        per_logit = 12.0
    return micro_batch * seq_len * arch.vocab * per_logit


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


def estimate(
    arch: Architecture,
    training: TrainingSpec,
    *,
    dp: Num,
    gpus_per_node: Num,
    micro_batch: Num,
    seq_len: Num,
    zero_accounting: str = "deepspeed",
) -> MemoryEstimate:
    """Peak memory per GPU.

    Peak = weights + optimizer + gradients + max(activations + logits, optimizer-step workspace) + working
    buffers: with gradient accumulation the gradients persist while the next micro-batch's activations are
    alive, so they add.
    Reserved = allocated × (1 + allocator reserve) + CUDA context.
    """
    states = model_states(arch, training, dp, gpus_per_node, zero_accounting)
    act = activation_bytes(arch, training, micro_batch, seq_len)
    # Vocab-parallel cross-entropy (Megatron, torchtitan loss_parallel) splits the logits over tp; cp splits the
    # tokens. Counted on the peak GPU even when the last pipeline stage holds them: an upper bound for pp > 1.
    logits = logits_bytes(arch, training, micro_batch, seq_len) / (training.tensor_parallel * training.context_parallel)
    working = states.gathered + COMM_BUCKET_BYTES * (np.asarray(dp) > 1)
    if training.method is Method.qlora:
        working = working + 2 * arch.largest_matrix_params * 2  # dequantized bf16 weight, forward and backward
    # The optimizer step runs after backward has freed the activations: its workspace only adds beyond them.
    step_excess = np.maximum(states.step_workspace - act - logits, 0.0)
    allocated = states.weights + states.gradients + states.optimizer + act + logits + working + step_excess
    reserve = allocated * ALLOCATOR_RESERVE
    overhead = working + step_excess + reserve + CUDA_CONTEXT_BYTES
    total = allocated + reserve + CUDA_CONTEXT_BYTES
    cpu = states.cpu_offloaded * 1.5 * gpus_per_node  # DeepSpeed's 1.5× pinned-buffer factor, per node
    return MemoryEstimate(
        states.weights, states.gradients, states.optimizer, act, logits, overhead, allocated, total, cpu
    )
