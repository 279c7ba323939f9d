"""pyqtgraph views of the chart data in ``core.document`` (bar, scatter, line): the PDF draws the
same data.

Title, legend and caption are Qt labels around the plot, not items inside it: they follow the
palette (light or dark), wrap instead of covering the data, and screen readers read them. Bars are
horizontal so that long category names stay readable on the left axis. All drawing happens on the
GUI thread.

pyqtgraph is imported when the first chart is drawn, not at start: its import touches every Qt class
(about a third of a second here), the largest single part of a cold start, and the first chart is
four pages in.
:func:`preload` imports it on a worker while the user pauses (the wizard calls it after a second
without edits, or on the Method page), so that the first draw does not wait either; a chart asked to
draw while that import runs says "drawing the chart…" and draws when it ends, rather than block the
UI thread on it.
"""

from __future__ import annotations

import html
import importlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import shiboken6
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QColor, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

from core.document import BarChart, LineChart, ScatterChart
from core.units import fmt_percent, fmt_tick
from gui.colors import MUTED, highlight_color, is_dark, series_colors
from gui.long_lived import freeze_once

Chart = BarChart | ScatterChart | LineChart
_preloading = False
_imported = threading.Event()
_axis_type: Any = None
WAIT_FOR_IMPORT_S = 3.0
_views: weakref.WeakSet[ChartView] = weakref.WeakSet()  # charts whose plots preload may build


def _pg() -> Any:
    return importlib.import_module("pyqtgraph")


def _import_on_worker() -> None:
    try:
        _pg()
    finally:
        _imported.set()


def preload(executor: Any) -> None:
    """Import pyqtgraph on a worker (once), then build the plots of the charts not yet drawn, one
    per turn of the event loop (about 15 ms each, 30 ms apart), so that opening a chart page only
    draws."""
    global _preloading
    if _imported.is_set():  # a later window: only its plots are missing
        QTimer.singleShot(0, _prepare_next)
        return
    if _preloading:
        return
    _preloading = True
    executor.submit(_import_on_worker, _imported_on_worker, lambda _exc: None)


def _imported_on_worker(_none: None) -> None:
    """On the UI thread, once pyqtgraph is in: keep its modules out of full collections, then build
    plots."""
    freeze_once("pyqtgraph")
    QTimer.singleShot(0, _prepare_next)


def _importing() -> bool:
    """pyqtgraph is being imported on a worker: drawing now would wait for it on the UI thread."""
    return _preloading and not _imported.is_set()


def _prepare_next() -> None:
    for view in list(_views):
        if shiboken6.isValid(view) and view._plot is None:
            view.prepare()
            QTimer.singleShot(30, _prepare_next)  # room for input between two
            return


def _compact_axis(orientation: str) -> Any:
    """An axis whose tick labels read 1.5M, 200k or 40% rather than 1.5e+06."""
    global _axis_type
    pg = _pg()
    if _axis_type is None:
        base: Any = pg.AxisItem

        class CompactAxis(base):
            formatter: Callable[[float], str] = staticmethod(fmt_tick)

            def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
                return [self.formatter(v * scale) for v in values]

        _axis_type = CompactAxis
    return _axis_type(orientation)


def _label(name: str, *, bold: bool = False, center: bool = False) -> QLabel:
    label = QLabel()
    label.setAccessibleName(name)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    if center:
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    if bold:
        font = label.font()
        font.setBold(True)
        label.setFont(font)
    label.hide()
    return label


class ChartView(QWidget):
    """One chart from core.document; redrawn when the palette changes (the system switching
    light/dark)."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(name)
        self.setMinimumHeight(220)
        self.summary = ""
        self._name = name
        self._chart: Chart | None = None
        self._plot: Any = None
        self._axes: dict[str, Any] = {}
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(2, 2, 2, 2)
        self._layout.setSpacing(3)
        self.title = _label(f"{name} title", bold=True, center=True)
        self.legend = _label(f"{name} legend", center=True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.message = _label(f"{name} message", center=True)
        self.caption = _label(f"{name} caption")
        for widget in (self.title, self.legend, self.message, self.caption):
            self._layout.addWidget(widget, 1 if widget is self.message else 0)
        self._tint_labels()
        _views.add(self)

    @property
    def chart(self) -> Chart | None:
        """The chart on screen (None when it shows a message instead)."""
        return self._chart

    # ---- palette

    def _colors(self) -> tuple[QColor, QColor, bool]:
        pal = self.palette()
        return pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text), is_dark(pal)

    def _tint_labels(self) -> None:
        """Message and caption take the app palette's placeholder grey (a style sheet would keep the
        grey of the palette it was applied under)."""
        grey = QApplication.palette().color(QPalette.ColorRole.PlaceholderText)
        for label in (self.message, self.caption):
            pal = label.palette()
            if pal.color(QPalette.ColorRole.WindowText) != grey:
                pal.setColor(QPalette.ColorRole.WindowText, grey)
                label.setPalette(pal)

    def _apply_palette(self) -> None:
        pg = _pg()
        background, foreground, _dark = self._colors()
        self._plot.setBackground(background)
        for axis in self._axes.values():
            axis.setPen(pg.mkPen(foreground))
            axis.setTextPen(pg.mkPen(foreground))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self._tint_labels()
            if self._plot is not None:
                self._apply_palette()
                if self._chart is not None:
                    self._draw(self._chart)

    # ---- public

    def clear_chart(self, message: str = "") -> None:
        """Show a message where the chart would be (no plan, nothing to draw)."""
        self._chart = None
        for widget in (self.title, self.legend, self.caption):
            widget.hide()
        if self._plot is not None:
            self._plot.getPlotItem().clear()
            self._plot.hide()
        self.message.setText(message)
        self.message.setVisible(bool(message))
        self.summary = message
        self.setAccessibleDescription(message)

    def show_bar(self, chart: BarChart) -> None:
        """Horizontal bars, one row per category; stacked or grouped; optional marker line per
        row."""
        self._show(chart, f"{chart.title}: {len(chart.categories)} rows")

    def show_scatter(self, chart: ScatterChart) -> None:
        """Every point muted, the highlighted ones (Pareto front) coloured and joined in x order."""
        front = sum(1 for p in chart.points if p.highlight)
        self._show(chart, f"{chart.title}: {len(chart.points)} points, {front} on the Pareto front")

    def show_line(self, chart: LineChart) -> None:
        self._show(chart, f"{chart.title}: {len(chart.series)} series over {len(chart.x)} points")

    # ---- drawing

    def _show(self, chart: Chart, summary: str) -> None:
        if chart == self._chart and self._plot is not None and not self._plot.isHidden():
            return  # the same figures: nothing to redraw
        self._chart = chart
        self.summary = summary
        self.setAccessibleDescription(summary + (f". {chart.caption}" if chart.caption else ""))
        if _importing():  # draw when the worker is done, rather than wait for it here
            self.message.setText("drawing the chart…")
            self.message.show()
            self._draw_when_imported(chart, time.monotonic() + WAIT_FOR_IMPORT_S)
            return
        self._draw(chart)

    def _draw_when_imported(self, chart: Chart, give_up: float) -> None:
        if chart is not self._chart:
            return  # a newer chart (or a message) replaced it meanwhile
        if _importing() and time.monotonic() < give_up:
            QTimer.singleShot(40, self, lambda: self._draw_when_imported(chart, give_up))
            return
        self._draw(chart)

    def prepare(self) -> None:
        """Build the (hidden) plot now, so that the first draw does not pay for it."""
        if self._plot is not None:
            return
        pg = _pg()
        self._axes = {"left": _compact_axis("left"), "bottom": _compact_axis("bottom")}
        plot = pg.PlotWidget(axisItems=self._axes)
        plot.setAccessibleName(f"{self._name} plot")
        item = plot.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.setMouseEnabled(False, False)
        item.showGrid(x=True, y=True, alpha=0.15)
        plot.hide()
        self._layout.insertWidget(2, plot, 1)
        self._plot = plot
        self._apply_palette()

    def _ensure_plot(self) -> Any:
        self.prepare()
        self.message.hide()
        self._plot.show()
        return self._plot.getPlotItem()

    def _draw(self, chart: Chart) -> None:
        item = self._ensure_plot()
        item.clear()
        self.title.setText(chart.title)
        self.title.show()
        self.caption.setText(chart.caption or "")
        self.caption.setVisible(bool(chart.caption))
        left, bottom = self._axes["left"], self._axes["bottom"]
        left.setTicks(None)
        left.setWidth(None)
        left.formatter = fmt_tick
        bottom.formatter = fmt_tick
        item.invertY(False)
        _background, foreground, dark = self._colors()
        if isinstance(chart, BarChart):
            entries = self._bar(item, chart, foreground, dark)
            item.setLabel("bottom", chart.unit)
            item.setLabel("left", "")
        elif isinstance(chart, ScatterChart):
            entries = self._scatter(item, chart, dark)
            item.setLabel("bottom", chart.x_label)
            item.setLabel("left", chart.y_label)
        else:
            entries = self._line(item, chart, dark)
            item.setLabel("bottom", chart.x_label)
            item.setLabel("left", chart.y_label)
        for axis in (left, bottom):
            axis.picture = None  # the formatter may have changed: draw the tick labels again
            axis.update()
        self.legend.setText(
            "&nbsp;&nbsp;&nbsp; ".join(
                f'<span style="color:{c}">{symbol}</span>&nbsp;{html.escape(name)}'
                for symbol, c, name in entries
            )
        )
        self.legend.setVisible(bool(entries))

    def _bar(
        self, item: Any, chart: BarChart, foreground: QColor, dark: bool
    ) -> list[tuple[str, str, str]]:
        pg = _pg()
        colors = series_colors(dark)
        labels = chart.labels()
        n = len(labels)
        height = 0.8 if chart.stacked else 0.8 / max(len(chart.series), 1)
        left = [0.0] * n
        entries = []
        for s, series in enumerate(chart.series):
            c = colors[s % len(colors)]
            rows = [float(i) if chart.stacked else i - 0.4 + height * (s + 0.5) for i in range(n)]
            item.addItem(
                pg.BarGraphItem(
                    x0=left if chart.stacked else [0.0] * n,
                    y=rows,
                    height=height,
                    width=series.values,
                    brush=QColor(c),
                    pen=pg.mkPen(None),
                )
            )
            entries.append(("■", c, series.name))
            if chart.stacked:
                left = [a + b for a, b in zip(left, series.values, strict=True)]
        if chart.markers:
            xs: list[float] = []
            ys: list[float] = []
            for i, value in enumerate(chart.markers):
                if value is not None:
                    xs += [value, value]
                    ys += [i - 0.45, i + 0.45]
            item.addItem(
                pg.PlotDataItem(xs, ys, connect="pairs", pen=pg.mkPen(foreground, width=2))
            )
            entries.append(("┃", foreground.name(), chart.marker_label or "limit"))
        axis = self._axes["left"]
        axis.setTicks([list(enumerate(labels))])
        metrics = QFontMetrics(axis.font())
        axis.setWidth(max((metrics.horizontalAdvance(c) for c in labels), default=20) + 16)
        item.invertY(True)
        item.setYRange(-0.6, n - 0.4, padding=0)
        ends = [
            *left,
            *(v for s in chart.series for v in s.values),
            *(m or 0.0 for m in chart.markers or []),
        ]
        item.setXRange(0, max(ends, default=1.0) * 1.05 or 1.0, padding=0)
        return entries

    def _scatter(self, item: Any, chart: ScatterChart, dark: bool) -> list[tuple[str, str, str]]:
        pg = _pg()
        hl = highlight_color(dark)
        rest = [p for p in chart.points if not p.highlight]
        front = sorted((p for p in chart.points if p.highlight), key=lambda p: p.x)
        spots = [
            {"pos": (p.x, p.y), "data": p.label, "brush": pg.mkBrush(MUTED), "size": 7}
            for p in rest
        ]
        spots += [
            {"pos": (p.x, p.y), "data": p.label, "brush": pg.mkBrush(hl), "size": 10} for p in front
        ]
        item.addItem(
            pg.ScatterPlotItem(
                spots=spots,
                hoverable=True,
                pen=pg.mkPen(None),
                tip=lambda x, y, data: f"{data}\n{x:.2f} h, ${y:,.2f}",
            )
        )
        if front:
            item.addItem(
                pg.PlotDataItem(
                    [p.x for p in front], [p.y for p in front], pen=pg.mkPen(hl, width=2)
                )
            )
        if chart.points:
            item.setXRange(0, max(p.x for p in chart.points) * 1.06 or 1.0, padding=0)
            item.setYRange(0, max(p.y for p in chart.points) * 1.08 or 1.0, padding=0)
        return [("●", MUTED, "configuration"), ("●", hl, chart.highlight_label)]

    def _line(self, item: Any, chart: LineChart, dark: bool) -> list[tuple[str, str, str]]:
        pg = _pg()
        colors = series_colors(dark)
        hl = highlight_color(dark)
        entries = []
        for s, series in enumerate(chart.series):
            c = colors[s % len(colors)]
            dashed = series.style == "dashed"
            pen = pg.mkPen(
                c, width=2, style=Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine
            )
            item.addItem(
                pg.PlotDataItem(
                    chart.x,
                    series.values,
                    pen=pen,
                    symbol=None if dashed else "o",
                    symbolSize=5,
                    symbolBrush=QColor(c),
                    symbolPen=pg.mkPen(None),
                )
            )
            entries.append(("┅" if dashed else "━", c, series.name))
        if chart.x_percent:
            self._axes["bottom"].formatter = fmt_percent
        if chart.vline is not None:
            label = chart.vline_label or ""
            if chart.x_percent:
                label = f"{label} {chart.vline:.0%}".strip()
            item.addItem(
                pg.InfiniteLine(
                    chart.vline,
                    angle=90,
                    pen=pg.mkPen(hl, style=Qt.PenStyle.DashLine),
                    label=label,
                    labelOpts={"color": hl, "position": 0.9},
                )
            )
        values = [v for s in chart.series for v in s.values]
        if chart.x:
            item.setXRange(min(0.0, min(chart.x)), max(chart.x), padding=0.02)
        top = max(values, default=1.0)
        if chart.y_max is not None:
            top = min(top, chart.y_max)
        item.setYRange(min(0.0, min(values, default=0.0)), top or 1.0, padding=0.04)
        return entries
