"""pyqtgraph views of the chart data in ``core.report`` (bar, scatter, line): the PDF draws the same data.

Bars are horizontal so that long category names (GPU ids, provider names) stay readable on the left axis.
All ``setData`` calls happen on the GUI thread; the data arrives finished from a worker.
"""

from __future__ import annotations

import os

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import pyqtgraph as pg
from PySide6.QtGui import QColor, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from core.report import BarChart, LineChart, ScatterChart
from gui.colors import HIGHLIGHT, MUTED, SERIES_COLORS


def color(i: int) -> QColor:
    return QColor(SERIES_COLORS[i % len(SERIES_COLORS)])


def _palette_colors() -> tuple[QColor, QColor]:
    app = QApplication.instance()
    pal = app.palette() if isinstance(app, QApplication) else QPalette()
    return pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text)


class ChartView(pg.PlotWidget):
    """A plot that redraws itself from one core.report chart; colours follow the palette."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        background, foreground = _palette_colors()
        super().__init__(parent=parent, background=background)
        self.setAccessibleName(name)
        self.setMinimumHeight(220)
        self._fg = foreground
        item = self.getPlotItem()
        for axis in ("left", "bottom"):
            item.getAxis(axis).setPen(pg.mkPen(foreground))
            item.getAxis(axis).setTextPen(pg.mkPen(foreground))
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setMenuEnabled(False)
        self._legend = item.addLegend(offset=(60, 2), labelTextColor=foreground, colCount=4)
        self.summary = ""

    def _reset(self, title: str, x_label: str, y_label: str) -> pg.PlotItem:
        item = self.getPlotItem()
        item.getAxis("left").setWidth(None)
        item.clear()
        self._legend.clear()
        item.setLogMode(False, False)
        item.setTitle(title, color=self._fg)
        item.setLabel("bottom", x_label)
        item.setLabel("left", y_label)
        item.getAxis("left").setTicks(None)
        return item

    def clear_chart(self, message: str = "") -> None:
        self._reset(message, "", "")
        self.summary = message
        self.setAccessibleDescription(message)

    def show_bar(self, chart: BarChart) -> None:
        """Horizontal bars, one row per category; stacked or grouped; optional marker per row."""
        item = self._reset(chart.title, chart.unit, "")
        n = len(chart.categories)
        groups = len(chart.series)
        height = 0.8 if chart.stacked else 0.8 / max(groups, 1)
        left = [0.0] * n
        for s, series in enumerate(chart.series):
            rows = [float(i) if chart.stacked else i - 0.4 + height * (s + 0.5) for i in range(n)]
            bars = pg.BarGraphItem(x0=left if chart.stacked else [0.0] * n, y=rows, height=height,
                                   width=series.values, brush=color(s), pen=pg.mkPen(None), name=series.name)
            item.addItem(bars)
            if chart.stacked:
                left = [a + b for a, b in zip(left, series.values, strict=True)]
        if chart.markers:
            xs: list[float] = []
            ys: list[float] = []
            for i, value in enumerate(chart.markers):
                if value is not None:
                    xs += [value, value]
                    ys += [i - 0.45, i + 0.45]
            line = pg.PlotDataItem(xs, ys, connect="pairs", pen=pg.mkPen(self._fg, width=2),
                                   name=chart.marker_label or "limit")
            item.addItem(line)
        left_axis = item.getAxis("left")
        left_axis.setTicks([[(i, c) for i, c in enumerate(chart.categories)]])
        metrics = QFontMetrics(left_axis.font())
        left_axis.setWidth(max((metrics.horizontalAdvance(c) for c in chart.categories), default=20) + 16)
        item.invertY(True)
        legend_rows = 1 + (len(chart.series) + (1 if chart.markers else 0)) // 4
        item.setYRange(-0.6 - 1.2 * legend_rows, n - 0.4, padding=0)
        biggest = max([*left, *(v for s in chart.series for v in s.values), *(m or 0 for m in chart.markers or [])],
                      default=1.0)
        item.setXRange(0, biggest * 1.05 or 1.0, padding=0)
        self.summary = f"{chart.title}: {n} rows"
        self.setAccessibleDescription(self.summary)

    def show_scatter(self, chart: ScatterChart) -> None:
        """Every point muted, the highlighted ones (Pareto front) coloured and joined in x order."""
        item = self._reset(chart.title, chart.x_label, chart.y_label)
        item.invertY(False)
        rest = [p for p in chart.points if not p.highlight]
        front = sorted((p for p in chart.points if p.highlight), key=lambda p: p.x)
        spots = [{"pos": (p.x, p.y), "data": p.label, "brush": pg.mkBrush(MUTED), "size": 7} for p in rest]
        spots += [{"pos": (p.x, p.y), "data": p.label, "brush": pg.mkBrush(HIGHLIGHT), "size": 10} for p in front]
        scatter = pg.ScatterPlotItem(spots=spots, hoverable=True, pen=pg.mkPen(None),
                                     tip=lambda x, y, data: f"{data}\n{x:.2f} h, ${y:,.2f}")
        item.addItem(scatter)
        if front:
            item.addItem(pg.PlotDataItem([p.x for p in front], [p.y for p in front],
                                         pen=pg.mkPen(HIGHLIGHT, width=2), name=chart.highlight_label))
        item.autoRange()
        self.summary = f"{chart.title}: {len(chart.points)} points, {len(front)} on the Pareto front"
        self.setAccessibleDescription(self.summary)

    def show_line(self, chart: LineChart) -> None:
        item = self._reset(chart.title, chart.x_label, chart.y_label)
        item.invertY(False)
        for s, series in enumerate(chart.series):
            item.addItem(pg.PlotDataItem(chart.x, series.values, pen=pg.mkPen(color(s), width=2),
                                         symbol="o", symbolSize=5, symbolBrush=color(s), name=series.name))
        if chart.vline is not None:
            item.addItem(pg.InfiniteLine(chart.vline, angle=90, pen=pg.mkPen(HIGHLIGHT, style=pg.QtCore.Qt.DashLine),
                                         label=chart.vline_label or "", labelOpts={"color": HIGHLIGHT}))
        item.autoRange()
        if chart.y_max is not None:
            item.setYRange(0, chart.y_max, padding=0.02)
        self.summary = f"{chart.title}: {len(chart.series)} series over {len(chart.x)} points"
        self.setAccessibleDescription(self.summary)
