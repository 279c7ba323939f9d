"""What to change when a plan does not fit: `memory.suggestions` of the plan result, most effective
first.

Each suggestion names a setting of the request and why it helps this plan; the memory savers are
offered only when their own arithmetic (savers.py) says they save something here.
"""

from __future__ import annotations

from core.catalog import GPU
from core.planner.model import savers
from core.planner.model.params import Architecture
from core.planner.model.states import PAGED_OPTIMIZERS
from core.planner.request import (
    CrossEntropy,
    Framework,
    Method,
    Offload,
    Optimizer,
    PlanRequest,
    Precision,
    Sharding,
)
from core.planner.speed.step import StepEstimate

GB = 1e9


def suggestions(request: PlanRequest, est: StepEstimate, gpu: GPU, arch: Architecture) -> list[str]:
    """What to change when the plan does not fit, most effective first."""
    if bool(est.fits):
        return []
    t, out = request.training, []
    mem = est.memory
    hw = request.hardware
    if t.checkpointing == "none" and mem.activations > 0.2 * mem.total:
        out.append("turn on gradient checkpointing (activations are the largest part)")
    out += _loss_kernels(request, arch, float(mem.logits), float(mem.total))
    if t.micro_batch_size > 1:
        out.append(
            "lower the micro-batch and raise gradient accumulation (global batch stays the same)"
        )
    if t.checkpointing == "full" and not t.activation_offload:
        inputs = float(
            savers.checkpointed_inputs_bytes(arch, t, t.micro_batch_size, request.data.seq_len)
        )
        if inputs > 0.05 * float(mem.total):
            out.append(
                f"offload activations to CPU RAM (training.activation_offload, torchtune's "
                "enable_activation_offloading): the checkpointed layer inputs take "
                f"{inputs / GB:.1f} GB"
            )
    if t.method is Method.full:
        out.append("use LoRA or QLoRA: the frozen base needs no gradients or optimizer states")
    elif t.method is Method.lora:
        out.append("use QLoRA: NF4 weights take about a quarter of the 16-bit size")
    if t.sharding in (Sharding.none, Sharding.zero1, Sharding.zero2) and (hw and hw.gpus > 1):
        out.append("shard parameters too (zero3 or fsdp)")
    elif hw and hw.gpus == 1:
        out.append("add GPUs and shard with zero3/fsdp")
    if t.offload is Offload.none and t.sharding is not Sharding.none:
        out.append("offload the optimizer to CPU RAM (slower steps)")
    if t.optimizer is Optimizer.adamw:
        out.append("use an 8-bit optimizer (adamw_8bit) to shrink optimizer states 4×")
    if (
        t.optimizer not in PAGED_OPTIMIZERS
        and t.offload is Offload.none
        and t.method is Method.full
    ):
        out.append(
            "use a paged optimizer (paged_adamw_8bit): bitsandbytes keeps its states in unified "
            "memory, which spills to CPU RAM when the GPU is full"
        )
    if t.method is Method.full and not t.optimizer_in_backward and float(est.accumulation) <= 1:
        out.append(
            "step the optimizer in backward (training.optimizer_in_backward): gradients are freed "
            "as made"
        )
    if t.precision is Precision.amp_bf16 and t.method is Method.full:
        out.append("pure bf16 weights and states (8 instead of 16 bytes per parameter)")
    if (
        t.framework is Framework.hf_trainer
        and "framework" not in t.model_fields_set
        and (t.cross_entropy is CrossEntropy.standard)
    ):
        out.append(
            "plan with the framework you will run (training.framework torchtune, unsloth, ...): "
            "their default recipes checkpoint activations and use memory-saving loss kernels"
        )
    out.append(f"pick a GPU with more than {gpu.memory_bytes / GB:.0f} GB")
    return out


def _loss_kernels(
    request: PlanRequest, arch: Architecture, logits: float, total: float
) -> list[str]:
    """Chunked or fused cross-entropy, when the logits are a large part and the kernel saves memory
    here."""
    t = request.training
    if logits <= 0.15 * total:
        return []
    out = []
    for kind, how in (
        (CrossEntropy.fused, "fused linear cross-entropy (Liger, Cut Cross-Entropy"),
        (CrossEntropy.chunked, "chunked cross-entropy (torchtune's CEWithChunkedOutputLoss"),
    ):
        if kind is t.cross_entropy:
            break
        other = t.model_copy(update={"cross_entropy": kind})
        saved = logits - float(
            savers.logits_bytes(arch, other, t.micro_batch_size, request.data.seq_len)
        )
        if saved > 0.05 * total:
            out.append(
                f"use {how}; training.cross_entropy {kind.value}): saves {saved / GB:.1f} GB of "
                "logits"
            )
    return out
