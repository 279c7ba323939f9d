"""Widgets made one per event-loop turn: the Probe pane's plots, which cost about 20 ms each to
make.

Making the pane's ten pyqtgraph plots in one go held the UI thread 216–381 ms on the Probe place's
first open. `StagedWidgets` is the dict of those widgets by name: it starts empty, and
`make_in_turns` makes them in order, one per turn of the event loop (a few milliseconds apart, so
input and paints go in between), as the wizard's charts are prepared (``gui/charts.py``). Code that
asks for one by key before its turn gets it made at once (``__missing__``); code that iterates sees
those made so far, in the names' order, and `make_all` finishes the rest where a caller needs every
one (a run's first frame).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import shiboken6
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget

W = TypeVar("W", bound=QWidget)
TURN_GAP_MS = 10  # between two widgets: room for a key press or a paint


class StagedWidgets(dict[str, W]):
    """``make(name)`` builds the widget called ``name`` and places it in its layout; each name is
    made once."""

    def __init__(self, names: Sequence[str], make: Callable[[str], W]) -> None:
        super().__init__()
        self._order = list(names)
        self._todo = list(names)
        self._make = make

    def __missing__(self, name: str) -> W:
        if name not in self._todo:
            raise KeyError(name)
        self._todo.remove(name)
        widget = self[name] = self._make(name)
        # iteration keeps the names' order
        made = {n: self.pop(n) for n in self._order if n in self}
        self.update(made)
        return widget

    @property
    def pending(self) -> list[str]:
        """The names not made yet, in the order they will be."""
        return list(self._todo)

    def make_next(self) -> bool:
        """Make the next widget; False when there was none left."""
        if not self._todo:
            return False
        self[self._todo[0]]  # made by __missing__
        return True

    def make_all(self) -> None:
        while self.make_next():
            pass


def make_in_turns(owner: QObject, *groups: StagedWidgets[Any]) -> None:
    """Make what ``groups`` still lack, one widget per event-loop turn across all of them, while
    ``owner`` lives."""

    def step() -> None:
        if not shiboken6.isValid(owner):
            return
        group = next((g for g in groups if g.pending), None)
        if group is not None and group.make_next() and any(g.pending for g in groups):
            QTimer.singleShot(TURN_GAP_MS, owner, step)

    if any(g.pending for g in groups):
        QTimer.singleShot(0, owner, step)


__all__ = ["StagedWidgets", "make_in_turns"]
