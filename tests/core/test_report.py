"""Report content: words and key figures, chart data, sections; independent of any renderer."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from core.document import Bullets
from core.planner.analysis import analyse
from core.planner.headline import conclusion, cost_range, cost_range_text, hardware_label
from core.planner.plan import plan
from core.planner.report import build_report, price_age_days
from core.planner.report_charts import memory_chart
from core.planner.request import HardwareSpec, PlanRequest
from core.planner.result import ComputeCost

BASE = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8"},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
    "pricing": {"provider": "aws"},
}


@pytest.fixture(scope="module")
def analysis():
    return analyse(PlanRequest.model_validate(BASE))


def with_cost(result, **cost):
    return result.model_copy(update={"cost": result.cost.model_copy(update=cost)})


def test_hardware_label():
    assert hardware_label(HardwareSpec(gpu="H100-SXM", gpus_per_node=8)) == "8× H100-SXM"
    assert (
        hardware_label(HardwareSpec(gpu="A100-80GB-SXM", gpus_per_node=8, nodes=2))
        == "2 nodes × 8 A100-80GB-SXM (16 GPUs)"
    )


def test_cost_range_spans_the_priced_modes_plus_side_costs(analysis):
    r = with_cost(
        analysis.result,
        compute_usd=ComputeCost(on_demand=100.0, spot=40.0, reserved=None),
        storage_usd=2.0,
        egress_usd=1.0,
        idle_usd=0.5,
    )
    assert cost_range(r) == (43.5, 103.5)
    assert cost_range_text(r) == "$43.50 spot to $104 on-demand"  # each end names its mode
    none = with_cost(r, compute_usd=ComputeCost(on_demand=None, spot=None, reserved=None))
    assert cost_range(none) is None and cost_range_text(none) == "no price"


def test_price_age_and_stale_risk(analysis):
    r = with_cost(analysis.result, price_date="2025-01-01", provider="AWS")
    assert price_age_days(r, dt.date(2026, 1, 1)) == 365
    old = with_cost(analysis.result, price_date="2024-01-01", provider="AWS")
    risks = next(
        s
        for s in build_report(
            analysis.model_copy(update={"result": old}), dt.date(2025, 6, 1)
        ).sections
        if s.title == "Risks"
    )
    bullets = risks.blocks[0]
    assert bullets.kind == "bullets"
    # 2024-01-01 to 2025-06-01 is 517 days, past the 90-day staleness rule
    # (resources/catalog/SOURCES.md).
    assert any("stale (older than 90 days)" in item for item in bullets.items)
    # 2025-01-01 + 90 days is 2025-04-01: on that day the price is still fresh, a day later it is
    # stale.
    assert not any("stale" in i for i in _risk_items(analysis, r, dt.date(2025, 4, 1)))
    assert any("91 days ago — stale" in i for i in _risk_items(analysis, r, dt.date(2025, 4, 2)))


def _risk_items(analysis, result, today):
    risks = next(
        s
        for s in build_report(analysis.model_copy(update={"result": result}), today).sections
        if s.title == "Risks"
    )
    bullets = risks.blocks[0]
    assert isinstance(bullets, Bullets)
    return bullets.items
    undated = with_cost(analysis.result, price_date=None)
    assert price_age_days(undated, dt.date(2026, 1, 1)) is None


def test_conclusion_says_when_it_does_not_fit(analysis):
    r = analysis.result
    assert conclusion(r).startswith("Fine-tune llama-3.1-8b with lora on 8× H100-SXM")
    assert "it fits in" in conclusion(r)
    broken = r.model_copy(update={"memory": r.memory.model_copy(update={"fits": False})})
    assert "does not fit" in conclusion(broken) and "$" not in conclusion(broken)


def test_memory_chart_has_each_gpu_with_its_capacity(analysis):
    rows = {g.gpu: g for g in analysis.figures.memory_by_gpu}
    # NVIDIA datasheets: H100 SXM 80 GB, H200 141 GB (decimal GB).
    assert rows["H100-SXM"].capacity == 80 * 10**9
    assert rows["H200-SXM"].capacity == 141 * 10**9
    chart = memory_chart(analysis.figures)
    assert chart.stacked and [s.name for s in chart.series] == [
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "logits",
        "overhead",
    ]
    i = chart.categories.index("H100-SXM")
    assert chart.markers is not None and chart.markers[i] == 80.0
    # The planned GPU is drawn at the plan's own configuration (BASE: 8 × H100-SXM, the sharding
    # left to the planner).
    planned = rows["H100-SXM"]
    assert planned.basis == "plan" and (planned.gpus_per_node, planned.nodes) == (8, 1)
    assert planned.total == analysis.result.memory.per_gpu.total
    sharding = analysis.result.request.training.sharding.value
    assert chart.labels()[i].startswith(f"H100-SXM · 8× {sharding}") and chart.labels()[i].endswith(
        "(plan)"
    )
    assert "search picks" in (chart.caption or "")
    assert all(
        g.error is None or "precision" in g.error or "figure" in g.error for g in rows.values()
    )


def test_memory_by_gpu_sizes_each_gpu_type_by_its_own_search():
    """Llama 3.1 70B, full fine-tune: 70.6B parameters × 16 bytes (bf16 weights and gradients, fp32
    master, two fp32 Adam states) = 1.13 TB of model state, so no 80 GB card holds it alone and the
    bars must differ."""
    a = analyse(
        PlanRequest.model_validate(
            {
                "model": {"preset": "llama-3.1-70b"},
                "data": {"tokens": "2e8"},
                "training": {"method": "full"},
            }
        )
    )
    rows = {g.gpu: g for g in a.figures.memory_by_gpu if g.error is None}
    h100 = rows["H100-SXM"]
    assert h100.gpus_per_node * h100.nodes >= 15  # 1.13 TB / 80 GB = 14.1 GPUs for the states alone
    # The states must be split: by ZeRO/FSDP over the replicas, or by tensor × pipeline parallelism.
    assert h100.sharding is not None
    assert h100.sharding.value != "none" or h100.tensor_parallel * h100.pipeline_parallel > 1
    for g in rows.values():
        if g.basis == "search":
            assert g.fits and g.total <= g.capacity, g
    # different cards, different configurations, different bars
    assert len({g.total for g in rows.values()}) > 3
    chart = memory_chart(a.figures)
    assert len(set(chart.labels())) == len(chart.labels())


def test_break_even_uses_the_catalog_street_price_midpoint(analysis):
    be = analysis.figures.break_even
    assert be is not None
    # resources/catalog/gpus.json: H100-SXM street price 25,000–30,000 USD → midpoint 27,500.
    assert be.capex_usd_per_gpu == 27_500
    assert be.utilisation[0] == 0.05 and be.utilisation[-1] == 1.0
    assert be.owned_usd_per_gpu_hour == sorted(be.owned_usd_per_gpu_hour, reverse=True)


def test_candidates_come_from_the_search_even_with_fixed_hardware(analysis):
    assert analysis.figures.candidates
    assert any(c.pareto for c in analysis.figures.candidates)


def test_providers_are_priced_with_their_dates(analysis):
    aws = next(p for p in analysis.figures.providers if p.provider == "aws")
    assert aws.provider_name == "AWS"
    assert aws.compute_usd.on_demand is not None
    same = plan(PlanRequest.model_validate(BASE))
    assert aws.compute_usd == same.cost.compute_usd
    assert set(aws.dates) == {"on_demand", "spot", "reserved"}


def test_report_sections_in_reading_order(analysis):
    report = build_report(analysis, dt.date(2026, 1, 2))
    assert report.date == "2026-01-02"
    assert [s.title for s in report.sections][:5] == [
        "Executive summary",
        "Sanity checks",
        "Memory",
        "Time",
        "Cost",
    ]
    assert [s.title for s in report.sections][-2:] == ["Assumptions", "Appendix: formulas"]
    labels = [k.label for k in report.key_figures]
    assert labels[:4] == ["Hardware", "Wall time", "GPU-hours", "Cost by pricing mode"]
    kinds = {b.kind for s in report.sections for b in s.blocks}
    assert {"bar", "scatter", "line", "table", "bullets"} <= kinds
    formulas = next(s for s in report.sections if s.title == "Appendix: formulas").blocks[0]
    assert formulas.kind == "bullets"
    assert any("Young/Daly" in f for f in formulas.items) and any(
        "6 × parameters" in f for f in formulas.items
    )


def test_report_content_is_json_round_trippable(analysis):
    report = build_report(analysis, dt.date(2026, 1, 2))
    again = type(report).model_validate_json(report.model_dump_json())
    assert again == report


def test_core_report_modules_import_no_qt():
    code = (
        "import sys, core.document, core.planner.analysis, core.planner.report, "
        "core.library.store; import cli.report; bad = [m for m in sys.modules if m.split('.')[0] "
        "in ('PySide6', 'pyqtgraph', 'gui', 'shiboken6')]; print(bad); raise SystemExit(1 if bad "
        "else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_memory_rows_kept_across_token_counts_equal_fresh_ones():
    """Rows are reused when only the dataset size changes; they must be what a fresh analysis
    gives."""
    from core.planner import gpu_memory

    def rows(tokens: str):
        return analyse(
            PlanRequest.model_validate({**BASE, "data": {"tokens": tokens}})
        ).figures.memory_by_gpu

    rows("2e8")
    reused = rows("7e8")
    gpu_memory._ROWS.clear()
    assert reused == rows("7e8")
    deadline = {
        **BASE,
        "hardware": None,
        "search": {"objective": "cost_under_deadline", "deadline_hours": 3},
    }
    assert gpu_memory._memory_key(
        PlanRequest.model_validate({**deadline, "data": {"tokens": "2e8"}})
    ) != gpu_memory._memory_key(PlanRequest.model_validate({**deadline, "data": {"tokens": "7e8"}}))


def test_network_the_plan_assumes_is_said_in_words():
    """A typical H100 SXM node has one 400 Gbit/s rail per GPU; a PCIe node (L40S) one 100 Gbit/s
    NIC shared by its GPUs; plain Ethernet is assumed at 100 Gbit/s per 8-GPU node (12.5 per
    GPU)."""
    from core.catalog import load_catalog
    from core.catalog.network import network_node_gbps, network_text, typical_network

    cat = load_catalog()
    assert (
        typical_network("H100-SXM", 8, cat)
        == "typical for H100-SXM nodes: 400 Gbit/s per GPU, 3,200 Gbit/s per node of 8"
    )
    assert network_node_gbps(None, "L40S", 4, cat) == 100
    assert network_node_gbps("ethernet", "H100-SXM", 8, cat) == 100
    assert network_text("ethernet", "H100-SXM", 8, cat, "Plain Ethernet").startswith(
        "Plain Ethernet: 12.5 Gbit/s per GPU assumed (100 per node)"
    )
    assert network_text(None, "no-such-gpu", 8, cat) == ""
    assert network_node_gbps("token-ring", "H100-SXM", 8, cat) is None


def test_step_rows_leave_out_the_zero_parts_and_share_the_reported_step(analysis):
    """Hand arithmetic on a breakdown set by hand: of a 4 s step, 3 s is 75%, 0.8 s is 20%, 0.16 s
    is 4%, and 0.001 s is 0.025%, shown as "<1%" rather than "0%"; the zero parts are not rows."""
    from core.planner.report_time import step_rows, step_table_rows, time_section
    from core.planner.result import StepBreakdown

    compute = analysis.result.compute.model_copy(
        update={
            "step_time_s": 4.0,
            "step_breakdown_s": StepBreakdown(
                gemm=3.0, attention=0.8, bubble=0.16, host_transfer=0.001
            ),
        }
    )
    assert [(name, v) for name, v, _share in step_rows(compute)] == [
        ("matmuls (GEMM)", 3.0),
        ("attention", 0.8),
        ("host transfer", 0.001),
        ("pipeline bubble", 0.16),
    ]
    assert step_table_rows(compute) == [
        ["matmuls (GEMM)", "3 s", "75%"],
        ["attention", "0.8 s", "20%"],
        ["host transfer", "0.001 s", "<1%"],
        ["pipeline bubble", "0.16 s", "4%"],
    ]
    zero = compute.model_copy(update={"step_time_s": 0.0, "step_breakdown_s": StepBreakdown()})
    assert step_rows(zero) == []
    section = time_section(analysis.result.model_copy(update={"compute": zero}))
    # the step, the wall time; no empty table
    assert [b.kind for b in section.blocks] == ["paragraph", "paragraph"]


def test_a_plan_nobody_rents_says_so_in_the_summary() -> None:
    # AWS sells the L4 one to an instance (g6.4xlarge) and the catalog has no other non-marketplace
    # L4 offer, so an 8-GPU L4 node has no price in any mode; the summary says that, not "—
    # on-demand at no provider"
    a = analyse(
        PlanRequest.model_validate(
            {
                **BASE,
                "hardware": {"gpu": "L4", "gpus_per_node": 8, "nodes": 1},
                "data": {"tokens": "2e8", "seq_len": 1024},
                "pricing": {},
            }
        )
    )
    assert a.result.memory.fits and a.result.cost.total_usd is None and cost_range(a.result) is None
    summary = next(s for s in build_report(a).sections if s.title == "Executive summary")
    bullets = summary.blocks[0]
    assert isinstance(bullets, Bullets)
    assert (
        "Cost: no price for this configuration in any pricing mode (the sanity checks say why)."
        in bullets.items
    )
