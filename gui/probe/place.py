"""The Probe place as the main window holds it: an empty page that builds the pane the first time it is shown.

The pane needs paramiko, pyqtgraph and the probe history; importing them costs about half a second, which a
cold start must not pay for a place the user may never open. Signals are forwarded from the pane.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gui.workers import Executor

if TYPE_CHECKING:
    from gui.probe.pane import ProbePane


class ProbePlace(QWidget):
    """Signals: ``apply_to_plan(object)`` a PlanRequest with the probe's figures; ``message(str)`` status text."""

    apply_to_plan = Signal(object)
    message = Signal(str)

    def __init__(self, executor: Executor, plan_request_source: Callable[[], Any] | None = None,
                 factory: Callable[..., ProbePane] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Probe")
        self.executor = executor
        self.plan_request_source = plan_request_source
        self._factory = factory
        self.pane: ProbePane | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    def ensure_pane(self) -> ProbePane:
        """Build the pane now (first show, or a caller that needs it)."""
        if self.pane is None:
            from gui.probe.pane import ProbePane

            factory = self._factory or ProbePane.create_default
            pane = factory(self.executor, plan_request_source=self.plan_request_source)
            pane.apply_to_plan.connect(self.apply_to_plan)
            pane.message.connect(self.message)
            self._layout.addWidget(pane)
            pane.show()  # a child added while its parent is being shown is not shown by Qt on its own
            self.pane = pane
        return self.pane

    def showEvent(self, event: QShowEvent) -> None:
        self.ensure_pane()
        super().showEvent(event)
