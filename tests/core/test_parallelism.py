"""3-D parallelism: the layout rules, memory divided by tensor / pipeline / context parallelism, the
search's tensor × pipeline layouts, the longest-run bound and the scaling curve's batch limit.

Expected numbers are hand arithmetic from the formulas' inputs (written out) or the published
formula of Korthikanti et al. 2022; none is computed by the code under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from cli.plan import render_plan
from core.catalog import load_catalog
from core.planner.analysis import scaling
from core.planner.choose import search
from core.planner.model import activations, memory, states
from core.planner.model.params import Architecture
from core.planner.plan import PlanError, plan, resolve_model
from core.planner.report_charts import scaling_chart
from core.planner.request import PlanRequest, TrainingSpec
from core.planner.speed.step import global_batch

CATALOG = load_catalog()

# GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, h = 12288, 96 heads of 128, FFN 4h,
# LayerNorm, GELU MLP.
GPT3 = Architecture(
    name="gpt3-175b",
    hidden=12288,
    layers=96,
    heads=96,
    kv_heads=96,
    head_dim=128,
    intermediate=4 * 12288,
    vocab=51200,
    tied_embeddings=True,
    gated_mlp=False,
    layer_norm=True,
)
# Megatron-Turing NLG 530B (Smith et al. 2022, arXiv:2201.11990 §3): 105 layers, h = 20480, 128
# heads, seq 2048.
MT_NLG = {
    "hidden_size": 20480,
    "num_hidden_layers": 105,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "intermediate_size": 4 * 20480,
    "vocab_size": 51200,
    "hidden_act": "gelu",
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}


def arch_of(preset: str) -> Architecture:
    return Architecture.from_hf_config(CATALOG.model(preset).config, preset)


def request(**sections: Any) -> PlanRequest:
    raw: dict[str, Any] = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": "2e8", "seq_len": 4096},
    }
    raw.update(sections)
    return PlanRequest.model_validate(raw)


def state_bytes(arch: Architecture, training: TrainingSpec, dp: float = 1) -> float:
    s = states.model_states(arch, training, dp=dp, gpus_per_node=8)
    return float(s.weights + s.gradients + s.optimizer)


# ----------------------------------------------------------------------------- memory division


def test_70b_states_at_tp8_are_an_eighth_of_16_bytes_per_parameter() -> None:
    # Mixed-precision AdamW without ZeRO: 2 (bf16 weights) + 2 (grads) + 4 (fp32 master) + 8 (m, v)
    # = 16 B/param (ZeRO paper §3.1). Tensor parallel 8, one stage: every matrix, the embedding too,
    # ÷ 8.
    arch = arch_of("llama-3.1-70b")
    training = TrainingSpec(method="full", tensor_parallel=8)
    assert state_bytes(arch, training) == pytest.approx(16 * arch.total_params / 8, rel=1e-9)


def test_the_first_pipeline_stage_holds_the_embedding_and_its_share_of_layers() -> None:
    # Llama 3.1 70B, untied: input embedding V·h = 128256 × 8192; the blocks are N − 2·V·h − h
    # (final norm). pp = 4, tp = 2: first stage = (V·h + blocks / 4) / 2 parameters, × 16 B.
    arch = arch_of("llama-3.1-70b")
    v_h = 128256 * 8192
    blocks = arch.total_params - 2 * v_h - 8192
    expected = 16 * (v_h + blocks / 4) / 2
    training = TrainingSpec(method="full", tensor_parallel=2, pipeline_parallel=4)
    assert state_bytes(arch, training) == pytest.approx(expected, rel=1e-9)


def test_zero_shards_over_the_replicas_after_tensor_parallel() -> None:
    # zero3 (DeepSpeed accounting, 18 B/param ÷ dp) of the tp shard: 18 × N / 8 / 4 with 32 GPUs =
    # tp 8 × dp 4.
    arch = arch_of("llama-3.1-70b")
    training = TrainingSpec(method="full", tensor_parallel=8, sharding="zero3")
    assert state_bytes(arch, training, dp=4) == pytest.approx(
        18 * arch.total_params / 8 / 4, rel=1e-9
    )


@pytest.mark.parametrize(
    ("tp", "sp", "korthikanti", "transformers_eager"),
    [
        # Korthikanti et al. 2022 (arXiv:2205.05198) Table 2, bytes per layer / (s·b·h), with a·s/h
        # = 96·2048/12288 = 16:
        (1, False, 34 + 5 * 16, 32 + 6 * 16),  # sbh(34 + 5as/h) = 114 sbh
        # sbh(10 + 24/t + 5as/(ht)) = 23 sbh
        (8, False, 10 + 24 / 8 + 5 * 16 / 8, 8 + 24 / 8 + 6 * 16 / 8),
        (8, True, 34 / 8 + 5 * 16 / 8, 32 / 8 + 6 * 16 / 8),  # sbh(34/t + 5as/(ht)) = 14.25 sbh
    ],
)
def test_gpt3_layer_activations_follow_korthikanti(
    tp: int, sp: bool, korthikanti: float, transformers_eager: float
) -> None:
    """Their block has three dropouts: two sbh masks (1 byte each, the 34 → 32 and 10 → 8) and, on
    the probabilities, Megatron's fused fp16 softmax output (2 B), the dropout's mask (1 B) and its
    output (2 B): the 5. The engine's blocks have no dropout and keep transformers' eager
    probabilities instead: the fp32 softmax output (4 B) and the 16-bit copy the P·V matmul saves (2
    B), the 6. So it must equal their accounting with those terms swapped exactly, and sit within
    0–15% above their published total."""
    s, h = 2048, 12288
    training = TrainingSpec(
        method="full", attention="eager", tensor_parallel=tp, sequence_parallel=sp
    )
    # bytes per layer, b = 1
    engine = activations.parallel_elements_per_token_layer(GPT3, training, s) * 2 * s
    assert engine == pytest.approx(transformers_eager * s * h, rel=1e-9)
    assert 1.0 <= engine / (korthikanti * s * h) <= 1.15


def test_pipeline_keeps_pp_micro_batches_in_flight_on_the_first_stage() -> None:
    # 1F1B: L/pp layers × pp micro-batches = L layers' worth (Narayanan et al. 2021); interleaving
    # with v = 2 and pp = 4 multiplies by 1 + 3/8 (Megatron's interleaved_schedule_memory_penalty).
    arch = arch_of("llama-3.1-70b")
    base = TrainingSpec(method="full", gradient_checkpointing=False)

    def layers_part(training: TrainingSpec) -> float:
        act = activations.activation_bytes(arch, training, 1, 4096)
        per_layer = activations.activation_elements_per_token_layer(arch, training, 4096) * 2 * 4096
        # drop the final norm and the transient layer
        return float(act) - 3 * 8192 * 2 * 4096 - per_layer

    one = layers_part(base)
    assert layers_part(base.model_copy(update={"pipeline_parallel": 4})) == pytest.approx(
        one, rel=1e-9
    )
    interleaved = base.model_copy(update={"pipeline_parallel": 4, "pipeline_virtual_stages": 2})
    assert layers_part(interleaved) == pytest.approx(one * (1 + 3 / 8), rel=1e-9)


def test_context_parallel_divides_activations_and_logits_along_the_sequence() -> None:
    arch = arch_of("llama-3.1-8b")
    one = memory.estimate(
        arch, TrainingSpec(method="lora"), dp=1, gpus_per_node=8, micro_batch=1, seq_len=32768
    )
    four = memory.estimate(
        arch,
        TrainingSpec(method="lora", context_parallel=4),
        dp=1,
        gpus_per_node=8,
        micro_batch=1,
        seq_len=32768,
    )
    assert float(four.activations) == pytest.approx(float(one.activations) / 4, rel=1e-9)
    assert float(four.logits) == pytest.approx(float(one.logits) / 4, rel=1e-9)


def test_expert_parallel_divides_the_routed_experts() -> None:
    # Mixtral 8x7B: 32 layers × 8 experts × 3 matrices of 4096 × 14336; ep = 8 keeps one expert per
    # layer.
    arch = arch_of("mixtral-8x7b")
    experts = 32 * 8 * 3 * 4096 * 14336
    full = TrainingSpec(method="full")
    saved = state_bytes(arch, full) - state_bytes(
        arch, full.model_copy(update={"expert_parallel": 8})
    )
    assert saved == pytest.approx(16 * experts * (1 - 1 / 8), rel=1e-9)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("training", "hardware", "seq", "sentence"),
    [
        (
            {"tensor_parallel": 3},
            None,
            4096,
            "training.tensor_parallel 3 must divide the 32 attention heads of llama-3.1-8b; use "
            "1, 2, 4, 8, 16 or 32",
        ),
        (
            {"pipeline_parallel": 5},
            None,
            4096,
            "training.pipeline_parallel 5 must divide the 32 layers of llama-3.1-8b (Megatron "
            "needs layers % (pp × virtual stages) == 0); use 2, 4, 8, 16 or 32, or give the first "
            "and last stages their own counts (training.pipeline_first_stage_layers, "
            "pipeline_last_stage_layers)",
        ),
        (
            {"pipeline_parallel": 2, "sharding": "zero3"},
            None,
            4096,
            "training.sharding zero3 cannot run with training.pipeline_parallel 2 (DeepSpeed "
            "pipelines allow ZeRO-1 only); use zero1, fsdp or hsdp, or pipeline_parallel 1",
        ),
        (
            {"context_parallel": 3},
            None,
            4096,
            "training.context_parallel 3 needs data.seq_len divisible by 2 × 3 = 6 (each GPU "
            "takes two of 2·cp chunks); data.seq_len is 4096",
        ),
        (
            {"expert_parallel": 2},
            None,
            4096,
            "training.expert_parallel 2 needs a mixture-of-experts model; llama-3.1-8b is dense: "
            "use 1",
        ),
        (
            {"tensor_parallel": 8},
            {"gpu": "H100-SXM", "gpus_per_node": 4},
            4096,
            "training.tensor_parallel 8 must divide hardware.gpus_per_node 4 (tensor parallel "
            "stays inside a node); use 1, 2 or 4",
        ),
        (
            {"tensor_parallel": 2, "pipeline_parallel": 4},
            {"gpu": "H100-SXM", "gpus_per_node": 4, "nodes": 3},
            4096,
            "hardware GPUs 12 are not a whole number of model replicas of tensor × pipeline × "
            "context parallel = 8 GPUs; use a GPU count that is a multiple of 8",
        ),
        (
            {"micro_batch_size": 2, "global_batch_size": 8},
            {"gpu": "H100-SXM", "gpus_per_node": 8},
            4096,
            "training.global_batch_size 8 is smaller than 8 data-parallel replicas × micro-batch "
            "2: each replica needs a micro-batch; use a global batch of at least 16, or fewer GPUs",
        ),
    ],
)
def test_a_layout_that_cannot_run_is_one_sentence(
    training: dict[str, Any], hardware: dict[str, Any] | None, seq: int, sentence: str
) -> None:
    sections: dict[str, Any] = {"training": training, "data": {"tokens": "2e8", "seq_len": seq}}
    if hardware:
        sections["hardware"] = hardware
    with pytest.raises(PlanError) as err:
        plan(request(**sections))
    assert str(err.value) == sentence


def test_experts_must_divide_by_expert_parallel() -> None:
    with pytest.raises(
        PlanError, match=r"training.expert_parallel 3 must divide the 8 experts of mixtral-8x7b"
    ):
        plan(request(model={"preset": "mixtral-8x7b"}, training={"expert_parallel": 3}))


def test_kv_heads_split_or_replicate_under_tensor_parallel() -> None:
    # Llama 3.1 8B: 32 heads, 8 KV heads. tp 16 replicates each KV head twice (16 % 8 == 0): allowed
    # by heads and KV.
    arch = arch_of("llama-3.1-8b")
    from core.planner.model import parallel

    assert parallel.model_problem(arch, TrainingSpec(tensor_parallel=16), 4096) is None
    odd = Architecture(
        name="odd",
        hidden=4096,
        layers=32,
        heads=24,
        kv_heads=6,
        head_dim=128,
        intermediate=11008,
        vocab=32000,
        tied_embeddings=False,
    )
    problem = parallel.model_problem(odd, TrainingSpec(tensor_parallel=4), 4096)
    assert (
        problem is not None
        and "must divide the 6 key/value heads of odd or be a multiple of them" in problem
    )


# ----------------------------------------------------------------------------- the search


def test_a_530b_model_on_80gb_gpus_is_planned_with_model_parallelism() -> None:
    mt = request(
        model=MT_NLG,
        data={"tokens": "1e9", "seq_len": 2048},
        training={"method": "full", "global_batch_size": 1920},
        search={"gpus": ["H100-SXM"]},
    )
    result = plan(mt)
    # The search may hold it with FSDP alone over enough nodes (16 B per parameter ÷ the GPUs; the
    # gathers run over all of a node's rails): whatever it picks must fit.
    assert result.memory.fits
    # Megatron/DeepSpeed style (ZeRO-1, the one stage pipelines allow): 530B × (4 + 16/dp) B per GPU
    # cannot sit on 80 GB without splitting the layers: tensor parallel inside the node (4 or 8: HGX
    # boards have both) and a pipeline across nodes.
    arch, _ = resolve_model(mt.model, CATALOG)
    zero1 = mt.model_copy(update={"training": mt.training.model_copy(update={"sharding": "zero1"})})
    best = search.search(arch, zero1, CATALOG, keep=frozenset({"sharding"})).best
    assert best is not None and best.tensor_parallel >= 4 and best.pipeline_parallel > 1


def test_a_model_that_fits_one_gpu_is_not_split() -> None:
    result = plan(request(training={"method": "lora"}))
    assert all(c.tensor_parallel == c.pipeline_parallel == 1 for c in result.candidates)


def test_no_candidate_has_more_replicas_than_the_global_batch() -> None:
    result = plan(
        request(
            model={"preset": "llama-3.1-70b"}, training={"method": "full", "global_batch_size": 32}
        )
    )
    for c in result.candidates:
        dp = c.gpus_per_node * c.nodes // (c.tensor_parallel * c.pipeline_parallel)
        assert dp * c.micro_batch_size <= 32, c


def test_the_chosen_row_is_the_plan_figure_for_figure() -> None:
    result = plan(request(model={"preset": "llama-3.1-70b"}, training={"method": "full"}))
    chosen = result.candidates[0]
    assert chosen.hours == pytest.approx(result.time.hours, rel=1e-9)
    assert chosen.cost_usd == pytest.approx(result.cost.compute_usd.on_demand, rel=1e-9)
    text = render_plan(result)
    table = text.split("Candidates (search")[1].splitlines()[1:]  # below the heading
    # not the markers' legend
    row = next(line for line in table if "→" in line and not line.startswith(" "))
    config = (
        f"{chosen.nodes}×{chosen.gpus_per_node}" if chosen.nodes > 1 else f"{chosen.gpus_per_node}×"
    )
    assert row.startswith(f"{config} {chosen.gpu}")
    usd = result.cost.compute_usd.on_demand
    assert f"${usd:,.0f}" in row or f"${usd:,.2f}" in row  # the table prints cents below $1,000


def test_the_table_always_shows_the_fastest_and_the_cheapest() -> None:
    result = plan(request(model={"preset": "llama-3.1-70b"}, training={"method": "full"}))
    shown = search.shown_candidates(result.candidates, 3)
    assert min(c.hours for c in result.candidates) in [c.hours for c in shown]
    priced = [c.cost_usd for c in result.candidates if c.cost_usd is not None]
    assert min(priced) in [c.cost_usd for c in shown]


def test_plans_longer_than_the_longest_run_are_not_chosen_while_a_shorter_one_fits() -> None:
    # The cheapest 8B LoRA plan takes about 6 h on one GPU; a 2-hour bound must pick a faster
    # configuration.
    free = plan(request())
    assert free.time.hours > 2
    bounded = plan(request(search={"longest_hours": 2}))
    assert bounded.time.hours <= 2
    assert not any("no configuration finishes" in w for w in bounded.warnings)


def test_when_nothing_finishes_in_time_the_plan_says_so() -> None:
    result = plan(request(search={"longest_hours": 0.01}))
    assert (
        "no configuration finishes within 0.000416667 days (search.longest_hours 0.01); showing "
        "the cheapest that fits"
    ) in result.warnings


# ----------------------------------------------------------------------------- scaling curve


def test_the_scaling_curve_stops_where_replicas_outnumber_the_global_batch() -> None:
    # Global batch 64, micro-batch 1, 8 GPUs per node: 8 nodes = 64 replicas is the last point; 16,
    # 32, 64 are not.
    req = request(
        hardware={"gpu": "H100-SXM", "gpus_per_node": 8}, training={"global_batch_size": 64}
    )
    curve = scaling(req, CATALOG)
    assert curve.nodes == [1, 2, 4, 8]
    assert curve.dropped_nodes == [16, 32, 64]
    assert all(
        n * 8 * req.training.micro_batch_size <= global_batch(req.training, 4096)
        for n in curve.nodes
    )
    caption = scaling_chart(curve).caption or ""
    assert "Not drawn from 128 GPUs on" in caption and "global batch of 64 sequences" in caption


def test_the_scaling_curve_counts_replicas_not_gpus() -> None:
    # tp 8 on 8-GPU nodes: one replica per node, so 64 nodes are 64 replicas of micro-batch 1 ≤ 64.
    req = request(
        model={"preset": "llama-3.1-70b"},
        hardware={"gpu": "H100-SXM", "gpus_per_node": 8},
        training={"method": "full", "tensor_parallel": 8, "global_batch_size": 64},
    )
    curve = scaling(req, CATALOG)
    assert curve.nodes == [1, 2, 4, 8, 16, 32, 64] and curve.dropped_nodes == []
