"""Helpers for driving the wizard the way a user does (keyboard and mouse)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QWidget,
    QWizard,
)

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot

    from gui.wizard.state import PlanState
    from gui.wizard.wizard import PlanWizard

DEBOUNCE_MS = 150  # the window's: a plan starts this long after the last edit
# a slow typist: every key lands after the plan for the previous one started
KEY_PAUSE_MS = DEBOUNCE_MS + 60


def settle(qtbot: QtBot, state: PlanState) -> None:
    """Wait until the debounce timer fired and the (inline) plan arrived."""
    qtbot.waitUntil(lambda: not state.pending and not state.busy, timeout=5000)


def click(qtbot: QtBot, widget: QWidget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


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


def describe(widget: QWidget | None) -> str:
    """A widget as a person would name it: its kind and its accessible name."""
    if widget is None:
        return "no widget"
    name = widget.accessibleName() or widget.objectName()
    return f"{type(widget).__name__} “{name}”" if name else type(widget).__name__


def text_of(field: QWidget) -> str:
    """What the field shows: a line edit's or text box's text, a spin box's text, an editable
    combo's text."""
    if isinstance(field, QPlainTextEdit):
        return field.toPlainText()
    if isinstance(field, QComboBox):
        return field.currentText()
    if isinstance(field, QLineEdit | QAbstractSpinBox):
        return field.text()
    raise TypeError(f"{describe(field)} is not a text field")


def _holds_focus(field: QWidget, focus: QWidget | None) -> bool:
    """The focus is on the field or inside it (a spin box's or an editable combo's own line
    edit)."""
    return focus is not None and (focus is field or field.isAncestorOf(focus))


def _scroll_to(field: QWidget) -> None:
    """Bring the field into view in every scroll area around it, as a person scrolls before
    clicking."""
    parent = field.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            parent.ensureWidgetVisible(field)
        parent = parent.parentWidget()


def _click_target(field: QWidget) -> QWidget:
    if isinstance(field, QAbstractScrollArea):  # a text box takes clicks on its viewport
        return field.viewport()
    edit = field.lineEdit() if isinstance(field, QComboBox) else None
    return edit or field


def type_like_a_person(
    qtbot: QtBot, field: QWidget, text: str, pause_ms: int = KEY_PAUSE_MS
) -> None:
    """Click into the field, select all (Ctrl+A), type ``text`` one key at a time (Backspace for an
    empty ``text``), and check the field shows it.

    Every key goes to whatever has the keyboard focus at that moment
    (``QApplication.focusWidget()``), never to the field itself: if the window moves the focus away,
    the next keys land where a person's would, and the failure names the widget that got them.
    Between two keys the person pauses ``pause_ms``, longer than the window's debounce, so that
    plans recompute while the next keys arrive.
    """
    name = describe(field)
    assert field.isVisible() and field.isEnabled(), (
        f"{name} is not there to type into (hidden or disabled)"
    )
    _scroll_to(field)
    target = _click_target(field)
    window = field.window()
    if not window.isActiveWindow():
        # A desktop's window manager activates the window a person clicks into (and the one a closed
        # dialog returns to); Xvfb runs none, so the click is preceded by what it would do.
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    qtbot.mouseClick(target, Qt.MouseButton.LeftButton, pos=target.rect().center())
    focus = QApplication.focusWidget()
    assert _holds_focus(field, focus), f"{name}: clicking it put the focus on {describe(focus)}"
    qtbot.keyClick(focus, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    if not text:  # emptying the field: Backspace on the selection
        qtbot.keyClick(focus, Qt.Key.Key_Backspace)
        qtbot.wait(pause_ms)
    # (the widget that got them, the keys), in the order typed
    elsewhere: list[tuple[str, str]] = []
    for char in text:
        focus = QApplication.focusWidget()
        if not _holds_focus(field, focus):
            who = describe(focus)
            if elsewhere and elsewhere[-1][0] == who:
                elsewhere[-1] = (who, elsewhere[-1][1] + char)
            else:
                elsewhere.append((who, char))
        receiver = focus or QApplication.activeWindow()
        if receiver is not None:
            qtbot.keyClicks(receiver, char)
        qtbot.wait(pause_ms)
    notes = [f"{keys!r} went to {who}" for who, keys in elsewhere]
    focus = QApplication.focusWidget()
    if not _holds_focus(field, focus) and not (elsewhere and elsewhere[-1][0] == describe(focus)):
        notes.append(f"after the last key the focus was on {describe(focus)}")
    shown = text_of(field)
    assert shown == text and not notes, f"{name}: typed {text!r}, it shows {shown!r}; " + "; ".join(
        notes
    )
