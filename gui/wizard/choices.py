"""Readable names for the request's choices. The ids stay the combo boxes' data: they are the JSON
contract (DESIGN §3.1), so a saved plan or a request file never depends on how a choice is worded
here."""

from __future__ import annotations

from enum import StrEnum

from core.planner import Interconnect, StorageTier, tier_figures

METHOD = {"full": "Full fine-tune", "lora": "LoRA", "qlora": "QLoRA (4-bit base)"}
PRECISION = {
    "amp_bf16": "AMP bf16 (fp32 master)",
    "pure_bf16": "Pure bf16 (no fp32 copy)",
    "amp_fp16": "AMP fp16 (loss scaling)",
    "fp32": "fp32 (full precision)",
    "fp8": "fp8 (Hopper and newer)",
}
OPTIMIZER = {
    "adamw": "AdamW",
    "adamw_8bit": "AdamW 8-bit",
    "paged_adamw_8bit": "Paged AdamW 8-bit",
    "paged_adamw_32bit": "Paged AdamW 32-bit",
    "sgd": "SGD",
    "sgd_momentum": "SGD with momentum",
    "adafactor": "Adafactor",
    "lion": "Lion",
}
SHARDING = {
    "none": "None (DDP)",
    "zero1": "ZeRO-1 (optimizer states)",
    "zero2": "ZeRO-2 (+ gradients)",
    "zero3": "ZeRO-3 (+ weights)",
    "fsdp": "FSDP full shard",
    "hsdp": "HSDP (shard in node, replicate across)",
}
OFFLOAD = {
    "none": "None",
    "optimizer": "Optimizer to CPU",
    "optimizer_and_params": "Optimizer and weights to CPU",
}
ATTENTION = {"flash": "FlashAttention", "sdpa": "PyTorch SDPA", "eager": "Eager (plain)"}
CHECKPOINTING = {
    "false": "Off",
    "selective": "Selective (attention core)",
    "true": "Full (every layer)",
}
CROSS_ENTROPY = {
    "standard": "Standard (fp32 logits)",
    "chunked": "Chunked",
    "fused": "Fused (Liger / CCE)",
}
FRAMEWORK = {
    "hf_trainer": "Hugging Face Trainer",
    "torchtune": "torchtune",
    "unsloth": "Unsloth",
    "axolotl": "Axolotl",
    "litgpt": "LitGPT",
    "torchtitan": "TorchTitan",
    "megatron": "Megatron-LM",
    "deepspeed": "DeepSpeed",
}
PRICING_MODE = {
    "on_demand": "On-demand",
    "spot": "Spot (preemptible)",
    "reserved": "Reserved (committed)",
}
INTERCONNECT = {
    "infiniband": "InfiniBand",
    "roce": "RoCE (RDMA over Ethernet)",
    "efa": "AWS EFA",
    "ethernet": "Plain Ethernet (TCP)",
}
TYPICAL_NETWORK = "Typical for this GPU class"
ZERO_ACCOUNTING = {"deepspeed": "DeepSpeed's buffers", "paper": "ZeRO paper (K = 12)"}
OBJECTIVE = {
    "cost": "Lowest cost",
    "time": "Shortest time",
    "cost_under_deadline": "Lowest cost within a deadline",
}


def options(enum: type[StrEnum], labels: dict[str, str]) -> list[tuple[str, str]]:
    """(id, label) for every member, in the enum's order; a member without a label shows its id."""
    return [(m.value, labels.get(m.value, m.value)) for m in enum]


def literal_options(labels: dict[str, str]) -> list[tuple[str, str]]:
    return list(labels.items())


def storage_tier_options() -> list[tuple[str, str]]:
    """Tier titles from the catalog (resources/catalog/storage_tiers.json), so the window and the
    cost lines agree."""
    return [(t.value, tier_figures(t).title) for t in StorageTier]


def interconnect_options() -> list[tuple[str, str]]:
    return [("", TYPICAL_NETWORK), *options(Interconnect, INTERCONNECT)]
