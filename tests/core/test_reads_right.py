"""Figures that read right in the CLI: one counting rule ('1 epoch', 'on 1 GPU'), MFU and the
hardware rate each labelled, the search table's markers explained and ties marked alike, and
`catalog prices` within 100 columns."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from cli.main import main
from cli.plan import candidates_block, render_plan
from core.planner.analysis import analyse
from core.planner.plan import plan
from core.planner.report import _risks, build_report
from core.planner.request import PlanRequest
from core.units import plural


def cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


@pytest.mark.parametrize(
    ("n", "noun", "text"),
    [
        (1, "epoch", "1 epoch"),
        (1.0, "epoch", "1 epoch"),
        (2, "epoch", "2 epochs"),
        (2.5, "epoch", "2.5 epochs"),
        (0, "GPU", "0 GPUs"),
        (1, "GPU", "1 GPU"),
        (4096, "GPU", "4,096 GPUs"),
        (2, "copy", "2 copies"),
    ],
)
def test_one_counting_rule(n: float, noun: str, text: str) -> None:
    assert plural(n, noun, "copies" if noun == "copy" else None) == text


def test_one_epoch_on_one_gpu_reads_in_the_singular() -> None:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.2-1b"},
            "data": {"tokens": "1e7"},
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 1},
        }
    )
    report = build_report(analyse(request))
    summary = next(s for s in report.sections if s.title == "Executive summary").blocks[0]
    assert any("× 1 epoch at " in item for item in summary.items)  # type: ignore[union-attr]
    assert any(" on 1 GPU (" in line for line in _risks(plan(request), report_date()))


def report_date():
    import datetime as dt

    return dt.date(2026, 12, 1)


def test_mfu_and_the_hardware_rate_are_each_labelled() -> None:
    # A full fine-tune with recomputation runs more hardware FLOPs than model FLOPs: the TFLOP/s is
    # the hardware rate, so it belongs beside HFU, and HFU exceeds MFU (Chowdhery et al. 2022, PaLM,
    # appendix B).
    text = cli(
        "plan",
        "--model",
        "llama-3.1-8b",
        "--tokens",
        "2e8",
        "--method",
        "full",
        "--gpu",
        "H100-SXM",
        "--gpus",
        "8",
    )
    line = next(x for x in text.splitlines() if x.startswith("Compute"))
    r = json.loads(
        cli(
            "plan",
            "--model",
            "llama-3.1-8b",
            "--tokens",
            "2e8",
            "--method",
            "full",
            "--gpu",
            "H100-SXM",
            "--gpus",
            "8",
            "--json",
        )
    )["compute"]
    assert (
        f"MFU {r['mfu']:.0%} (model FLOPs), HFU {r['hfu']:.0%} (hardware FLOPs, "
        f"{r['achieved_tflops_per_gpu']:.0f} TFLOP/s per GPU)"
    ) in line


def test_rows_tied_on_cost_are_all_marked_cheapest_and_the_markers_are_explained() -> None:
    result = plan(
        PlanRequest.model_validate({"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "2e8"}})
    )
    first = result.candidates[0]
    assert first.cost_usd is not None
    # the case: a row 3e-13 dollars dearer than the one called cheapest is the same price.
    twin = result.candidates[1].model_copy(update={"cost_usd": first.cost_usd + 3e-13})
    dearer = result.candidates[2].model_copy(update={"cost_usd": first.cost_usd + 0.01})
    result.candidates[1:3] = [twin, dearer]
    lines = "\n".join(candidates_block(result)).splitlines()
    why = [
        line[line.rindex("  ") + 2 :]
        for line in lines
        if line[:1].isdigit() and "×" in line.split()[0]
    ]
    marked = [w for w in why if w.lstrip(" →⚡").startswith("$")]
    # the chosen row and its twin; the row a cent dearer is not the cheapest
    assert len(marked) == 2, why
    legend = " ".join(lines[:4])
    for marker in ("→ chosen", "⚡ fastest", "$ cheapest", "* Pareto front"):
        assert marker in legend
    assert all(len(line) <= 100 for line in lines[:4])
    assert "$ cheapest" in render_plan(result)


def test_catalog_prices_fit_a_100_column_terminal() -> None:
    lines = cli("catalog", "prices").splitlines()
    assert len(lines) > 100
    assert max(len(line) for line in lines) <= 100


def test_the_memory_charts_caption_reads_its_labels_in_their_order() -> None:
    from core.planner.gpu_memory import GpuMemory
    from core.planner.report_charts import MEMORY_CAPTION
    from core.planner.request import Sharding

    # Two nodes of eight GPUs are labelled '2×8': nodes first, as the caption must say.
    row = GpuMemory(
        gpu="H100-SXM", capacity=80 * 10**9, nodes=2, gpus_per_node=8, sharding=Sharding.fsdp
    )
    assert row.configuration == "2×8 fsdp"
    assert "labelled nodes × GPUs per node, as 2×8" in MEMORY_CAPTION
    assert "GPUs per node × nodes" not in MEMORY_CAPTION


def test_a_global_batch_the_gpu_count_grew_is_a_warning_with_its_steps() -> None:
    # 64 nodes × 8 H100: 512 data-parallel replicas at micro-batch 2 need 1,024 sequences a step,
    # where the default is 128 of 2,048 tokens (262,144 tokens, DEFAULT_BATCH_TOKENS): 2e8 tokens
    # then take 2e8 / 2,097,152 ≈ 96 steps.
    r = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "2e8"},
                "training": {"method": "full"},
                "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 64},
            }
        )
    )
    sequences = r.compute.tokens_per_step // 2048
    assert sequences >= 512  # one micro-batch per replica at least
    grown = [w for w in r.warnings if w.startswith("the global batch grew from 128 to ")]
    assert len(grown) == 1
    assert f"leaving {r.compute.steps} optimizer steps for the whole run" in grown[0]
    # whole steps over 2e8 tokens
    assert r.compute.steps == -(-200_000_000 // r.compute.tokens_per_step)
    # the same run on one node keeps the default batch: nothing to warn of
    one = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "2e8"},
                "hardware": {"gpu": "H100-SXM"},
            }
        )
    )
    assert not any("global batch grew" in w for w in one.warnings)
