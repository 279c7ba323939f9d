"""The named choices of a plan request: method, precision, optimizer, sharding, offload, attention
kernel, loss kernel and framework (README "The plan request").

They live apart from core.planner.request, which re-exports them, so the contract's file stays about
shapes; the GUI's choice lists and the framework profiles read the same enums.
"""

from __future__ import annotations

from enum import StrEnum


class Method(StrEnum):
    full = "full"
    lora = "lora"
    qlora = "qlora"


class Precision(StrEnum):
    amp_bf16 = "amp_bf16"
    pure_bf16 = "pure_bf16"
    amp_fp16 = "amp_fp16"
    fp32 = "fp32"
    fp8 = "fp8"


class Optimizer(StrEnum):
    adamw = "adamw"
    adamw_8bit = "adamw_8bit"
    paged_adamw_8bit = "paged_adamw_8bit"
    paged_adamw_32bit = "paged_adamw_32bit"
    sgd = "sgd"
    sgd_momentum = "sgd_momentum"
    adafactor = "adafactor"
    lion = "lion"


class OptimizerKernel(StrEnum):
    """How an AdamW step runs on the GPU: one fused kernel per step, or PyTorch's multi-tensor
    (foreach) path, one pass over the states per arithmetic operation."""

    fused = "fused"
    foreach = "foreach"


class ReduceDtype(StrEnum):
    """The dtype gradients travel in on the data-parallel wire."""

    fp32 = "fp32"
    bf16 = "bf16"


class Sharding(StrEnum):
    none = "none"
    zero1 = "zero1"
    zero2 = "zero2"
    zero3 = "zero3"
    fsdp = "fsdp"
    hsdp = "hsdp"


class Offload(StrEnum):
    none = "none"
    optimizer = "optimizer"
    optimizer_and_params = "optimizer_and_params"


class Attention(StrEnum):
    flash = "flash"
    sdpa = "sdpa"
    eager = "eager"


class CrossEntropy(StrEnum):
    # logits materialised whole, upcast to fp32 for the loss (transformers' default)
    standard = "standard"
    chunked = "chunked"  # 16-bit logits kept, the fp32 loss computed one chunk at a time
    # fused linear cross-entropy kernels (Liger, Apple CCE): logits never materialised whole
    fused = "fused"


class Framework(StrEnum):
    hf_trainer = "hf_trainer"
    torchtune = "torchtune"
    unsloth = "unsloth"
    axolotl = "axolotl"
    litgpt = "litgpt"
    torchtitan = "torchtitan"
    megatron = "megatron"
    deepspeed = "deepspeed"


# The training fields a request may pin over the hardware search's choice: the window's Method page
# notes what pinning each costs. Here, not in core.planner.analysis, so that page is built without
# the planner loaded.
OVERRIDABLE = ("gradient_checkpointing", "micro_batch_size", "sharding")
