"""The Probe place as the main window holds it: shown at once, the pane arriving when its modules
are loaded.

The pane needs paramiko, pyqtgraph and the probe history: importing them takes the best part of a
second here, which a cold start must not pay for a place the user may never open, and which the
first open must not pay on the UI thread either (the window would freeze that long after the click).
So the first show puts up a line saying what is loading, imports the pane's modules on a worker
(``gui/workers.py``; pyqtgraph through ``charts.preload``, so that a wizard chart drawn meanwhile
waits for it instead of blocking), and builds the pane on the UI thread once they are in. Signals
are forwarded from the pane.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gui import charts
from gui.workers import Executor

if TYPE_CHECKING:
    from gui.probe.pane import ProbePane

PANE_MODULE = "gui.probe.pane"
LOADING = "Loading the probe tools (SSH, charts, run history)…"


def _import_pane() -> None:
    importlib.import_module(PANE_MODULE)


class ProbePlace(QWidget):
    """Signals: ``apply_to_plan(object)`` a PlanRequest with the probe's figures; ``message(str)``
    status text."""

    apply_to_plan = Signal(object)
    message = Signal(str)

    def __init__(
        self,
        executor: Executor,
        plan_request_source: Callable[[], Any] | None = None,
        factory: Callable[..., ProbePane] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setAccessibleName("Probe")
        self.executor = executor
        self.plan_request_source = plan_request_source
        self._factory = factory
        self.pane: ProbePane | None = None
        self._loading = False  # the worker is importing the pane's modules
        self._ready = False  # they are imported
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.status = QLabel(LOADING)
        self.status.setAccessibleName("Probe place status")
        self.status.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.status.setWordWrap(True)
        self.status.hide()
        self._layout.addWidget(self.status)

    def ensure_pane(self) -> ProbePane:
        """Build the pane now (a caller that needs it at once; the import happens here if not done
        yet)."""
        if self.pane is None:
            from gui.probe.pane import ProbePane

            factory = self._factory or ProbePane.create_default
            pane = factory(self.executor, plan_request_source=self.plan_request_source)
            pane.apply_to_plan.connect(self.apply_to_plan)
            pane.message.connect(self.message)
            self.status.hide()
            self._layout.addWidget(pane)
            # a child added while its parent is being shown is not shown by Qt on its own
            pane.show()
            self.pane = pane
        return self.pane

    def _load(self) -> None:
        """Import the pane's modules on a worker, once; the pane is built when they are in."""
        if self._loading:
            return
        self._loading = True
        self.status.setText(LOADING)
        self.status.show()
        charts.preload(self.executor)
        self.executor.submit(_import_pane, self._loaded, self._failed)

    def _loaded(self, _none: object) -> None:
        self._loading, self._ready = False, True
        if self.isVisible():  # else when it is next shown: building it costs the UI thread a moment
            self.ensure_pane()

    def _failed(self, exc: BaseException) -> None:
        self._loading = False  # the next show tries again
        self.status.setText(f"The Probe place could not load: {type(exc).__name__}: {exc}")
        self.status.show()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.pane is None:
            if self._ready:
                self.ensure_pane()
            else:
                self._load()
