"""Three published layouts: uneven pipeline stages (Llama 3 405B), checkpointing every k-th block
(torchtitan, fms-fsdp) and PEFT ``target_parameters`` on fused experts (gpt-oss).

Expected numbers are hand arithmetic on the model's published config, written out here; none is read
from the code under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.catalog import load_catalog
from core.launch import LaunchError
from core.planner.model import activations, lora, parallel
from core.planner.model.params import Architecture
from core.planner.plan import PlanError, on_candidate, plan
from core.planner.request import PlanRequest, TrainingSpec
from core.planner.speed import compute
from tests.core.launch_cases import CASES, write

CATALOG = load_catalog()


def arch_of(preset: str) -> Architecture:
    return Architecture.from_hf_config(CATALOG.model(preset).config, preset)


def request(
    preset: str, training: dict[str, Any], hardware: dict[str, Any] | None = None, seq: int = 4096
) -> PlanRequest:
    raw: dict[str, Any] = {
        "model": {"preset": preset},
        "data": {"tokens": "2e8", "seq_len": seq},
        "training": training,
    }
    if hardware:
        raw["hardware"] = hardware
    return PlanRequest.model_validate(raw)


def one_sentence(text: str) -> bool:
    return "\n" not in text and text.startswith("training.")


# ----------------------------------------------------------------------------- uneven pipeline
# stages

# Llama 3 (arXiv:2407.21783 §3.3.2): 126 layers on 16 stages, one layer fewer on the first and the
# last: 7 + 14 × 8 + 7 = 126.
LLAMA_405B = {
    "method": "full",
    "sharding": "zero1",
    "gradient_checkpointing": True,
    "tensor_parallel": 8,
    "sequence_parallel": True,
    "pipeline_parallel": 16,
    "pipeline_first_stage_layers": 7,
    "pipeline_last_stage_layers": 7,
    "global_batch_size": 256,
}
NODES_405B = {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 32}


def test_llama3_405b_on_16_uneven_stages_plans() -> None:
    result = plan(request("llama-3.1-405b", LLAMA_405B, NODES_405B, seq=8192))
    assert result.memory.fits
    assert result.compute.step_time_s > 0
    t = result.request.training
    assert (t.pipeline_first_stage_layers, t.pipeline_last_stage_layers) == (7, 7)


def test_the_stages_are_megatrons_and_the_busiest_is_planned() -> None:
    arch = arch_of("llama-3.1-405b")
    t = TrainingSpec.model_validate(LLAMA_405B)
    assert parallel.stage_layer_counts(arch, t) == (7.0, 8.0, 7.0)
    assert parallel.stage_layers(arch, t) == 8.0
    # 1F1B: stage i holds 16 − i micro-batches: first 7 × 16 = 112, second 8 × 15 = 120, last 7 × 1.
    assert parallel.activation_layers(arch, t) == 120.0
    # Weights: h 16384, vocab 128256, untied; a layer is attention 2·h² + 2·h·1024 (GQA: 8 KV heads
    # of 128), MLP 3·h·53248, two norms 2·h. First stage: embedding + 7 layers; middle 8 layers;
    # last 7 layers + head + norm.
    h, v = 16384, 128256
    layer = 2 * h * h + 2 * h * 1024 + 3 * h * 53248 + 2 * h
    total = 2 * v * h + 126 * layer + h
    stages = (v * h + 7 * layer, 8 * layer, v * h + h + 7 * layer)
    assert parallel.state_share(arch, t) == pytest.approx(max(stages) / 8 / total, rel=1e-12)


def test_first_and_last_equal_to_the_even_split_plan_as_the_even_split() -> None:
    even = {"method": "full", "sharding": "zero1", "pipeline_parallel": 4, "global_batch_size": 64}
    hw = {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1}
    a = plan(request("llama-3.1-8b", even, hw))
    b = plan(
        request(
            "llama-3.1-8b",
            {**even, "pipeline_first_stage_layers": 8, "pipeline_last_stage_layers": 8},
            hw,
        )
    )
    # The last stage's final norm (h = 4096 parameters) is counted once stages are named: 16 bytes
    # each, ÷ ZeRO.
    assert b.memory.per_gpu.total == pytest.approx(a.memory.per_gpu.total, rel=1e-5)
    assert b.compute.step_time_s == pytest.approx(a.compute.step_time_s, rel=1e-6)


def test_uneven_stages_set_memory_and_time_by_the_busiest_stage() -> None:
    # Llama 3.1 8B, 32 layers on 4 stages of 7, 9, 9, 7: activations peak on the first (7 × 4 = 28
    # against 9 × 3 = 27). The output layer (128256 × 4096 = 525M parameters) weighs 2.4 layers of
    # 218M: the even last stage (8 + 2.4) is slower than any of 7, 9, 9, 7 + 2.4, so taking a layer
    # off the ends shortens the step.
    arch = arch_of("llama-3.1-8b")
    t = TrainingSpec(
        method="full",
        sharding="zero1",
        pipeline_parallel=4,
        pipeline_first_stage_layers=7,
        pipeline_last_stage_layers=7,
    )
    assert parallel.stage_layer_counts(arch, t) == (7.0, 9.0, 7.0)
    assert parallel.activation_layers(arch, t) == 28.0
    even = t.model_copy(
        update={"pipeline_first_stage_layers": None, "pipeline_last_stage_layers": None}
    )
    hw = {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1}
    base = {"method": "full", "sharding": "zero1", "pipeline_parallel": 4, "global_batch_size": 64}
    uneven = plan(
        request(
            "llama-3.1-8b",
            {**base, "pipeline_first_stage_layers": 7, "pipeline_last_stage_layers": 7},
            hw,
        )
    )
    even_plan = plan(request("llama-3.1-8b", base, hw))
    assert uneven.compute.step_time_s < even_plan.compute.step_time_s
    # 28 layers in flight against 32
    assert uneven.memory.per_gpu.activations < even_plan.memory.per_gpu.activations
    assert parallel.stage_layers(arch, even) == 8.0


@pytest.mark.parametrize(
    ("training", "sentence"),
    [
        (
            {
                "pipeline_parallel": 16,
                "pipeline_first_stage_layers": 7,
                "pipeline_last_stage_layers": 8,
            },
            "training.pipeline_first_stage_layers 7 and pipeline_last_stage_layers 8 leave 111 of "
            "the 126 layers of llama-3.1-405b for 14 middle pipeline stages, which must split "
            "them evenly (Megatron-LM); use training.pipeline_first_stage_layers and "
            "pipeline_last_stage_layers each 7, 14, 21, 28, 35 or 42",
        ),
        (
            {"pipeline_parallel": 16, "pipeline_first_stage_layers": 5},
            "training.pipeline_first_stage_layers 5 leaves 121 of the 126 layers of "
            "llama-3.1-405b for 15 middle pipeline stages, which must split them evenly "
            "(Megatron-LM); use training.pipeline_first_stage_layers 6, 21, 36, 51, 66 or 81",
        ),
        (
            {"pipeline_first_stage_layers": 7},
            "training.pipeline_first_stage_layers needs training.pipeline_parallel of 2 or more "
            "(it sizes one pipeline stage); leave it out for a single stage",
        ),
    ],
)
def test_stage_counts_that_do_not_add_up_are_one_sentence(
    training: dict[str, Any], sentence: str
) -> None:
    with pytest.raises(PlanError) as err:
        plan(request("llama-3.1-405b", {"method": "lora", **training}))
    assert str(err.value) == sentence


@settings(max_examples=200, deadline=None)
@given(
    pp=st.integers(1, 40),
    v=st.sampled_from([1, 2, 3]),
    first=st.one_of(st.none(), st.integers(1, 130)),
    last=st.one_of(st.none(), st.integers(1, 130)),
)
def test_any_stage_counts_plan_as_megatron_builds_them_or_say_why(
    pp: int, v: int, first: int | None, last: int | None
) -> None:
    arch = arch_of("llama-3.1-405b")
    try:
        t = TrainingSpec(
            method="lora",
            pipeline_parallel=pp,
            pipeline_virtual_stages=v,
            pipeline_first_stage_layers=first,
            pipeline_last_stage_layers=last,
        )
    except ValidationError:
        return  # virtual stages without a pipeline: the existing rule
    problem = parallel.model_problem(arch, t, 4096)
    if problem is not None:
        assert one_sentence(problem), problem
        return
    f, m, la = parallel.stage_layer_counts(arch, t)
    if pp > 1:
        assert (
            f + m * (pp - 2) + la == 126
            and m == int(m)
            and all(n % v == 0 for n in (f, m, la) if n)
        )


# ----------------------------------------------------------------------------- every k-th block


def test_every_second_block_lies_between_none_and_full_in_memory_and_flops() -> None:
    arch = arch_of("llama-3.1-8b")
    base = TrainingSpec(method="full", sharding="fsdp")
    none, full = base.model_copy(update={"gradient_checkpointing": False}), base
    every2 = TrainingSpec(method="full", sharding="fsdp", checkpoint_every_k_blocks=2)

    def act(t: TrainingSpec) -> float:
        return float(activations.activation_bytes(arch, t, 1, 4096))

    def flops(t: TrainingSpec) -> float:
        return float(compute.flops_per_token(arch, t, 4096, float(arch.total_params)))

    assert act(full) < act(every2) < act(none)
    assert flops(none) < flops(every2) < flops(full)
    # 16 of the 32 blocks recompute their forward: half the extra FLOPs of full recompute.
    assert flops(every2) - flops(none) == pytest.approx((flops(full) - flops(none)) / 2, rel=1e-12)
    # Memory, with P one block's saved tensors, I the 32 block inputs and N the final norm: none =
    # 32P + P + N, full = I + P (the recomputed block) + P + N, every second = I/2 + 16P + P + P + N
    # = the mean + P/2.
    block = float(activations.parallel_elements_per_token_layer(arch, full, 4096)) * 2 * 4096
    assert act(every2) == pytest.approx((act(none) + act(full)) / 2 + block / 2, rel=1e-12)


def test_every_block_is_true_and_a_plan_with_k_runs() -> None:
    arch = arch_of("llama-3.1-8b")
    t = TrainingSpec(method="full", sharding="fsdp")
    k1 = TrainingSpec(method="full", sharding="fsdp", checkpoint_every_k_blocks=1)
    assert activations.activation_bytes(arch, k1, 1, 4096) == activations.activation_bytes(
        arch, t, 1, 4096
    )
    hw = {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1}
    r2 = plan(
        request(
            "llama-3.1-8b",
            {
                "method": "full",
                "sharding": "fsdp",
                "checkpoint_every_k_blocks": 2,
                "micro_batch_size": 1,
            },
            hw,
        )
    )
    r1 = plan(
        request(
            "llama-3.1-8b",
            {
                "method": "full",
                "sharding": "fsdp",
                "gradient_checkpointing": True,
                "micro_batch_size": 1,
            },
            hw,
        )
    )
    assert r2.memory.per_gpu.activations > r1.memory.per_gpu.activations
    assert r2.compute.step_time_s < r1.compute.step_time_s


@settings(max_examples=40, deadline=None)
@given(
    share=st.floats(0, 0.5),
    preset=st.sampled_from(["llama-3.1-8b", "qwen2.5-7b", "gemma-2-9b", "mixtral-8x7b"]),
)
def test_any_k_plans_between_none_and_full(share: float, preset: str) -> None:
    # k up to half the blocks: checkpointing only the last block of all saves nothing (it is
    # recomputed at once).
    arch = arch_of(preset)
    k = max(1, int(share * arch.layers))
    full = TrainingSpec(method="lora")
    none = full.model_copy(update={"gradient_checkpointing": False})
    every = TrainingSpec(method="lora", checkpoint_every_k_blocks=k)
    a = [float(activations.activation_bytes(arch, t, 1, 2048)) for t in (full, every, none)]
    assert a[0] <= a[1] * (1 + 1e-12) and a[1] <= a[2] * (1 + 1e-12)
    f = [float(compute.flops_per_token(arch, t, 2048, 1e7)) for t in (none, every, full)]
    assert f[0] <= f[1] <= f[2] * (1 + 1e-12)


@pytest.mark.parametrize(
    ("training", "words"),
    [
        (
            {"gradient_checkpointing": False, "checkpoint_every_k_blocks": 2},
            "training.checkpoint_every_k_blocks needs gradient_checkpointing true",
        ),
        (
            {"gradient_checkpointing": "selective", "checkpoint_every_k_blocks": 2},
            "training.checkpoint_every_k_blocks needs gradient_checkpointing true",
        ),
        (
            {"activation_offload": True, "checkpoint_every_k_blocks": 3},
            "training.activation_offload needs every block checkpointed",
        ),
    ],
)
def test_k_with_what_cannot_hold_is_one_sentence(training: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        TrainingSpec.model_validate({"method": "lora", **training})


def test_a_search_candidate_without_recompute_drops_k() -> None:
    r = request("llama-3.1-8b", {"method": "lora", "checkpoint_every_k_blocks": 2})
    result = plan(r)
    c = result.candidates[0].model_copy(update={"gradient_checkpointing": False})
    assert on_candidate(r, c).training.checkpoint_every_k_blocks is None


def test_torchtitan_profile_keeps_every_k() -> None:
    r = request(
        "llama-3.1-8b",
        {"method": "full", "framework": "torchtitan", "checkpoint_every_k_blocks": 2},
        {"gpu": "H100-SXM", "gpus_per_node": 8},
    )
    assert plan(r).request.training.gradient_checkpointing is True


# ----------------------------------------------------------------------------- PEFT
# target_parameters

# gpt-oss-20b (openai/gpt-oss-20b config.json): hidden 2880, 24 layers, 64 heads and 8 KV heads of
# 64, 32 experts of intermediate 2880, every layer MoE. transformers' GptOssExperts: gate_up_proj
# (32, 2880, 5760), down_proj (32, 2880, 2880). PEFT's ParamWrapper: lora_A Linear(d_in, r·E),
# lora_B Linear(r·E, d_out).
GPT_OSS = {
    "method": "lora",
    "lora_rank": 16,
    "lora_target_parameters": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
}


def test_target_parameters_count_as_peft_does() -> None:
    arch = arch_of("gpt-oss-20b")
    r, e, h, w, layers = 16, 32, 2880, 2880, 24
    gate_up = r * e * (h + 2 * w)  # 4,423,680
    down = r * e * (w + h)  # 2,949,120
    assert (gate_up, down) == (4_423_680, 2_949_120)
    # all-linear: q 2880→4096, k and v 2880→512, o 4096→2880 (the experts are parameters, not
    # linears).
    attention = r * ((h + 4096) + 2 * (h + 512) + (4096 + h))  # 331,776
    with_experts = TrainingSpec.model_validate(GPT_OSS)
    without = TrainingSpec(method="lora", lora_rank=16)
    assert lora.trainable_params(arch, without) == attention * layers == 7_962_624
    assert (
        lora.trainable_params(arch, with_experts)
        == (attention + gate_up + down) * layers
        == 184_909_824
    )
    only_down = TrainingSpec(method="lora", lora_rank=16, lora_target_parameters=["experts_down"])
    assert lora.trainable_params(arch, only_down) == (attention + down) * layers


def test_target_parameters_plan_and_hold_the_merged_expert_weights() -> None:
    hw = {"gpu": "H100-SXM", "gpus_per_node": 1}
    # only the adapters differ
    same = {"micro_batch_size": 1, "sharding": "none", "gradient_checkpointing": True}
    with_experts = plan(request("gpt-oss-20b", {**GPT_OSS, **same}, hw, seq=2048))
    without = plan(
        request("gpt-oss-20b", {"method": "lora", "lora_rank": 16, **same}, hw, seq=2048)
    )
    assert with_experts.compute.params_trainable == 184_909_824
    # Checkpointed (true): one layer's W + ΔW is rebuilt in backward, with ΔW and its gradient: 3 ×
    # the layer's expert weights, 32 × 2880 × (5760 + 2880) elements in bf16 = 1.59 GB, on top of
    # the kept expert inputs.
    merged = 32 * 2880 * (5760 + 2880) * 2
    extra = with_experts.memory.per_gpu.activations - without.memory.per_gpu.activations
    assert extra >= 3 * merged
    assert with_experts.compute.step_time_s > without.compute.step_time_s


@pytest.mark.parametrize(
    ("preset", "training", "words"),
    [
        (
            "llama-3.1-8b",
            {"lora_target_parameters": ["experts_down"]},
            "training.lora_target_parameters adapts fused mixture-of-experts weights; "
            "llama-3.1-8b is dense",
        ),
        (
            "mixtral-8x7b",
            {"lora_target_parameters": ["experts_down"]},
            "the experts of mixtral-8x7b are linear modules",
        ),
    ],
)
def test_target_parameters_on_a_model_without_fused_experts_is_one_sentence(
    preset: str, training: dict[str, Any], words: str
) -> None:
    with pytest.raises(PlanError, match=words) as err:
        plan(request(preset, {"method": "lora", **training}))
    assert one_sentence(str(err.value))


@settings(max_examples=80, deadline=None)
@given(
    names=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "mlp.experts.gate_up_proj",
                    "experts.down_proj",
                    "experts_down",
                    "feed_forward.experts.gate_up_proj",
                    "gate_up_proj",
                ]
            ),
            st.text(min_size=0, max_size=12),
        ),
        max_size=3,
    ),
    method=st.sampled_from(["lora", "qlora", "full"]),
    dropout=st.sampled_from([0.0, 0.05]),
)
def test_any_target_parameters_are_accepted_or_one_sentence(
    names: list[str], method: str, dropout: float
) -> None:
    raw = {"method": method, "lora_dropout": dropout, "lora_target_parameters": names}
    try:
        t = TrainingSpec.model_validate(raw)
    except ValidationError as exc:
        (error,) = exc.errors()
        assert one_sentence(str(error["msg"]).removeprefix("Value error, ")), error["msg"]
        return
    assert method != "full" and dropout == 0 and names
    assert lora.target_parameter_kinds(t.lora_target_parameters) <= {
        "experts_gate_up",
        "experts_down",
    }


# ----------------------------------------------------------------------------- launch formats


def test_axolotl_writes_target_parameters(tmp_path: Path) -> None:
    case = CASES[0]
    gpt = case.__class__(
        **{**case.__dict__, "request": {**case.request, "model": {"preset": "gpt-oss-20b"}}}
    )
    write(gpt, "axolotl", tmp_path, lora_target_parameters=["experts_gate_up", "experts_down"])
    cfg = yaml.safe_load((tmp_path / "axolotl_config.yaml").read_text())
    assert cfg["lora_target_parameters"] == ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]


@pytest.mark.parametrize(
    ("fmt", "case", "training", "named"),
    [
        (
            "torchtune",
            CASES[0],
            {"checkpoint_every_k_blocks": 2},
            "training.checkpoint_every_k_blocks 2: torchtune",
        ),
        (
            "axolotl",
            CASES[0],
            {"checkpoint_every_k_blocks": 2},
            "training.checkpoint_every_k_blocks 2: axolotl",
        ),
        (
            "accelerate",
            CASES[1],
            {"checkpoint_every_k_blocks": 4},
            "training.checkpoint_every_k_blocks 4: accelerate",
        ),
        (
            "axolotl",
            CASES[1],
            {"pipeline_parallel": 2, "pipeline_first_stage_layers": 15, "sharding": "zero1"},
            "pipeline_parallel 2",
        ),
        (
            "accelerate",
            CASES[1],
            {"pipeline_parallel": 2, "pipeline_first_stage_layers": 15, "sharding": "zero1"},
            "pipeline_parallel 2",
        ),
        (
            "deepspeed",
            CASES[1],
            {"pipeline_parallel": 2, "pipeline_first_stage_layers": 15, "sharding": "zero1"},
            "pipeline_parallel 2",
        ),
        (
            "torchtune",
            CASES[1],
            {"pipeline_parallel": 2, "pipeline_first_stage_layers": 15, "sharding": "zero1"},
            "pipeline_parallel 2",
        ),
    ],
)
def test_formats_that_cannot_express_a_field_refuse_it(
    fmt: str, case: Any, training: dict[str, Any], named: str, tmp_path: Path
) -> None:
    with pytest.raises(LaunchError, match=named) as err:
        write(case, fmt, tmp_path, **training)
    assert "\n" not in str(err.value)
