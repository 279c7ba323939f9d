"""Answering the window's modal dialogs as a person does: wait for the dialog to open, read it,
type, press a button.

A modal dialog runs its own event loop, so the click that opens it returns only once the dialog is
answered.
:func:`answering` therefore arms the answers before the click: a single-shot timer looks for the
active modal QMessageBox or QInputDialog every few milliseconds and answers each one that opens, in
order. On leaving the ``with`` block it stops looking (a later test never meets an answer meant for
this one) and fails when a dialog that was expected never opened, or when one opened that was not
expected (that one is closed with Escape's answer, so the test fails instead of waiting for ever).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QInputDialog,
    QLineEdit,
    QMessageBox,
    QWidget,
)

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot

POLL_MS = 20
GIVE_UP_S = 10.0


@dataclass
class Seen:
    """What one dialog showed before it was answered: title, text (for a message box its message and
    its informative text, for an input dialog its label) and, in an input dialog, the value it
    proposed."""

    title: str
    text: str
    value: str = ""


@dataclass
class _Answers:
    steps: list[tuple[str, str | None]]
    seen: list[Seen] = field(default_factory=list)
    answered: list[QWidget] = field(default_factory=list)
    unexpected: list[Seen] = field(default_factory=list)
    failure: Exception | None = None
    stopped: bool = False
    deadline: float = field(default_factory=lambda: time.monotonic() + GIVE_UP_S)

    def look(self) -> None:
        if self.stopped or time.monotonic() > self.deadline:
            return
        dialog = QApplication.activeModalWidget()
        if (
            isinstance(dialog, QMessageBox | QInputDialog)
            and dialog.isVisible()
            and not any(dialog is done for done in self.answered)
        ):
            self.answered.append(dialog)
            if not self.steps:
                self.unexpected.append(seen(dialog))
                dialog.reject()
            else:
                try:
                    self.answer(dialog)
                # raised again when the test leaves the block; the dialog must not wait
                except Exception as exc:
                    self.failure = exc
                    dialog.reject()
        QTimer.singleShot(POLL_MS, self.look)

    def answer(self, dialog: QMessageBox | QInputDialog) -> None:
        press, typing = self.steps.pop(0)
        self.seen.append(seen(dialog))
        if typing is not None:
            edit = dialog.findChild(QLineEdit)
            assert edit is not None, f"no text field in the dialog {self.seen[-1]}"
            # where a person's eyes and keys are: the dialog that just opened
            dialog.activateWindow()
            QTest.qWaitForWindowActive(dialog, 2000)
            QTest.mouseClick(edit, Qt.MouseButton.LeftButton)
            typed_by_keyboard(typing)
        buttons = {
            b.text().replace("&", ""): b
            for b in dialog.findChildren(QAbstractButton)
            if b.isVisible()
        }
        assert press in buttons, (
            f"no button {press!r} in the dialog {self.seen[-1]}; it has {sorted(buttons)}"
        )
        QTest.mouseClick(buttons[press], Qt.MouseButton.LeftButton)


def seen(dialog: QMessageBox | QInputDialog) -> Seen:
    if isinstance(dialog, QMessageBox):
        return Seen(
            dialog.windowTitle(),
            "\n".join(t for t in (dialog.text(), dialog.informativeText()) if t),
        )
    return Seen(dialog.windowTitle(), dialog.labelText(), dialog.textValue())


def typed_by_keyboard(text: str, pause_ms: int = 0) -> None:
    """Select what the focused field holds and type `text` over it, each key to whatever has the
    focus then, pausing `pause_ms` after each key as a person does."""
    focus = QApplication.focusWidget()
    assert focus is not None, "nothing has the keyboard focus to type into"
    QTest.keyClick(focus, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    if not text:
        QTest.keyClick(focus, Qt.Key.Key_Delete)
    for char in text:
        focus = QApplication.focusWidget()
        assert focus is not None, f"the focus went nowhere while typing {text!r}"
        QTest.keyClicks(focus, char)
        if pause_ms:
            QTest.qWait(pause_ms)


@contextmanager
def answering(*steps: tuple[str, str | None]) -> Iterator[list[Seen]]:
    """Answer the next dialogs, one step each: (the button to press, the text to type first or
    None); with no steps, no dialog may open.

    Yields the list of what each dialog showed, filled as they are answered.
    """
    answers = _Answers(list(steps))
    QTimer.singleShot(POLL_MS, answers.look)
    try:
        yield answers.seen
    finally:
        answers.stopped = True
    if answers.failure is not None:
        raise answers.failure
    assert not answers.unexpected, (
        f"a dialog opened that the test did not expect: {answers.unexpected}"
    )
    assert not answers.steps, f"these dialogs never opened: {answers.steps}; seen: {answers.seen}"


def the_dialog(qtbot: QtBot) -> QMessageBox:
    """The message box now in front of the window, for a dialog that opens without blocking
    (``open()``), so the test goes on and reads it."""
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox), timeout=2000)
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox) and box.isVisible()
    return box


def press_ok(qtbot: QtBot, box: QMessageBox) -> None:
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: QApplication.activeModalWidget() is None, timeout=2000)
