"""Low-rate result charts: NCCL bus bandwidth against message size (log x) and fio figures over time.

Points arrive a few per second at most, but they are still painted from the pane's redraw timer: `add`
only appends and marks the chart dirty.
"""

from __future__ import annotations

import math
import os
from typing import Any

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

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
    """Bottom axis in log mode with ticks at powers of two (nccl-tests sweeps by ×2) labelled as byte sizes."""

    PX_PER_LABEL = 64

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:
        if not self.logMode or not (math.isfinite(minVal) and math.isfinite(maxVal)) or maxVal <= minVal:
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
        return [fmt_size(round(10 ** v)) if math.isfinite(v) else "" for v in values]


class PointChart(pg.PlotWidget):
    """Named series of (x, y) points with labels; redrawn from a timer via :meth:`redraw`."""

    def __init__(self, title: str, x_label: str, y_label: str, log_x: bool = False,
                 parent: QWidget | None = None) -> None:
        background, foreground = palette_colors()
        axis: dict[str, Any] = {"bottom": SizeAxis("bottom")} if log_x else {}
        if log_x:
            axis["bottom"].enableAutoSIPrefix(False)
        super().__init__(parent=parent, background=background, axisItems=axis)
        self.setAccessibleName(f"{title} chart")
        self.setMinimumHeight(160)
        self.title, self.log_x, self._fg = title, log_x, foreground
        item = self.getPlotItem()
        for name in ("left", "bottom"):
            item.getAxis(name).setPen(pg.mkPen(foreground))
            item.getAxis(name).setTextPen(pg.mkPen(foreground))
        item.setTitle(title, color=foreground, size="9pt")
        item.setLabel("bottom", x_label)
        item.setLabel("left", y_label)
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setMenuEnabled(False)
        item.setLogMode(x=log_x, y=False)
        if log_x:  # nccl-tests' usual sweep, until points arrive
            item.setXRange(math.log10(8), math.log10(2**34), padding=0.02)
        self._legend = item.addLegend(offset=(4, 4), labelTextColor=foreground, verSpacing=-6)
        self.series: dict[str, tuple[list[float], list[float]]] = {}
        self.labels: dict[str, list[str]] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._dirty = False

    def add(self, series: str, x: float, y: float, label: str = "") -> None:
        if not (math.isfinite(x) and math.isfinite(y)) or (self.log_x and x <= 0):
            return
        xs, ys = self.series.setdefault(series, ([], []))
        xs.append(float(x))
        ys.append(float(y))
        self.labels.setdefault(series, []).append(label)
        self._dirty = True

    def redraw(self) -> bool:
        if not self._dirty:
            return False
        for i, (name, (xs, ys)) in enumerate(self.series.items()):
            curve = self.curves.get(name)
            if curve is None:
                pen = pg.mkPen(series_color(i), width=2)
                curve = self.getPlotItem().plot([], [], pen=pen, symbol="o", symbolSize=5,
                                                symbolBrush=series_color(i), symbolPen=None, name=name)
                self.curves[name] = curve
            order = np.argsort(xs, kind="stable") if self.log_x else np.arange(len(xs))
            curve.setData(np.asarray(xs)[order], np.asarray(ys)[order])
        item = self.getPlotItem()
        item.enableAutoRange(axis="x")
        top = max((max(ys) for _xs, ys in self.series.values() if ys), default=1.0)
        item.setYRange(0.0, top * 1.08 if top > 0 else 1.0, padding=0)  # figures read from zero
        self._dirty = False
        return True

    def clear_points(self) -> None:
        for curve in self.curves.values():
            self.getPlotItem().removeItem(curve)
        self._legend.clear()
        self.curves.clear()
        self.series.clear()
        self.labels.clear()
        self._dirty = False

    def points(self, series: str) -> list[tuple[float, float]]:
        xs, ys = self.series.get(series, ([], []))
        return list(zip(xs, ys, strict=True))
