"""Invariants of the planner that must hold for any input (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.catalog import load_catalog
from core.planner.choose.ranking import first_of_each
from core.planner.choose.search import pareto_mask
from core.planner.model import activations, states
from core.planner.model.params import Architecture
from core.planner.plan import on_candidate, plan
from core.planner.request import PlanRequest, TrainingSpec
from core.planner.speed import gpu_rates

CATALOG = load_catalog()
PRESETS = sorted(CATALOG.models)
methods = st.sampled_from(["full", "lora", "qlora"])


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(PRESETS),
    method=methods,
    sharding=st.sampled_from(["zero3", "fsdp"]),
    n=st.integers(1, 512),
    extra=st.integers(1, 512),
)
def test_more_gpus_with_zero3_never_raise_model_states(
    preset: str, method: str, sharding: str, n: int, extra: int
) -> None:
    arch = Architecture.from_hf_config(CATALOG.model(preset).config)
    training = TrainingSpec(method=method, sharding=sharding)

    def state_bytes(dp: int) -> float:
        s = states.model_states(arch, training, dp=dp, gpus_per_node=8)
        return float(s.weights + s.gradients + s.optimizer + s.gathered)

    assert state_bytes(n + extra) <= state_bytes(n)


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(PRESETS),
    method=methods,
    ckpt=st.booleans(),
    attention=st.sampled_from(["flash", "sdpa", "eager"]),
    s1=st.integers(16, 65536),
    s2=st.integers(16, 65536),
    mb=st.integers(1, 16),
)
def test_longer_sequences_never_lower_activations(
    preset: str, method: str, ckpt: bool, attention: str, s1: int, s2: int, mb: int
) -> None:
    arch = Architecture.from_hf_config(CATALOG.model(preset).config)
    training = TrainingSpec(method=method, gradient_checkpointing=ckpt, attention=attention)
    short, long_ = sorted((s1, s2))
    longer = activations.activation_bytes(arch, training, mb, long_)
    assert longer >= activations.activation_bytes(arch, training, mb, short)


lora_targets = st.sampled_from(["qv", "attention", "all-linear", "q,k,v,o,down", "gate,up"])


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(PRESETS),
    method=st.sampled_from(["lora", "qlora"]),
    targets=lora_targets,
    dropout=st.floats(0.01, 0.5),
    mb=st.integers(1, 8),
)
def test_lora_dropout_never_lowers_activations(
    preset: str, method: str, targets: str, dropout: float, mb: int
) -> None:
    """A dropped copy (16-bit + mask) per adapter costs at least the one raw input it replaces."""
    arch = Architecture.from_hf_config(CATALOG.model(preset).config)

    def act(p: float) -> float:
        training = TrainingSpec(method=method, lora_targets=targets, lora_dropout=p)
        return float(activations.activation_bytes(arch, training, mb, 2048))

    assert act(dropout) >= act(0.0)


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(PRESETS),
    method=methods,
    targets=lora_targets,
    dropout=st.sampled_from([0.0, 0.05]),
)
def test_fusing_q_k_v_never_raises_activations(
    preset: str, method: str, targets: str, dropout: float
) -> None:
    """One q/k/v module has one adapter (one dropped copy) where three modules have up to three."""
    arch = Architecture.from_hf_config(CATALOG.model(preset).config)
    training = TrainingSpec(method=method, lora_targets=targets, lora_dropout=dropout)
    fused = activations.activation_bytes(replace(arch, fused_qkv=True), training, 2, 1024)
    assert fused <= activations.activation_bytes(replace(arch, fused_qkv=False), training, 2, 1024)


@settings(max_examples=25, deadline=None)
@given(
    preset=st.sampled_from(["llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.3", "llama-3.2-1b"]),
    tokens=st.floats(1e6, 1e10),
    gpus=st.sampled_from([1, 2, 4, 8]),
    method=methods,
    discount=st.floats(0, 0.5),
)
def test_cost_is_hours_times_price_for_every_mode(
    preset: str, tokens: float, gpus: int, method: str, discount: float
) -> None:
    result = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": preset},
                "data": {"tokens": tokens, "seq_len": 2048},
                "training": {"method": method},
                "hardware": {"gpu": "H100-SXM", "gpus_per_node": gpus},
                "pricing": {"provider": "aws", "discount": discount},
            }
        )
    )
    price, usd = result.cost.usd_per_gpu_hour, result.cost.compute_usd
    # what cannot run has no cost and no price (tests/core/test_plan_verdicts.py)
    if not result.memory.fits:
        assert (usd.on_demand, usd.spot, usd.reserved, result.cost.total_usd) == (
            None,
            None,
            None,
            None,
        )
        assert (price.on_demand, price.spot, price.reserved) == (None, None, None)
        return
    assert price.on_demand is not None  # AWS lists an on-demand price for the H100
    # A node is one whole instance: AWS sells the H100 SXM as p5.4xlarge (1 GPU) and p5.48xlarge (8
    # GPUs), so a 2- or 4-GPU node pays for 8 (on demand, and reserved: AWS's own 1-year ratio on
    # each instance's price)
    billed = 1 if gpus == 1 else 8
    assert result.cost.billed_gpus_per_node == billed
    assert usd.on_demand == pytest.approx(
        result.time.hours * billed * price.on_demand * (1 - discount), rel=1e-9
    )
    if price.reserved is not None:
        assert usd.reserved == pytest.approx(
            result.time.hours * billed * price.reserved * (1 - discount), rel=1e-9
        )
    if price.spot is not None:
        # Spot bills its expected wall time: the failure-free hours plus lost work and restarts.
        assert usd.spot is not None
        spot_hours = usd.spot / (price.spot * (1 - discount))
        assert spot_hours >= result.compute.steps * result.compute.step_time_s / 3600 * gpus * (
            1 - 1e-9
        )


@settings(max_examples=8, deadline=None)
@given(
    preset=st.sampled_from(["llama-3.1-8b", "qwen2.5-14b", "llama-3.1-70b", "mixtral-8x7b"]),
    method=methods,
    objective=st.sampled_from(["cost", "time"]),
)
def test_search_results_are_feasible_and_pareto_optimal(
    preset: str, method: str, objective: str
) -> None:
    result = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": preset},
                "data": {"tokens": 1e9, "seq_len": 4096},
                "training": {"method": method},
                "search": {"objective": objective, "max_gpus": 64},
            }
        )
    )
    cands = result.candidates
    assert cands, "the search found nothing for a model that fits on an 8×80 GB node"
    for c in cands:
        assert c.fits and c.memory_per_gpu <= CATALOG.gpu(c.gpu).memory_bytes
    priced = [(c, c.cost_usd) for c in cands if c.cost_usd is not None]
    # The chosen row carries the plan's own figures, computed apart from the search's (GPU-hours ×
    # price in another order): two rows that tie may differ in the last bit, which is no domination.
    eps = 1e-9
    for c, usd in ((c, usd) for c, usd in priced if c.pareto):
        dominated = [
            o
            for o, o_usd in priced
            if o.hours <= c.hours * (1 + eps)
            and o_usd <= usd * (1 + eps)
            and (o.hours < c.hours * (1 - eps) or o_usd < usd * (1 - eps))
        ]
        assert not dominated, f"{c} is marked Pareto but {dominated[0]} dominates it"
    # The recommended configuration, planned on its own, fits the GPU it names.
    assert result.memory.fits
    # Re-plan a listed candidate with fixed hardware: the engine agrees that it fits.
    c = cands[min(2, len(cands) - 1)]
    # its hardware, sharding, recompute, micro-batch and tp × pp
    again = plan(on_candidate(result.request, c))
    assert again.memory.fits


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 9), min_size=6, max_size=6), max_size=60))
def test_first_of_each_group_is_what_numpy_unique_finds(table: list[list[int]]) -> None:
    """The search keeps the best row of each GPU × layout group; its fast grouping must pick exactly
    the rows NumPy's own np.unique(axis=0, return_index=True) picks (the first of each distinct
    row)."""
    groups = np.array(table, dtype=int).reshape(-1, 6)
    expected = (
        np.sort(np.unique(groups, axis=0, return_index=True)[1])
        if len(groups)
        else np.zeros(0, dtype=int)
    )
    assert first_of_each(groups).tolist() == expected.tolist()


def test_pareto_mask_on_a_hand_made_front() -> None:
    hours = np.array([1.0, 2.0, 3.0, 2.0, 1.5])
    cost = np.array([10.0, 5.0, 1.0, 6.0, 10.0])
    # (2, 6) is dominated by (2, 5); (1.5, 10) by (1, 10).
    assert pareto_mask(hours, cost).tolist() == [True, True, True, False, False]


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(PRESETS),
    method=methods,
    sharding=st.sampled_from(["none", "zero1", "fsdp"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
    n=st.integers(1, 64),
    extra=st.integers(1, 64),
)
def test_more_replicas_never_raise_model_states_under_model_parallelism(
    preset: str, method: str, sharding: str, tp: int, pp: int, n: int, extra: int
) -> None:
    arch = Architecture.from_hf_config(CATALOG.model(preset).config)
    training = TrainingSpec(
        method=method, sharding=sharding, tensor_parallel=tp, pipeline_parallel=pp
    )

    def state_bytes(dp: int) -> float:
        s = states.model_states(arch, training, dp=dp, gpus_per_node=8)
        return float(s.weights + s.gradients + s.optimizer + s.gathered)

    assert state_bytes(n + extra) <= state_bytes(n)


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(PRESETS),
    method=methods,
    pp=st.sampled_from([1, 2, 4, 8]),
    sharding=st.sampled_from(["none", "zero1", "fsdp"]),
)
def test_more_tensor_parallel_never_raises_weights_per_gpu(
    preset: str, method: str, pp: int, sharding: str
) -> None:
    arch = Architecture.from_hf_config(CATALOG.model(preset).config)
    weights = [
        float(
            states.model_states(
                arch,
                TrainingSpec(
                    method=method, sharding=sharding, tensor_parallel=tp, pipeline_parallel=pp
                ),
                dp=4,
            ).weights
        )
        for tp in (1, 2, 4, 8)
    ]
    assert weights == sorted(weights, reverse=True)


@settings(max_examples=12, deadline=None)
@given(
    preset=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"]),
    method=methods,
    batch=st.sampled_from([8, 16, 32, 64]),
)
def test_no_search_candidate_has_more_replicas_than_the_global_batch(
    preset: str, method: str, batch: int
) -> None:
    result = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": preset},
                "data": {"tokens": 1e9, "seq_len": 4096},
                "training": {"method": method, "global_batch_size": batch},
            }
        )
    )
    for c in result.candidates:
        replicas = c.gpus_per_node * c.nodes // (c.tensor_parallel * c.pipeline_parallel)
        assert replicas * c.micro_batch_size <= batch, c


@settings(max_examples=25, deadline=None)
@given(
    preset=st.sampled_from(["llama-3.1-8b", "qwen2.5-14b", "llama-3.1-70b", "mixtral-8x7b"]),
    method=methods,
    gpu=st.sampled_from(["H100-SXM", "A100-80GB-SXM", "L4", "B200", "RTX-4090"]),
    gpus=st.sampled_from([1, 8]),
    ckpt=st.booleans(),
    attention=st.sampled_from(["flash", "eager"]),
    seq=st.sampled_from([512, 2048, 8192]),
)
def test_achieved_mfu_never_exceeds_the_gemm_efficiency_and_the_band_holds_the_point(
    preset: str, method: str, gpu: str, gpus: int, ckpt: bool, attention: str, seq: int
) -> None:
    """No step runs its model FLOPs faster than its GEMMs run; every band contains the figure it is
    around."""
    result = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": preset},
                "data": {"tokens": 1e8, "seq_len": seq},
                "training": {
                    "method": method,
                    "gradient_checkpointing": ckpt,
                    "attention": attention,
                    "sharding": "fsdp" if gpus > 1 else "none",
                },
                "hardware": {"gpu": gpu, "gpus_per_node": gpus},
            }
        ),
        CATALOG,
    )
    rate = gpu_rates.rates(CATALOG.gpu(gpu), result.request.training.precision)
    assert result.compute.mfu <= rate.matmul_efficiency + 1e-9
    tps, hours = result.compute.tokens_per_second_range, result.time.hours_range
    assert tps is not None and hours is not None
    assert tps.low <= result.compute.tokens_per_second <= tps.high
    assert hours.low <= result.time.hours <= hours.high
    usd = result.cost.total_usd_range
    if result.cost.total_usd is not None:
        assert usd is not None and usd.low <= result.cost.total_usd <= usd.high


@settings(max_examples=20, deadline=None)
@given(
    nodes=st.sampled_from([1, 2, 16, 64, 256]),
    micro=st.sampled_from([1, 2, 4]),
    seq=st.sampled_from([2048, 8192, 32768]),
)
def test_the_default_global_batch_never_refuses_a_request(nodes: int, micro: int, seq: int) -> None:
    # The README: without training.global_batch_size the batch is the default grown to micro ×
    # replicas, so a 2,048-GPU request plans, every replica gets a micro-batch, and the assumptions
    # name the batch.
    result = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": 1e9, "seq_len": seq},
                "training": {"method": "full", "sharding": "fsdp", "micro_batch_size": micro},
                "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": nodes},
            }
        )
    )
    sequences = result.compute.tokens_per_step / seq
    assert sequences >= 8 * nodes * micro
    named = [a for a in result.assumptions if a.name == "global batch"]
    assert len(named) == 1 and f"{round(sequences):,} sequences" in named[0].value
