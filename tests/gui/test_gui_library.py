"""Library: save from the wizard, reopen, rename, duplicate, delete with undo, compare, import and
export."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics

from core.planner.plan import plan
from core.planner.request import PlanRequest
from tests.gui.dialogs import press_ok, the_dialog
from tests.gui.wizard_driver import click, settle


def save_variant(qtbot, window, tokens: str, method: str) -> int:
    state = window.wizard.state
    window.wizard.new_plan()
    state.set("data.tokens", tokens)
    state.set("training.method", method)
    settle(qtbot, state)
    plan_id = window.save_as_new(f"{tokens} tokens {method}")
    assert plan_id is not None
    return plan_id


def test_save_reopen_and_update(qtbot, window):
    first = save_variant(qtbot, window, "2e8", "lora")
    library = window.library
    assert library.model.rowCount() == 1
    row = library.model.row(0)
    expected = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "2e8"},
                "training": {"method": "lora"},
            }
        )
    )
    assert row.cells[1] == "llama-3.1-8b" and row.cells[2] == "lora"
    assert window.store.get(first).cost_usd == expected.cost.total_usd
    # Reopen in the wizard: the request comes back, and saving again updates the same plan.
    library.select_ids([first])
    click(qtbot, library.buttons["open"])
    settle(qtbot, window.wizard.state)
    assert window.stack.currentWidget() is window.wizard
    assert window.wizard.plan_id == first
    assert window.wizard.state.request.data.tokens == 2e8
    window.wizard.state.set("data.tokens", "4e8")
    settle(qtbot, window.wizard.state)
    assert window.save_plan() == first
    assert len(window.store.list()) == 1
    assert window.store.get(first).request["data"]["tokens"] == 4e8


def test_rename_duplicate_delete_and_undo(qtbot, window):
    plan_id = save_variant(qtbot, window, "2e8", "lora")
    library = window.library
    window.show_place("Library")
    library.select_ids([plan_id])
    library.rename_selected("baseline")
    assert window.store.get(plan_id).name == "baseline"
    library.rename_selected("   ")
    assert "cannot be empty" in library.error.text()
    assert window.store.get(plan_id).name == "baseline"
    click(qtbot, library.buttons["duplicate"])
    names = sorted(r.name for r in window.store.list())
    assert names == ["baseline", "baseline (copy)"]
    library.select_ids([plan_id])
    click(qtbot, library.buttons["delete"])
    assert [r.name for r in window.store.list()] == ["baseline (copy)"]
    assert library.undo_bar.isVisible() and "baseline" in library.undo_label.text()
    click(qtbot, library.undo_button)
    restored = window.store.get(plan_id)
    assert restored.name == "baseline"
    assert library.model.rowCount() == 2
    # Ctrl+Z works too.
    library.select_ids([plan_id])
    library.delete_selected()
    library.table.setFocus()
    qtbot.keyClick(library.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.store.get(plan_id).name == "baseline"


def test_undo_brings_a_deleted_plan_back_after_another_save(qtbot, window):
    """Delete the newest plan, save a new one from the wizard, then press Undo in the library: the
    deleted plan comes back beside the new one (its id had gone to the new plan, and Undo failed
    with the plan lost)."""
    save_variant(qtbot, window, "2e8", "lora")
    newest = save_variant(qtbot, window, "3e8", "lora")
    library = window.library
    window.show_place("Library")
    library.select_ids([newest])
    click(qtbot, library.buttons["delete"])
    assert "3e8 tokens lora" not in {r.name for r in window.store.list()}
    saved = save_variant(qtbot, window, "4e8", "qlora")
    window.show_place("Library")
    click(qtbot, library.undo_button)
    assert sorted(library.model.row(i).cells[0] for i in range(library.model.rowCount())) == [
        "2e8 tokens lora",
        "3e8 tokens lora",
        "4e8 tokens qlora",
    ]
    assert window.store.get(saved).name == "4e8 tokens qlora"
    assert library.selected_ids() == [newest] and not library.error.isVisible()


def test_compare_highlights_differences(qtbot, window):
    a = save_variant(qtbot, window, "2e8", "lora")
    b = save_variant(qtbot, window, "2e8", "qlora")
    library = window.library
    library.select_ids([a, b])
    assert library.buttons["compare"].isEnabled()
    dialog = library.compare_selected()
    assert dialog is not None
    qtbot.addWidget(dialog)
    rows = {
        dialog.view.model.row(i).cells[0]: dialog.view.model.row(i)
        for i in range(dialog.view.model.rowCount())
    }
    assert rows["method"].cells[1:] == ["lora", "qlora"]
    assert rows["method"].highlight == {1, 2}
    assert rows["setting: training.method"].highlight == {1, 2}
    assert rows["setting: data.tokens"].highlight == set()
    assert rows["model"].highlight == set()
    # Every value is shown whole: each column is at least as wide as its longest text (no "…").
    table, model = dialog.view.table, dialog.view.model
    bold = QFont(table.font())
    bold.setBold(True)
    for col in range(model.columnCount()):
        width = table.horizontalHeader().sectionSize(col)
        for r in model.rows():
            needed = QFontMetrics(bold if r.bold else table.font()).horizontalAdvance(r.cells[col])
            assert needed < width, (r.cells[col], needed, width)


def test_export_and_import_request_json(qtbot, window, tmp_path: Path):
    plan_id = save_variant(qtbot, window, "3e8", "qlora")
    library = window.library
    library.select_ids([plan_id])
    out = library.export_selected(tmp_path / "exported.json")
    assert out is not None
    data = json.loads(out.read_text())
    assert data["model"] == {"preset": "llama-3.1-8b"}
    assert data["data"]["tokens"] == 3e8 and data["training"]["method"] == "qlora"
    library.import_json(out)
    records = window.store.list()
    assert len(records) == 2
    imported = next(r for r in records if r.name == "exported")
    assert imported.cost_usd == window.store.get(plan_id).cost_usd


def test_import_refuses_a_bad_request_with_the_field_named(qtbot, window, tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "2e8"},
                "training": {"method": "lorra"},
            }
        )
    )
    window.library.import_json(bad)
    box = the_dialog(qtbot)
    assert box.text().startswith(
        "bad.json is not a valid plan request: training.method: 'lorra' is not allowed"
    )
    press_ok(qtbot, box)
    assert window.store.list() == []
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    window.library.import_json(broken)
    box = the_dialog(qtbot)
    assert box.text().startswith("broken.json is not valid JSON")
    press_ok(qtbot, box)


def test_damaged_library_notice_is_shown(qtbot, executor, settings, tmp_path: Path):
    from core.library.store import PlanStore
    from gui.main_window import MainWindow

    db = tmp_path / "lib.db"
    db.write_bytes(b"this is not sqlite" * 200)
    w = MainWindow(executor, PlanStore(db), settings, debounce_ms=0)
    qtbot.addWidget(w)
    assert w.library.notice.isVisibleTo(w.library)
    assert "moved to" in w.library.notice.text() and "damaged" in w.library.notice.text()
