"""Helpers for driving the wizard the way a user does (keyboard and mouse)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit, QWidget, QWizard

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot

    from gui.wizard.state import PlanState
    from gui.wizard.wizard import PlanWizard


def settle(qtbot: QtBot, state: PlanState) -> None:
    """Wait until the debounce timer fired and the (inline) plan arrived."""
    qtbot.waitUntil(lambda: not state.pending and not state.busy, timeout=5000)


def click(qtbot: QtBot, widget: QWidget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def type_into(qtbot: QtBot, edit: QLineEdit, text: str) -> None:
    """Select all and type, as a user replacing a value would."""
    edit.setFocus()
    qtbot.keyClick(edit, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    if text:
        qtbot.keyClicks(edit, text)
    else:
        qtbot.keyClick(edit, Qt.Key.Key_Delete)


def next_page(qtbot: QtBot, wizard: PlanWizard) -> None:
    button = wizard.button(QWizard.WizardButton.NextButton)
    assert button.isEnabled(), f"Next is disabled on {wizard.currentPage().title()}"
    click(qtbot, button)
    settle(qtbot, wizard.state)


def choose(qtbot: QtBot, combo: QComboBox, value: str) -> None:
    """Pick a combo entry with the keyboard: focus, then arrow keys until the item is current."""
    combo.setFocus()
    target = combo.findData(value)
    assert target >= 0, value
    while combo.currentIndex() != target:
        key = Qt.Key.Key_Down if combo.currentIndex() < target else Qt.Key.Key_Up
        qtbot.keyClick(combo, key)
