"""The base of every wizard page: a scrollable body, a page-level error line and isComplete from the state."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget, QWizardPage

from core.report import Analysis
from gui.wizard.fields import FieldBox, make_error_label
from gui.wizard.state import PLAN_PATH, PlanState


class PlanPage(QWizardPage):
    """Blocks Next while any error under ``prefixes`` exists; ``needs_analysis`` pages also wait for a plan.

    Errors that no field on the page shows (cross-field rules, planner errors) go to the page's error line.
    """

    prefixes: tuple[str, ...] = ()
    needs_analysis = False

    def __init__(self, state: PlanState, title: str, subtitle: str) -> None:
        super().__init__()
        self.state = state
        self.setTitle(title)
        self.setSubTitle(subtitle)
        self.setAccessibleName(f"{title} page")
        self.fields: list[FieldBox] = []
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.page_error = make_error_label(f"{title} page")
        self.status = QLabel()
        self.status.setAccessibleName(f"{title} status")
        self.status.setWordWrap(True)
        outer.addWidget(self.page_error)
        outer.addWidget(self.status)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setAccessibleName(f"{title} content")
        self.body_widget = QWidget()
        self.body = QVBoxLayout(self.body_widget)
        scroll.setWidget(self.body_widget)
        outer.addWidget(scroll)
        state.errors_changed.connect(self._errors_changed)
        state.analysis_changed.connect(self._analysis_changed)
        state.busy_changed.connect(self._busy_changed)

    def add_field(self, field: FieldBox) -> FieldBox:
        self.fields.append(field)
        return field

    def field_paths(self) -> set[str]:
        return {p for f in self.fields for p in f.error_paths}

    def page_errors(self) -> dict[str, str]:
        prefixes = self.prefixes + ((PLAN_PATH,) if self.needs_analysis else ())
        return self.state.errors_under(prefixes)

    def isComplete(self) -> bool:
        if self.page_errors():
            return False
        return not self.needs_analysis or (self.state.analysis is not None and not self.state.busy)

    def _errors_changed(self) -> None:
        shown = self.field_paths()
        rest = [m if p in (PLAN_PATH, *self.prefixes) else f"{p}: {m}"
                for p, m in self.page_errors().items() if p not in shown]
        self.page_error.setText("\n".join(rest))
        self.page_error.setVisible(bool(rest))
        self.completeChanged.emit()

    def _busy_changed(self, busy: bool) -> None:
        if self.needs_analysis:
            self.status.setText("Planning…" if busy else "")
        self.completeChanged.emit()

    def _analysis_changed(self, analysis: Analysis | None) -> None:
        if analysis is not None:
            self.show_analysis(analysis)
        else:
            self.clear_analysis()
        self.completeChanged.emit()

    def show_analysis(self, analysis: Analysis) -> None:
        """Update the page's figures; called on the GUI thread with a finished analysis."""

    def clear_analysis(self) -> None:
        """The request cannot be planned: show the page without figures."""

    def initializePage(self) -> None:
        self._errors_changed()
        if self.state.analysis is not None:
            self.show_analysis(self.state.analysis)
