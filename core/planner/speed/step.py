"""One training configuration, end to end: memory, FLOPs and the step's time — vectorised.

`evaluate` takes scalars for a single plan or NumPy arrays (GPU type × GPUs per node × nodes ×
micro-batch) for the hardware search, so both run the same formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.planner.model import lora, memory, parallel
from core.planner.model.params import Architecture
from core.planner.request import DataSpec, TrainingSpec
from core.planner.request_assumptions import Assumptions
from core.planner.speed import compute, step_time
from core.planner.speed.hardware import Hardware

Num = Any


@dataclass(frozen=True)
class StepEstimate:
    memory: memory.MemoryEstimate
    fits: Num
    trainable_params: float
    flops_per_token: Num  # hardware FLOPs, recomputation included
    model_flops_per_token: Num
    total_flops: Num
    mfu: Num  # achieved model-FLOPs utilisation over the whole step
    hfu: Num
    achieved_tflops: Num  # hardware TFLOP/s per GPU over the step
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
    breakdown: dict[str, Num]


def trained_tokens(data: DataSpec) -> float:
    """Tokens the GPUs process: epochs × dataset, inflated by padding when samples are not
    packed."""
    waste = 0.0 if data.packing else data.padding_fraction
    return data.tokens * data.epochs / (1.0 - waste)


DEFAULT_BATCH_TOKENS = 262_144  # ~0.25M tokens per optimizer step, a common fine-tuning batch


def default_global_batch(seq_len: int) -> int:
    """The default's token budget in sequences: a power of two near 256k tokens."""
    return int(2 ** max(0, round(np.log2(DEFAULT_BATCH_TOKENS / seq_len))))


def global_batch(
    training: TrainingSpec, seq_len: int, dp: Num = 1, micro_batch: Num | None = None
) -> Num:
    """Sequences per optimizer step: the user's, else the ~256k-token default grown to dp ×
    micro-batch.

    A default is ours, not the user's, so it must never be why a layout is refused: when more
    data-parallel replicas run than the default can feed one micro-batch each, the batch grows to
    one micro-batch per replica (the plan's assumptions say so). A batch the user gave is kept and
    checked as given."""
    if training.global_batch_size:
        return training.global_batch_size
    mb = training.micro_batch_size if micro_batch is None else micro_batch
    grown = np.maximum(default_global_batch(seq_len), np.asarray(dp) * np.asarray(mb))
    return int(grown) if np.ndim(grown) == 0 else grown


def accumulation_steps(global_sequences: Num, micro_batch: Num, dp: Num) -> Num:
    """Micro-batches each data-parallel rank runs per optimizer step: ⌈global ÷ (micro·dp)⌉, at
    least 1."""
    return np.maximum(np.ceil(global_sequences / (micro_batch * dp)), 1)


def evaluate(
    arch: Architecture,
    training: TrainingSpec,
    data: DataSpec,
    hw: Hardware,
    assumptions: Assumptions,
    micro_batch: Num | None = None,
) -> StepEstimate:
    """Memory, FLOPs and the time of one optimizer step, from its explicit costs
    (step_time.step_costs).

    dp = GPUs ÷ (tp·pp·cp); each data-parallel rank runs ⌈global batch ÷ (micro·dp)⌉ micro-batches
    per step. With `assumptions.mfu` the step takes model FLOPs ÷ (peak × mfu) and the breakdown is
    scaled to it.
    """
    mb = training.micro_batch_size if micro_batch is None else micro_batch
    seq = data.seq_len
    # replicas: GPUs ÷ (tp·pp·cp); the FLOPs use every GPU
    dp = parallel.data_parallel(hw.gpus, training)
    accumulation = accumulation_steps(global_batch(training, seq, dp, mb), mb, dp)
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
    trainable = lora.trainable_params(arch, training)

    tokens_per_step = mb * seq * dp * accumulation
    tokens = trained_tokens(data)
    steps = np.ceil(tokens / tokens_per_step)

    fpt = compute.flops_per_token(arch, training, seq, trainable)
    model_fpt = compute.model_flops_per_token(arch, training, seq, trainable)
    costs = step_time.step_costs(
        arch, training, seq, hw, assumptions, mb, accumulation, trainable, mem, dp
    )
    peak = hw.peak_tflops * 1e12
    if assumptions.mfu is not None and not step_time.measured_applies(hw, training, seq, mb):
        forced = model_fpt * tokens_per_step / hw.gpus / (peak * assumptions.mfu)
        costs = costs.scaled(forced / costs.step)
    elif not step_time.measured_applies(hw, training, seq, mb):
        # a measured layer needs no factor
        costs = costs.scaled(1.0 / np.asarray(hw.sustained, dtype=float))
    step_s = costs.step
    tokens_per_gpu_s = tokens_per_step / step_s / hw.gpus
    # Every job also pays its start: provisioning, loading the model, warm-up
    # (assumptions.restart_minutes).
    hours = steps * step_s / 3600.0 + assumptions.restart_minutes / 60.0
    return StepEstimate(
        memory=mem,
        fits=fits,
        trainable_params=trainable,
        flops_per_token=fpt,
        model_flops_per_token=model_fpt,
        total_flops=fpt * tokens,
        mfu=model_fpt * tokens_per_gpu_s / peak,
        hfu=fpt * tokens_per_gpu_s / peak,
        achieved_tflops=fpt * tokens_per_gpu_s / 1e12,
        compute_s=costs.compute,
        comm_s=costs.comm_s,
        step_s=step_s,
        steps=steps,
        tokens_per_step=tokens_per_step,
        accumulation=accumulation,
        hours=hours,
        gpu_hours=hours * hw.gpus,
        tokens_per_s=tokens_per_step / step_s,
        scaling_efficiency=costs.compute / step_s,
        breakdown={k: getattr(costs, k) for k in step_time.BREAKDOWN_KEYS},
    )
