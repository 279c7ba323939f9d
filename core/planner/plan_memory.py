"""The plan result's memory section: the per-GPU breakdown, what would make it fit, and how far it
could grow.

Beside the one estimate the plan runs with, the section answers two searches of its own (the largest
micro-batch and the largest sequence that still fit), which are a vectorised bracket-and-pin over
the memory model alone; they stand apart from plan() (core/planner/plan.py), which composes the
sections.
"""

from __future__ import annotations

import numpy as np

from core.catalog import GPU
from core.planner.choose.advice import suggestions
from core.planner.model import memory, parallel
from core.planner.model.params import Architecture
from core.planner.request import PlanRequest
from core.planner.result import MemoryBreakdown, MemoryResult
from core.planner.speed.hardware import Hardware
from core.planner.speed.step import StepEstimate, accumulation_steps, global_batch


def _largest_fitting(arch: Architecture, request: PlanRequest, hw: Hardware, *, vary: str) -> int:
    """The largest micro-batch (or sequence, at micro-batch 1) that fits; 0 when even the smallest
    does not.

    Fitting depends on memory alone, so one vectorised estimate over a coarse grid brackets the
    answer and a second over the bracket pins it down.
    """
    training, seq = request.training, request.data.seq_len
    limit = 4096 if vary == "micro" else (arch.max_position or 1_048_576)
    start = 1 if vary == "micro" else 128

    dp = parallel.data_parallel(hw.gpus, training)

    def largest(values: np.ndarray) -> int:
        micro, seqs = (values, seq) if vary == "micro" else (1, values)
        # the accumulation each size would run with: whether the gradients are alive at the
        # activation peak depends on it, so the largest size that fits is the plan's own, not one
        # that assumed no accumulation
        sequences = (
            global_batch(training, seq, dp, micro)
            if vary == "micro"
            else np.array([global_batch(training, int(s), dp, 1) for s in values])
        )
        est = memory.estimate(
            arch,
            training,
            dp=dp,
            gpus_per_node=hw.gpus_per_node,
            micro_batch=micro,
            seq_len=seqs,
            zero_accounting=request.assumptions.zero_accounting,
            accumulation=accumulation_steps(sequences, micro, dp),
            gpu_memory=hw.memory_bytes,
        )
        fits = np.broadcast_to(est.total <= hw.memory_bytes, values.shape)
        return int(values[fits].max()) if fits.any() else 0

    # sorted(set()) rather than np.unique, which imports numpy.ma (10 ms of every `tuneplan plan`)
    coarse = np.array(
        sorted(set(np.geomspace(start, limit, 64).astype(np.int64).tolist())), dtype=np.int64
    )
    low = largest(coarse)
    if low == 0 or low == limit:
        return low
    high = int(coarse[np.searchsorted(coarse, low) + 1])
    return largest(np.arange(low, high, dtype=np.int64))


def memory_result(
    arch: Architecture, request: PlanRequest, est: StepEstimate, gpu: GPU, hw: Hardware
) -> MemoryResult:
    mem = est.memory
    return MemoryResult(
        per_gpu=MemoryBreakdown(
            weights=int(mem.weights),
            gradients=int(mem.gradients),
            optimizer=int(mem.optimizer),
            activations=int(mem.activations),
            logits=int(mem.logits),
            overhead=int(mem.overhead),
            total=int(mem.total),
        ),
        gpu_memory=gpu.memory_bytes,
        fits=bool(est.fits),
        cpu_ram_needed=int(mem.cpu_ram),
        allocated_peak=int(mem.allocated),
        max_micro_batch=_largest_fitting(arch, request, hw, vary="micro"),
        max_seq_len=_largest_fitting(arch, request, hw, vary="seq"),
        short_bytes=max(int(mem.total) - gpu.memory_bytes, 0),
        suggestions=suggestions(request, est, gpu, arch),
    )
