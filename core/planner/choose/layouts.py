"""Which tensor × pipeline layouts and which shardings a search tries.

A model that fits needs no model parallelism; one whose unsharded states fit no GPU gets tensor
parallel 1-8 and, beyond that, pipelines (Narayanan et al. 2021); each layout's shardings are the
ones its frameworks allow. These rules prune the grid before anything is evaluated, so they stand
apart from the evaluation (core/planner/choose/search.py) and the ranking (ranking.py).
"""

from __future__ import annotations

from core.planner.model import parallel, states
from core.planner.model.params import Architecture
from core.planner.request import Offload, PlanRequest, Sharding, TrainingSpec

# inside an NVLink node of at most 8 GPUs (parallel.hardware_problem)
TENSOR_PARALLEL = (1, 2, 4, 8)
PIPELINE_PARALLEL = (1, 2, 4, 8, 16)
# With tp · pp > 1: plain data parallel, Megatron's distributed optimizer / DeepSpeed ZeRO-1 (the
# one ZeRO stage pipelines allow) and torchtitan's FSDP2 + TP + PP.
MODEL_PARALLEL_SHARDINGS = (Sharding.none, Sharding.zero1, Sharding.fsdp)


def needs_model_parallel(
    arch: Architecture, training: TrainingSpec, largest_gpu_bytes: float, tp: int = 1
) -> bool:
    """True when no GPU of the search holds the model's unsharded weights, gradients and optimizer
    states (split over `tp` tensor-parallel GPUs)."""
    whole = training.model_copy(
        update={
            "sharding": Sharding.none,
            "offload": Offload.none,
            "tensor_parallel": tp,
            "pipeline_parallel": 1,
            "pipeline_virtual_stages": 1,
            "sequence_parallel": False,
            "expert_parallel": 1,
        }
    )
    held = states.model_states(arch, whole, dp=1)
    return float(held.weights + held.gradients + held.optimizer) > largest_gpu_bytes


def layouts(
    arch: Architecture,
    request: PlanRequest,
    largest_gpu_bytes: float,
    keep: frozenset[str] = frozenset(),
) -> list[tuple[int, int]]:
    """(tp, pp) pairs to try: the request's when it set one (or keeps it), else 1 × 1 plus, where
    the model needs them, the pairs the model's heads and layers allow (parallel.model_problem).

    Pipelines only where tensor parallel 8 alone still leaves the states too big for the largest
    GPU, and then with tp 4 or 8: Narayanan et al. 2021 (arXiv:2104.04473 §3.3, takeaway #1) use
    tensor parallelism up to the GPUs of a node and pipeline parallelism beyond it. This keeps a
    full-catalog search under 100 ms.
    """
    t = request.training
    if "parallel" in keep or t.tensor_parallel > 1 or t.pipeline_parallel > 1:
        return [(t.tensor_parallel, t.pipeline_parallel)]
    if not needs_model_parallel(arch, t, largest_gpu_bytes):
        return [(1, 1)]
    out = []
    deep = needs_model_parallel(arch, t, largest_gpu_bytes, tp=max(TENSOR_PARALLEL))
    pairs = [(tp, 1) for tp in TENSOR_PARALLEL]
    if deep:
        pairs += [(tp, pp) for tp in (4, 8) for pp in _pipeline_choices(arch) if pp > 1]
    for tp, pp in pairs:
        trial = t.model_copy(
            update={
                "tensor_parallel": tp,
                "pipeline_parallel": pp,
                "sharding": Sharding.none,
                "pipeline_virtual_stages": 1,
                "sequence_parallel": False,
            }
        )
        if parallel.model_problem(arch, trial, request.data.seq_len) is None:
            out.append((tp, pp))
    return out


def odd_part(n: int) -> int:
    """n without its factors of two: 15 for 120, 1 for 64."""
    while n % 2 == 0:
        n //= 2
    return n


def _pipeline_choices(arch: Architecture) -> tuple[int, ...]:
    """Powers of two, and where none of them divides the layers (105 in MT-NLG), the layer count's
    divisors up to 16: Megatron needs layers % pp == 0, and MT-NLG itself ran 35 stages of 3
    layers."""
    powers = tuple(p for p in PIPELINE_PARALLEL if arch.layers % p == 0)
    if len(powers) > 1:
        return powers
    return tuple(d for d in range(1, 17) if arch.layers % d == 0)


def layout_shardings(
    base: tuple[Sharding, ...], tp: int, pp: int, keep: frozenset[str]
) -> tuple[Sharding, ...]:
    """Sharding choices for one layout: the searched set at 1 × 1, the model-parallel set
    otherwise."""
    if tp * pp > 1 and "sharding" not in keep:
        base = MODEL_PARALLEL_SHARDINGS
    return tuple(s for s in base if pp == 1 or s not in parallel.PIPELINE_INCOMPATIBLE)
