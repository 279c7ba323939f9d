"""The one decoder layer the step probe times, and what the plan expects of the step it belongs to.

The step probe (core/probes/step_spec.py) times one layer of the plan's model on the rented GPU and
scales it back to a step. The scaling is the planner's arithmetic: how many micro-batches make a
step under the plan's data parallelism, how many layers sit on the busiest pipeline stage, how many
trainable parameters each GPU steps after sharding, which matrices LoRA adapts. It lives here,
beside the memory and step-time models it follows, so the probes read the figures rather than
recompute them.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.catalog import Catalog
from core.planner.model import lora, parallel
from core.planner.model.params import Architecture
from core.planner.model.states import shard_degree
from core.planner.plan import resolve_model
from core.planner.request import Method, Sharding, TrainingSpec
from core.planner.result import PlanResult
from core.planner.speed.frameworks import effective_training


@dataclass(frozen=True)
class LayerSpec:
    """The planned layer's architecture and recipe, and the figures that scale its time to the
    plan's step."""

    architecture: Architecture
    # the effective settings: the framework profile under what the request set
    training: TrainingSpec
    layers: float  # decoder layers on the busiest pipeline stage (L/pp when the stages are even)
    accumulation: float  # micro-batches per optimizer step on each data-parallel rank (at least 1)
    trainable_per_gpu: float  # trainable parameters one GPU steps after sharding
    # the adapted matrices (PEFT names, the head left out); empty for full fine-tuning
    lora_targets: list[str]


def layer_spec(result: PlanResult, catalog: Catalog) -> LayerSpec:
    """The layer of `result`'s model and the step arithmetic around it; PlanError when its model
    cannot be read."""
    arch, _warnings = resolve_model(result.request.model, catalog)
    t = effective_training(result.request.training)
    hw, c = result.hardware, result.compute
    dp = parallel.data_parallel(hw.gpus, t)
    accumulation = max(
        c.tokens_per_step / (t.micro_batch_size * result.request.data.seq_len * dp), 1.0
    )
    stepped = (
        c.params_trainable
        * parallel.state_share(arch, t)
        / (
            float(shard_degree(t.sharding, dp, max(hw.gpus_per_node / t.model_parallel, 1.0)))
            if t.sharding is not Sharding.none
            else 1.0
        )
    )
    targets = (
        sorted(lora.target_set(t.lora_targets) - {"head"}) if t.method is not Method.full else []
    )
    return LayerSpec(
        architecture=arch,
        training=t,
        layers=parallel.stage_layers(arch, t),
        accumulation=accumulation,
        trainable_per_gpu=stepped,
        lora_targets=targets,
    )
