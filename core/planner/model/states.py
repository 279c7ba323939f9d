"""Model states per GPU: weights, gradients and optimizer states (ZeRO's term), and the bytes each
takes.

Bytes per parameter by precision and optimizer; what ZeRO stages, FSDP/HSDP and
tensor/pipeline/expert parallelism leave on each GPU; what CPU offload and paged optimizers move to
the host; the parameters ZeRO-3/FSDP hold gathered; QLoRA's NF4 base and the weight bitsandbytes
dequantizes at once. Vectorised like the rest of the memory model (`memory.estimate` composes the
peak); docs/formulas.md, "Model states", gives the sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.planner.model import parallel
from core.planner.model.lora import largest_trainable_matrix, trainable_params
from core.planner.model.params import Architecture
from core.planner.request import (
    Framework,
    Method,
    Offload,
    Optimizer,
    OptimizerKernel,
    Precision,
    Sharding,
    TrainingSpec,
)

Num = Any  # a float or a NumPy array, broadcast together

NF4_BITS = 4.0
# QLoRA §3, double quantization or not
NF4_CONSTANT_BITS = {True: 8 / 64 + 32 / (64 * 256), False: 32 / 64}
PAGED_OPTIMIZERS = (Optimizer.paged_adamw_8bit, Optimizer.paged_adamw_32bit)
# ZeRO's stages as DeepSpeed runs them (FSDP and HSDP are the PyTorch stack's own)
ZERO_SHARDINGS = (Sharding.zero1, Sharding.zero2, Sharding.zero3)

# Stacks whose AdamW is one fused kernel by default: Megatron-Core (Transformer Engine's or apex's
# FusedAdam, megatron/core/optimizer/__init__.py), DeepSpeed (its FusedAdam) and torchtitan
# (`optimizer.implementation = "fused"` in its job config).
FUSED_ADAMW_FRAMEWORKS = frozenset({Framework.megatron, Framework.deepspeed, Framework.torchtitan})


def adamw_kernel(training: TrainingSpec) -> OptimizerKernel | None:
    """How the AdamW step runs (None for other optimizers): the request's `optimizer_kernel`; else
    fused for the stacks above and under ZeRO sharding (DeepSpeed's FusedAdam, Megatron's
    distributed optimizer); else torch.optim.AdamW's default on GPUs, the multi-tensor (foreach)
    path."""
    if training.optimizer is not Optimizer.adamw:
        return None
    if training.optimizer_kernel is not None:
        return training.optimizer_kernel
    if training.framework in FUSED_ADAMW_FRAMEWORKS or training.sharding in ZERO_SHARDINGS:
        return OptimizerKernel.fused
    return OptimizerKernel.foreach


# ----------------------------------------------------------------------------- bytes per parameter


def weight_bytes(precision: Precision) -> float:
    return 4.0 if precision is Precision.fp32 else 2.0


def master_bytes(precision: Precision) -> float:
    """Mixed precision keeps an fp32 master copy of trainable weights (ZeRO's K counts it)."""
    return 4.0 if precision in (Precision.amp_bf16, Precision.amp_fp16, Precision.fp8) else 0.0


def optimizer_state_bytes(optimizer: Optimizer, precision: Precision) -> float:
    """States per trainable parameter. Pure bf16 (litgpt bf16-true, torchtune) keeps them in
    bf16."""
    state = 2.0 if precision is Precision.pure_bf16 else 4.0
    return {
        Optimizer.adamw: 2 * state,
        # bitsandbytes keeps 32-bit states whatever the weights' dtype
        Optimizer.paged_adamw_32bit: 8.0,
        Optimizer.adamw_8bit: 2.0,
        Optimizer.paged_adamw_8bit: 2.0,
        Optimizer.sgd: 0.0,
        Optimizer.sgd_momentum: state,
        Optimizer.lion: state,
        # factored second moment: 4·(rows+cols) per matrix; no first moment
        Optimizer.adafactor: 0.1,
    }[optimizer]


def checkpoint_bytes(arch: Architecture, training: TrainingSpec) -> float:
    """A resumable checkpoint: the trained parameters' 16-bit (or fp32) weights, fp32 master and
    optimizer states; for LoRA/QLoRA only the adapters' (the frozen base is reloaded from the
    hub)."""
    precision = training.precision
    per_param = (
        weight_bytes(precision)
        + master_bytes(precision)
        + optimizer_state_bytes(training.optimizer, precision)
    )
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
    # CPU offload of parameters: bytes over the host link per micro-batch
    host_micro_bytes: Num = 0.0


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

    ZeRO paper (arXiv:1910.02054): DP (2+2+K)Ψ; stage 1 2Ψ+2Ψ+KΨ/N; stage 2 2Ψ+(2+K)Ψ/N; stage 3
    (2+2+K)Ψ/N. DeepSpeed's implementation also holds an fp32 gradient partition (its estimator's 18
    = 2+4+4+8) and gathers 2 × the largest layer in 16-bit under stage 3; FSDP keeps fp32 shards
    (16Ψ/N) plus 2 units.
    """
    precision, method, sharding = training.precision, training.method, training.sharding
    total = float(total_params if total_params is not None else arch.total_params)
    largest = float(
        largest_layer_params if largest_layer_params is not None else arch.largest_layer_params
    )
    trainable = total if method is Method.full else trainable_params(arch, training)
    frozen = 0.0 if method is Method.full else total
    # Context-parallel ranks hold the same weights: FSDP2 (torchtitan shards over its "dp_shard_cp"
    # mesh), Megatron's distributed optimizer and ZeRO with Ulysses shard the states over data ×
    # context parallel.
    n = shard_degree(sharding, dp * training.context_parallel, gpus_per_node)
    stage = {
        Sharding.none: 0,
        Sharding.zero1: 1,
        Sharding.zero2: 2,
        Sharding.zero3: 3,
        Sharding.fsdp: 3,
        Sharding.hsdp: 3,
    }[sharding]
    deepspeed = zero_accounting == "deepspeed" and sharding in ZERO_SHARDINGS

    wb = weight_bytes(precision)
    if method is Method.qlora:
        nf4 = (NF4_BITS + NF4_CONSTANT_BITS[training.double_quant]) / 8
        quantized = float(arch.quantizable_params)
        frozen_bytes = quantized * nf4 + (frozen - quantized) * wb
        if quantizes_lm_head(training):
            # The head becomes a 4-bit linear of its own; a tied model's embedding stays a 16-bit
            # table beside it.
            head = float(arch.vocab * arch.hidden)
            frozen_bytes += head * nf4 - (0.0 if arch.tied_embeddings else head * wb)
    else:
        frozen_bytes = frozen * wb
    # A trainable 16-bit working copy; fp32 precision trains the fp32 weights directly.
    train_w = trainable * wb
    grad = trainable * wb
    fp32_grad = trainable * 4.0 if deepspeed and master_bytes(precision) else 0.0
    opt = trainable * (
        master_bytes(precision) + optimizer_state_bytes(training.optimizer, precision)
    )

    weights = (frozen_bytes + train_w) / (n if stage >= 3 else 1)
    if deepspeed and stage >= 3 and fp32_grad:
        grad = 0.0  # stage 3 reduce-scatters straight into the fp32 partition: 2P/N + 16P/N = 18P/N
    grads = grad / (n if stage >= 2 else 1) + fp32_grad / n
    if sharding in (Sharding.fsdp, Sharding.hsdp) and master_bytes(precision):
        # FSDP mixed precision shards the fp32 parameters themselves: no separate 16-bit copy or
        # master.
        weights = (frozen_bytes + trainable * 4.0) / n
        grads = trainable * 4.0 / n
        opt = trainable * optimizer_state_bytes(training.optimizer, precision)
    optimizer = opt / (n if stage >= 1 else 1)
    gathered = gathered_bytes(arch, training, largest, wb)
    if training.optimizer_in_backward:
        # Each gradient is stepped and freed as soon as it is produced: one matrix's gradient at a
        # time.
        one = largest_trainable_matrix(arch, training) * wb
        grads = np.minimum(grads, one / (n if stage >= 2 else 1))

    n_opt = n if stage >= 1 else 1
    moved = _host_side(training, trainable, wb, n_opt, weights, grads, optimizer)
    weights, grads, optimizer = moved.weights, moved.grads, moved.optimizer
    workspace = 0.0 * optimizer
    foreach = (
        adamw_kernel(training) is OptimizerKernel.foreach and not training.optimizer_in_backward
    )
    if foreach and training.offload is Offload.none:
        # PyTorch's multi-tensor AdamW materialises sqrt(v) for every weight it steps at once: one
        # state's worth. A fused Adam and a per-weight step in backward work in place.
        workspace = trainable * (2.0 if precision is Precision.pure_bf16 else 4.0) / n_opt
    states = ModelStates(
        weights,
        grads,
        optimizer,
        gathered,
        moved.offloaded,
        workspace,
        moved.paged,
        moved.host_step,
        moved.host_micro,
    )
    return parallel_split(states, arch, training)


@dataclass(frozen=True)
class _HostSide:
    """The GPU's states once offload or paging has moved some of them to host memory, and the
    traffic."""

    weights: Num
    grads: Num
    optimizer: Num
    offloaded: Num
    paged: Num
    host_step: Num
    host_micro: Num


def _host_side(
    training: TrainingSpec,
    trainable: float,
    wb: float,
    n_opt: Num,
    weights: Num,
    grads: Num,
    optimizer: Num,
) -> _HostSide:
    """What ZeRO-Offload moves to the host (optimizer and gradients, parameters too) or bitsandbytes
    pages."""
    # the shapes the grid broadcasts
    zero_w, zero_g, zero_o = 0.0 * weights, 0.0 * grads, 0.0 * optimizer
    if training.offload is not Offload.none:
        # ZeRO-Offload (arXiv:2101.06840 §4.1): each step moves this GPU's 16-bit gradient partition
        # to the host and the updated 16-bit parameters back (2 + 2 bytes per parameter of the
        # partition).
        host_step = 2 * trainable * wb / n_opt
        if training.offload is Offload.optimizer_and_params:
            # Offloaded parameters are fetched to the GPU for the forward and again for the
            # backward.
            return _HostSide(
                zero_w, zero_g, zero_o, optimizer + grads + weights, zero_o, host_step, 2 * weights
            )
        return _HostSide(weights, zero_g, zero_o, optimizer + grads, zero_o, host_step, zero_w)
    if training.optimizer in PAGED_OPTIMIZERS:
        # bitsandbytes pages its optimizer states (cudaMallocManaged): outside PyTorch's caching
        # allocator, evicted to host RAM under pressure. The fp32 master copy, where there is one,
        # is an ordinary tensor.
        paged = trainable * optimizer_state_bytes(training.optimizer, training.precision) / n_opt
        return _HostSide(weights, grads, optimizer - paged, zero_w, paged, zero_w, zero_w)
    return _HostSide(weights, grads, optimizer, zero_w, zero_o, zero_w, zero_w)


def parallel_split(states: ModelStates, arch: Architecture, training: TrainingSpec) -> ModelStates:
    """Tensor, pipeline and expert parallelism split the model before ZeRO/FSDP shards it over dp.

    Every state scales by the busiest GPU's share of the parameters (`parallel.state_share`: the
    first stage's embedding + layers/pp, ÷ tp, experts ÷ ep); ZeRO-3/FSDP gather one layer's
    tensor-parallel shard (÷ tp).
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
    BitsandbytesPrecision, whose convert_module replaces every torch.nn.Linear (the head included;
    only `ignore_modules` are spared, and litgpt names none). transformers' bitsandbytes integration
    keeps the head 16-bit (`llm_int8_skip_modules` defaults to the output embedding)."""
    return training.method is Method.qlora and training.framework is Framework.litgpt


def dequantized_matrix_params(arch: Architecture, training: TrainingSpec) -> int:
    """The largest weight bitsandbytes dequantizes to 16-bit at once (MatMul4Bit's forward, and
    again in backward): the largest block matrix, or the LM head where it is quantized too."""
    if quantizes_lm_head(training):
        return max(arch.largest_matrix_params, arch.vocab * arch.hidden)
    return arch.largest_matrix_params


def gathered_bytes(arch: Architecture, training: TrainingSpec, largest: float, wb: float) -> float:
    """Parameters ZeRO-3/FSDP holds gathered at once: two units (the current one and the prefetched
    next).

    QLoRA under FSDP gathers the packed NF4 blocks, not 16-bit weights: bitsandbytes' Params4bit
    stored with quant_storage=bfloat16 lets FSDP shard and all-gather the 4-bit data and its
    constants (Answer.AI fsdp_qlora; Hugging Face PEFT "FSDP+QLoRA"). The embedding and LM head stay
    16-bit and may be the larger unit.
    """
    if training.sharding not in (Sharding.zero3, Sharding.fsdp, Sharding.hsdp):
        return 0.0
    if training.method is not Method.qlora:
        return 2 * largest * wb
    nf4 = (NF4_BITS + NF4_CONSTANT_BITS[training.double_quant]) / 8
    block_q = arch.quantizable_params / arch.layers
    block = block_q * nf4 + (arch.block_params - block_q) * wb
    return 2 * max(block, arch.vocab * arch.hidden * wb)
