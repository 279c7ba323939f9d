"""Summary page: the headline, the assumptions with their sources and dates, the sanity checks and
warnings, and the exits."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFormLayout, QHBoxLayout, QLabel, QListWidget, QPushButton, QWidget

from gui.table_model import Row, RowsModel, make_table
from gui.wizard.page import PlanPage, make_band_label, show_band
from gui.wizard.state import PlanState

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis
    from gui.wizard.launch_dialog import LaunchDialog

# The window's words for a key figure where they say more than the report's short label.
LABELS = {"MFU": "Achieved MFU (model-FLOPs utilisation)"}
RANGED = ("Wall time", "Throughput", "Total cost")  # the figures a plan's bands give a likely range


class SummaryPage(PlanPage):
    """Signals: ``save_requested()``, ``export_pdf_requested()``, ``export_json_requested()``."""

    prefixes = ()
    needs_analysis = True
    save_requested = Signal()
    export_pdf_requested = Signal()
    export_json_requested = Signal()

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state, "Summary", "The plan in one line, what it assumes, and what to watch."
        )
        self.headline = QLabel()
        self.headline.setAccessibleName("Plan headline")
        self.headline.setWordWrap(True)
        font = self.headline.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.headline.setFont(font)
        self.pin(self.headline)
        self.band = make_band_label()
        self.pin(self.band)
        self.conclusion = QLabel()
        self.conclusion.setAccessibleName("Plan conclusion")
        self.conclusion.setWordWrap(True)
        self.body.addWidget(self.conclusion)
        self.figures_box = QWidget()
        self.figures = QFormLayout(self.figures_box)
        self.body.addWidget(self.figures_box)
        buttons = QHBoxLayout()
        self.save_button = QPushButton("Save to library")
        self.pdf_button = QPushButton("Export PDF…")
        self.json_button = QPushButton("Export JSON…")
        for button, signal in (
            (self.save_button, self.save_requested),
            (self.pdf_button, self.export_pdf_requested),
            (self.json_button, self.export_json_requested),
        ):
            button.setAccessibleName(button.text().rstrip("…"))
            button.clicked.connect(signal.emit)
            button.setEnabled(False)
            buttons.addWidget(button)
        # DeepSpeed, accelerate, Slurm, ... (launch_dialog.py)
        self.launch_button = QPushButton("Export launch files…")
        self.launch_button.setAccessibleName("Export launch files")
        self.launch_button.clicked.connect(self.open_launch_dialog)
        self.launch_button.setEnabled(False)
        buttons.addWidget(self.launch_button)
        self.launch_dialog: LaunchDialog | None = None
        # the wizard's: the launch files' headers say it
        self.plan_name: Callable[[], str | None] = lambda: None
        buttons.addStretch(1)
        self.body.addLayout(buttons)
        self.body.addWidget(QLabel("Sanity checks"))
        self.sanity = QListWidget()
        self.sanity.setAccessibleName("Sanity checks")
        self.sanity.setWordWrap(True)
        self.sanity.setMaximumHeight(110)
        self.body.addWidget(self.sanity)
        self.body.addWidget(QLabel("Warnings"))
        self.warnings = QListWidget()
        self.warnings.setAccessibleName("Warnings")
        self.warnings.setMaximumHeight(90)
        self.body.addWidget(self.warnings)
        self.body.addWidget(QLabel("Assumptions"))
        self.assumptions = RowsModel(["assumption", "value", "source", "date"], self)
        self.assumptions_view = make_table(self.assumptions, "Assumptions")
        self.assumptions_view.setMinimumHeight(240)
        self.body.addWidget(self.assumptions_view, 1)

    def open_launch_dialog(self) -> None:
        """The export dialog for the plan on screen, window-modal (open(), not exec(): the window
        keeps running)."""
        if self.state.analysis is None:
            return
        # the launch writers load NumPy: only when asked
        from gui.wizard.launch_dialog import LaunchDialog

        self.launch_dialog = LaunchDialog(
            self.state.analysis.result, self.state.executor, self.plan_name(), self
        )
        self.launch_dialog.open()

    def show_analysis(self, analysis: Analysis) -> None:
        from core.planner import (  # loaded by the plan that arrived
            MODE_COSTS,
            band_source,
            conclusion,
            not_fit_text,
            shown_key_figures,
        )

        r = analysis.result
        for button in (self.save_button, self.pdf_button, self.json_button, self.launch_button):
            button.setEnabled(True)
        figures = {k.label: k.value for k in shown_key_figures(r)}
        # what cannot run has no cost: the headline says so, by how much and what would
        verdict = not_fit_text(r)
        self.headline.setText(
            f"{figures['Hardware']} · "
            + (verdict or f"{figures['Wall time']} · {figures[MODE_COSTS]}")
        )
        show_band(self.band, r)
        self.conclusion.setText(conclusion(r))
        while self.figures.rowCount():
            self.figures.removeRow(0)
        source = band_source(r) or ""
        for label, value in figures.items():
            shown = QLabel(value)
            shown.setAccessibleName(LABELS.get(label, label))
            if label in RANGED and "range" in value:
                shown.setToolTip(source)
            self.figures.addRow(LABELS.get(label, label), shown)
        self.warnings.clear()
        self.warnings.addItems(r.warnings or ["none"])
        self.sanity.clear()
        self.sanity.addItems([w.message for w in r.sanity] or ["none"])
        self.assumptions.set_rows(
            [Row([a.name, a.value, a.source, a.date or "—"]) for a in r.assumptions]
        )

    def clear_analysis(self) -> None:
        for button in (self.save_button, self.pdf_button, self.json_button, self.launch_button):
            button.setEnabled(False)
        self.headline.setText("")
        show_band(self.band, None)
        self.conclusion.setText("")
        self.warnings.clear()
        self.sanity.clear()
        self.assumptions.set_rows([])
