"""The planning wizard, embedded in the main window (not a dialog): seven pages over one PlanState."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QWidget, QWizard

from gui import charts
from gui.wizard.fields import set_enabled
from gui.wizard.page_cost import CostPage
from gui.wizard.page_data import DataPage
from gui.wizard.page_hardware import HardwarePage
from gui.wizard.page_memory import MemoryPage
from gui.wizard.page_method import MethodPage
from gui.wizard.page_model import ModelPage
from gui.wizard.page_summary import SummaryPage
from gui.wizard.state import PlanState
from gui.workers import Executor


class PlanWizard(QWizard):
    """Signals: ``save_requested()``, ``export_pdf_requested()``, ``export_json_requested()`` (from the summary).

    ``plan_id`` is the library id the wizard was opened from (None for a new plan), so Save updates it.
    """

    save_requested = Signal()
    export_pdf_requested = Signal()
    export_json_requested = Signal()

    def __init__(self, executor: Executor, parent: QWidget | None = None, debounce_ms: int = 150) -> None:
        super().__init__(parent)
        self.setWindowFlags(Qt.WindowType.Widget)
        self.setWizardStyle(QWizard.WizardStyle.ClassicStyle)
        self.setOption(QWizard.WizardOption.NoCancelButton, True)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage, True)
        self.setOption(QWizard.WizardOption.HaveFinishButtonOnEarlyPages, False)
        self.setAccessibleName("Planning wizard")
        self.state = PlanState(executor, debounce_ms=debounce_ms, parent=self)
        # Import the chart library on a worker before a chart page is first opened, but not while the user types:
        # the import holds the interpreter long enough to stall the UI thread (docs/performance.md, "Window").
        # So: after a second without edits, or on reaching the Method page, the one before the first chart.
        self._charts_preloaded = False
        self._quiet = QTimer(self)
        self._quiet.setSingleShot(True)
        self._quiet.setInterval(1000)
        self._quiet.timeout.connect(self._preload_charts)
        for signal in (self.state.edited, self.state.replaced, self.state.analysis_changed):
            signal.connect(lambda *_args: self._quiet.start())
        self.currentIdChanged.connect(lambda page: self._preload_charts() if page >= 2 else None)
        self._executor = executor
        self.plan_id: int | None = None
        self.plan_name: str | None = None
        self.model_page = ModelPage(self.state)
        self.data_page = DataPage(self.state)
        self.method_page = MethodPage(self.state)
        self.memory_page = MemoryPage(self.state)
        self.hardware_page = HardwarePage(self.state)
        self.cost_page = CostPage(self.state)
        self.summary_page = SummaryPage(self.state)
        for page in self.pages():
            self.addPage(page)
            page.readiness_changed.connect(self._update_buttons)
        self.summary_page.save_requested.connect(self.save_requested)
        self.summary_page.export_pdf_requested.connect(self.export_pdf_requested)
        self.summary_page.export_json_requested.connect(self.export_json_requested)
        self.setButtonText(QWizard.WizardButton.FinishButton, "Save to library")
        for which, name in ((QWizard.WizardButton.NextButton, "Next page"),
                            (QWizard.WizardButton.BackButton, "Previous page"),
                            (QWizard.WizardButton.FinishButton, "Save to library")):
            self.button(which).setAccessibleName(name)

    def _update_buttons(self) -> None:
        """Next (Finish on the last page) follows the current page's isComplete(), set here, not by QWizard.

        QWizard's answer to ``completeChanged`` hides the container of the pages while it updates its buttons,
        and a hidden container hands the keyboard focus to the next widget outside it (the Places list). Plans
        start and arrive, and errors come and go, as the user types: each time the rest of what they typed went
        to the sidebar. Enabling the two buttons hides nothing.
        """
        page = self.currentPage()
        complete = page is not None and page.isComplete()
        last = self.nextId() == -1
        set_enabled(self.button(QWizard.WizardButton.NextButton), complete and not last)
        set_enabled(self.button(QWizard.WizardButton.FinishButton), complete and last)

    def _preload_charts(self) -> None:
        if not self._charts_preloaded:
            self._charts_preloaded = True
            charts.preload(self._executor)

    def pages(self) -> list[Any]:
        return [self.model_page, self.data_page, self.method_page, self.memory_page, self.hardware_page,
                self.cost_page, self.summary_page]

    def load_request(self, raw: dict[str, Any], plan_id: int | None = None, name: str | None = None) -> None:
        """Show a request from a file or the library, starting again at the first page."""
        self.plan_id, self.plan_name = plan_id, name
        self.restart()
        self.state.load(raw)

    def new_plan(self) -> None:
        from gui.wizard.state import DEFAULT_REQUEST

        self.load_request(DEFAULT_REQUEST)

    # An embedded wizard must never close itself: Finish saves, Escape does nothing.
    def done(self, result: int) -> None:
        if result == QWizard.DialogCode.Accepted:
            self.save_requested.emit()

    def reject(self) -> None:
        return
