"""The Probe place's right side: the Live tab (run charts beside a cluster's node table), the
Scorecard tab (the verdict and its export buttons) and the History tab.

It holds widgets only, as ``control_column`` does for the left side; the pane wires what they ask
for (apply to the plan, reopen, compare, export) and ``run_display`` draws a run into them.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from core.probes import ProbeStore
from gui.probe.exports import export_buttons
from gui.probe.history import HistoryView
from gui.probe.node_table import NodeTable, with_nodes
from gui.probe.run_charts import RunCharts
from gui.probe.scorecard_view import ScorecardView

LIVE, SCORECARD, HISTORY = range(3)  # the tabs, in order


class ResultTabs(QTabWidget):
    """The three tabs; `export_pdf` and `export_json` are called with no argument (the run
    shown)."""

    def __init__(
        self,
        store: ProbeStore,
        export_pdf: Callable[[], object],
        export_json: Callable[[], object],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setAccessibleName("Probe views")
        self.run_charts, self.node_table = RunCharts(), NodeTable()
        self.addTab(with_nodes(self.node_table, self.run_charts), "Live")
        self.scorecard_view = ScorecardView()
        score_tab = QWidget()
        score_layout = QVBoxLayout(score_tab)
        score_layout.addWidget(self.scorecard_view, 1)
        row, self.export_pdf_button, self.export_json_button = export_buttons(
            export_pdf, export_json
        )
        score_layout.addLayout(row)
        self.addTab(score_tab, "Scorecard")
        self.history = HistoryView(store)
        self.addTab(self.history, "History")
