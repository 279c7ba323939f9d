"""One training configuration, end to end: memory, FLOPs, communication and time — vectorised.

`evaluate` takes scalars for a single plan or NumPy arrays (GPU type × GPUs per node × nodes × micro-batch)
for the hardware search, so both run the same formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.planner import comms, compute, memory, parallel
from core.planner.models import Assumptions, DataSpec, Precision, Sharding, TrainingSpec
from core.planner.params import Architecture

Num = Any


@dataclass(frozen=True)
class Hardware:
    """GPU properties and topology, as scalars or broadcastable arrays."""

    memory_bytes: Num
    peak_tflops: Num
    intra_gbs: Num
    base_mfu: Num  # default MFU of the GPU generation before method and occupancy factors
    gpus_per_node: Num
    nodes: Num
    gpu_net_gbps: Num  # inter-node network per GPU, Gbit/s
    measured_intra_busbw_gbs: float | None = None

    @property
    def gpus(self) -> Num:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class StepEstimate:
    memory: memory.MemoryEstimate
    fits: Num
    trainable_params: float
    flops_per_token: Num
    total_flops: Num
    mfu: Num
    compute_s: Num
    comm_s: Num
    step_s: Num
    steps: Num
    tokens_per_step: Num
    accumulation: Num
    hours: Num
    gpu_hours: Num
    tokens_per_s: Num
    scaling_efficiency: Num


def trained_tokens(data: DataSpec) -> float:
    """Tokens the GPUs process: epochs × dataset, inflated by padding when samples are not packed."""
    waste = 0.0 if data.packing else data.padding_fraction
    return data.tokens * data.epochs / (1.0 - waste)


DEFAULT_BATCH_TOKENS = 262_144  # ~0.25M tokens per optimizer step, a common fine-tuning batch


def global_batch(training: TrainingSpec, seq_len: int) -> int:
    """Sequences per optimizer step: the user's, else a power of two near 256k tokens."""
    if training.global_batch_size:
        return training.global_batch_size
    return int(2 ** max(0, round(np.log2(DEFAULT_BATCH_TOKENS / seq_len))))


def evaluate(
    arch: Architecture,
    training: TrainingSpec,
    data: DataSpec,
    hw: Hardware,
    assumptions: Assumptions,
    micro_batch: Num | None = None,
) -> StepEstimate:
    mb = training.micro_batch_size if micro_batch is None else micro_batch
    seq = data.seq_len
    dp = parallel.data_parallel(hw.gpus, training)  # replicas: GPUs ÷ (tp·pp·cp); the FLOPs use every GPU
    accumulation = np.maximum(np.ceil(global_batch(training, seq) / (mb * dp)), 1)
    mem = memory.estimate(
        arch,
        training,
        dp=dp,
        gpus_per_node=hw.gpus_per_node,
        micro_batch=mb,
        seq_len=seq,
        zero_accounting=assumptions.zero_accounting,
        accumulation=accumulation,
        gpu_memory=hw.memory_bytes,
    )
    fits = mem.total <= hw.memory_bytes
    trainable = (
        float(arch.total_params)
        if training.method.value == "full"
        else float(memory.lora_params(arch, training.lora_rank or 16, training.lora_targets))
    )

    tokens_per_step = mb * seq * dp * accumulation
    tokens = trained_tokens(data)
    steps = np.ceil(tokens / tokens_per_step)

    fpt = compute.flops_per_token(arch, training, seq, trainable)
    if assumptions.mfu is not None:
        mfu = assumptions.mfu + 0.0 * np.asarray(mb, dtype=float)
    else:
        mfu = (
            hw.base_mfu
            * compute.METHOD_MFU_FACTOR[training.method]
            * np.minimum(1.0, (np.asarray(mb * seq, dtype=float) / compute.FULL_EFFICIENCY_TOKENS) ** 0.25)
        )
    compute_s = compute.compute_seconds(tokens_per_step, fpt, hw.gpus, hw.peak_tflops, mfu)

    wbytes = 4.0 if training.precision is Precision.fp32 else 2.0
    share = parallel.state_share(arch, training)  # each GPU syncs only its tensor/pipeline shard over dp
    grad_bytes = trainable * wbytes * share
    param_bytes = arch.total_params * wbytes * share  # parameters are gathered in the 16-bit compute dtype
    busbw = comms.busbw_bytes_per_s(hw.intra_gbs, hw.gpu_net_gbps, hw.nodes, hw.measured_intra_busbw_gbs)
    if training.sharding is Sharding.hsdp:
        intra_bw = comms.busbw_bytes_per_s(hw.intra_gbs, hw.gpu_net_gbps, 1, hw.measured_intra_busbw_gbs)
        gathers = comms.comm_seconds(param_bytes * accumulation, hw.gpus_per_node, intra_bw)
        comm_s = gathers + comms.comm_seconds(grad_bytes / hw.gpus_per_node, dp, busbw, "inter")
    else:
        payload = comms.step_comm_bytes(training.sharding, grad_bytes, param_bytes, accumulation)
        comm_s = comms.comm_seconds(payload, dp, busbw, "inter" if np.any(np.asarray(hw.nodes) > 1) else "intra")
    exposed = comms.exposed_comm(comm_s, compute_s, assumptions.comm_overlap)
    step_s = compute_s + exposed
    # Every job also pays its start: provisioning, loading the model, warm-up (assumptions.restart_minutes).
    hours = steps * step_s / 3600.0 + assumptions.restart_minutes / 60.0
    return StepEstimate(
        memory=mem,
        fits=fits,
        trainable_params=trainable,
        flops_per_token=fpt,
        total_flops=fpt * tokens,
        mfu=mfu,
        compute_s=compute_s,
        comm_s=comm_s,
        step_s=step_s,
        steps=steps,
        tokens_per_step=tokens_per_step,
        accumulation=accumulation,
        hours=hours,
        gpu_hours=hours * hw.gpus,
        tokens_per_s=tokens_per_step / step_s,
        scaling_efficiency=compute_s / step_s,
    )
