"""The base of every wizard page: the page's answer pinned on top, a scrollable body, a page-level
error line and isComplete from the state.

The answer a page gives (fits? on what? how long? how much?) sits above the scrolled area, so
scrolling down to a table never hides it. The page scrolls as a whole; a table or list inside it
keeps room for a few rows, or the layout would squeeze it to its header and leave the user two
scroll bars to work.

A new plan arrives after every edit, but only the page on screen draws it at once; the others draw
it when they are shown. Redrawing seven pages of tables and charts per keystroke would stall the UI
thread for longer than a frame (docs/performance.md, "Window").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QScrollArea,
    QTableView,
    QVBoxLayout,
    QWidget,
    QWizardPage,
)

from gui.forms import make_error_label, make_hint_label
from gui.wizard.fields import FieldBox
from gui.wizard.state import PLAN_PATH, PlanState, owner_path, under

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis, PlanResult

F = TypeVar("F", bound=FieldBox)
VISIBLE_ROWS = 6  # the least a table in a page shows before its own scroll bar takes over


def make_band_label() -> QLabel:
    """The small line under a page's answer that says how far its likely ranges go (hidden without a
    band)."""
    label = make_hint_label("Likely range")
    label.setWordWrap(True)
    return label


def show_band(label: QLabel, result: PlanResult | None) -> None:
    """The throughput's likely range and how often published runs of this kind fell inside their
    range, with where the ranges come from as the tooltip; hidden when the plan has no band, so
    nothing claims a range."""
    parts: list[str] = []
    source = ""
    if result is not None:  # a cleared page imports nothing: the planner loads with the first plan
        from core.planner import band_notes, band_source, likely_tokens_per_second

        speed = likely_tokens_per_second(result)
        parts = ([f"Throughput {speed}."] if speed else []) + [
            f"{n[0].upper()}{n[1:]}." for n in band_notes(result)
        ]
        source = band_source(result) or ""
    label.setText(" ".join(parts))
    label.setToolTip(source)
    label.setVisible(bool(parts))


class PlanPage(QWizardPage):
    """Blocks Next while any error under ``prefixes`` exists; ``needs_analysis`` pages also wait for
    a plan.

    Errors that no field on the page shows (cross-field rules, planner errors) go to the page's
    error line.

    Signals: ``readiness_changed()`` isComplete() may have changed on the current page. The wizard
    enables Next from it; QWizard's own ``completeChanged`` is never emitted, because QWizard
    answers it by hiding the pages while it updates its buttons, which takes the keyboard focus out
    of the field being typed in.
    """

    readiness_changed = Signal()
    prefixes: tuple[str, ...] = ()
    elsewhere: tuple[str, ...] = ()  # paths under the prefixes that a later page shows and judges
    needs_analysis = False

    def __init__(self, state: PlanState, title: str, subtitle: str) -> None:
        super().__init__()
        self.state = state
        self.setTitle(title)
        self.setSubTitle(subtitle)
        self.setAccessibleName(f"{title} page")
        self.fields: list[FieldBox] = []
        self._shown: Any = _NOTHING  # the analysis the figures show
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        # the first run's "what you are looking at" line (gui/wizard/first_run.py)
        self.intro = QLabel()
        self.intro.setAccessibleName(f"{title} introduction")
        self.intro.setWordWrap(True)
        self.intro.setVisible(False)
        outer.addWidget(self.intro)
        self.page_error = make_error_label(f"{title} page")
        self.status = QLabel()
        self.status.setAccessibleName(f"{title} status")
        self.status.setWordWrap(True)
        # "Planning…" comes and goes with each edit: its line is kept, the page stays put
        if self.needs_analysis:
            self.status.setMinimumHeight(self.status.fontMetrics().height())
        outer.addWidget(self.page_error)
        outer.addWidget(self.status)
        self.pinned = QVBoxLayout()
        outer.addLayout(self.pinned)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setAccessibleName(f"{title} content")
        self.body_widget = QWidget()
        self.body = QVBoxLayout(self.body_widget)
        self.scroll_area.setWidget(self.body_widget)
        outer.addWidget(self.scroll_area, 1)
        self._views_sized = False
        state.errors_changed.connect(self._errors_changed)
        state.analysis_changed.connect(self._analysis_changed)
        state.busy_changed.connect(self._busy_changed)

    def show_intro(self, text: str | None) -> None:
        """The one line that says what this page shows (the first run's sample plan); None hides
        it."""
        self.intro.setText(text or "")
        self.intro.setVisible(bool(text))

    def pin(self, widget: QWidget) -> None:
        """Show `widget` (the page's answer) above the scrolled body, always in sight."""
        self.pinned.addWidget(widget)

    def scroll_to_top(self) -> None:
        """Coming back to a page starts at its top, where its first fields are."""
        self.scroll_area.verticalScrollBar().setValue(0)

    def _size_views(self) -> None:
        """Give every table and list in the body room for VISIBLE_ROWS rows (fewer where its maximum
        says so)."""
        for view in self.body_widget.findChildren(QAbstractItemView):
            # a table's header, a popup list
            if isinstance(view, QHeaderView) or view.window() is not self.window():
                continue
            if isinstance(view, QTableView):
                row = view.verticalHeader().defaultSectionSize()
                header = (
                    0
                    if view.horizontalHeader().isHidden()
                    else view.horizontalHeader().sizeHint().height()
                )
            else:
                # a list row: one line of text and its margins
                row, header = view.fontMetrics().height() + 6, 0
            frame = 2 * view.frameWidth() + view.horizontalScrollBar().sizeHint().height()
            height = min(VISIBLE_ROWS * row + header + frame, view.maximumHeight())
            if view.minimumHeight() < height:
                view.setMinimumHeight(height)

    def add_field(self, field: F) -> F:
        self.fields.append(field)
        return field

    def field_paths(self) -> set[str]:
        return {p for f in self.fields for p in f.error_paths}

    def page_errors(self) -> dict[str, str]:
        """The errors this page answers for. A path in ``elsewhere`` belongs to the page that shows
        its field (tensor parallel sits on the Hardware page, though under "training"): counting it
        here would block this page's Next on an error the person cannot see or fix here."""
        prefixes = self.prefixes + ((PLAN_PATH,) if self.needs_analysis else ())
        return {
            p: m
            for p, m in self.state.errors.items()
            if under(owner_path(p, m), prefixes) and not under(owner_path(p, m), self.elsewhere)
        }

    def isComplete(self) -> bool:
        if self.page_errors():
            return False
        return not self.needs_analysis or (self.state.analysis is not None and not self.state.busy)

    def _is_current(self) -> bool:
        """The wizard's current page, on screen or not (the window may show another place)."""
        wizard = self.wizard()
        return wizard is not None and wizard.currentPage() is self

    def _errors_changed(self) -> None:
        if self.isVisible():
            self._show_page_errors()
        if self._is_current():  # the wizard asks the others' isComplete() when it shows them
            self.readiness_changed.emit()

    def _show_page_errors(self) -> None:
        """The errors no field on the page shows; filled when the page is shown, and on every change
        after."""
        shown = self.field_paths()
        rest = [
            m if p in (PLAN_PATH, *self.prefixes) or m.startswith(p + ".") else f"{p}: {m}"
            for p, m in self.page_errors().items()
            if p not in shown
        ]
        text = "\n".join(rest)
        if text != self.page_error.text():
            self.page_error.setText(text)
            self.page_error.setVisible(bool(rest))

    def _busy_changed(self, busy: bool) -> None:
        if self.isVisible():
            self._show_busy(busy)
        if self._is_current():
            self.readiness_changed.emit()

    def _show_busy(self, busy: bool) -> None:
        text = "Planning…" if busy and self.needs_analysis else ""
        if text != self.status.text():
            self.status.setText(text)

    def _analysis_changed(self, _analysis: Analysis | None) -> None:
        if self.isVisible():
            self.refresh_figures()
        if self._is_current():
            self.readiness_changed.emit()

    def refresh_figures(self) -> None:
        """Draw the state's latest analysis unless the figures already show it."""
        analysis = self.state.analysis
        if analysis is self._shown:
            return
        self._shown = analysis
        if analysis is not None:
            self.show_analysis(analysis)
        else:
            self.clear_analysis()

    def showEvent(self, event: QShowEvent) -> None:
        if not self._views_sized:  # once the subclass has built its body
            self._views_sized = True
            self._size_views()
        super().showEvent(event)
        self._show_page_errors()
        self._show_busy(self.state.busy)
        self.refresh_figures()  # no readiness here: QWizard set the buttons when it showed the page

    def show_analysis(self, analysis: Analysis) -> None:
        """Update the page's figures; called on the GUI thread with a finished analysis."""

    def clear_analysis(self) -> None:
        """The request cannot be planned: show the page without figures."""

    def initializePage(self) -> None:
        self._show_page_errors()
        self.refresh_figures()


_NOTHING = object()
