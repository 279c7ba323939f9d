"""What a case's words say its stack does beyond the model, the batch and the parallel layout:
the AdamW kernel it steps with, the dtype and bucket its data-parallel collectives carry, and the
NVLink domain a GB200 run's GPUs share. bench/calibrate_cases.py reads the rest."""

from __future__ import annotations

import re
from typing import Any

from core.catalog import shipped_catalog
from core.planner.money import pricing


class NotPlanned(Exception):
    """The case needs a setting its source does not publish, or one the planner cannot express."""


# How a case's words name the AdamW kernel its stack ran. Fused: torch's fused=True (and
# transformers' adamw_torch_fused), apex/Transformer Engine FusedAdam, DeepSpeed's optimizer (its
# FusedAdam). Foreach: torch.optim.AdamW or Adam as built by default (transformers' adamw_torch),
# and the per-weight loops that make the same passes (transformers' adamw_hf, Composer's
# DecoupledAdamW). Words that name neither leave the stack's default (states.adamw_kernel).
FUSED_WORDS = (
    "fused=true",
    "fusedadam",
    "adamw_torch_fused",
    "(fused)",
    "fused adam",
    "deepspeed adamw",
    "deepspeed optimizer",
)
FOREACH_WORDS = ("adamw_torch", "adamw_hf", "torch.optim.adam", "decoupled_adamw")


def optimizer_kernel(case: dict[str, Any]) -> str | None:
    """The AdamW kernel the case's optimizer words name, or None to keep the stack's default."""
    text = case["optimizer"].lower()
    if any(word in text for word in FUSED_WORDS):
        return "fused"
    if any(word in text for word in FOREACH_WORDS):
        return "foreach"
    return None


def _stated(case: dict[str, Any]) -> str:
    return str(case["other_settings"].get("notes") or "") + " " + case["zero_stage_or_fsdp"]


def gradient_reduce_dtype(case: dict[str, Any]) -> str | None:
    """bf16 where the source says its gradients are reduced in bf16 (apex DistributedFusedAdam's
    grad_sync_dtype, Megatron-Core's grad_reduce_in_fp32 False); else the stack's default."""
    text = _stated(case).lower()
    if "grad_sync_dtype bf16" in text or "grad_reduce_in_fp32 false" in text:
        return "bf16"
    return None


def gradient_bucket(case: dict[str, Any]) -> int | None:
    """The data-parallel gradient bucket a case's stack was set to, in elements: Megatron-Core's
    BUCKET_SIZE (MLPerf's configs), InternLM's reduce_bucket_size (512 × 2^20 in its configs),
    Megatron-LLaMA's --reduce-bucket-size (its overlapped optimizer only), apex
    DistributedFusedAdam's bucket_cap_mb (megabytes of the bf16 gradients it syncs)."""
    notes = _stated(case)
    if m := re.search(r"BUCKET_SIZE=(\d+)", notes):
        return int(m.group(1))
    if m := re.search(r"(\d+)M-element buckets \(reduce_bucket_size\)", notes):
        return int(m.group(1)) * 2**20
    overlapped = "overlapped-distributed-optimizer" in case["zero_stage_or_fsdp"]
    if overlapped and (m := re.search(r"--reduce-bucket-size=([0-9.e+]+)", notes)):
        return int(float(m.group(1)))
    if gradient_reduce_dtype(case) == "bf16" and (m := re.search(r"bucket_cap_mb (\d+)", notes)):
        return int(m.group(1)) * 2**20 // 2
    return None


def nvlink_domain(case: dict[str, Any], assumed: list[str]) -> int | None:
    """GPUs per node for a run on a GPU whose NVLink fabric spans instances (the catalog's
    `nvlink_domain_gpus`: a GB200 NVL72 rack joins its 4-GPU trays), since the planner's node is
    the NVLink domain, not the source's tray. Sources give the trays, not the racks: the fewest
    domains that hold the GPUs, spread evenly over those. None for any other GPU."""
    gpu_id = str(case["other_settings"].get("gpu_catalog_id") or "")
    domain = pricing.nvlink_domain(shipped_catalog(), gpu_id)
    if domain is None:
        return None
    n = int(case["n_gpus"])
    racks = -(-n // domain)
    if n % racks:
        raise NotPlanned(f"{n} {gpu_id} GPUs do not spread evenly over {racks} NVLink domains")
    if racks > 1:
        assumed.append(
            f"{n} {gpu_id} GPUs planned as {racks} NVLink domains of {n // racks} (the fewest "
            f"domains of {domain} that hold them; the source names the trays, not the racks)"
        )
    return n // racks
