"""The run's event log: Xid, throttling, disconnects and probe progress, one line per event with its
level.

A QListWidget capped at `MAX_LINES` (the oldest lines go first) with a minimum-level filter; the
worst level seen is kept so the pane can flag a run that logged errors even when they scrolled away.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gui.colors import LEVEL_COLORS

LEVELS = ("debug", "info", "warning", "error", "critical")
_ALIASES = {
    "warn": "warning",
    "err": "error",
    "fatal": "critical",
    "fail": "error",
    "trace": "debug",
}
MAX_LINES = 5000
LEVEL_ROLE = Qt.ItemDataRole.UserRole + 1


def normalise_level(level: str) -> str:
    """Map a level name from any source onto LEVELS (unknown names count as info)."""
    name = str(level).strip().lower()
    name = _ALIASES.get(name, name)
    return name if name in LEVELS else "info"


class EventLog(QWidget):
    """Signals: ``logged(str, str)`` level and message of each line added."""

    logged = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Event log")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("Events"), 1)
        top.addWidget(QLabel("Show"))
        self.filter = QComboBox()
        self.filter.setAccessibleName("Minimum event level")
        for level in LEVELS:
            self.filter.addItem(f"{level} and worse", level)
        self.filter.setCurrentIndex(1)
        self.filter.currentIndexChanged.connect(lambda _i: self._apply_filter())
        top.addWidget(self.filter)
        layout.addLayout(top)
        self.list = QListWidget()
        self.list.setAccessibleName("Event list")
        self.list.setUniformItemSizes(True)
        self.list.setWordWrap(False)
        layout.addWidget(self.list, 1)
        self.worst = "debug"
        self.counts = dict.fromkeys(LEVELS, 0)

    def add(self, level: str, message: str, when: float | None = None) -> None:
        level = normalise_level(level)
        stamp = time.strftime("%H:%M:%S", time.localtime(when if when is not None else time.time()))
        item = QListWidgetItem(f"{stamp}  {level.upper():8}  {message}")
        item.setData(LEVEL_ROLE, level)
        item.setToolTip(message)
        code = LEVEL_COLORS.get(level)
        if code:
            item.setForeground(QBrush(QColor(code)))
        self.list.addItem(item)
        item.setHidden(LEVELS.index(level) < LEVELS.index(self.filter.currentData()))
        while self.list.count() > MAX_LINES:
            self.list.takeItem(0)
        if LEVELS.index(level) > LEVELS.index(self.worst):
            self.worst = level
        self.counts[level] += 1
        if not item.isHidden():
            self.list.scrollToBottom()
        self.logged.emit(level, message)

    def lines(self, minimum: str = "debug") -> list[tuple[str, str]]:
        """(level, message) of every kept line at ``minimum`` or worse, oldest first."""
        floor = LEVELS.index(normalise_level(minimum))
        out = []
        for row in range(self.list.count()):
            item = self.list.item(row)
            level = str(item.data(LEVEL_ROLE))
            if LEVELS.index(level) >= floor:
                out.append((level, item.toolTip()))
        return out

    def clear(self) -> None:
        self.list.clear()
        self.worst = "debug"
        self.counts = dict.fromkeys(LEVELS, 0)

    def _apply_filter(self) -> None:
        floor = LEVELS.index(self.filter.currentData())
        for row in range(self.list.count()):
            item = self.list.item(row)
            item.setHidden(LEVELS.index(str(item.data(LEVEL_ROLE))) < floor)
