"""Drive the wizard end to end with keyboard and mouse, and check its figures against the planner."""

from __future__ import annotations

from PySide6.QtCore import Qt
from wizard_driver import choose, click, next_page, settle, type_into

from core.models import PlanRequest
from core.planner.plan import plan
from core.units import fmt_bytes, fmt_usd


def planned(state):
    """The planner's own answer for the request the wizard holds."""
    return plan(PlanRequest.model_validate(state.raw()))


def pick_preset(qtbot, page, preset: str) -> None:
    type_into(qtbot, page.filter, preset)
    for row in range(page.proxy.rowCount()):
        index = page.proxy.index(row, 0)
        if index.data(Qt.ItemDataRole.UserRole) == preset:
            rect = page.list.visualRect(index)
            qtbot.mouseClick(page.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
            return
    raise AssertionError(f"{preset} not listed")


def test_lora_plan_end_to_end(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    model = wizard.model_page
    pick_preset(qtbot, model, "llama-3.1-8b")
    settle(qtbot, state)
    assert state.get("model") == {"preset": "llama-3.1-8b"}
    # Meta's model card: Llama 3.1 8B has 8.03B parameters, 32 layers, hidden 4096, 8 KV heads.
    assert "8.03B parameters" in model.summary.text()
    assert "32 layers, hidden 4096" in model.summary.text()
    next_page(qtbot, wizard)

    data = wizard.data_page
    fields = {f.path: f for f in data.fields}
    type_into(qtbot, fields["data.tokens"].edit, "200M")
    type_into(qtbot, fields["data.epochs"].edit, "2")
    type_into(qtbot, fields["data.seq_len"].edit, "4096")
    settle(qtbot, state)
    # 200M tokens × 4 raw bytes per token (the default) = 800 MB of text.
    assert data.raw_size.text() == "800.00 MB"
    # Default global batch: the power of two nearest 262,144 tokens / 4096 = 64 sequences → 262,144 tokens.
    assert data.tokens_per_step.text().startswith("262,144")
    result = planned(state)
    assert data.steps.text() == f"{result.compute.steps:,}"
    next_page(qtbot, wizard)

    method = wizard.method_page
    rank = next(f for f in method.fields if f.path == "training.lora_rank")
    type_into(qtbot, rank.edit, "32")
    settle(qtbot, state)
    assert state.request is not None and state.request.training.lora_rank == 32
    assert "adapters" in method.method.hint.text()
    next_page(qtbot, wizard)

    memory = wizard.memory_page
    result = planned(state)
    assert fmt_bytes(result.memory.per_gpu.total) in memory.headline.text()
    assert memory.gpus.rowCount() == len(state.analysis.figures.memory_by_gpu) >= 20
    shown = {memory.breakdown.row(i).cells[0]: memory.breakdown.row(i).cells[1]
             for i in range(memory.breakdown.rowCount())}
    assert shown["weights"] == fmt_bytes(result.memory.per_gpu.weights)
    assert shown["total"] == fmt_bytes(result.memory.per_gpu.total)
    next_page(qtbot, wizard)

    hardware = wizard.hardware_page
    assert hardware.model.rowCount() == len(result.candidates) > 1
    view = hardware.table
    view.sortByColumn(5, Qt.SortOrder.DescendingOrder)  # dearest first: not what the planner picked
    rect = view.visualRect(view.model().index(0, 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    chosen = view.model().index(0, 0).data(Qt.ItemDataRole.UserRole + 2)
    click(qtbot, hardware.use_button)
    settle(qtbot, state)
    assert state.get("hardware") == {"gpu": chosen.gpu, "gpus_per_node": chosen.gpus_per_node,
                                     "nodes": chosen.nodes}
    assert state.analysis.result.hardware.gpu == chosen.gpu
    assert state.get("training.sharding") == chosen.sharding.value
    assert "you chose" in hardware.chosen.text()
    next_page(qtbot, wizard)

    cost = wizard.cost_page
    result = planned(state)
    assert fmt_usd(result.cost.total_usd) in cost.headline.text()
    assert cost.items.rowCount() == len(result.cost.items)
    next_page(qtbot, wizard)

    summary = wizard.summary_page
    assert chosen.gpu in summary.headline.text()
    assert summary.assumptions.rowCount() == len(result.assumptions)
    click(qtbot, summary.save_button)
    records = window.store.list()
    assert len(records) == 1
    assert records[0].cost_usd == result.cost.total_usd
    assert records[0].method == "lora"


def test_full_fine_tune_on_chosen_hardware(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    next_page(qtbot, wizard)
    next_page(qtbot, wizard)
    method = wizard.method_page
    choose(qtbot, method.method.combo, "full")
    settle(qtbot, state)
    rank = next(f for f in method.fields if f.path == "training.lora_rank")
    assert not rank.edit.isEnabled()
    assert state.get("training.method") == "full"
    assert state.get("training.lora_rank") is None
    assert "every weight" in method.method.hint.text()
    sharding = next(f for f in method.fields if f.path == "training.sharding")
    choose(qtbot, sharding.combo, "zero3")
    next_page(qtbot, wizard)
    next_page(qtbot, wizard)

    hardware = wizard.hardware_page
    choose(qtbot, hardware.gpu.combo, "H100-SXM")
    type_into(qtbot, hardware.per_node.edit, "8")
    settle(qtbot, state)
    assert state.get("hardware") == {"gpu": "H100-SXM", "gpus_per_node": "8"}
    result = planned(state)
    assert result.hardware.gpus == 8 and result.request.training.method.value == "full"
    assert state.analysis.result.memory == result.memory
    assert state.analysis.result.time.hours == result.time.hours
    # Full fine-tune with AdamW keeps gradients and optimizer states for every weight: both are non-zero.
    assert result.memory.per_gpu.gradients > 0 and result.memory.per_gpu.optimizer > 0
    back = wizard.memory_page
    assert fmt_bytes(result.memory.per_gpu.total) in back.headline.text()
    next_page(qtbot, wizard)
    next_page(qtbot, wizard)
    summary = wizard.summary_page
    assert "8× H100-SXM" in summary.headline.text()
    assert summary.save_button.isEnabled()
