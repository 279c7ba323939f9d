"""What a plan says it assumed: the model, the GPU's figures, failures, the held dtype, the default
global batch.

Every figure the plan reports rests on these; each is stated with its source so a reader can check
or replace it (README "Every figure says where it came from"). They are sentences about a finished
estimate, apart from the arithmetic that composes it (core/planner/plan.py); the grown-batch warning
is here because it explains the same default batch the batch assumption names.
"""

from __future__ import annotations

from core.catalog import GPU
from core.planner.model import states
from core.planner.model.memory import CUDA_CONTEXT_BYTES
from core.planner.model.params import Architecture
from core.planner.request import PlanRequest, Precision, Sharding, TrainingSpec
from core.planner.result import Assumption, PlanResult
from core.planner.speed import gpu_rates
from core.planner.speed.step import (
    DEFAULT_BATCH_TOKENS,
    StepEstimate,
    default_global_batch,
    trained_tokens,
)
from core.units import plural

PEAK_SOURCE_KEY = {"fp8": "fp8_tflops", "amp_fp16": "fp16_tflops", "fp32": "tf32_tflops"}


def _batch_assumption(request: PlanRequest, est: StepEstimate) -> list[Assumption]:
    """Name the global batch when it is the planner's default: the user did not choose it, so say
    what it is."""
    t, seq = request.training, request.data.seq_len
    if t.global_batch_size:
        return []
    default = default_global_batch(seq)
    sequences = round(float(est.tokens_per_step) / seq)
    grown = (
        f", grown from {default:,} to one micro-batch per data-parallel replica"
        if sequences > default
        else ""
    )
    return [
        Assumption(
            name="global batch",
            value=f"{sequences:,} sequences ({sequences * seq:,} tokens) per optimizer step{grown}",
            source=f"tuneplan default: about {DEFAULT_BATCH_TOKENS:,} tokens per step, at least "
            "data-parallel replicas "
            "× micro-batch (set training.global_batch_size to choose)",
        )
    ]


def fit_assumptions(t: TrainingSpec, step_workspace: float) -> list[Assumption]:
    """The two assumptions that most often decide whether a sharded full fine-tune fits: the dtype
    the weights are held in, and the optimizer step's temporaries (each stated, with what changes
    it)."""
    if t.precision is Precision.pure_bf16:
        held = (
            "bf16 parameters, gradients and optimizer states (the model loaded in bf16, no fp32 "
            "master)"
        )
    elif t.sharding in (Sharding.fsdp, Sharding.hsdp) and states.master_bytes(t.precision):
        held = (
            "fp32 parameters, gradients and states, sharded (FSDP mixed precision over a model "
            "loaded in fp32); a model loaded in bf16 holds half: plan it with training.precision "
            "pure_bf16"
        )
    elif states.master_bytes(t.precision):
        held = (
            "16-bit weights and gradients with an fp32 master copy and fp32 states (mixed "
            "precision)"
        )
    else:
        held = f"{t.precision.value} parameters, gradients and states"
    workspace = (
        f"{step_workspace / 1e9:.2f} GB per GPU: PyTorch's multi-tensor (foreach) AdamW "
        "materialises "
        "sqrt(v) for a whole parameter group at once"
        if step_workspace > 0
        else "none: the step works in place (fused or DeepSpeed Adam, a step in backward, or "
        "offloaded)"
    )
    return [
        Assumption(name="weights held as", value=held, source="docs/formulas.md, Memory"),
        Assumption(
            name="optimizer step temporaries",
            value=workspace,
            source="torch/optim/adamw.py _multi_tensor_adamw: torch._foreach_sqrt(exp_avg_sqs) "
            "per group",
        ),
    ]


def grown_batch_warning(result: PlanResult) -> str | None:
    """When the planner grew its default global batch to feed every data-parallel replica (the user
    set none), what that does to the run: a batch past the ~256k tokens fine-tuning recipes step on,
    and so few optimizer steps (8.4M tokens a step on 512 GPUs left 24 for the whole run). None when
    the batch is the default or the user's."""
    training, seq = result.request.training, result.request.data.seq_len
    if training.global_batch_size:
        return None
    default, tokens = default_global_batch(seq), result.compute.tokens_per_step
    sequences = round(tokens / seq)
    if sequences <= default:
        return None
    steps = result.compute.steps
    return (
        f"the global batch grew from {default:,} to {sequences:,} sequences ({tokens:,} tokens) "
        "per optimizer step so that every data-parallel replica on the "
        f"{plural(result.hardware.gpus, 'GPU')} gets a micro-batch: "
        f"{tokens / DEFAULT_BATCH_TOKENS:,.0f}× the ~{DEFAULT_BATCH_TOKENS:,} tokens fine-tuning "
        f"recipes step on, leaving {plural(steps, 'optimizer step')} for the whole run; plan "
        "fewer GPUs or set "
        "training.global_batch_size (and scale the learning rate) if you mean it"
    )


def plan_assumptions(
    arch: Architecture, request: PlanRequest, gpu: GPU, est: StepEstimate
) -> list[Assumption]:
    a, t = request.assumptions, request.training
    src = gpu.sources
    return [
        Assumption(
            name="model",
            value=f"{arch.name}: {arch.total_params / 1e9:.2f}B parameters"
            + (f" ({arch.active_params / 1e9:.2f}B active)" if arch.is_moe else ""),
            source="config.json" if not arch.inferred else "inferred from the parameter count",
        ),
        Assumption(
            name="GPU memory",
            value=f"{gpu.memory_bytes / 1e9:.0f} GB ({gpu.id})",
            source=src.get("memory_bytes", gpu.id),
        ),
        Assumption(
            name=f"peak {t.precision.value} throughput",
            value=f"{gpu.peak_tflops(t.precision.value):.0f} TFLOP/s",
            source=src.get(PEAK_SOURCE_KEY.get(t.precision.value, "bf16_tflops"), gpu.id),
        ),
        *gpu_rates.time_assumptions(request, gpu, est),
        Assumption(
            name="GPU failures",
            value=f"one per {a.gpu_mtbf_hours:,.0f} GPU-hours",
            source="Llama 3 paper §3.3.4 (arXiv:2407.21783): 419 unexpected interruptions in 54 "
            "days on 16,384 H100",
            date="2024-07-31",
        ),
        Assumption(
            name="CUDA context + allocator reserve",
            value=f"{CUDA_CONTEXT_BYTES / 2**30:.2f} GiB + 10%",
            source="REFERENCES.md: calculators use 0.65–1 GiB; reserved exceeds allocated by "
            "10–25%",
        ),
        Assumption(
            name="comm/compute overlap", value=f"{a.comm_overlap:.0%}", source="tuneplan default"
        ),
        *fit_assumptions(t, float(est.memory.step_workspace)),
        *_batch_assumption(request, est),
        Assumption(
            name="trained tokens",
            value=f"{trained_tokens(request.data):.3g}",
            source="dataset tokens × epochs ÷ (1 − padding)",
        ),
    ]
