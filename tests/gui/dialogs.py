"""Finding the dialog a step opened and answering it the way a person does: read it, press its button."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot


def the_dialog(qtbot: QtBot) -> QMessageBox:
    """The message box now in front of the window (it opens without blocking, so the test goes on)."""
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox), timeout=2000)
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox) and box.isVisible()
    return box


def press_ok(qtbot: QtBot, box: QMessageBox) -> None:
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: QApplication.activeModalWidget() is None, timeout=2000)
