"""The planner against 86 published training runs (tests/fixtures/planner/throughput_cases.json), split by source.

Every expected figure is the published measurement quoted in the fixture (its source URL and row), compared
in the source's own unit by bench/calibrate.py; none is computed by tuneplan. Half A ("fit") may tune one
constant; only half B ("report") is held to the goals here, case by case.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from bench import calibrate
from bench.calibrate import FIT, HALVES, REPORT, Row, fit, half_of, load_cases
from bench.calibrate_cases import build, model_config, source_of
from core.planner.model.params import Architecture

ROOT = Path(__file__).resolve().parents[2]
CASES = load_cases()
BY_ID = {c["id"]: c for c in CASES}


@cache
def rows() -> dict[str, Row]:
    return {r.id: r for r in calibrate.evaluate(CASES)}


# Half-B cases the engine as shipped misses, and why. Refresh this after an engine change: a case that starts
# passing shows as XPASS; one that starts failing and is not listed fails the suite.
_TT_TPS = (
    "torchtitan's H100s are power-capped at 500 W (THROUGHPUT.md), below the 700 W the MAMF figure was "
    "measured at, and FSDP2's per-layer gathers are charged with the default 70% overlap; the engine is "
    "fast on these rows after the half-A fit (long sequences most: attention at 32k-256k tokens) and the "
    "per-case cause is not yet isolated"
)
_TP_OVERLAP = (
    "tp 4 with pipelines: every tensor-parallel all-reduce is charged as exposed; Megatron overlaps them "
    "with the GEMMs (tp-comm-overlap), which the engine does not model"
)
_FP8 = (
    "FP8 rows: the FP8 matmul efficiency is applied to every GEMM, and Transformer Engine's casts and "
    "amax bookkeeping (memory-bound work) are not counted"
)
_QLORA_041 = (
    "measured with bitsandbytes 0.41, whose 4-bit matmul kept each linear's input for backward; today's "
    "keeps only the packed weight"
)
_MEGATRON_GEMM = (
    "the Hopper sustained-GEMM factor (efficiency.GEMM_SUSTAINED_HOPPER) is fitted on half A, whose Hopper runs "
    "are Composer and AutoModel; Megatron-Core with Transformer Engine keeps more of the MAMF rate, and no half-A "
    "run measures it, so the megatron profile is planned too slow"
)
_RTX4090_2G = (
    "two RTX 4090s on PCIe without NVLink, Llama-2 7B at 2,048 tokens (Answer.AI fsdp_qlora): the Ada power model "
    "no longer slows a 450 W card as the L4's 72 W cap does, but the engine still plans about 1.4x the measured "
    "time; no half-A case runs on a consumer card, so the fallback 70% matmul rate and the unfused memory-bound "
    "passes at GDDR6X bandwidth are uncalibrated there"
)
KNOWN_MISSES: dict[str, str] = {
    "fsdpqlora-rtx4090-llama2-7b-lora-ddp-2g-time": _RTX4090_2G,
    "fsdpqlora-rtx4090-llama2-7b-qlora-fsdp-2g-time": _RTX4090_2G,
    "nemo2407-llama2-13b-full-h100-8g-tps": _MEGATRON_GEMM,
    "tt-h100-llama3.1-8b-fsdp-8g-tps": _TT_TPS,
    "tt-h100-llama3.1-8b-fsdp-compile-fp8-8g-tps": _TT_TPS,
    "tt-h100-llama3.1-8b-fsdp-128g-tps": _TT_TPS,
    "tt-h100-llama3.1-8b-cp1-32k-tps": _TT_TPS,
    "tt-h100-llama3.1-8b-cp8-256k-tps": _TT_TPS,
    "nemo2407-llama2-70b-full-h100-16g-tps": _TP_OVERLAP,
    # torchtitan on 4 H200 nodes: the FSDP traffic between nodes now runs over all eight rails of a node (as NCCL's
    # hierarchical collectives do) and hides under compute; the FP8 casts are not counted: +29%.
    "tt-h200-llama3.1-8b-fp8-32g-tps": _FP8,
    "mbridge2511-llama3-70b-pretrain-fp8cs-h100-64g-tps": _TP_OVERLAP,
    "litgpt-a100-40g-llama2-7b-qlora-nf4-mem": _QLORA_041,
    "litgpt-a100-40g-llama2-13b-qlora-nf4-mem": _QLORA_041,
    "litgpt-a10g-llama3-8b-qlora-mem": _QLORA_041.replace("0.41", "of litgpt#1112 (2024)"),
}


# ----------------------------------------------------------------------------- the fixture


def test_fixture_is_what_sources_md_describes() -> None:
    """SOURCES.md and THROUGHPUT.md: 86 cases from thirteen repositories, unique ids, each pinned and quoted."""
    assert len(CASES) == 86
    assert len(BY_ID) == 86, "case ids must be unique"
    assert len({source_of(c) for c in CASES}) == 13
    for c in CASES:
        assert re.match(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/", c["source_url"]), c["id"]
        assert c["source_quote"].strip(), c["id"]
    # THROUGHPUT.md: "Methods: pretraining 46, LoRA 16, QLoRA 12, full fine-tuning 12" and the metric counts.
    assert Counter(c["method"] for c in CASES) == {"pretraining (full)": 46, "LoRA": 16, "QLoRA": 12, "full": 12}
    assert Counter(c["metric"] for c in CASES) == {
        "tokens_per_s_per_gpu": 52, "peak_mem_gb_per_gpu": 11, "wall_time_s": 12, "peak_mem_gib_per_gpu": 5,
        "achieved_tflops_per_gpu": 5, "tokens_per_s_total": 1}


def test_the_fixture_is_read_from_the_project_not_the_shared_data() -> None:
    assert calibrate.FIXTURE == ROOT / "tests/fixtures/planner/throughput_cases.json"
    for path in (ROOT / "bench/calibrate.py", ROOT / "bench/calibrate_cases.py"):
        assert "/work/shared" not in path.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- the split


def test_every_source_is_in_exactly_one_half() -> None:
    sources = {source_of(c) for c in CASES}
    assert set(HALVES) == sources
    assert set(HALVES.values()) == {FIT, REPORT}
    for source in sources:
        assert len({half_of(c) for c in CASES if source_of(c) == source}) == 1


@pytest.mark.parametrize("half", [FIT, REPORT])
def test_each_half_mixes_fine_tuning_and_pretraining(half: str) -> None:
    methods = {c["method"] for c in CASES if half_of(c) == half}
    assert "pretraining (full)" in methods
    assert methods & {"LoRA", "QLoRA", "full"}


def test_an_unknown_source_is_refused_by_name() -> None:
    case = dict(CASES[0], source_url="https://github.com/someone/else/blob/" + "0" * 40 + "/x.md")
    with pytest.raises(KeyError, match="someone/else"):
        half_of(case)


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
    assert built.request.hardware is not None
    assert built.request.hardware.gpus == case["n_gpus"]
    assert t.micro_batch_size == case["micro_batch"]
    assert built.request.data.seq_len == case["seq_len"]
    assert t.model_parallel == (case["other_settings"]["tp"] or 1) * (case["other_settings"]["pp"] or 1) * (
        case["other_settings"]["cp"] or 1)


@pytest.mark.parametrize("case_id", sorted({c["id"] for c in CASES if c["model"]["params"]}))
def test_the_case_architecture_has_the_published_parameter_count(case_id: str) -> None:
    """The config the harness writes sizes the model its source names (MPT: the NumParams column, which counts
    the learned position embedding of seq_len × d_model that the planner leaves out, so that is subtracted;
    Megatron: the size label, rounded to two figures; Llama, Qwen, GPT-2: counted from the config.json values)."""
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
    """The Megatron-LM README table gives neither the micro-batch nor the precision (THROUGHPUT.md)."""
    for case_id in ("megatron-gpt1.7b-h100-48g-tflops", "megatron-gpt462b-h100-6144g-tflops"):
        r = rows()[case_id]
        assert r.planned is None and r.reason == "micro-batch not published"


def test_wall_time_uses_only_a_stated_token_count() -> None:
    """HF doc: 512 sequences × 512 tokens = 262,144 (stated); litgpt publishes no token count."""
    assert build(BY_ID["hf-perfdoc-bert-large-fp32-bs4-v100-walltime"]).tokens == 512 * 512
    assert rows()["litgpt-a10g-llama3-8b-lora-walltime"].reason == "wall time without a published token count"


def test_units_follow_the_source() -> None:
    """1 GB = 1e9 B for litgpt's figures, 1 GiB = 2**30 B for torchtitan's and rasbt's; tokens/s per GPU is the
    plan's total over its GPUs (torchtitan's 128-GPU row: 5,605 per GPU, i.e. 717,440 for the job)."""
    r = rows()["tt-h100-llama3.1-8b-fsdp-128g-tps"]
    built = build(BY_ID[r.id])
    assert built.request is not None and built.request.hardware is not None
    assert built.request.hardware.gpus_per_node == 8 and built.request.hardware.nodes == 16
    assert calibrate.MEMORY_MEASURE["Lightning-AI/litgpt"] == "allocated"
    assert calibrate.MEMORY_MEASURE["pytorch/torchtitan"] == "reserved"


# ----------------------------------------------------------------------------- fitting one constant


@contextlib.contextmanager
def _scaled(monkeypatch: pytest.MonkeyPatch, factor: float) -> Iterator[None]:
    """A stand-in 'constant': every planned figure times `factor` (a planner-independent hook)."""
    original = calibrate.planned_figure
    with monkeypatch.context() as m:
        m.setattr(calibrate, "planned_figure", lambda built, result: factor * original(built, result))
        yield


def test_fit_scans_half_a_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scaling every figure by v moves each log error by ln v: the scan must see it and pick the least."""
    original = calibrate.planned_figure
    result = fit("scale", setter=lambda v: _scaled(monkeypatch, v), cases=CASES, values=[0.25, 1.0, 4.0])
    assert calibrate.planned_figure is original
    errors = dict(result.scan)
    assert len(set(errors.values())) == 3, "the setter reached the figures"
    assert result.best_error == min(errors.values()) and errors[result.best] == result.best_error
    assert result.cases == sum(1 for r in rows().values()
                               if r.half == FIT and r.kind == "throughput" and r.planned is not None)


def test_fit_patches_a_module_attribute_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("calibration_probe")
    module.SCALE = 1.0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "calibration_probe", module)
    original = calibrate.planned_figure
    monkeypatch.setattr(calibrate, "planned_figure",
                        lambda built, result: module.SCALE * original(built, result))
    result = fit("calibration_probe.SCALE", cases=CASES, values=[0.5, 1.0, 2.0])
    assert module.SCALE == 1.0
    assert result.shipped == 1.0
    assert len({e for _, e in result.scan}) == 3


def test_fit_uses_half_a_only() -> None:
    report_only = [c for c in CASES if half_of(c) == REPORT]
    with pytest.raises(ValueError, match="half A has no throughput case"):
        fit("x.Y", setter=lambda v: contextlib.nullcontext(), cases=report_only, values=[1.0])


def test_fit_names_a_bad_constant() -> None:
    with pytest.raises(ValueError, match=r"core\.planner\.model\.memory has no attribute NO_SUCH"):
        fit("core.planner.model.memory.NO_SUCH", cases=CASES)


# ----------------------------------------------------------------------------- output


def test_markdown_has_both_halves_and_their_summaries() -> None:
    text = calibrate.markdown(list(rows().values()))
    assert text.count("Summary: memory within ±10%") == 2
    assert "Half A (fit)" in text and "Half B (report)" in text
    assert "not planned: micro-batch not published" in text


def test_json_output_is_json_and_complete() -> None:
    data = json.loads(json.dumps(calibrate.as_json(list(rows().values()))))
    got = [r["id"] for h in data["halves"].values() for r in h["rows"]]
    assert sorted(got) == sorted(BY_ID)


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
    assert "### Throughput and memory from published runs (split by source)" in text


# ----------------------------------------------------------------------------- half B, case by case


def _report_params() -> list[object]:
    out: list[object] = []
    for c in CASES:
        if half_of(c) != REPORT:
            continue
        marks = [pytest.mark.xfail(strict=False, reason=KNOWN_MISSES[c["id"]])] if c["id"] in KNOWN_MISSES else []
        out.append(pytest.param(c["id"], marks=marks, id=c["id"]))
    return out


def test_known_misses_name_half_b_cases() -> None:
    for case_id in KNOWN_MISSES:
        assert case_id in BY_ID and half_of(BY_ID[case_id]) == REPORT, case_id


@pytest.mark.parametrize("case_id", _report_params())
def test_half_b_within_the_goal(case_id: str) -> None:
    """Memory within ±10%, throughput within ±20% of the published figure (the source's measurement)."""
    r = rows()[case_id]
    if r.planned is None:
        pytest.skip(f"not planned: {r.reason}")
    assert math.isfinite(r.planned)
    assert abs(r.planned / r.published - 1) <= r.tolerance, (
        f"{case_id}: planned {r.planned:.4g} vs published {r.published:.4g} ({r.error:+.0%})")


# ----------------------------------------------------------------------------- the GPU benchmark script


def test_hf_throughput_lists_and_helps_without_cuda() -> None:
    script = ROOT / "bench/hf_throughput.py"
    helped = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--list" in helped.stdout
    listed = subprocess.run([sys.executable, str(script), "--list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0
    lines = listed.stdout.strip().splitlines()[1:]
    assert len(lines) == 3 * 2 * 2 * 2  # method × checkpointing × cross-entropy × compile
    assert any(line.startswith("qlora-ckpt-fusedce-compile") for line in lines)
