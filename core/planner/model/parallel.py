"""3-D parallelism: which tensor / pipeline / context / expert layouts are possible, and what each
divides.

A layout the frameworks refuse must not be planned: Megatron-LM asserts that tensor parallelism
divides the attention heads and pipeline parallelism the layers, DeepSpeed's pipeline engine refuses
ZeRO-2/3. The rules live here once, for `plan.py:_check_request` (one sentence naming the field) and
for the search (which drops the layouts, vectorised over the hardware grid where the rule depends on
it).

The memory side (`memory.py`) asks this module what share of the model one GPU holds
(`state_share`), how the per-layer activations divide (`ParallelSplit`) and how many micro-batches
the first pipeline stage keeps in flight (`in_flight_factor`). Sources and the peak-stage
assumption: docs/formulas.md, "Parallelism".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.planner.model import lora
from core.planner.model.params import Architecture
from core.planner.request import Sharding, TrainingSpec

Num = Any

# Pipeline parallelism is compatible with ZeRO stage 1 only: DeepSpeed's PipelineEngine asserts
# `zero_optimization_stage() < 2` ("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
# deepspeed/runtime/pipe/engine.py). Megatron's distributed optimizer (its ZeRO-1) runs with pp, and
# torchtitan composes FSDP2 with pipeline stages (docs/composability.md: "FSDP2 + TP + PP"), so fsdp
# and hsdp stay allowed with pp > 1.
PIPELINE_INCOMPATIBLE = (Sharding.zero2, Sharding.zero3)


def _allowed(values: list[int]) -> str:
    """'1, 2, 4 or 8': the values a field may take, said the way the sentences end."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _divisors(n: int, limit: int = 64) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def data_parallel(gpus: Num, training: TrainingSpec) -> Num:
    """Data-parallel replicas: GPUs ÷ (tp · pp · cp). Whole only for a valid layout
    (`hardware_problem`)."""
    return gpus / training.model_parallel


def batch_fits(dp: Num, micro_batch: Num, global_batch: int) -> Num:
    """Each replica needs a whole micro-batch per step: dp × micro-batch ≤ global batch
    (vectorised)."""
    return dp * micro_batch <= global_batch


def model_problem(arch: Architecture, training: TrainingSpec, seq_len: int) -> str | None:
    """The first rule the layout breaks that depends only on the model and the sequence, as one
    sentence."""
    t = training
    tp, pp, v, cp, ep = (
        t.tensor_parallel,
        t.pipeline_parallel,
        t.pipeline_virtual_stages,
        t.context_parallel,
        t.expert_parallel,
    )
    name = arch.name
    if tp > 1:
        # Megatron-LM: heads % tp == 0; grouped-query KV heads split (kv % tp == 0) or replicate (tp
        # % kv == 0).
        if arch.heads % tp:
            ok = [
                d
                for d in _divisors(arch.heads)
                if d <= 64 and (arch.kv_heads % d == 0 or d % arch.kv_heads == 0)
            ]
            return (
                f"training.tensor_parallel {tp} must divide the {arch.heads} attention heads of "
                f"{name}; use {_allowed(ok)}"
            )
        if arch.kv_heads % tp and tp % arch.kv_heads:
            ok = [
                d for d in _divisors(arch.heads) if arch.kv_heads % d == 0 or d % arch.kv_heads == 0
            ]
            return (
                f"training.tensor_parallel {tp} must divide the {arch.kv_heads} key/value heads "
                f"of {name} or be a multiple of them (replicated KV); use {_allowed(ok)}"
            )
    uneven = uneven_problem(arch, t)
    if uneven:
        return uneven
    if pp > 1:
        if pp > arch.layers:
            return (
                f"training.pipeline_parallel {pp} is more stages than the {arch.layers} layers of "
                f"{name}"
            )
        if not uneven_stages(t) and arch.layers % (pp * v):
            # Megatron-LM asserts num_layers % pipeline_model_parallel_size == 0 (and per virtual
            # stage).
            ok = [
                d for d in _divisors(arch.layers, 512) if d > 1 and arch.layers % (d * v) == 0
            ] or [1]
            what = f"{pp} × {v} virtual stages" if v > 1 else str(pp)
            return (
                f"training.pipeline_parallel {what} must divide the {arch.layers} layers of "
                f"{name} (Megatron needs layers % (pp × virtual stages) == 0); use "
                f"{_allowed(ok[:8])}, or give the first and "
                "last stages their own counts (training.pipeline_first_stage_layers, "
                "pipeline_last_stage_layers)"
            )
        if t.sharding in PIPELINE_INCOMPATIBLE:
            return (
                f"training.sharding {t.sharding.value} cannot run with training.pipeline_parallel "
                f"{pp} (DeepSpeed "
                "pipelines allow ZeRO-1 only); use zero1, fsdp or hsdp, or pipeline_parallel 1"
            )
    if cp > 1 and seq_len % (2 * cp):
        # Load-balanced causal context parallelism cuts each sequence into 2·cp chunks
        # (Megatron-Core CP).
        return (
            f"training.context_parallel {cp} needs data.seq_len divisible by 2 × {cp} = {2 * cp} "
            f"(each GPU takes two of 2·cp chunks); data.seq_len is {seq_len}"
        )
    target_parameters = lora.target_parameters_problem(arch, t.lora_target_parameters)
    if target_parameters:
        return target_parameters
    if ep > 1:
        if not arch.is_moe:
            return (
                f"training.expert_parallel {ep} needs a mixture-of-experts model; {name} is "
                "dense: use 1"
            )
        if arch.experts % ep:
            return (
                f"training.expert_parallel {ep} must divide the {arch.experts} experts of {name}; "
                f"use {_allowed(_divisors(arch.experts, 1024)[:8])}"
            )
    return None


def uneven_stages(training: TrainingSpec) -> bool:
    """Whether the first or last pipeline stage has its own layer count."""
    return training.pipeline_parallel > 1 and (
        training.pipeline_first_stage_layers is not None
        or training.pipeline_last_stage_layers is not None
    )


def _uneven_fits(layers: int, pp: int, v: int, first: int | None, last: int | None) -> bool:
    """Megatron-LM's rule (TransformerConfig.__post_init__, "Uneven PP"): the given end stages are
    multiples of the virtual stages; the middle stages split what is left evenly, each a multiple of
    the virtual stages; no layers are left without a middle stage and no middle stage without
    layers."""
    rest = layers - (first or 0) - (last or 0)
    middle = pp - (first is not None) - (last is not None)
    if (
        any(n is not None and n % v for n in (first, last))
        or rest < 0
        or bool(rest) != bool(middle)
    ):
        return False
    return not middle or (rest % middle == 0 and (rest // middle) % v == 0)


def uneven_problem(arch: Architecture, training: TrainingSpec) -> str | None:
    """One sentence when the first/last stage counts do not add up to the model's layers the way
    Megatron-LM builds them (megatron/core/transformer/transformer_block.py,
    get_num_layers_to_build)."""
    t = training
    for field_name in ("pipeline_first_stage_layers", "pipeline_last_stage_layers"):
        if getattr(t, field_name) is not None and t.pipeline_parallel == 1:
            return (
                f"training.{field_name} needs training.pipeline_parallel of 2 or more (it sizes "
                "one pipeline "
                "stage); leave it out for a single stage"
            )
    if not uneven_stages(t):
        return None
    pp, v, first, last, layers = (
        t.pipeline_parallel,
        t.pipeline_virtual_stages,
        t.pipeline_first_stage_layers,
        t.pipeline_last_stage_layers,
        arch.layers,
    )
    if _uneven_fits(layers, pp, v, first, last):
        return None
    given = [
        f"pipeline_first_stage_layers {first}" if first is not None else "",
        f"pipeline_last_stage_layers {last}" if last is not None else "",
    ]
    said = " and ".join(g for g in given if g)
    middle = pp - (first is not None) - (last is not None)
    rest = layers - (first or 0) - (last or 0)
    # Values that work for the same choice: first = last = x when both are given, else the one
    # given.
    both = first is not None and last is not None
    ok = [
        x
        for x in range(v, layers, v)
        if _uneven_fits(
            layers, pp, v, x if first is not None else None, x if last is not None else None
        )
    ]
    field = (
        "pipeline_first_stage_layers and pipeline_last_stage_layers each"
        if both
        else ("pipeline_first_stage_layers" if first is not None else "pipeline_last_stage_layers")
    )
    virtual = f", each stage a multiple of the {v} virtual stages" if v > 1 else ""
    advice = (
        f"use training.{field} {_allowed(ok[:6])}"
        if ok
        else "use another training.pipeline_parallel"
    )
    verb = "leave" if first is not None and last is not None else "leaves"
    return (
        f"training.{said} {verb} {rest} of the {layers} layers of {arch.name} for {middle} middle "
        f"pipeline stage{'s' if middle != 1 else ''}, which must split them evenly{virtual} "
        f"(Megatron-LM); {advice}"
    )


def unkept_fields(
    training: TrainingSpec, pp: int, gradient_checkpointing: object
) -> dict[str, None]:
    """The request's fields a search candidate drops: uneven stage counts hold for the request's
    pipeline depth only, checkpoint_every_k_blocks with recompute on."""
    dropped = (
        []
        if pp == training.pipeline_parallel
        else ["pipeline_first_stage_layers", "pipeline_last_stage_layers"]
    )
    return dict.fromkeys(
        dropped + ([] if gradient_checkpointing is True else ["checkpoint_every_k_blocks"])
    )


def hardware_problem(
    training: TrainingSpec, gpus_per_node: int, gpus: int, micro_batch: int, global_batch: int
) -> str | None:
    """The first rule the layout breaks on this hardware and batch, as one sentence (None: it
    runs)."""
    tp, mp = training.tensor_parallel, training.model_parallel
    if tp > 1 and (gpus_per_node < tp or gpus_per_node % tp):
        # Tensor parallelism all-reduces inside every layer: it stays inside a node, on NVLink.
        return (
            f"training.tensor_parallel {tp} must divide hardware.gpus_per_node {gpus_per_node} "
            f"(tensor parallel stays inside a node); use {_allowed(_divisors(gpus_per_node))}"
        )
    if gpus % mp:
        return (
            f"hardware GPUs {gpus} are not a whole number of model replicas of tensor × pipeline "
            f"× context parallel = {mp} GPUs; use a GPU count that is a multiple of {mp}"
        )
    dp = gpus // mp
    if training.expert_parallel > 1 and (dp * training.context_parallel) % training.expert_parallel:
        # Megatron-Core forms expert-parallel groups inside the data × context parallel ranks.
        return (
            f"training.expert_parallel {training.expert_parallel} must divide data × context "
            f"parallel {dp * training.context_parallel}"
        )
    if not batch_fits(dp, micro_batch, global_batch):
        return (
            f"training.global_batch_size {global_batch} is smaller than {dp} data-parallel "
            f"replicas × micro-batch {micro_batch}: each replica needs a micro-batch; use a "
            f"global batch of at least {dp * micro_batch}, or fewer GPUs"
        )
    return None


def check(
    arch: Architecture,
    training: TrainingSpec,
    *,
    seq_len: int,
    gpus_per_node: int,
    gpus: int,
    global_batch: int,
) -> None:
    """Raise ValueError with one sentence when the layout cannot run (plan.py turns it into a
    PlanError)."""
    problem = model_problem(arch, training, seq_len) or hardware_problem(
        training, gpus_per_node, gpus, training.micro_batch_size, global_batch
    )
    if problem:
        raise ValueError(problem)


# ----------------------------------------------------------------------------- what each GPU holds


def routed_expert_params(arch: Architecture) -> float:
    """Parameters of the routed experts (what expert parallelism spreads); 0 for a dense model."""
    if not arch.is_moe:
        return 0.0
    matrices = 3 if arch.gated_mlp else 2
    return float(matrices * arch.hidden * arch.expert_intermediate * arch.experts * arch.moe_layers)


def state_share(arch: Architecture, training: TrainingSpec) -> float:
    """Fraction of the model's parameters on the busiest GPU before ZeRO/FSDP shards them over dp.

    Peak stage = the first: the input embedding plus layers/pp blocks (Megatron puts the embedding
    on the first stage and the output layer on the last; with pp = 1 one stage holds everything).
    Tensor parallelism splits every matrix, the embedding too (Megatron's vocab-parallel embedding),
    norms included for simplicity; routed experts are split over ep as well (experts live on their
    expert-parallel rank).
    """
    tp, pp, ep = training.tensor_parallel, training.pipeline_parallel, training.expert_parallel
    total = float(arch.total_params)
    if tp * pp * ep == 1:
        return 1.0
    embed_in = float(arch.vocab * arch.hidden)
    experts = routed_expert_params(arch)
    # layers (the final norm is one h)
    blocks = total - float(arch.embedding_params) - float(arch.hidden)
    dense_blocks = blocks - experts
    per_layer = (dense_blocks + experts / ep) / arch.layers
    # One stage: everything; else the first stage's input embedding and its layers/pp.
    if pp == 1:
        stage = total - experts + experts / ep
    elif not uneven_stages(training):
        stage = embed_in + per_layer * arch.layers / pp
    else:
        # Uneven stages: the largest of the first (input embedding + its layers), a middle one (its
        # layers) and the last (its layers + the output layer and final norm; untied or tied,
        # Megatron keeps a copy there).
        first, middle, last = stage_layer_counts(arch, training)
        head = float(arch.vocab * arch.hidden + arch.hidden)
        stage = max(
            embed_in + per_layer * first,
            per_layer * middle if pp > 2 else 0.0,
            head + per_layer * last,
        )
    return stage / tp / total


@dataclass(frozen=True)
class ParallelSplit:
    """How one GPU's share of a layer's activations divides (Korthikanti et al. 2022, Table 2).

    `split` divides what tensor parallelism shards (attention and MLP interior), `rest` what it
    replicates (norms, the inputs of the column-parallel linears, the layer input kept under
    recompute): ÷ tp only with sequence parallelism. `tokens` divides the sequence over cp.
    """

    split: float
    rest: float
    tokens: float
    kv: float  # GQA key/value heads split over min(tp, kv_heads): beyond that they are replicated


def activation_split(arch: Architecture, training: TrainingSpec) -> ParallelSplit:
    tp = float(training.tensor_parallel)
    return ParallelSplit(
        split=tp,
        rest=tp if training.sequence_parallel else 1.0,
        tokens=float(training.context_parallel),
        kv=float(min(tp, max(arch.kv_heads, 1))),
    )


def in_flight_factor(training: TrainingSpec) -> float:
    """Layers' worth of activations the first stage holds, as a multiple of its L/pp layers for one
    micro-batch.

    1F1B (Narayanan et al. 2021, arXiv:2104.04473 §2.2): the first stage keeps up to pp
    micro-batches in flight, so pp × L/pp = L layers' worth. Interleaved with v chunks: × (1 + (pp −
    1)/(pp · v)) (Megatron-LM theoretical_memory_usage.py, `interleaved_schedule_memory_penalty`).
    An upper bound when there are fewer micro-batches per step than stages.
    """
    pp, v = training.pipeline_parallel, training.pipeline_virtual_stages
    if pp == 1:
        return 1.0
    penalty = 1.0 + (pp - 1) / (pp * v) if v > 1 else 1.0
    return pp * penalty


def stage_layer_counts(arch: Architecture, training: TrainingSpec) -> tuple[float, float, float]:
    """Layers on the (first, middle, last) pipeline stages: L/pp each unless the first or last stage
    has its own count (Megatron-LM's get_num_layers_to_build: the middle stages split the rest
    evenly). pp = 1: the one stage is first and last."""
    t, layers = training, float(arch.layers)
    pp = t.pipeline_parallel
    if pp == 1:
        return layers, layers, layers
    first, last = t.pipeline_first_stage_layers, t.pipeline_last_stage_layers
    if first is None and last is None:
        even = layers / pp
        return even, even, even
    middle_stages = pp - (first is not None) - (last is not None)
    rest = layers - (first or 0) - (last or 0)
    middle = rest / middle_stages if middle_stages else 0.0
    return (
        float(first) if first is not None else middle,
        middle,
        float(last) if last is not None else middle,
    )


def stage_layers(arch: Architecture, training: TrainingSpec) -> float:
    """Transformer layers on the pipeline GPU with the most of them (L/pp when the stages are
    even)."""
    first, middle, last = stage_layer_counts(arch, training)
    return max(first, last, middle if training.pipeline_parallel > 2 else 0.0)


def activation_layers(arch: Architecture, training: TrainingSpec) -> float:
    """Layers' worth of one micro-batch's activations the busiest pipeline GPU holds: its layers ×
    the micro-batches in flight there.

    1F1B keeps pp − i micro-batches in flight on stage i (Narayanan et al. 2021 §2.2): L/pp × pp = L
    on the first of even stages. With uneven stages the peak is the largest layers_i × (pp − i): for
    Llama 3 405B's 16 stages of 7, 8 … 8, 7 layers the second stage (8 × 15 = 120) rather than the
    first (7 × 16 = 112).
    """
    pp = training.pipeline_parallel
    if pp == 1 or not uneven_stages(training):
        return stage_layers(arch, training) * in_flight_factor(training)
    first, middle, last = stage_layer_counts(arch, training)
    per_stage = [first, *([middle] * (pp - 2)), last]
    # the interleaved schedule's extra, as on the first stage
    penalty = in_flight_factor(training) / pp
    return max(n * (pp - i) for i, n in enumerate(per_stage)) * penalty


__all__ = [
    "ParallelSplit",
    "activation_layers",
    "activation_split",
    "batch_fits",
    "check",
    "data_parallel",
    "hardware_problem",
    "in_flight_factor",
    "model_problem",
    "routed_expert_params",
    "stage_layer_counts",
    "stage_layers",
    "state_share",
    "uneven_problem",
    "uneven_stages",
    "unkept_fields",
]
