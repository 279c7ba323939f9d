"""The planning wizard, embedded in the main window (not a dialog): seven pages over one PlanState.

Beside the pages, a step list says where the user is ("Step 3 of 7 — Method") and jumps to any step
whose previous steps are valid, so a plan opened with an error on a late page can be fixed there
without Next. The wizard also knows which library plan it shows and whether it holds edits not saved
yet: the window asks before anything replaces them and marks its title.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget, QWizard

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
    """Signals: ``save_requested()``, ``export_pdf_requested()``, ``export_json_requested()`` (from
    the summary); ``document_changed()`` the plan's name changed, or whether it has unsaved edits.

    ``plan_id`` is the library id the wizard was opened from (None for a new plan), so Save updates
    it.
    """

    save_requested = Signal()
    export_pdf_requested = Signal()
    export_json_requested = Signal()
    document_changed = Signal()

    def __init__(
        self, executor: Executor, parent: QWidget | None = None, debounce_ms: int = 150
    ) -> None:
        super().__init__(parent)
        self.setWindowFlags(Qt.WindowType.Widget)
        self.setWizardStyle(QWizard.WizardStyle.ClassicStyle)
        self.setOption(QWizard.WizardOption.NoCancelButton, True)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage, True)
        self.setOption(QWizard.WizardOption.HaveFinishButtonOnEarlyPages, False)
        self.setAccessibleName("Planning wizard")
        self.state = PlanState(executor, debounce_ms=debounce_ms, parent=self)
        # Import the chart library on a worker before a chart page is first opened, but not while
        # the user types: the import holds the interpreter long enough to stall the UI thread
        # (docs/performance.md, "Window"). So: after a second without edits, or on reaching the
        # Method page, the one before the first chart.
        self._charts_preloaded = False
        self._quiet = QTimer(self)
        self._quiet.setSingleShot(True)
        self._quiet.setInterval(1000)
        self._quiet.timeout.connect(self._preload_charts)
        for signal in (self.state.edited, self.state.replaced, self.state.analysis_changed):
            signal.connect(self._restart_quiet)
        self.currentIdChanged.connect(lambda page: self._preload_charts() if page >= 2 else None)
        self._executor = executor
        self.plan_id: int | None = None
        self.plan_name: str | None = None
        # the request as saved or opened; None: never saved anywhere
        self._saved_raw: dict[str, Any] | None = None
        self._modified = False
        self.state.edited.connect(self._check_modified)
        self.state.replaced.connect(self._check_modified)
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
        self.summary_page.plan_name = lambda: self.plan_name
        self.summary_page.save_requested.connect(self.save_requested)
        self.summary_page.export_pdf_requested.connect(self.export_pdf_requested)
        self.summary_page.export_json_requested.connect(self.export_json_requested)
        self.setButtonText(QWizard.WizardButton.FinishButton, "Save to library")
        for which, name in (
            (QWizard.WizardButton.NextButton, "Next page"),
            (QWizard.WizardButton.BackButton, "Previous page"),
            (QWizard.WizardButton.FinishButton, "Save to library"),
        ):
            self.button(which).setAccessibleName(name)
        # kept here: QWizard takes it over only when it lays out a page
        self.step_panel = self._make_steps()
        self.setSideWidget(self.step_panel)
        self.currentIdChanged.connect(self._page_changed)
        self.state.errors_changed.connect(self._refresh_steps)
        self._page_changed(self.currentId())
        # the default plan is nothing to save yet
        self._saved_raw, self._modified = self.state.raw(), False

    # ---- steps

    def _make_steps(self) -> QWidget:
        side = QWidget()
        column = QVBoxLayout(side)
        column.setContentsMargins(0, 0, 6, 0)
        self.step_label = QLabel()
        self.step_label.setAccessibleName("Current step")
        self.step_label.setWordWrap(True)
        font = self.step_label.font()
        font.setBold(True)
        self.step_label.setFont(font)
        self.steps = QListWidget()
        self.steps.setAccessibleName("Steps")
        for i, page in enumerate(self.pages(), start=1):
            self.steps.addItem(QListWidgetItem(f"{i}. {page.title()}"))
        self.steps.setFixedWidth(self.steps.sizeHintForColumn(0) + 2 * self.steps.frameWidth() + 12)
        self.steps.itemClicked.connect(lambda item: self.go_to(self.steps.row(item)))
        self.steps.itemActivated.connect(lambda item: self.go_to(self.steps.row(item)))
        column.addWidget(self.step_label)
        column.addWidget(self.steps, 1)
        side.setFixedWidth(self.steps.width() + 6)
        return side

    def blocking_page(self, step: int) -> Any:
        """The first page before `step` that has errors (the one to fix before `step` can be shown),
        or None."""
        return next((page for page in self.pages()[:step] if page.page_errors()), None)

    def go_to(self, step: int) -> bool:
        """Show step `step` (from 0) when every step before it is valid; True when it is on
        screen."""
        if not 0 <= step < len(self.pages()) or self.blocking_page(step) is not None:
            self._refresh_steps()
            return False
        while self.currentId() != step:
            before = self.currentId()
            if before > step:
                self.back()
            else:
                self.next()
            if self.currentId() == before:
                break
        self._refresh_steps()
        return self.currentId() == step

    def _page_changed(self, step: int) -> None:
        pages = self.pages()
        if 0 <= step < len(pages):
            pages[step].scroll_to_top()
            self.step_label.setText(f"Step {step + 1} of {len(pages)} — {pages[step].title()}")
        self._refresh_steps()

    def _refresh_steps(self) -> None:
        """Grey out the steps the user cannot reach yet and say why; select the current one."""
        blocker = None
        for step, page in enumerate(self.pages()):
            item = self.steps.item(step)
            flags = Qt.ItemFlag.ItemIsSelectable | (
                Qt.ItemFlag.NoItemFlags if blocker else Qt.ItemFlag.ItemIsEnabled
            )
            if item.flags() != flags:
                item.setFlags(flags)
            tip = (
                f"Fix the {blocker.title()} page first"
                if blocker
                else f"Go to the {page.title()} page"
            )
            if item.toolTip() != tip:
                item.setToolTip(tip)
            if blocker is None and page.page_errors():
                blocker = page
        if self.steps.currentRow() != self.currentId():
            self.steps.blockSignals(True)
            self.steps.setCurrentRow(self.currentId())
            self.steps.blockSignals(False)

    # ---- the plan being edited

    @property
    def display_name(self) -> str:
        return self.plan_name or "New plan"

    def is_modified(self) -> bool:
        """True when the request holds edits that are not in the library (or the file) it came
        from."""
        return self._modified

    def _check_modified(self) -> None:
        modified = self._saved_raw is None or self.state.raw() != self._saved_raw
        if modified != self._modified:
            self._modified = modified
            self.document_changed.emit()

    def mark_saved(self, plan_id: int, name: str) -> None:
        """The request as it is now is the library's plan `plan_id`, named `name`."""
        self.plan_id, self.plan_name = plan_id, name
        self._saved_raw = self.state.raw()
        self._modified = False
        self.document_changed.emit()

    def rename(self, name: str) -> None:
        """The library renamed the plan shown here."""
        self.plan_name = name
        self.document_changed.emit()

    def shutdown(self) -> None:
        """The window closes: no timer of the wizard fires and no plan starts after this."""
        self._charts_preloaded = True  # a closed window has nothing to preload for
        self._quiet.stop()
        self.state.stop()

    def _restart_quiet(self, *_args: object) -> None:
        if not self._charts_preloaded:
            self._quiet.start()

    def _update_buttons(self) -> None:
        """Next (Finish on the last page) follows the current page's isComplete(), set here, not by
        QWizard.

        QWizard's answer to ``completeChanged`` hides the container of the pages while it updates
        its buttons, and a hidden container hands the keyboard focus to the next widget outside it
        (the Places list). Plans start and arrive, and errors come and go, as the user types: each
        time the rest of what they typed went to the sidebar. Enabling the two buttons hides
        nothing.
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
        return [
            self.model_page,
            self.data_page,
            self.method_page,
            self.memory_page,
            self.hardware_page,
            self.cost_page,
            self.summary_page,
        ]

    def load_request(
        self,
        raw: dict[str, Any],
        plan_id: int | None = None,
        name: str | None = None,
        saved: bool = True,
    ) -> None:
        """Show a request from a file or the library, starting again at the first page.

        ``saved=False``: the request exists nowhere else (one made from a probe run), so it counts
        as unsaved.
        """
        self.plan_id, self.plan_name = plan_id, name
        for page in self.pages():
            page.show_intro(None)  # the first run's lines belong to the sample plan only
        self.model_page.clear_filter()
        self.restart()
        self.state.load(raw)
        self._saved_raw = self.state.raw() if saved else None
        self._modified = not saved
        self.document_changed.emit()

    def new_plan(self) -> None:
        from gui.wizard.state import DEFAULT_REQUEST

        self.load_request(DEFAULT_REQUEST)

    # An embedded wizard must never close itself: Finish saves, Escape does nothing.
    def done(self, result: int) -> None:
        if result == QWizard.DialogCode.Accepted:
            self.save_requested.emit()

    def reject(self) -> None:
        return
