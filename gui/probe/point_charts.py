"""Low-rate result charts: NCCL bus bandwidth against message size (log x) and fio figures over
time.

Points arrive a few per second at most, but they are still painted from the pane's redraw timer:
`add` only appends and marks the chart dirty.

As in ``gui.charts``, the title and the legend are Qt labels above and below the plot, not items
inside it: they wrap instead of being cut off in a narrow chart, and the legend never sits on the
points (inside the plot it hid the top left corner, where a storage run's first figures land). A
chart with nothing to draw says why in its middle (:class:`ChartNote`), e.g. "skipped: no GPU".
"""

from __future__ import annotations

import html
import math
import os
from typing import Any

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gui.colors import palette_colors, series_color

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def fmt_size(n: float) -> str:
    """A message size as nccl-tests sweeps it (powers of two): 8 B, 1 KiB, 128 MiB, 16 GiB."""
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.3g} {_BYTE_UNITS[unit]}".replace(".0 ", " ")


class SizeAxis(pg.AxisItem):
    """Bottom axis in log mode with ticks at powers of two (nccl-tests sweeps by ×2) labelled as
    byte sizes."""

    PX_PER_LABEL = 64

    def tickValues(
        self, minVal: float, maxVal: float, size: float
    ) -> list[tuple[float, list[float]]]:
        if (
            not self.logMode
            or not (math.isfinite(minVal) and math.isfinite(maxVal))
            or maxVal <= minVal
        ):
            return list(super().tickValues(minVal, maxVal, size))
        lo, hi = math.ceil(minVal / math.log10(2)), math.floor(maxVal / math.log10(2))
        most = max(2, int(size // self.PX_PER_LABEL))
        step = 1
        while (hi - lo) // step + 1 > most:
            step *= 2
        first = lo + (-lo) % step
        return [(step * math.log10(2), [k * math.log10(2) for k in range(first, hi + 1, step)])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        if not self.logMode:
            return list(super().tickStrings(values, scale, spacing))
        return [fmt_size(round(10**v)) if math.isfinite(v) else "" for v in values]


class ChartNote(QLabel):
    """A sentence across the middle of an empty chart's plot area ("skipped: no GPU"), wrapped
    within it and following its size; hidden while there is nothing to say. Mouse events go through
    to the plot."""

    def __init__(self, plot: pg.PlotWidget, name: str) -> None:
        super().__init__(plot)
        self.plot = plot
        self.setAccessibleName(f"{name} note")
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setMargin(6)
        self.hide()
        plot.getPlotItem().getViewBox().sigResized.connect(lambda _vb: self._fit())

    def say(self, text: str | None) -> None:
        self.setText(text or "")
        self.setVisible(bool(text))
        if text:
            self._fit()
            self.raise_()

    def _fit(self) -> None:
        """Cover the plot area (inside the axes), so the sentence never sits on the axis labels."""
        if self.isHidden():
            return
        box = self.plot.getPlotItem().getViewBox()
        area = self.plot.mapFromScene(box.sceneBoundingRect()).boundingRect()
        self.setGeometry(area if area.width() > 40 and area.height() > 20 else self.plot.rect())


class PointChart(QWidget):
    """Named series of (x, y) points with labels; redrawn from a timer via :meth:`redraw`.

    ``small_unit`` ('GFLOP/s', 1e3): when every value is below 1 in ``y_label``'s unit, the axis
    shows them scaled into that unit, so a CPU's matmul reads 170 GFLOP/s rather than 0.17 TFLOP/s.
    Points stay in the unit given.
    """

    def __init__(
        self,
        title: str,
        x_label: str,
        y_label: str,
        log_x: bool = False,
        small_unit: tuple[str, float] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        background, foreground = palette_colors()
        axis: dict[str, Any] = {"bottom": SizeAxis("bottom")} if log_x else {}
        if log_x:
            axis["bottom"].enableAutoSIPrefix(False)
        self.setAccessibleName(f"{title} chart")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        self.title_label = QLabel(title)
        self.title_label.setAccessibleName(f"{title} chart title")
        self.title_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title_label.setWordWrap(True)
        layout.addWidget(self.title_label)
        self.plot = pg.PlotWidget(background=background, axisItems=axis)
        self.plot.setMinimumHeight(130)
        layout.addWidget(self.plot, 1)
        self.legend = QLabel("")
        self.legend.setAccessibleName(f"{title} chart legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.legend.hide()
        layout.addWidget(self.legend)
        self.note = ChartNote(self.plot, f"{title} chart")
        small = self.legend.font()
        small.setPointSizeF(max(small.pointSizeF() - 1, 7.0))
        self.legend.setFont(small)
        self.title, self.log_x, self._fg = title, log_x, foreground
        self.y_label, self.small_unit = y_label, small_unit
        item = self.plot.getPlotItem()
        for name in ("left", "bottom"):
            item.getAxis(name).setPen(pg.mkPen(foreground))
            item.getAxis(name).setTextPen(pg.mkPen(foreground))
        # '(x0.001)' on the label reads as a unit of its own
        item.getAxis("left").enableAutoSIPrefix(False)
        item.setLabel("bottom", x_label)
        item.setLabel("left", y_label)
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setMenuEnabled(False)
        item.setLogMode(x=log_x, y=False)
        self.series: dict[str, tuple[list[float], list[float]]] = {}
        self.labels: dict[str, list[str]] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.y_scale = 1.0
        self._dirty = False
        self._empty_axes()

    def _empty_axes(self) -> None:
        """The axes of a chart with no points: the unit as named, 0 to 1, or nccl-tests' usual
        sweep."""
        self.y_scale = 1.0
        item = self.getPlotItem()
        item.setLabel("left", self.y_label)
        if self.log_x:
            item.setXRange(math.log10(8), math.log10(2**34), padding=0.02)
        else:
            item.setXRange(0.0, 1.0, padding=0)
        item.setYRange(0.0, 1.0, padding=0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """A wrapped label only asks for one line's height; ask for all its lines, so that the
        layout shrinks the plot instead of drawing the legend over the axis."""
        super().resizeEvent(event)
        for label in (self.title_label, self.legend):
            label.setMinimumHeight(
                label.heightForWidth(max(self.width(), 1)) if label.text() else 0
            )

    def getPlotItem(self) -> pg.PlotItem:
        """The plot's item (pyqtgraph's name, so callers can treat the chart as a plot)."""
        return self.plot.getPlotItem()

    def add(self, series: str, x: float, y: float, label: str = "") -> None:
        if not (math.isfinite(x) and math.isfinite(y)) or (self.log_x and x <= 0):
            return
        xs, ys = self.series.setdefault(series, ([], []))
        xs.append(float(x))
        ys.append(float(y))
        self.labels.setdefault(series, []).append(label)
        self.note.say(None)
        self._dirty = True

    def say_empty(self, reason: str | None) -> None:
        """Why the chart has no points ("skipped: no GPU"); ignored once points have arrived."""
        self.note.say(None if self.series else reason)

    def redraw(self) -> bool:
        if not self._dirty:
            return False
        top = max((max(ys) for _xs, ys in self.series.values() if ys), default=1.0)
        scale, unit = (
            (self.small_unit[1], self.small_unit[0])
            if self.small_unit and 0 < top < 1
            else (1.0, self.y_label)
        )
        if scale != self.y_scale:
            self.y_scale = scale
            self.getPlotItem().setLabel("left", unit)
        for i, (name, (xs, ys)) in enumerate(self.series.items()):
            curve = self.curves.get(name)
            if curve is None:
                pen = pg.mkPen(series_color(i), width=2)
                curve = self.getPlotItem().plot(
                    [],
                    [],
                    pen=pen,
                    symbol="o",
                    symbolSize=5,
                    symbolBrush=series_color(i),
                    symbolPen=None,
                )
                self.curves[name] = curve
            order = np.argsort(xs, kind="stable") if self.log_x else np.arange(len(xs))
            curve.setData(np.asarray(xs)[order], np.asarray(ys)[order] * scale)
        self._show_legend()
        item = self.getPlotItem()
        item.enableAutoRange(axis="x")
        top *= scale
        item.setYRange(0.0, top * 1.08 if top > 0 else 1.0, padding=0)  # figures read from zero
        self._dirty = False
        return True

    def _show_legend(self) -> None:
        """One entry per series in its colour, below the plot; entries wrap onto more lines, never
        off the edge."""
        entries = [
            f'<span style="color:{series_color(i).name()}">■</span>&nbsp;'
            f"{html.escape(name).replace(' ', '&nbsp;')}"
            for i, name in enumerate(self.series)
        ]
        self.legend.setText(" &nbsp; ".join(entries))
        self.legend.setVisible(len(entries) > 0)
        self.legend.setMinimumHeight(
            self.legend.heightForWidth(max(self.width(), 1)) if entries else 0
        )

    def legend_entries(self) -> list[str]:
        """The legend's names, in order (what a reader sees under the plot)."""
        return list(self.series)

    def clear_points(self) -> None:
        for curve in self.curves.values():
            self.getPlotItem().removeItem(curve)
        self.curves.clear()
        self.series.clear()
        self.labels.clear()
        self.legend.setText("")
        self.legend.hide()
        self.note.say(None)
        self._dirty = False
        self._empty_axes()  # the last run's ranges and unit say nothing about the next run

    def points(self, series: str) -> list[tuple[float, float]]:
        xs, ys = self.series.get(series, ([], []))
        return list(zip(xs, ys, strict=True))
