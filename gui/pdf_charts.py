"""The PDF's charts painted with QPainterPath (vector in the file): bars, scatter, lines, their axes
and legends.

Apart from the page flow (``gui/pdf.py``) because drawing a chart is its own craft: round ticks,
labels that are never cut, legends that wrap; the page flow only asks a chart how tall it will be
and where to paint it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPaintDevice, QPainter, QPainterPath, QPen

from core.document import BarChart, LineChart, ScatterChart
from core.units import fmt_percent, fmt_tick
from gui.colors import HIGHLIGHT, MUTED, series_color
from gui.pdf_text import GRID, RULE, TEXT, font, layout_text, text_width


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 5 × 10^k steps)."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = [round(start, 10)]
    while ticks[-1] < hi - step * 1e-9:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def tick_x(center: float, width: float, plot: QRectF) -> float:
    """Left edge of a tick label centred under its tick, kept from running past the plot's right
    side (the last tick sits on the edge, and the chart spans the text width)."""
    return min(center - width / 2, plot.right() + 6 - width)


class ChartPainter:
    """Measures and paints charts on `device` for a page `width` points wide."""

    def __init__(self, device: QPaintDevice, width: float) -> None:
        self.writer = device
        self.width = width

    def paint(self, p: QPainter, rect: QRectF, chart: BarChart | ScatterChart | LineChart) -> None:
        """The chart in `rect`: its legend on top, then the plot."""
        painter_fn = {"bar": self._bar, "scatter": self._scatter, "line": self._line}[chart.kind]
        painter_fn(p, rect, chart)  # type: ignore[operator]

    def bar_geometry(self, chart: BarChart) -> tuple[float, float]:
        """Width of the label column and height of one bar row, so that no label is cut or
        overlaps."""
        f = font(7.5)
        labels = chart.labels()
        label_w = min(
            self.width * 0.42, max((text_width(c, f, self.writer) for c in labels), default=20) + 8
        )
        tallest = max(
            (layout_text(c, f, label_w - 6, self.writer)[1] for c in labels), default=10.0
        )
        per_row = 16.0 if chart.stacked else 8.0 * max(len(chart.series), 1) + 6
        return label_w, max(per_row, tallest + 4)

    def legend_height(self, names: list[str], width: float) -> float:
        f = font(7.5)
        x, rows = 0.0, 1
        for name in names:
            w = text_width(name, f, self.writer) + 22
            if x + w > width and x > 0:
                x, rows = 0.0, rows + 1
            x += w
        return rows * 12 + 2

    # ---- chart painting (QPainterPath: vector in the PDF)

    def _legend(
        self,
        p: QPainter,
        rect: QRectF,
        names: list[str],
        colors: list[QColor],
        lines: list[Qt.PenStyle] | None = None,
    ) -> float:
        """Swatches (or line samples, for line charts) with names, wrapped like legend_height
        assumes."""
        f = font(7.5)
        p.setFont(f)
        x, y = rect.left(), rect.top()
        for k, (name, c) in enumerate(zip(names, colors, strict=True)):
            w = text_width(name, f, self.writer) + 22
            if x + w > rect.right() and x > rect.left():
                x, y = rect.left(), y + 12
            path = QPainterPath()
            if lines is None:
                path.addRect(QRectF(x, y + 2, 9, 7))
                p.fillPath(path, c)
            else:
                path.moveTo(x, y + 5.5)
                path.lineTo(x + 10, y + 5.5)
                p.setPen(QPen(c, 1.6, lines[k]))
                p.drawPath(path)
            p.setPen(TEXT)
            p.drawText(QPointF(x + 12, y + 9), name)
            x += w
        return y + 14 - rect.top()

    def _axes(
        self,
        p: QPainter,
        plot: QRectF,
        xs: list[float],
        ys: list[float],
        x_label: str,
        y_label: str,
        x_fmt: Callable[[float], str] = fmt_tick,
    ) -> tuple[Callable[[float], float], Callable[[float], float]]:
        x_lo, x_hi = xs[0], xs[-1]
        y_lo, y_hi = ys[0], ys[-1]

        def fx(v: float) -> float:
            return plot.left() + (v - x_lo) / (x_hi - x_lo or 1) * plot.width()

        def fy(v: float) -> float:
            return plot.bottom() - (v - y_lo) / (y_hi - y_lo or 1) * plot.height()

        f = font(7)
        p.setFont(f)
        grid = QPainterPath()
        for v in xs:
            grid.moveTo(fx(v), plot.top())
            grid.lineTo(fx(v), plot.bottom())
            label = x_fmt(v)
            p.setPen(TEXT)
            p.drawText(
                QPointF(tick_x(fx(v), text_width(label, f, self.writer), plot), plot.bottom() + 10),
                label,
            )
        for v in ys:
            grid.moveTo(plot.left(), fy(v))
            grid.lineTo(plot.right(), fy(v))
            label = fmt_tick(v)
            p.drawText(
                QPointF(plot.left() - text_width(label, f, self.writer) - 3, fy(v) + 3), label
            )
        p.setPen(QPen(GRID, 0.5))
        p.drawPath(grid)
        p.setPen(QPen(RULE, 0.8))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(plot)
        p.setPen(TEXT)
        p.drawText(
            QPointF(
                plot.center().x() - text_width(x_label, f, self.writer) / 2, plot.bottom() + 21
            ),
            x_label,
        )
        p.save()
        p.translate(plot.left() - 32, plot.center().y() + text_width(y_label, f, self.writer) / 2)
        p.rotate(-90)
        p.drawText(QPointF(0, 0), y_label)
        p.restore()
        return fx, fy

    def _bar(self, p: QPainter, rect: QRectF, chart: BarChart) -> None:
        colors = [series_color(i) for i in range(len(chart.series))]
        names = [s.name for s in chart.series] + (
            [chart.marker_label or "limit"] if chart.markers else []
        )
        top = self._legend(p, rect, names, colors + ([TEXT] if chart.markers else []))
        f = font(7.5)
        label_w, _row = self.bar_geometry(chart)
        plot = QRectF(
            rect.left() + label_w,
            rect.top() + top,
            rect.width() - label_w - 8,
            rect.height() - top - 24,
        )
        n = max(len(chart.categories), 1)
        ends = [
            sum(s.values[i] for s in chart.series)
            if chart.stacked
            else max(s.values[i] for s in chart.series)
            for i in range(len(chart.categories))
        ]
        biggest = max([*ends, *(m or 0.0 for m in chart.markers or [])], default=1.0) or 1.0
        xs = nice_ticks(0.0, biggest)
        span = xs[-1] or 1.0

        def fx(v: float) -> float:
            return plot.left() + v / span * plot.width()

        row_h = plot.height() / n
        grid = QPainterPath()
        p.setFont(font(7))
        for v in xs:
            grid.moveTo(fx(v), plot.top())
            grid.lineTo(fx(v), plot.bottom())
            p.setPen(TEXT)
            label = fmt_tick(v)
            p.drawText(
                QPointF(
                    tick_x(fx(v), text_width(label, font(7), self.writer), plot), plot.bottom() + 10
                ),
                label,
            )
        p.setPen(QPen(GRID, 0.5))
        p.drawPath(grid)
        p.setPen(TEXT)
        p.drawText(
            QPointF(
                plot.center().x() - text_width(chart.unit, font(7), self.writer) / 2,
                plot.bottom() + 21,
            ),
            chart.unit,
        )
        p.setFont(f)
        for i, category in enumerate(chart.labels()):
            y0 = plot.top() + i * row_h
            p.setPen(TEXT)
            lay, lh = layout_text(category, f, label_w - 6, self.writer)
            lay.draw(p, QPointF(rect.left(), y0 + (row_h - min(lh, row_h)) / 2))
            left = 0.0
            for s, series in enumerate(chart.series):
                value = series.values[i]
                path = QPainterPath()
                if chart.stacked:
                    path.addRect(
                        QRectF(
                            fx(left), y0 + row_h * 0.15, fx(left + value) - fx(left), row_h * 0.7
                        )
                    )
                    left += value
                else:
                    h = row_h * 0.8 / len(chart.series)
                    path.addRect(QRectF(fx(0), y0 + row_h * 0.1 + s * h, fx(value) - fx(0), h))
                p.fillPath(path, colors[s])
            if chart.markers and chart.markers[i] is not None:
                marker = QPainterPath()
                mx = fx(chart.markers[i] or 0.0)
                marker.moveTo(mx, y0 + 1)
                marker.lineTo(mx, y0 + row_h - 1)
                p.setPen(QPen(TEXT, 1.6))
                p.drawPath(marker)
        p.setPen(QPen(RULE, 0.8))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(plot)

    def _scatter(self, p: QPainter, rect: QRectF, chart: ScatterChart) -> None:
        top = self._legend(
            p, rect, ["configuration", chart.highlight_label], [QColor(MUTED), QColor(HIGHLIGHT)]
        )
        plot = QRectF(
            rect.left() + 44, rect.top() + top, rect.width() - 52, rect.height() - top - 26
        )
        if not chart.points:
            return
        xs = nice_ticks(0.0, max(pt.x for pt in chart.points))
        ys = nice_ticks(0.0, max(pt.y for pt in chart.points))
        fx, fy = self._axes(p, plot, xs, ys, chart.x_label, chart.y_label)
        rest, front = QPainterPath(), QPainterPath()
        for pt in chart.points:
            (front if pt.highlight else rest).addEllipse(
                QPointF(fx(pt.x), fy(pt.y)),
                3.2 if pt.highlight else 2.4,
                3.2 if pt.highlight else 2.4,
            )
        p.fillPath(rest, QColor(MUTED))
        line = QPainterPath()
        for k, pt in enumerate(sorted((q for q in chart.points if q.highlight), key=lambda q: q.x)):
            (line.moveTo if k == 0 else line.lineTo)(fx(pt.x), fy(pt.y))
        p.setPen(QPen(QColor(HIGHLIGHT), 1.2))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawPath(line)
        p.fillPath(front, QColor(HIGHLIGHT))

    def _line(self, p: QPainter, rect: QRectF, chart: LineChart) -> None:
        colors = [series_color(i) for i in range(len(chart.series))]
        styles = [
            Qt.PenStyle.DashLine if s.style == "dashed" else Qt.PenStyle.SolidLine
            for s in chart.series
        ]
        top = self._legend(p, rect, [s.name for s in chart.series], colors, lines=styles)
        plot = QRectF(
            rect.left() + 44, rect.top() + top, rect.width() - 52, rect.height() - top - 26
        )
        if not chart.x:
            return
        values = [v for s in chart.series for v in s.values if math.isfinite(v)]
        xs = nice_ticks(min(0.0, min(chart.x)), max(chart.x))
        top_value = max(values, default=1.0)
        if chart.y_max is not None:
            top_value = min(top_value, chart.y_max)
        ys = nice_ticks(min(0.0, min(values, default=0.0)), top_value)
        fx, fy = self._axes(
            p,
            plot,
            xs,
            ys,
            chart.x_label,
            chart.y_label,
            x_fmt=fmt_percent if chart.x_percent else fmt_tick,
        )
        p.save()
        p.setClipRect(plot)
        for s, series in enumerate(chart.series):
            path = QPainterPath()
            dots = QPainterPath()
            dashed = series.style == "dashed"
            for k, (x, y) in enumerate(zip(chart.x, series.values, strict=True)):
                (path.moveTo if k == 0 else path.lineTo)(fx(x), fy(y))
                if not dashed:
                    dots.addEllipse(QPointF(fx(x), fy(y)), 1.8, 1.8)
            p.setPen(
                QPen(colors[s], 1.4, Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine)
            )
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawPath(path)
            p.fillPath(dots, colors[s])
        if chart.vline is not None:
            vline = QPainterPath()
            vline.moveTo(fx(chart.vline), plot.top())
            vline.lineTo(fx(chart.vline), plot.bottom())
            p.setPen(QPen(QColor(HIGHLIGHT), 1.0, Qt.PenStyle.DashLine))
            p.drawPath(vline)
            p.setFont(font(7))
            label = chart.vline_label or ""
            p.drawText(
                QPointF(fx(chart.vline) + 3, plot.top() + 10),
                f"{label} {chart.vline:.0%}".strip() if chart.x_percent else label,
            )
        p.restore()
