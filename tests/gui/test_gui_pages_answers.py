"""Each page does what it says, driven as a person drives it: typing in the preset filter only filters."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit

from core.catalog import load_catalog
from tests.gui.wizard_driver import settle

KEY_WAIT_MS = 40  # longer than the window fixture's debounce (0 ms): a plan may land between two keys


def click_into(qtbot, edit: QLineEdit) -> None:
    qtbot.mouseClick(edit, Qt.MouseButton.LeftButton)
    assert QApplication.focusWidget() is edit


def type_keys(qtbot, text: str) -> None:
    """Each key to whatever has the focus, as the keyboard delivers it, with a pause between keys."""
    for key in text:
        qtbot.keyClick(QApplication.focusWidget(), key)
        qtbot.wait(KEY_WAIT_MS)


def shown_presets(page) -> list[str]:
    return [page.proxy.index(row, 0).data(Qt.ItemDataRole.UserRole) for row in range(page.proxy.rowCount())]


def click_preset(qtbot, page, preset: str) -> None:
    index = page.proxy.index(shown_presets(page).index(preset), 0)
    qtbot.mouseClick(page.list.viewport(), Qt.MouseButton.LeftButton, pos=page.list.visualRect(index).center())


def test_typing_in_the_preset_filter_filters_and_keeps_the_selected_model(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    page = wizard.model_page
    assert page.selected.text() == "Selected: llama-3.1-8b"
    click_into(qtbot, page.filter)
    type_keys(qtbot, "qwen")
    assert page.filter.hasFocus() and page.filter.text() == "qwen"  # every key stayed in the filter
    qwen = [m.id for m in load_catalog().models.values() if "qwen" in f"{m.id} {m.hf_repo}".lower()]
    assert shown_presets(page) == qwen
    assert state.get("model") == {"preset": "llama-3.1-8b"}
    assert not page.list.selectionModel().hasSelection()
    assert page.selected.text() == "Selected: llama-3.1-8b (hidden by the filter “qwen”)"
    settle(qtbot, state)
    assert page.summary.text().startswith("<b>llama-3.1-8b</b>: 8.03B parameters")

    click_preset(qtbot, page, "qwen2.5-7b")
    settle(qtbot, state)
    assert state.get("model") == {"preset": "qwen2.5-7b"}
    assert page.selected.text() == "Selected: qwen2.5-7b"

    click_into(qtbot, page.filter)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backspace)
    qtbot.wait(KEY_WAIT_MS)
    type_keys(qtbot, "llama")
    assert "qwen2.5-7b" not in shown_presets(page) and "llama-3.1-70b" in shown_presets(page)
    assert state.get("model") == {"preset": "qwen2.5-7b"}
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backspace)
    qtbot.wait(KEY_WAIT_MS)
    assert len(shown_presets(page)) == len(load_catalog().models)
    assert page.list.currentIndex().data(Qt.ItemDataRole.UserRole) == "qwen2.5-7b"
    assert state.get("model") == {"preset": "qwen2.5-7b"}
    assert page.selected.text() == "Selected: qwen2.5-7b"
