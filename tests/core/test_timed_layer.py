"""The step probe's arithmetic, now the planner's (core.planner.layer_spec), against counts worked
out by hand.

Llama-3.1-8B has 8,030,261,248 parameters (meta-llama/Llama-3.1-8B model.safetensors.index.json,
total_size 16,060,522,496 bytes in bf16) in 32 decoder layers. A global batch of G sequences over
micro-batches of m on d data-parallel ranks is G ÷ (m·d) micro-batches a step; ZeRO-3 keeps 1/d of
the trainable parameters on each GPU (Rajbhandari et al. 2020, "ZeRO", section 5.3: stage 3
partitions the parameters over the data-parallel processes); pipeline parallelism of p puts 32/p
layers on each stage.
"""

from __future__ import annotations

from typing import Any

from core.catalog import load_catalog
from core.planner import LayerSpec, PlanRequest, layer_spec, make_plan

LLAMA_8B_PARAMS = 8_030_261_248


def spec(training: dict[str, Any], gpus_per_node: int, nodes: int) -> LayerSpec:
    catalog = load_catalog()
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": "1M", "seq_len": 1024},
            "training": {"gradient_checkpointing": True, **training},
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": gpus_per_node, "nodes": nodes},
        }
    )
    return layer_spec(make_plan(request, catalog), catalog)


def test_zero3_over_sixteen_gpus_steps_a_sixteenth_of_the_model_on_each() -> None:
    layer = spec(
        {"method": "full", "sharding": "zero3", "micro_batch_size": 1, "global_batch_size": 256},
        8,
        2,
    )
    assert layer.accumulation == 256 / (1 * 16)
    assert layer.trainable_per_gpu == LLAMA_8B_PARAMS / 16
    assert layer.layers == 32 and layer.lora_targets == []
    assert layer.architecture.layers == 32 and layer.training.sharding.value == "zero3"


def test_two_pipeline_stages_halve_the_layers_and_the_data_parallel_ranks() -> None:
    layer = spec(
        {
            "method": "full",
            "sharding": "hsdp",
            "micro_batch_size": 2,
            "global_batch_size": 256,
            "pipeline_parallel": 2,
        },
        8,
        2,
    )
    assert layer.layers == 32 / 2
    assert layer.accumulation == 256 / (2 * (16 // 2))


def test_lora_names_the_adapted_matrices_and_never_the_head() -> None:
    layer = spec(
        {"method": "lora", "lora_targets": ["q_proj", "v_proj", "lm_head"], "micro_batch_size": 1},
        1,
        1,
    )
    assert layer.lora_targets == ["q", "v"]
