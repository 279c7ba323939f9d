"""Communication per step and how it limits scaling.

Ring all-reduce moves 2(n−1)/n × bytes per GPU; reduce-scatter and all-gather (n−1)/n each (nccl-tests
PERFORMANCE.md). DDP all-reduces the gradients once per optimizer step; ZeRO-1/2 reduce-scatter gradients and
all-gather parameters (the same volume); ZeRO-3/FSDP gather parameters in forward and backward of every
micro-batch and reduce-scatter gradients (1.5× DDP). Inside a node the GPU's NVLink/PCIe bus bandwidth applies;
across nodes the per-GPU share of the node's network. See docs/formulas.md, "Communication".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.planner.models import Sharding

Num = Any

# NCCL reaches ~80% of link bandwidth as busbw at large sizes (PROBES.md §2.1: 8×H100 NVSwitch ≈ 360–480 of
# 450 GB/s; 400G IB ≈ 45–48 of 50 GB/s per rail).
BUSBW_EFFICIENCY = 0.80
LATENCY_S = {"intra": 20e-6, "inter": 60e-6}


def busbw_bytes_per_s(intra_gbs: Num, gpu_net_gbps: Num, nodes: Num, measured_intra_gbs: float | None = None) -> Num:
    """The bus bandwidth a ring of all GPUs sees: intra-node link inside one node, else each GPU's network share."""
    intra = (measured_intra_gbs * 1e9) if measured_intra_gbs else intra_gbs * 1e9 * BUSBW_EFFICIENCY
    inter = gpu_net_gbps * 1e9 / 8 * BUSBW_EFFICIENCY
    return np.where(np.asarray(nodes) > 1, np.minimum(intra, inter), intra)


def step_comm_bytes(sharding: Sharding, grad_bytes: Num, param_bytes: Num, accumulation: Num) -> Num:
    """Bytes each GPU must move per optimizer step, expressed as all-reduce-equivalent payload."""
    if sharding is Sharding.none:
        return grad_bytes
    if sharding in (Sharding.zero1, Sharding.zero2):
        return grad_bytes  # reduce-scatter + all-gather = one all-reduce volume
    # ZeRO-3 / FSDP / HSDP: two all-gathers of the parameters every micro-batch, one reduce-scatter.
    return 0.5 * (2 * param_bytes * accumulation) + 0.5 * grad_bytes


def comm_seconds(payload_bytes: Num, gpus: Num, busbw: Num, link: str = "intra") -> Num:
    """Ring all-reduce time for `payload_bytes` over `gpus` at bus bandwidth `busbw` (B/s), plus hop latency."""
    n = np.maximum(np.asarray(gpus, dtype=float), 1.0)
    ring = 2 * (n - 1) / n * payload_bytes / busbw
    return np.where(n > 1, ring + 2 * (n - 1) * LATENCY_S[link], 0.0)


def exposed_comm(comm_s: Num, compute_s: Num, overlap: float) -> Num:
    """Communication not hidden behind compute: only `overlap` of the compute time can hide transfers."""
    return np.maximum(comm_s - overlap * compute_s, 0.0)
