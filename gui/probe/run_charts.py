"""The Probe place's Live tab: which run is shown, the GPU metrics as they stream, and the result
charts (NCCL busbw, storage, compute, host CPU), each of which says why when it stays empty.

The pane feeds it runner points and asks it to repaint from its one redraw timer; where a point goes
and why a chart is empty are worked out in ``run_feed``, without widgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QGridLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from core.probes import ProbeOutcome
from gui.probe.live_charts import LiveGpuCharts
from gui.probe.point_charts import PointChart
from gui.probe.run_feed import chart_notes, gpu_chart_note, route_point
from gui.probe.staged import StagedWidgets, make_in_turns

ON_DEMAND_CHARTS = ("compute", "cpu", "step")  # hidden until their first point arrives
# The result charts, left to right: title, x label, y label and options.
POINT_CHARTS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "busbw": ("All-reduce bus bandwidth", "message size", "busbw (GB/s)", {"log_x": True}),
    "throughput": ("Storage throughput", "time (s)", "MB/s", {}),
    "iops": ("Storage IOPS", "time (s)", "IOPS", {}),
    "compute": ("Compute", "run time (s)", "TFLOP/s", {"small_unit": ("GFLOP/s", 1e3)}),
    "cpu": ("Host CPU", "run time (s)", "% or °C", {}),
    "step": ("Step: one layer", "repetition", "ms", {}),
}


class RunCharts(QWidget):
    """The line naming the shown run, the live GPU charts above and the result charts below."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        self.showing = QLabel("")
        self.showing.setAccessibleName("Shown run")
        layout.addWidget(self.showing)
        split = QSplitter(Qt.Orientation.Vertical)
        self.gpu_charts = LiveGpuCharts()
        split.addWidget(self.gpu_charts)
        results = QWidget()
        row = QGridLayout(results)
        row.setContentsMargins(0, 0, 0, 0)

        def make(key: str) -> PointChart:
            title, x_label, y_label, options = POINT_CHARTS[key]
            chart = PointChart(title, x_label, y_label, **options)
            row.addWidget(chart, 0, list(POINT_CHARTS).index(key))
            chart.setHidden(key in ON_DEMAND_CHARTS)
            return chart

        # made one per event-loop turn once shown (gui.probe.staged): ~20 ms each
        self.point_charts: StagedWidgets[PointChart] = StagedWidgets(list(POINT_CHARTS), make)
        split.addWidget(results)
        split.setSizes([600, 260])
        layout.addWidget(split, 1)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        make_in_turns(self, self.gpu_charts.plots, self.point_charts)

    def clear(self) -> None:
        self.gpu_charts.clear()
        for chart in self.point_charts.values():
            chart.clear_points()
        for key in ON_DEMAND_CHARTS:
            if key in self.point_charts:  # one not made yet is hidden when it is
                self.point_charts[key].hide()

    def add_point(self, series: str, x: float, y: float, label: str = "", t: float = 0.0) -> None:
        """Route one runner point to its chart (painted by :meth:`redraw_points`)."""
        key, name, x = route_point(series, x, label, t)
        chart = self.point_charts[key]
        if chart.isHidden():
            chart.show()
        chart.add(name, x, y, label)

    def redraw_points(self) -> None:
        for chart in self.point_charts.values():
            chart.redraw()

    def note_empty(
        self,
        gpus: bool | None,
        probes: Sequence[str],
        outcomes: Sequence[ProbeOutcome],
        ended: bool,
    ) -> None:
        """Say on each chart still empty why: no GPU (``gpus`` False), its probe skipped, failed or
        not in the suite."""
        note = gpu_chart_note(gpus)
        if note is not None:
            self.gpu_charts.say_empty(note)
        for key, text in chart_notes(probes, outcomes, ended).items():
            self.point_charts[key].say_empty(text)
