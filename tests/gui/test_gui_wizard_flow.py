"""Drive the wizard end to end with keyboard and mouse, check every page's figures against core,
then save, reopen, compare and export the way a user does."""

from __future__ import annotations

import json
import re
import time
import unicodedata
from pathlib import Path

from pypdf import PdfReader
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit, QToolBar, QWizard

from core.planner.analysis import analyse
from core.planner.money.storage import tier_figures
from core.planner.plan import plan
from core.planner.report_charts import memory_chart, memory_label
from core.planner.request import PlanRequest
from core.units import fmt_bytes, fmt_hours, fmt_usd
from tests.gui.dialogs import answering
from tests.gui.wizard_driver import choose, click, settle, type_like_a_person


def planned(state):
    """The planner's own answer for the request the wizard holds."""
    return plan(PlanRequest.model_validate(state.raw()))


def analysed(state):
    return analyse(PlanRequest.model_validate(state.raw()))


def field(page, path):
    return next(f for f in page.fields if f.path == path)


def next_by_mouse(qtbot, wizard) -> None:
    button = wizard.button(QWizard.WizardButton.NextButton)
    assert button.isEnabled(), (
        f"Next is disabled on {wizard.currentPage().title()}: {wizard.state.errors}"
    )
    click(qtbot, button)
    settle(qtbot, wizard.state)


def back_by_keyboard(qtbot, wizard) -> None:
    """Focus the Back button (as Tab would) and press Space."""
    before = wizard.currentId()
    back = wizard.button(QWizard.WizardButton.BackButton)
    back.setFocus()
    qtbot.keyClick(back, Qt.Key.Key_Space)
    assert wizard.currentId() == before - 1
    settle(qtbot, wizard.state)


def pick_preset(qtbot, page, preset: str) -> None:
    type_like_a_person(qtbot, page.filter, preset)
    for row in range(page.proxy.rowCount()):
        index = page.proxy.index(row, 0)
        if index.data(Qt.ItemDataRole.UserRole) == preset:
            rect = page.list.visualRect(index)
            qtbot.mouseClick(page.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
            return
    raise AssertionError(f"{preset} not listed")


def click_row(
    qtbot, view, row: int, modifier=Qt.KeyboardModifier.NoModifier, double: bool = False
) -> None:
    rect = view.visualRect(view.model().index(row, 0))
    if double:  # as the system delivers it: press and release, then the double-click
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())
    else:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())


def pdf_text(path: Path) -> str:
    text = "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    return re.sub(r"[ \t]+", " ", unicodedata.normalize("NFKC", text))


def save_dialog_returns(monkeypatch, path: Path) -> None:
    """The next save dialog is answered as a person answers it: the path typed into its file-name
    field over the proposed name, then Enter. (A dialog still open 10 s on is closed, so the test
    fails instead of hanging.)"""
    deadline = time.monotonic() + 10

    def answer() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, QFileDialog) and dialog.isVisible():
            name = dialog.findChild(QLineEdit, "fileNameEdit")
            assert name is not None, "the save dialog has no file name field"
            dialog.activateWindow()
            name.setFocus()
            name.selectAll()
            QTest.keyClicks(name, str(path))
            QTest.keyClick(name, Qt.Key.Key_Return)
            if dialog.isVisible() and time.monotonic() > deadline:
                dialog.reject()
            elif dialog.isVisible():
                QTimer.singleShot(50, answer)
        elif time.monotonic() < deadline:
            QTimer.singleShot(20, answer)

    QTimer.singleShot(20, answer)


def test_lora_plan_end_to_end(qtbot, live_window, tmp_path, monkeypatch):
    wizard, state = live_window.wizard, live_window.wizard.state

    # ---- Model: filter the presets by typing, click one.
    model = wizard.model_page
    pick_preset(qtbot, model, "llama-3.1-8b")
    settle(qtbot, state)
    assert state.get("model") == {"preset": "llama-3.1-8b"}
    # Meta's model card: Llama 3.1 8B has 8.03B parameters, 32 layers, hidden 4096, 8 KV heads.
    assert "8.03B parameters" in model.summary.text()
    assert "32 layers, hidden 4096, 32 attention heads (8 key/value)" in model.summary.text()
    next_by_mouse(qtbot, wizard)

    # ---- Data: typed counts with units; sizes and request counts from core.
    data = wizard.data_page
    type_like_a_person(qtbot, field(data, "data.tokens").edit, "200M")
    type_like_a_person(qtbot, field(data, "data.epochs").edit, "2")
    type_like_a_person(qtbot, field(data, "data.seq_len").edit, "4096")
    type_like_a_person(qtbot, field(data, "data.file_count").edit, "250000")
    settle(qtbot, state)
    assert state.request is not None and state.request.data.file_count == 250_000
    # 200M tokens × 4 raw bytes per token (the default) = 800 MB of text; token ids of a 128k
    # vocabulary take 4 bytes.
    assert data.raw_size.text() == "800.00 MB"
    assert data.tokenized_size.text() == "800.00 MB"
    # Default global batch: the power of two nearest 262,144 tokens / 4096 = 64 sequences → 262,144
    # tokens.
    assert data.tokens_per_step.text().startswith("262,144")
    result = planned(state)
    assert data.steps.text() == f"{result.compute.steps:,}"
    # Unpacked, each of the 250,000 files is one GET per epoch: 2 epochs → 500,000 GETs.
    assert "vs 500,000 as the raw files" in data.reads.text()
    assert f"{result.storage.packed_requests:,} GETs as packed shards" in data.reads.text()
    next_by_mouse(qtbot, wizard)

    # ---- Method: readable labels, ids in the request.
    method = wizard.method_page
    precision = field(method, "training.precision")
    # Left out of the request, the precision in effect is the default, and the combo says so.
    assert precision.combo.currentText() == "AMP bf16 (fp32 master) — default"
    assert precision.combo.currentData() == "" and state.get("training.precision") is None
    assert (
        precision.combo.itemData(precision.combo.findText("AMP bf16 (fp32 master)")) == "amp_bf16"
    )
    assert method.method.combo.currentText() == "LoRA"
    type_like_a_person(qtbot, method.rank.edit, "32")
    choose(qtbot, field(method, "training.optimizer").combo, "adamw_8bit")
    settle(qtbot, state)
    assert field(method, "training.optimizer").combo.currentText() == "AdamW 8-bit"
    assert state.request.training.lora_rank == 32
    assert state.request.training.optimizer.value == "adamw_8bit"
    assert "adapters" in method.method.hint.text()
    next_by_mouse(qtbot, wizard)

    # ---- Memory: headline, breakdown, the per-GPU table and chart all from core.
    memory = wizard.memory_page
    core = analysed(state)
    m = core.result.memory
    assert fmt_bytes(m.per_gpu.total) in memory.headline.text()
    shown = {
        memory.breakdown.row(i).cells[0]: memory.breakdown.row(i).cells[1]
        for i in range(memory.breakdown.rowCount())
    }
    assert shown["weights"] == fmt_bytes(m.per_gpu.weights)
    assert shown["total"] == fmt_bytes(m.per_gpu.total)
    rows = [memory.gpus.row(i).cells for i in range(memory.gpus.rowCount())]
    assert len(rows) == len(core.figures.memory_by_gpu) >= 20
    for cells, g in zip(rows, core.figures.memory_by_gpu, strict=True):
        assert cells[0] == g.gpu
        if g.error is None:
            assert cells[1].startswith(g.configuration) and cells[2] == fmt_bytes(g.total)
        else:
            assert cells[7] == g.error
    chart = memory.chart.chart
    assert chart is not None and chart == memory_chart(core.figures)
    assert chart.labels() == [
        memory_label(g) for g in core.figures.memory_by_gpu if g.error is None
    ]
    assert memory.chart.caption.isVisible() and "search picks" in memory.chart.caption.text()
    next_by_mouse(qtbot, wizard)

    # ---- Hardware: sort by cost (dearest first), click a row, carry it forward.
    hardware = wizard.hardware_page
    assert hardware.model.rowCount() == len(core.figures.candidates) > 1
    view = hardware.table
    view.sortByColumn(5, Qt.SortOrder.DescendingOrder)
    click_row(qtbot, view, 0)
    chosen = view.model().index(0, 0).data(Qt.ItemDataRole.UserRole + 2)
    click(qtbot, hardware.use_button)
    settle(qtbot, state)
    assert state.get("hardware") == {
        "gpu": chosen.gpu,
        "gpus_per_node": chosen.gpus_per_node,
        "nodes": chosen.nodes,
    }
    assert state.analysis.result.hardware.gpu == chosen.gpu
    assert state.get("training.sharding") == chosen.sharding.value
    assert "you chose" in hardware.chosen.text()
    assert hardware.network.combo.isEnabled()
    assert hardware.network.hint.text().startswith(f"typical for {chosen.gpu} nodes")
    next_by_mouse(qtbot, wizard)

    # ---- Time & cost: reliability and storage fields change the plan as core says.
    cost = wizard.cost_page
    type_like_a_person(qtbot, field(cost, "assumptions.gpu_mtbf_hours").edit, "2000")
    choose(qtbot, field(cost, "assumptions.checkpoint_tier").combo, "object")
    settle(qtbot, state)
    assert (
        field(cost, "assumptions.checkpoint_tier").combo.currentText()
        == tier_figures("object").title
    )
    result = planned(state)
    assert result.request.assumptions.gpu_mtbf_hours == 2000
    assert state.analysis.result.checkpoint == result.checkpoint
    assert fmt_usd(result.cost.total_usd) in cost.headline.text()
    assert cost.items.rowCount() == len(result.cost.items)
    hot = next(i for i in result.cost.items if i.item == "Hot checkpoints")
    assert tier_figures("object").title in hot.detail
    next_by_mouse(qtbot, wizard)

    # ---- Summary: save, export JSON and PDF through the buttons (file dialogs answered).
    summary = wizard.summary_page
    assert chosen.gpu in summary.headline.text()
    assert summary.assumptions.rowCount() == len(result.assumptions)
    with answering(("OK", None)):  # a new plan: Save asks for its name, the proposed one will do
        click(qtbot, summary.save_button)
    records = live_window.store.list()
    assert len(records) == 1 and records[0].method == "lora"
    assert records[0].cost_usd == result.cost.total_usd
    save_dialog_returns(monkeypatch, tmp_path / "plan.json")
    click(qtbot, summary.json_button)
    exported = json.loads((tmp_path / "plan.json").read_text())
    assert exported["time"]["hours"] == result.time.hours
    assert exported["cost"]["total_usd"] == result.cost.total_usd
    assert exported["request"]["training"]["optimizer"] == "adamw_8bit"
    save_dialog_returns(monkeypatch, tmp_path / "plan.pdf")
    # drawn on a worker; the status line says when the file is there
    click(qtbot, summary.pdf_button)
    qtbot.waitUntil(
        lambda: (
            live_window.statusBar().currentMessage().startswith(f"Exported {tmp_path / 'plan.pdf'}")
        ),
        timeout=10000,
    )
    text = pdf_text(tmp_path / "plan.pdf")
    assert fmt_hours(result.time.hours) in text and fmt_usd(result.cost.total_usd) in text

    # ---- Library: reopen by double-click; the request comes back whole.
    live_window.show_place("Library")
    library = live_window.library
    click_row(qtbot, library.table, 0, double=True)
    settle(qtbot, state)
    assert live_window.stack.currentWidget() is wizard and wizard.currentId() == 0
    assert wizard.plan_id == records[0].id
    assert state.request == PlanRequest.model_validate(records[0].request)
    assert (
        state.request.assumptions.gpu_mtbf_hours == 2000
        and state.request.data.file_count == 250_000
    )


def test_full_fine_tune_on_chosen_hardware_then_compare(qtbot, live_window):
    wizard, state = live_window.wizard, live_window.wizard.state
    # the default LoRA plan, to compare with later; then New plan from the toolbar
    live_window.save_as_new("default")
    toolbar = live_window.findChild(QToolBar)
    click(qtbot, toolbar.widgetForAction(live_window.actions_by_name["new"]))
    settle(qtbot, state)
    assert wizard.plan_id is None
    next_by_mouse(qtbot, wizard)
    next_by_mouse(qtbot, wizard)
    method = wizard.method_page
    choose(qtbot, method.method.combo, "full")
    settle(qtbot, state)
    assert method.method.combo.currentText() == "Full fine-tune"
    assert not method.rank.edit.isEnabled()
    assert state.get("training.method") == "full" and state.get("training.lora_rank") is None
    assert "every weight" in method.method.hint.text()
    choose(qtbot, field(method, "training.sharding").combo, "zero3")
    choose(qtbot, field(method, "assumptions.zero_accounting").combo, "paper")
    settle(qtbot, state)
    assert field(method, "assumptions.zero_accounting").combo.currentText() == "ZeRO paper (K = 12)"
    next_by_mouse(qtbot, wizard)
    next_by_mouse(qtbot, wizard)

    hardware = wizard.hardware_page
    choose(qtbot, hardware.gpu.combo, "H100-SXM")
    type_like_a_person(qtbot, hardware.per_node.edit, "8")
    type_like_a_person(qtbot, hardware.nodes.edit, "2")
    settle(qtbot, state)
    # No network named: the typical H100 node (one 400G rail per GPU) is assumed, and the hint says
    # so.
    assert "400 Gbit/s per GPU" in hardware.network.hint.text()
    typical = planned(state)
    choose(qtbot, hardware.network.combo, "ethernet")
    settle(qtbot, state)
    assert state.get("hardware") == {
        "gpu": "H100-SXM",
        "gpus_per_node": "8",
        "nodes": "2",
        "interconnect": "ethernet",
    }
    result = planned(state)
    assert state.analysis.result.compute == result.compute
    # Plain Ethernet is far slower than the typical 400G rails: more communication time per step.
    assert result.compute.comm_time_s > typical.compute.comm_time_s
    type_like_a_person(qtbot, hardware.bandwidth.edit, "3200")
    settle(qtbot, state)
    assert state.request.hardware.inter_node_gbps == 3200
    assert state.analysis.result.compute == planned(state).compute
    result = planned(state)
    assert result.hardware.gpus == 16 and result.request.training.method.value == "full"
    assert result.request.assumptions.zero_accounting == "paper"
    # Full fine-tune with AdamW keeps gradients and optimizer states for every weight: both are
    # non-zero.
    assert result.memory.per_gpu.gradients > 0 and result.memory.per_gpu.optimizer > 0

    back_by_keyboard(qtbot, wizard)
    memory = wizard.memory_page
    assert wizard.currentPage() is memory
    assert fmt_bytes(result.memory.per_gpu.total) in memory.headline.text()
    planned_row = next(
        memory.gpus.row(i)
        for i in range(memory.gpus.rowCount())
        if memory.gpus.row(i).cells[0] == "H100-SXM"
    )
    # zero3 as chosen; recomputation left to the planner, which picks the faster that fits on these
    # 16 GPUs
    recompute = ", recompute" if result.request.training.gradient_checkpointing else ""
    assert planned_row.cells[1] == f"2×8 zero3{recompute} (this plan)" and planned_row.bold
    for _ in range(3):
        next_by_mouse(qtbot, wizard)
    summary = wizard.summary_page
    assert "2 nodes × 8 H100-SXM (16 GPUs)" in summary.headline.text()
    with answering(("OK", None)):
        click(qtbot, summary.save_button)

    # ---- Library: select both plans with Ctrl+click, compare them.
    live_window.show_place("Library")
    library = live_window.library
    assert library.model.rowCount() == 2
    click_row(qtbot, library.table, 0)
    click_row(qtbot, library.table, 1, Qt.KeyboardModifier.ControlModifier)
    assert library.buttons["compare"].isEnabled()
    click(qtbot, library.buttons["compare"])
    dialog = library.compare_dialog
    assert dialog is not None
    qtbot.addWidget(dialog)
    rows = {
        dialog.view.model.row(i).cells[0]: dialog.view.model.row(i)
        for i in range(dialog.view.model.rowCount())
    }
    assert sorted(rows["method"].cells[1:]) == ["full", "lora"] and rows["method"].highlight == {
        1,
        2,
    }
    assert rows["setting: hardware.interconnect"].highlight == {1, 2}
    assert rows["model"].highlight == set()
    assert rows["setting: data.tokens"].cells[1] == "200,000,000"  # whole numbers shown whole


def test_pages_off_screen_draw_the_plan_when_shown(qtbot, live_window):
    """Typing on the Data page redraws only the Data page; the Memory page catches up when it is
    shown."""
    wizard, state = live_window.wizard, live_window.wizard.state
    next_by_mouse(qtbot, wizard)
    data = wizard.data_page
    memory = wizard.memory_page
    before = memory.headline.text()
    type_like_a_person(qtbot, field(data, "data.seq_len").edit, "8192")
    settle(qtbot, state)
    assert memory.headline.text() == before  # not on screen: not redrawn yet
    for _ in range(2):
        next_by_mouse(qtbot, wizard)
    assert fmt_bytes(planned(state).memory.per_gpu.total) in memory.headline.text()
    assert memory.headline.text() != before


def test_choosing_a_candidate_keeps_the_network_typed(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    state.update_many(
        {},
        {
            "hardware": {
                "gpu": "H100-SXM",
                "gpus_per_node": 8,
                "nodes": 2,
                "interconnect": "roce",
                "inter_node_gbps": 1600,
            }
        },
    )
    settle(qtbot, state)
    for _ in range(4):
        next_by_mouse(qtbot, wizard)
    hardware = wizard.hardware_page
    assert hardware.network.combo.currentText() == "RoCE (RDMA over Ethernet)"
    click_row(qtbot, hardware.table, 0)
    click(qtbot, hardware.use_button)
    settle(qtbot, state)
    assert (
        state.get("hardware.interconnect") == "roce"
        and state.get("hardware.inter_node_gbps") == 1600
    )


class HeldExecutor:
    """Keeps every job until the test finishes it: a worker that is still busy planning."""

    def __init__(self) -> None:
        self.jobs: list = []

    def submit(self, fn, on_done, on_error=None):
        from gui.workers import Job

        self.jobs.append((fn, on_done))
        return Job()

    def stream(self, gen_fn, on_item, on_done=None, on_error=None):
        raise AssertionError("planning submits; nothing in these tests streams")

    def stop_all(self, timeout_ms: int = 2000) -> bool:
        return True

    def finish(self) -> None:
        fn, on_done = self.jobs.pop(0)
        result = fn()
        assert result is not None, "the held job was not a plan"
        on_done(result)


def test_one_plan_at_a_time_and_the_latest_edit_wins(qtbot):
    from gui.wizard.state import PlanState

    ex = HeldExecutor()
    state = PlanState(ex, debounce_ms=0)
    state.recompute_now()
    assert len(ex.jobs) == 1
    for tokens in ("3e8", "4e8"):  # edits while the first plan runs: nothing new starts
        state.set("data.tokens", tokens)
        state.recompute_now()
    assert len(ex.jobs) == 1 and state.busy
    ex.finish()  # the first plan was for an older request: dropped, and the latest one starts
    assert state.analysis is None and len(ex.jobs) == 1
    ex.finish()
    assert state.analysis is not None and state.analysis.result.request.data.tokens == 4e8
    assert not state.busy and not ex.jobs


def test_a_plan_that_lands_while_the_wizard_is_hidden_enables_next(qtbot, store, settings):
    """Planning finishes while the user looks at the Library: back on the Memory page, Next
    works."""
    from gui import charts
    from gui.main_window import MainWindow
    from gui.workers import InlineExecutor

    charts.preload(InlineExecutor())  # the chart library in place, so the held jobs are plans only
    ex = HeldExecutor()
    window = MainWindow(ex, store, settings, debounce_ms=0)
    qtbot.addWidget(window)
    window.show()
    wizard, state = window.wizard, window.wizard.state
    state.recompute_now()
    ex.finish()
    for _ in range(3):
        click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    assert wizard.currentPage() is wizard.memory_page
    state.set("data.tokens", "3e8")
    state.recompute_now()
    next_button = wizard.button(QWizard.WizardButton.NextButton)
    assert not next_button.isEnabled()  # planning
    window.show_place("Library")
    ex.finish()
    window.show_place("Plan")
    qtbot.waitUntil(next_button.isEnabled, timeout=2000)
    assert state.analysis is not None
    assert (
        fmt_bytes(state.analysis.result.memory.per_gpu.total) in wizard.memory_page.headline.text()
    )


def test_an_idle_wizard_does_not_keep_redrawing_itself(qtbot, window, monkeypatch):
    """Telling QWizard a page's completeness from inside its showEvent made Qt show the page again,
    endlessly: the event loop never idled (docs/performance.md, "Window")."""
    from gui.wizard import page as page_module

    shows: list[str] = []
    original = page_module.PlanPage.showEvent

    def counted(self, event):
        shows.append(self.title())
        original(self, event)

    monkeypatch.setattr(page_module.PlanPage, "showEvent", counted)
    for _ in range(3):
        next_by_mouse(qtbot, window.wizard)
    shows.clear()
    qtbot.wait(500)
    assert len(shows) <= 1, shows
