"""Run a widget's shutdown when the window holding it closes, whichever window that turns out to be.

The probe pane lives inside the main window, or alone in a window of its own (tests, the screenshot
script); it only knows which once it is shown. Closing that window must stop a run and drop
connections (the pane's ``shutdown``), so the hook waits for the widget's first show, then watches
its window for the close.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget


class OnWindowClose(QObject):
    """Calls ``on_close`` when the top-level window holding ``widget`` (not the widget alone) is
    closed."""

    def __init__(self, widget: QWidget, on_close: Callable[[], None]) -> None:
        super().__init__(widget)
        self._widget, self._on_close = widget, on_close
        self._window: QWidget | None = None
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._widget and event.type() == QEvent.Type.Show and self._window is None:
            window = self._widget.window()
            if window is not self._widget:
                self._window = window
                window.installEventFilter(self)
        elif watched is self._window and event.type() == QEvent.Type.Close:
            self._on_close()
        return False
