"""The planner against 179 published training runs, validated leave-one-source-out.

Every expected figure is a published measurement quoted in the fixtures (throughput_cases.json,
published_runs.json: each with its pinned source URL and row), compared in the source's own unit by
bench/calibrate.py; none is computed by tuneplan. No run has an allowed miss: the guards below are
on the out-of-source summary figures only, and on the validation being out of source at all.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from bench import calibrate, calibrate_fit, calibrate_report
from bench.calibrate import Evaluation, Row, load_cases
from bench.calibrate_cases import build, source_of
from bench.calibrate_model import model_config
from core.planner.model.params import Architecture
from core.planner.request import Framework, Sharding

ROOT = Path(__file__).resolve().parents[2]
CASES = load_cases()
BY_ID = {c["id"]: c for c in CASES}
NEW_RUNS = json.loads(
    (ROOT / "tests/fixtures/planner/published_runs.json").read_text(encoding="utf-8")
)


@cache
def evaluation() -> Evaluation:
    return calibrate.evaluate(CASES, comparators=False)


def rows() -> dict[str, Row]:
    return {r.id: r for r in evaluation().rows}


# ----------------------------------------------------------------------------- the fixtures


def test_fixtures_are_what_their_notes_describe() -> None:
    """THROUGHPUT.md: 86 runs from 13 repositories; PUBLISHED_RUNS.md: 44 more from 9 sources, 17
    from fms-acceleration's A100 table, 3 from the BLOOM 176B training README, and 31 from six
    further sources (PEFT's method comparison 5, fms-fsdp 8, flash-attention 5, MLPerf Training
    v4.0 3, v4.1 5 and v5.0 5), and 95 from seven more (OLMo-core 8, InternLM 54, MLPerf Training
    v5.1 6, Megatron-LLaMA 6, NeMo-Framework-Launcher 12, MLPerf Training v3.0 2 and v3.1 7).
    The two granite-7b rows of the Hugging Face blog are in both: counted once. So are six InternLM
    figures its doc prints twice, digit for digit, in two tables (its notes flag them)."""
    assert len(NEW_RUNS) == 44 + 17 + 3 + 31 + 95
    assert Counter(c["method"] for c in NEW_RUNS) == {
        "LoRA": 15 + 4 + 4 + 3 + 10 + 3,
        "full": 14 + 8 + 1 + 54,
        "pretraining (full)": 9 + 3 + 8 + 5 + 8 + 3 + 18 + 9,
        "QLoRA": 6 + 5,
    }
    assert len(CASES) == 86 + 44 + 17 + 3 + 31 + 95 - 2 - 6
    assert len(BY_ID) == len(CASES), "run ids must be unique"
    assert len({source_of(c) for c in CASES}) == 36
    for c in CASES:
        assert re.match(
            r"https://(github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/|www\.databricks\.com/)",
            c["source_url"],
        ), c["id"]
        assert c["source_quote"].strip(), c["id"]


def test_the_fixtures_are_read_from_the_project_not_the_shared_data() -> None:
    assert all(p.is_relative_to(ROOT / "tests/fixtures/planner") for p in calibrate.FIXTURES)
    for name in (
        "calibrate.py",
        "calibrate_cases.py",
        "calibrate_stack.py",
        "calibrate_model.py",
        "calibrate_fit.py",
        "calibrate_bands.py",
        "calibrate_report.py",
        "calibrate_compare.py",
    ):
        assert "/work/shared" not in (ROOT / "bench" / name).read_text(encoding="utf-8")


def test_a_source_is_its_repository_or_its_web_site() -> None:
    assert source_of(BY_ID["mosaic-mpt7b-1t-tokens-440xa100-40g-walltime"]) == "databricks.com"
    assert source_of(BY_ID["dgxc-llama31-8b-fp8-8xh100-tps"]) == "NVIDIA/dgxc-benchmarking"


# ----------------------------------------------------------------------------- building requests


def test_every_case_is_planned_or_says_why() -> None:
    got = rows()
    assert set(got) == set(BY_ID)
    for r in got.values():
        assert (r.planned is None) == (r.reason is not None), r.id
        if r.planned is None:
            assert r.reason and len(r.reason) > 10, r.id


@pytest.mark.parametrize("case_id", sorted(BY_ID))
def test_the_harness_builds_a_valid_request_for_what_it_plans(case_id: str) -> None:
    built = build(BY_ID[case_id])
    if built.request is None:
        assert built.reason
        return
    t = built.request.training
    case = BY_ID[case_id]
    other = case["other_settings"]
    assert built.request.hardware is not None
    assert built.request.hardware.gpus == case["n_gpus"]
    if other.get("gpus_per_node") and other.get("gpu_catalog_id") != "GB200":
        # a GB200 run's node is its NVL72 rack's NVLink domain, not the source's 4-GPU tray
        assert built.request.hardware.gpus_per_node == other["gpus_per_node"]
    if other.get("gpu_catalog_id"):
        assert built.request.hardware.gpu == other["gpu_catalog_id"]
    assert t.micro_batch_size == case["micro_batch"]
    assert built.request.data.seq_len == case["seq_len"]
    assert t.model_parallel == (other.get("tp") or 1) * (other.get("pp") or 1) * (
        other.get("cp") or 1
    )


@pytest.mark.parametrize("case_id", sorted({c["id"] for c in CASES if c["model"].get("params")}))
def test_the_case_architecture_has_the_published_parameter_count(case_id: str) -> None:
    """The config the harness writes sizes the model its source names (MPT: the NumParams column,
    which counts the learned position embedding of seq_len × d_model that the planner leaves out, so
    that is subtracted; Megatron: the size label, rounded to two figures; Llama, Qwen, GPT-2:
    counted from the config.json values)."""
    case = BY_ID[case_id]
    m = case["model"]
    published, rel = float(m["params"]), 0.01
    if m["name"].startswith("MPT"):
        published -= case["seq_len"] * m["hidden"]
    if m["name"].startswith("GPT ") and "Megatron" in m["name"]:
        rel = 0.03  # "1.7B": two significant figures
    arch = Architecture.from_hf_config(model_config(case), m["name"])
    assert arch.total_params == pytest.approx(published, rel=rel)


def test_megatron_weak_scaling_rows_are_not_planned_without_a_micro_batch() -> None:
    """The Megatron-LM README table gives neither the micro-batch nor the precision
    (THROUGHPUT.md)."""
    for case_id in ("megatron-gpt1.7b-h100-48g-tflops", "megatron-gpt462b-h100-6144g-tflops"):
        r = rows()[case_id]
        assert r.planned is None and r.reason == "micro-batch not published"


@pytest.mark.parametrize(
    ("case_id", "kernel"),
    [
        ("nanogpt-gpt2-124m-300b-8xa100-40g-walltime", "fused"),  # "AdamW (fused)"
        ("flashattn-gpt3-125m-8xa100-2048-tps", "fused"),  # apex FusedAdam
        ("qwen-1.8b-full-a100-4096-mem", "fused"),  # DeepSpeed AdamW
        ("peftmmqa-llama32-3b-full-l40s-tps", "foreach"),  # torch.optim.AdamW, no fused argument
        ("fmsacc-mistral7b-full-a100-1g-mb4-tps", "foreach"),  # transformers' adamw_torch
        ("hf-perfdoc-bert-large-fp32-bs4-v100-mem", "foreach"),  # adamw_hf, a per-weight loop
        # "the fused backward step later" names a later row's setting, not this one's
        ("torchtune-a100-llama3.2-3b-full-packed-1g-tps", "foreach"),
        ("tt-h100-llama3.1-8b-fsdp-8g-tps", None),  # not named: torchtitan's own default
    ],
)
def test_the_adamw_kernel_is_read_from_the_cases_words(case_id: str, kernel: str | None) -> None:
    request = build(BY_ID[case_id]).request
    assert request is not None
    stated = request.training.optimizer_kernel
    assert (stated.value if stated else None) == kernel


def test_a_run_that_states_no_clipping_is_planned_without_it() -> None:
    """NeMo AutoModel's benchmark notes say "no gradient clipping"; fms-fsdp clips every step."""
    automodel = build(BY_ID["automodel-llama3.1-8b-lora-h100-1g-tps"]).request
    fms = build(BY_ID["fmsfsdp-llama2-7b-hsdp-128xa100-mb2-compile-tps"]).request
    assert automodel is not None and automodel.training.gradient_clipping is False
    assert fms is not None and fms.training.gradient_clipping is None


def test_a_gb200_run_is_planned_on_its_nvl72_racks_and_nvfp4_is_refused() -> None:
    """A GB200 NVL72 rack joins its 18 four-GPU trays by NVLink (NVIDIA's GB200 NVL72 page); the
    512-GPU run fills no whole racks, so it is spread over the fewest that hold it. NVFP4 has no
    planner precision."""
    rack = build(BY_ID["mlperf51-nvidia-gb200-18x4-llama31-8b-pretrain-tps"])
    eight_racks = build(BY_ID["mlperf51-nvidia-gb200-128x4-llama31-8b-pretrain-tps"])
    nvfp4 = build(BY_ID["mlperf51-nvidia-gb200-2x4-llama31-8b-pretrain-tps"])
    assert rack.request is not None and eight_racks.request is not None
    one, eight = rack.request.hardware, eight_racks.request.hardware
    assert one is not None and eight is not None
    assert (one.gpus_per_node, one.nodes) == (72, 1)
    assert (eight.gpus_per_node, eight.nodes) == (64, 8)
    assert any("8 NVLink domains of 64" in a for a in eight_racks.assumed)
    assert nvfp4.request is None and nvfp4.reason is not None and "NVFP4" in nvfp4.reason


@pytest.mark.parametrize(
    ("case_id", "elements"),
    [
        ("mlperf51-nvidia-gb200-18x4-llama31-8b-pretrain-tps", 768_000_000),  # BUCKET_SIZE
        ("internlm-7b-tp1-zero1all-nopack-64xa100-tps", 512 * 2**20),  # reduce_bucket_size
        ("megatronllama-llama13b-odo-256xa100-gbs2048-tps", 400_000_000),  # --reduce-bucket-size
        ("megatronllama-llama13b-distopt-256xa100-gbs2048-tps", None),  # the ODO's flag only
        # apex DistributedFusedAdam bucket_cap_mb 100 of bf16 gradients
        ("mlperf31-nvidia-512xdgxh100-gpt3-175b-tps", 100 * 2**20 // 2),
    ],
)
def test_the_gradient_bucket_is_read_where_the_source_sets_it(
    case_id: str, elements: int | None
) -> None:
    request = build(BY_ID[case_id]).request
    assert request is not None
    assert request.training.gradient_bucket_elements == elements


def test_a_stated_bf16_gradient_reduction_is_planned_as_stated() -> None:
    """MLPerf's NeMo GPT-3 configs sync gradients in bf16 (grad_sync_dtype), v5.1's Llama 3.1 8B
    with grad_reduce_in_fp32 False; NeMo 24.07's table states neither: Megatron's fp32."""
    for case_id in (
        "mlperf31-nvidia-512xdgxh100-gpt3-175b-tps",
        "mlperf30-nvidia-dgxh100-64x8-gpt3-175b-tps",
        "mlperf51-nvidia-gb200-18x4-llama31-8b-pretrain-tps",
    ):
        request = build(BY_ID[case_id]).request
        assert request is not None and request.training.gradient_reduce_dtype == "bf16", case_id
    nemo = build(BY_ID["nemo2407-llama3-70b-base-pretrain-h100-64g-tps"]).request
    assert nemo is not None and nemo.training.gradient_reduce_dtype is None


def test_internlm_and_olmo_core_are_planned_as_the_pytorch_native_stacks_they_are() -> None:
    """Both run their own module tree under their own loop; InternLM's HybridZeroOptimizer
    all-reduces the whole gradient before each rank steps its share."""
    internlm = build(BY_ID["internlm-7b-tp1-zero1all-nopack-64xa100-tps"]).request
    olmo = build(BY_ID["olmocore-7b-bf16-8xh100-tps"]).request
    assert internlm is not None and olmo is not None
    assert internlm.training.framework is Framework.torchtitan
    assert olmo.training.framework is Framework.torchtitan
    assert internlm.training.sharding is Sharding.zero1
    assert internlm.training.gradients_all_reduced is True
    node_local = build(BY_ID["internlm-7b-tp1-zero1node-nopack-64xa100-tps"])
    assert node_local.request is None and "has no planner equivalent" in str(node_local.reason)


def test_the_cases_own_sharding_and_head_are_planned() -> None:
    """fms-fsdp's 7B runs are HSDP (full shards in a node, replicas across nodes); flash-attention's
    760M-2.7B runs step with ZeroRedundancyOptimizer after DDP's all-reduce; santacoder, nanoGPT's
    GPT-2 and BLOOM tie their heads (their config.json files), MPT-7B is a 4h GELU model."""
    hsdp = build(BY_ID["fmsfsdp-llama2-7b-hsdp-128xa100-mb2-compile-tps"]).request
    zero1 = build(BY_ID["flashattn-gpt3-1.3b-8xa100-2048-tps"]).request
    assert hsdp is not None and hsdp.training.sharding is Sharding.hsdp
    assert zero1 is not None and zero1.training.sharding is Sharding.zero1
    assert zero1.training.gradients_all_reduced is True
    for case_id in (
        "fmsacc-santacoder-full-a100-1g-mb4-tps",
        "nanogpt-gpt2-124m-300b-8xa100-40g-walltime",
        "bloom176b-pretrain-384xa100-gbs2048-mb2-tps",
    ):
        assert model_config(BY_ID[case_id])["tie_word_embeddings"] is True, case_id
    mpt = model_config(BY_ID["mosaic-mpt7b-1t-tokens-440xa100-40g-walltime"])
    assert (mpt["model_type"], mpt["hidden_act"], mpt["tie_word_embeddings"]) == (
        "gpt2",
        "gelu",
        True,
    )


def test_bloom_rows_are_planned_with_their_uneven_pipeline_stages() -> None:
    """The BLOOM 176B README puts 5 of its 70 blocks on the first and last of 12 pipeline stages
    and 6 on the others; the case reader passes those counts, so 70 layers plan over PP 12 (an even
    split would be refused)."""
    for case_id in (
        "bloom176b-pretrain-384xa100-gbs2048-mb2-tps",
        "bloom176b-pretrain-384xa100-gbs16-mb2-tps",
        "bloom176b-pretrain-384xa100-gbs192-mb1-tps",
    ):
        other = BY_ID[case_id]["other_settings"]
        first, last = other["pipeline_first_stage_layers"], other["pipeline_last_stage_layers"]
        assert first + (other["pp"] - 2) * 6 + last == BY_ID[case_id]["model"]["layers"]
        request = build(BY_ID[case_id]).request
        assert request is not None
        assert request.training.pipeline_first_stage_layers == first == 5
        assert request.training.pipeline_last_stage_layers == last == 5
        assert rows()[case_id].planned is not None, case_id


def test_wall_time_and_gpu_hours_use_only_a_stated_token_count() -> None:
    """HF doc: 512 sequences × 512 tokens = 262,144 (stated); TinyLlama: 300B tokens; litgpt
    publishes none."""
    assert build(BY_ID["hf-perfdoc-bert-large-fp32-bs4-v100-walltime"]).tokens == 512 * 512
    assert build(BY_ID["tinyllama-1.1b-300b-tokens-gpu-hours"]).tokens == 300e9
    assert (
        rows()["litgpt-a10g-llama3-8b-lora-walltime"].reason
        == "wall time without a published token count"
    )


def test_units_follow_the_source() -> None:
    """1 GB = 1e9 B for litgpt's figures, 1 GiB = 2**30 B for torchtitan's; tokens/s per GPU is the
    plan's total over its GPUs (torchtitan's 128-GPU row: 16 nodes of 8); ms-swift states torch
    reserved memory itself."""
    built = build(BY_ID["tt-h100-llama3.1-8b-fsdp-128g-tps"])
    assert built.request is not None and built.request.hardware is not None
    assert built.request.hardware.gpus_per_node == 8 and built.request.hardware.nodes == 16
    assert calibrate.MEMORY_MEASURE["Lightning-AI/litgpt"] == "allocated"
    assert BY_ID["swift-qwen7b-full-a100-2048-mem"]["other_settings"]["measure"] == "reserved"
    assert rows()["swift-qwen7b-full-a100-2048-mem"].planned is not None


# ----------------------------------------------------------------------------- leave one source out


def _shifted(source: str, factor: float) -> list[dict[str, Any]]:
    """The cases with every published figure of `source` multiplied by `factor`."""
    return [dict(c, value=c["value"] * factor) if source_of(c) == source else c for c in CASES]


@pytest.mark.parametrize(
    "source", ["mosaicml/llm-foundry", "NVIDIA/dgxc-benchmarking", "QwenLM/Qwen"]
)
def test_a_sources_own_figures_never_reach_its_predictions(source: str) -> None:
    """Publish every figure of one source 3× larger: its out-of-source predictions must not move at
    all (the fit never saw them), while the table fitted on every source does move where that source
    backs a group."""
    before = evaluation()
    after = calibrate.evaluate(_shifted(source, 3.0), comparators=False)
    mine = [
        r.id
        for r in before.rows
        if r.source == source and r.kind == "throughput" and r.planned is not None
    ]
    assert mine
    planned_after = {r.id: r.planned for r in after.rows}
    for case_id in mine:
        assert planned_after[case_id] == pytest.approx(rows()[case_id].planned, rel=1e-12), case_id
    assert after.shipped != before.shipped


def test_each_fold_is_fitted_without_its_source() -> None:
    ev = evaluation()
    assert set(ev.folds) == {r.source for r in ev.residuals}
    for source, table in ev.folds.items():
        assert table == calibrate_fit.fit_table([r for r in ev.residuals if r.source != source])


def test_a_run_the_data_flags_as_unexplained_is_predicted_but_never_fitted_on() -> None:
    """PUBLISHED_RUNS.md: universal-llm-trainer's QLoRA rows are 4-5× slower than its LoRA rows for
    no stated reason (`caution`): they are what one stack measured, not what QLoRA costs."""
    ev = evaluation()
    flagged = {r.id for r in ev.residuals if not r.steers}
    assert flagged == {"ult-llama31-8b-qlora-a100-8192-tps"}
    assert rows()["ult-llama31-8b-qlora-a100-8192-tps"].planned is not None
    shifted = [replace(r, base=r.base + 5.0) if not r.steers else r for r in ev.residuals]
    assert calibrate_fit.fit_table(shifted) == calibrate_fit.fit_table(ev.residuals)


def test_a_group_is_pooled_with_its_parent_by_its_sources() -> None:
    """One source with residuals 0.5 and 0.7 (its median 0.6) in group g under 'all': 'all' holds
    the same single source, pooled with the prior 0 at weight SHRINK = 2 → 0.6 × 1/3 = 0.2; g pooled
    with that → (0.6 + 2 × 0.2) / 3."""
    runs = [
        calibrate_fit.Residual("a", "s1", ("g", "all"), 0.5),
        calibrate_fit.Residual("b", "s1", ("g", "all"), 0.7),
    ]
    table = calibrate_fit.fit_table(runs)["groups"]
    assert calibrate_fit.SHRINK == 2.0
    assert table["all"]["log_factor"] == pytest.approx(0.2, abs=1e-4)
    assert table["g"]["log_factor"] == pytest.approx((0.6 + 2 * 0.2) / 3, abs=1e-4)
    # a second, agreeing source moves g further from its parent
    more = calibrate_fit.fit_table([*runs, calibrate_fit.Residual("c", "s2", ("g", "all"), 0.6)])[
        "groups"
    ]
    assert more["g"]["sources"] == 2 and more["g"]["log_factor"] > table["g"]["log_factor"]


def test_a_rate_timed_with_its_evaluation_pass_grows_per_gpu_with_the_gpus_sharing_the_pass() -> (
    None
):
    """NVIDIA dgxc-benchmarking's Llama-2-70B LoRA recipe publishes 319.2 tokens/s per H100 on 8
    GPUs and 603.6 on 32 at the same per-GPU batch (x1.89): its train_runtime holds one evaluation
    pass of a fixed test split, which more GPUs share (docs/formulas.md, "Published rates that hold
    an evaluation pass"). Planned per step alone, both sizes would get the same rate per GPU."""
    r = rows()
    eight = r["dgxc-hf-llama2-70b-lora-fsdp-8xh100-tps"].prior
    thirty_two = r["dgxc-hf-llama2-70b-lora-fsdp-32xh100-tps"].prior
    assert eight is not None and thirty_two is not None
    assert 1.5 < thirty_two / eight < 2.3  # published 603.6 / 319.2 = 1.89


# ----------------------------------------------------------------------------- the summary, guarded


def test_the_out_of_source_figures_do_not_regress() -> None:
    """Measured on 2026-12-07 with every source left out in turn (docs/formulas.md, Calibration):
    151 of 188 (full 110, LoRA 30, QLoRA 11). Gradients travelling in the dtype each stack reduces
    them in, and BLOOM planned on its stated fabric, took it from 78 and 53 to 81 and 56; covering
    a DDP or ZeRO-1 reduction with the last micro-batch's backward only (it was the whole step's
    compute) moved dgxc-benchmarking's Nemotron-4 340B run past 20% (docs/formulas.md, "Data
    parallelism"). Six more sources took it from 80 of 105 to 97 of 130: with their runs in the
    Hugging Face stack's fits, Answer.AI's 2 × RTX 4090 QLoRA run (FSDP) moved from 16% to 20% too
    slow (QLoRA 12 → 11), and NVIDIA's Blackwell LoRA runs (MLPerf v4.1 and v5.0) came in 21-51%
    too fast (LoRA 22 of 37). Blackwell as a GPU family of its own (it had been grouped with
    Hopper while no run was on it) brought those within 17% (LoRA 28) and moved NeMo's Llama 3 8B
    pre-training just past 20% (full 64 → 63). Timing the gradient clipping before each step
    brought TinyLlama's GPU-hours within 20% (103, full 64). Five more sources (OLMo-core,
    InternLM, MLPerf v5.1, Megatron-LLaMA, NeMo-Framework-Launcher), NCCL's own per-call latencies
    in place of the heuristic ones, a GB200 run's NVL72 NVLink domain and the gradient buckets the
    sources set took it to 146 of 179 (full 105 of 127, LoRA 30 of 39); MLPerf v3.0 and v3.1's
    GPT-3 175B runs, with their stated bf16 gradient reduction, to 151 of 188 (full 110 of 136).
    On 2026-12-08 an interleaved pipeline's wider window for the gradient reduction and Megatron's
    fused softmax in its eager attention took it to 152 (full 111). A change that lowers one of
    these must say why in docs/formulas.md and lower it here deliberately."""
    s = calibrate_report.summary(list(rows().values()))
    t = s["throughput"]
    assert t["all"]["within"] >= 152
    assert t["full"]["planner"]["within"] >= 111
    assert t["LoRA"]["planner"]["within"] >= 30
    assert t["QLoRA"]["planner"]["within"] >= 11
    assert t["full"]["planner"]["within"] > t["full"]["flat_50"]["within"]
    assert s["memory"]["within"] >= 21  # 18 before the bitsandbytes < 0.43.2 inputs (2026-12-07)


# ----------------------------------------------------------------------------- output


def test_markdown_has_a_table_per_method_class_with_both_guesses() -> None:
    text = calibrate_report.markdown(list(rows().values()))
    for title in ("#### full fine-tuning and pre-training", "#### LoRA", "#### QLoRA"):
        assert title in text
    assert "| flat 50% | llm-analysis |" in text
    assert "micro-batch not published" in text


def test_json_output_is_json_and_complete() -> None:
    data = json.loads(json.dumps(calibrate.as_json(evaluation())))
    assert sorted(r["id"] for r in data["rows"]) == sorted(BY_ID)
    assert data["summary"]["throughput"]["all"]["of"] > 80


def test_write_docs_replaces_only_between_the_markers(tmp_path: Path) -> None:
    doc = tmp_path / "formulas.md"
    doc.write_text("# F\n\n## Calibration\n\ntext\n\n## Sources\n\n- a\n", encoding="utf-8")
    calibrate.write_docs(doc, f"{calibrate.BEGIN}\nfirst\n{calibrate.END}\n")
    calibrate.write_docs(doc, f"{calibrate.BEGIN}\nsecond\n{calibrate.END}\n")
    text = doc.read_text(encoding="utf-8")
    assert "first" not in text and text.count("second") == 1
    assert text.index("second") < text.index("## Sources") and text.endswith("- a\n")


def test_the_docs_carry_the_section() -> None:
    text = (ROOT / "docs/formulas.md").read_text(encoding="utf-8")
    assert calibrate.BEGIN in text and calibrate.END in text
    assert "### Throughput and memory from published runs (leave one source out)" in text


# ----------------------------------------------------------------------------- the GPU benchmark
# script


def test_hf_throughput_lists_and_helps_without_cuda() -> None:
    script = ROOT / "bench/hf_throughput.py"
    helped = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0 and "--list" in helped.stdout
    listed = subprocess.run(
        [sys.executable, str(script), "--list"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0
    lines = listed.stdout.strip().splitlines()[1:]
    assert len(lines) == 3 * 2 * 2 * 2  # method × checkpointing × cross-entropy × compile
    assert any(line.startswith("qlora-ckpt-fusedce-compile") for line in lines)
