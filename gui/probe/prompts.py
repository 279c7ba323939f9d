"""Password and passphrase prompts for the SSH transport, asked on the GUI thread and never stored.

paramiko calls the transport's callbacks on the thread that connects (a worker). A worker must not
touch widgets, so :class:`Prompter` hands the question to the GUI thread through a queued signal and
blocks the worker until the user answers (or the pane shuts down). Called on the GUI thread itself
(the inline executor in tests) it asks directly. Answers live only in the callback's return value.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtWidgets import QInputDialog, QLineEdit, QWidget

WAIT_S = 600.0


@dataclass
class _Question:
    title: str
    text: str
    answered: threading.Event = field(default_factory=threading.Event)
    answer: str | None = None


class Prompter(QObject):
    """Signals: ``asked(object)`` internal, carries a question to the GUI thread; ``shown(object)``
    the dialog just opened (tests answer it through this)."""

    asked = Signal(object)
    shown = Signal(object)

    def __init__(self, parent_widget: QWidget | None = None) -> None:
        super().__init__()
        self._parent_widget = parent_widget
        self._pending: set[int] = set()
        self._open: list[_Question] = []
        self._closed = False
        self.asked.connect(self._ask_on_gui_thread)
        self.asked_count = 0

    # ---- the callbacks SshTransport calls (on any thread)

    def password(self, prompt: str) -> str | None:
        return self._ask("SSH password", prompt or "Password:")

    def passphrase(self, prompt: str) -> str | None:
        return self._ask("SSH key passphrase", prompt or "Passphrase for the private key:")

    def _ask(self, title: str, text: str) -> str | None:
        if self._closed:
            return None
        self.asked_count += 1
        question = _Question(title, text)
        if QThread.currentThread() == self.thread():
            return self._dialog(question, blocking=True)
        self._open.append(question)
        self.asked.emit(question)
        question.answered.wait(WAIT_S)
        if question in self._open:
            self._open.remove(question)
        return question.answer

    def close(self) -> None:
        """Answer every open question with None so no worker waits on a closing window."""
        self._closed = True
        for question in list(self._open):
            question.answered.set()

    # ---- GUI thread

    @Slot(object)
    def _ask_on_gui_thread(self, question: _Question) -> None:
        self._dialog(question, blocking=False)

    def _dialog(self, question: _Question, blocking: bool) -> str | None:
        dialog = QInputDialog(self._parent_widget)
        dialog.setWindowTitle(question.title)
        dialog.setAccessibleName(question.title)
        dialog.setLabelText(question.text)
        dialog.setTextEchoMode(QLineEdit.EchoMode.Password)
        dialog.setInputMode(QInputDialog.InputMode.TextInput)

        def finish(result: int) -> None:
            question.answer = (
                dialog.textValue() if result == int(QInputDialog.DialogCode.Accepted) else None
            )
            dialog.setTextValue("")
            question.answered.set()
            dialog.deleteLater()

        dialog.finished.connect(finish)
        if blocking:
            self.shown.emit(dialog)
            dialog.exec()
            return question.answer
        dialog.open()
        self.shown.emit(dialog)
        return None
