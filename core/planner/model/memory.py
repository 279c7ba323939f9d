"""Memory per GPU at the step's peak, composed the way a training step really holds it.

Every function takes plain numbers or NumPy arrays for the data-parallel degree, micro-batch and
sequence length, so the hardware search evaluates thousands of candidates in one call (see
search.py).

Accounting (docs/formulas.md, "Memory"):
* model states – weights (16-bit or fp32 working copy; NF4 + constants for QLoRA's frozen base),
  gradients
                 and optimizer states (fp32 master + states), per GPU under any sharding
                 (states.py).
* activations  – tensors autograd saves for backward, plus one layer of transients (activations.py).
* logits       – the (tokens × vocab) logits and loss buffers: gigabytes with 128k–256k vocabularies
  (savers.py).
* overhead     – CUDA context, allocator reserve, gathered ZeRO-3/FSDP buffers, comm buckets,
  dequant buffers,
                 the optimizer step's workspace where it outgrows the freed activations.
This module decides which of them are alive together (gradients at the activation peak, no_sync's
unsharded gradients, the optimizer step after backward) and the host RAM and host traffic they
imply. The result predicts *reserved* memory as nvidia-smi shows it; `allocated_peak` drops context
and reserve (what torch.cuda.max_memory_allocated reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.planner.model import parallel, savers
from core.planner.model.activations import activation_bytes, quantized_inputs_bytes
from core.planner.model.lora import trainable_params
from core.planner.model.params import Architecture
from core.planner.model.savers import logits_bytes
from core.planner.model.states import dequantized_matrix_params, model_states, weight_bytes
from core.planner.request import Framework, Method, Offload, Sharding, TrainingSpec

Num = Any  # a float or a NumPy array, broadcast together

GIB = 2**30
# calculators use 0.65–1 GiB (REFERENCES.md, "Peak composition")
CUDA_CONTEXT_BYTES = int(0.75 * GIB)
# reserved exceeds allocated by 10–25% in published runs; lower end for steady loops
ALLOCATOR_RESERVE = 0.10
COMM_BUCKET_BYTES = 25 * 2**20 * 2  # PyTorch DDP bucket_cap_mb=25, double-buffered
DEEPSPEED_PINNED_FACTOR = 1.5  # DeepSpeed's additional_buffer_factor for pinned CPU-offload buffers


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
    # paged optimizer states (unified memory): bytes that may spill to host under pressure
    paged: Num = 0.0
    # bytes each GPU moves over its host link per optimizer step (offload)
    host_bytes_per_step: Num = 0.0
    # the part of them the next compute waits for (not overlapped)
    host_exposed_bytes_per_step: Num = 0.0
    # paged states paged out to host RAM under memory pressure (0 while they fit)
    paged_spilled: Num = 0.0
    # the optimizer step's temporaries (in overhead once they outgrow the activations)
    step_workspace: Num = 0.0


def grads_at_activation_peak(
    training: TrainingSpec, gradients: Num, accumulation: Num, dp: Num = 1
) -> Num:
    """The gradient bytes alive with every activation, at the start of backward.

    A gradient is allocated by the backward that first computes it ("None by default and becomes a
    Tensor the first time a call to backward() computes gradients", torch.Tensor.grad docs), and
    `optimizer.zero_grad()` sets them back to None (set_to_none=True, its default since PyTorch 2.0;
    the Trainer, torchtitan and plain loops call it every step). PyTorch FSDP (1 and 2) writes each
    sharded gradient in its unit's post-backward reduce-scatter the same way. So with one
    micro-batch per step no gradient exists while the activations are all alive, and the gradients
    grow only as the layers' activations are freed; with accumulation they persist. The same holds
    for one GPU with no wrapper. DDP's buckets (its Reducer allocates them at construction),
    DeepSpeed's flat fp32 partitions and Megatron-Core's contiguous gradient buffer are allocated
    once and stay.
    """
    if training.offload is not Offload.none:
        return gradients
    fsdp = training.sharding in (Sharding.fsdp, Sharding.hsdp)
    bare = (
        training.sharding is Sharding.none
        and training.framework is not Framework.megatron
        and training.tensor_parallel * training.pipeline_parallel * training.expert_parallel == 1
    )
    if not (fsdp or bare):
        return gradients
    fresh = np.asarray(accumulation) <= 1
    if bare:
        fresh = fresh & (np.asarray(dp) * training.context_parallel <= 1)
    if np.ndim(fresh) == 0 and np.ndim(gradients) == 0:
        return 0.0 if bool(fresh) else gradients
    return np.where(fresh, 0.0 * gradients, gradients)


def no_sync_gradients(
    arch: Architecture, training: TrainingSpec, gradients: Num, dp: Num, accumulation: Num
) -> Num:
    """The gradients alive while a litgpt FSDP run accumulates: unsharded, and for LoRA its frozen
    weights' too.

    litgpt's finetune scripts wrap every accumulating micro-batch in Lightning Fabric's
    `no_backward_sync`, which on FSDP (1) is `FullyShardedDataParallel.no_sync`: gradients then
    "accumulate in unsharded form" until the synchronising micro-batch (torch.distributed.fsdp
    docs). They wrap whole `Block`s, so a LoRA layer's frozen weights share a flat parameter with
    its adapters (use_orig_params=True), and FSDP then keeps their gradients as well, "equivalent to
    not freezing those parameters" (same docs). The embeddings and head sit in the root unit, all
    frozen under LoRA, and get none.
    """
    if training.framework is not Framework.litgpt or training.sharding is not Sharding.fsdp:
        return gradients
    unit = (
        float(arch.quantizable_params)
        if training.method is Method.lora
        else float(arch.total_params)
    )
    full = (
        unit + (trainable_params(arch, training) if training.method is Method.lora else 0.0)
    ) * weight_bytes(training.precision)
    syncing = (
        (np.asarray(dp) > 1)
        & (np.asarray(accumulation) > 1)
        & (training.method is not Method.qlora)
    )
    return np.where(syncing, np.maximum(full, gradients), gradients)


def previous_graph_bytes(
    arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num
) -> Num:
    """What the previous micro-batch's autograd graph still holds while the next one runs forward,
    in litgpt.

    litgpt's finetune loops (finetune/lora.py `fit`) bind `logits = model(input_ids, ...)` and
    `loss = chunked_cross_entropy(...)` and keep both names to the next iteration, so the previous
    graph stays referenced until the next forward returns and its loss replaces it. Backward frees a
    graph's saved tensors but not what a custom autograd Function keeps as attributes of its
    context: bitsandbytes' MatMul4Bit before 0.43.2 kept each input that way (`ctx.tensors = (A,
    B)`), so at the next forward's peak the previous micro-batch's 4-bit inputs are alive beside the
    current ones (`activations.quantized_inputs_bytes`). A Hugging Face Trainer step returns
    `loss.detach()` and drops its graph before the next forward.
    """
    if training.framework is not Framework.litgpt:
        return 0.0
    return quantized_inputs_bytes(arch, training, micro_batch, seq_len)


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

    Peak = weights + optimizer + working buffers + max(live gradients + activations + logits,
    gradients + optimizer-step workspace): with gradient accumulation (or persistent DDP/DeepSpeed
    buffers) the gradients are alive with the next micro-batch's activations and add; FSDP's,
    without accumulation, are not yet allocated then (`grads_at_activation_peak`). Reserved =
    allocated × (1 + allocator reserve) + CUDA context, plus the paged optimizer states that stay
    resident: they live outside the allocator and fill what `gpu_memory` leaves free (all of them
    when it is not given); the rest spills to host RAM. `accumulation` (micro-batches per optimizer
    step) scales the host traffic of activation offload and parameter offload.
    """
    states = model_states(arch, training, dp, gpus_per_node, zero_accounting)
    act = activation_bytes(arch, training, micro_batch, seq_len)
    # litgpt's last graph, old bitsandbytes
    act = act + previous_graph_bytes(arch, training, micro_batch, seq_len)
    # Vocab-parallel cross-entropy (Megatron, torchtitan loss_parallel) splits the logits over tp;
    # cp splits the tokens. Counted on the peak GPU even when the last pipeline stage holds them: an
    # upper bound for pp > 1.
    logits = logits_bytes(arch, training, micro_batch, seq_len) / (
        training.tensor_parallel * training.context_parallel
    )
    working = states.gathered + COMM_BUCKET_BYTES * (np.asarray(dp) > 1)
    if training.method is Method.qlora:
        # dequantized bf16 weight, fwd + bwd
        working = working + 2 * dequantized_matrix_params(arch, training) * 2
    # The optimizer step runs after backward has freed the activations: the gradients it reads and
    # its workspace only add beyond them (the gradients alive at the activation peak are counted
    # there).
    fresh = grads_at_activation_peak(training, states.gradients, accumulation, dp)
    live_grads = no_sync_gradients(arch, training, fresh, dp, accumulation)
    gradients = np.maximum(states.gradients, live_grads)  # more only while no_sync keeps them whole
    step_excess = np.maximum(
        states.gradients + states.step_workspace - live_grads - act - logits, 0.0
    )
    allocated = (
        states.weights + live_grads + states.optimizer + act + logits + working + step_excess
    )
    reserve = allocated * ALLOCATOR_RESERVE
    fixed = allocated + reserve + CUDA_CONTEXT_BYTES
    resident = savers.paged_resident(states.paged, fixed, gpu_memory)
    spilled = states.paged - resident
    overhead = working + step_excess + reserve + CUDA_CONTEXT_BYTES
    # This GPU's share of the offloaded layer inputs: its pipeline stage's layers, its 1/cp of the
    # tokens, and 1/tp of the hidden size with sequence parallelism (as activation_bytes keeps them
    # on the GPU).
    by = parallel.activation_split(arch, training)
    offloaded_act = savers.offloaded_activation_bytes(arch, training, micro_batch, seq_len) * (
        parallel.stage_layers(arch, training) / arch.layers / (by.rest * by.tokens)
    )
    # Host RAM per node: DeepSpeed's pinned offload buffers, the spilled paged pages, the offloaded
    # activations.
    cpu = (states.cpu_offloaded * DEEPSPEED_PINNED_FACTOR + spilled + offloaded_act) * gpus_per_node
    # Host link per optimizer step. Overlapped with compute: ZeRO-Offload's gradients going out
    # during backward (arXiv:2101.06840 §4.2), prefetched offloaded parameters, each micro-batch's
    # activations copied out in forward and back in backward. Waited for: the updated parameters
    # coming back after the CPU step, and the spilled paged pages the optimizer step faults in and
    # writes back.
    exposed_host = states.host_step_bytes / 2 + 2 * spilled
    hidden_host = (
        states.host_step_bytes / 2 + (states.host_micro_bytes + 2 * offloaded_act) * accumulation
    )
    return MemoryEstimate(
        states.weights,
        gradients,
        states.optimizer + resident,
        act,
        logits,
        overhead,
        allocated,
        fixed + resident,
        cpu,
        states.paged,
        hidden_host + exposed_host,
        exposed_host,
        spilled,
        states.step_workspace,
    )
