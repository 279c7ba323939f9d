"""Render a ``core.document.Report`` to PDF with QPdfWriter + QPainter: vector charts, wrapped text, page numbers.

Layout runs first (every block measured against the page width, tables split by row with the header
repeated), then painting, so the footer can say "page i of n". Text wraps at word boundaries, or anywhere for
long URLs, so nothing is clipped. Works without a window system (offscreen platform) and off the GUI thread.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QGuiApplication,
    QPageLayout,
    QPageSize,
    QPaintDevice,
    QPainter,
    QPainterPath,
    QPdfWriter,
    QPen,
    QTextLayout,
    QTextOption,
)

from core.document import BarChart, Bullets, KeyFigure, LineChart, Paragraph, Report, ScatterChart, Table
from core.output_file import format_of, write_file
from core.units import fmt_percent, fmt_tick
from gui.colors import HIGHLIGHT, MUTED, series_color

DPI = 72  # one device unit = one point
MARGIN = 48.0
FOOTER = 24.0
CHART_HEIGHT = 230.0
TEXT = QColor("#1a1a1a")
GRID = QColor("#d9d9d9")
RULE = QColor("#9a9a9a")
CAPTION = QColor("#4d4d4d")

Draw = Callable[[QPainter, float, float], None]


@dataclass
class Item:
    height: float
    draw: Draw
    keep_with_next: bool = False


def font(size: float, bold: bool = False, italic: bool = False) -> QFont:
    f = QFont("DejaVu Sans")
    f.setStyleHint(QFont.StyleHint.SansSerif)
    f.setPointSizeF(size)
    f.setBold(bold)
    f.setItalic(italic)
    return f


def layout_text(text: str, f: QFont, width: float, device: QPaintDevice) -> tuple[QTextLayout, float]:
    """Lines of `text` wrapped to `width` (at words, else anywhere), and their total height."""
    layout = QTextLayout(text, f, device)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    layout.beginLayout()
    y = 0.0
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(max(width, 1.0))
        line.setPosition(QPointF(0, y))
        y += line.height()
    layout.endLayout()
    return layout, y


def text_width(text: str, f: QFont, device: QPaintDevice) -> float:
    layout = QTextLayout(text, f, device)
    layout.beginLayout()
    line = layout.createLine()
    line.setLineWidth(1e6)
    layout.endLayout()
    return float(line.naturalTextWidth())


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
    """Left edge of a tick label centred under its tick, kept from running past the plot's right side (the last
    tick sits on the edge, and the chart spans the text width)."""
    return min(center - width / 2, plot.right() + 6 - width)


class Renderer:
    """Flows blocks onto pages; call :meth:`render` once."""

    def __init__(self, writer: QPdfWriter) -> None:
        self.writer = writer
        rect = writer.pageLayout().paintRectPoints()
        self.width = float(rect.width())
        self.height = float(rect.height()) - FOOTER
        self.items: list[Item] = []

    # ---- blocks → items

    def text(self, text: str, f: QFont, indent: float = 0.0, color: QColor = TEXT, space: float = 4.0,
             keep: bool = False) -> None:
        layout, h = layout_text(text, f, self.width - indent, self.writer)

        def draw(p: QPainter, x: float, y: float) -> None:
            p.setPen(color)
            layout.draw(p, QPointF(x + indent, y))

        self.items.append(Item(h + space, draw, keep))

    def bullets(self, items: list[str]) -> None:
        f = font(9.5)
        for entry in items:
            layout, h = layout_text(entry, f, self.width - 14, self.writer)

            def draw(p: QPainter, x: float, y: float, layout: QTextLayout = layout) -> None:
                p.setPen(TEXT)
                p.setBrush(QBrush(TEXT))
                p.drawEllipse(QPointF(x + 4, y + 7), 1.8, 1.8)
                layout.draw(p, QPointF(x + 14, y))

            self.items.append(Item(h + 4, draw))

    def key_figures(self, figures: list[KeyFigure]) -> None:
        self.table(Table(header=["", ""], rows=[[k.label, k.value] for k in figures], widths=[1, 2]), header=False)

    def table(self, table: Table, header: bool = True) -> None:
        n = len(table.header)
        weights = table.widths or [1.0] * n
        total = sum(weights)
        cols = [self.width * w / total for w in weights]
        pad = 3.0

        def row_item(cells: list[str], bold: bool, shade: bool) -> Item:
            f = font(8.5, bold=bold)
            layouts = [layout_text(c, f, cols[i] - 2 * pad, self.writer) for i, c in enumerate(cells)]
            h = max((lh for _l, lh in layouts), default=10.0) + 2 * pad

            def draw(p: QPainter, x: float, y: float) -> None:
                if shade:
                    p.fillRect(QRectF(x, y, self.width, h), QColor("#eef2f7"))
                p.setPen(TEXT)
                cx = x
                for i, (lay, _lh) in enumerate(layouts):
                    lay.draw(p, QPointF(cx + pad, y + pad))
                    cx += cols[i]
                p.setPen(QPen(GRID, 0.5))
                p.drawLine(QPointF(x, y + h), QPointF(x + self.width, y + h))

            return Item(h, draw)

        head = row_item(table.header, True, True) if header else None
        rows = [row_item(r, False, False) for r in table.rows]
        if head is not None:
            head.keep_with_next = True
            self.items.append(head)
        for r in rows:
            if head is not None:
                r.draw = self._with_header(r.draw, head)
            self.items.append(r)

    @staticmethod
    def _with_header(draw: Draw, head: Item) -> Draw:
        """A table row that, when it starts a page, draws the header first (see _paginate)."""
        setattr(draw, "table_header", head)  # noqa: B010 - read back by _paginate
        return draw

    def chart(self, chart: BarChart | ScatterChart | LineChart) -> None:
        """Title, plot and caption, kept on one page; bar rows grow to fit their wrapped labels."""
        self.text(chart.title, font(10, bold=True), space=2, keep=True)
        height = CHART_HEIGHT
        if isinstance(chart, BarChart):
            names = [s.name for s in chart.series] + ([chart.marker_label or "limit"] if chart.markers else [])
            _label_w, row_h = self._bar_geometry(chart)
            height = self._legend_height(names, self.width) + len(chart.categories) * row_h + 44
            height = max(120.0, min(self.height * 0.85, height))
        painter_fn = {"bar": self._bar, "scatter": self._scatter, "line": self._line}[chart.kind]

        def draw(p: QPainter, x: float, y: float) -> None:
            painter_fn(p, QRectF(x, y, self.width, height - 10), chart)  # type: ignore[operator]

        self.items.append(Item(height, draw, keep_with_next=bool(chart.caption)))
        if chart.caption:
            self.text(chart.caption, font(8, italic=True), color=CAPTION, space=4)

    def _bar_geometry(self, chart: BarChart) -> tuple[float, float]:
        """Width of the label column and height of one bar row, so that no label is cut or overlaps."""
        f = font(7.5)
        labels = chart.labels()
        label_w = min(self.width * 0.42, max((text_width(c, f, self.writer) for c in labels), default=20) + 8)
        tallest = max((layout_text(c, f, label_w - 6, self.writer)[1] for c in labels), default=10.0)
        per_row = 16.0 if chart.stacked else 8.0 * max(len(chart.series), 1) + 6
        return label_w, max(per_row, tallest + 4)

    def _legend_height(self, names: list[str], width: float) -> float:
        f = font(7.5)
        x, rows = 0.0, 1
        for name in names:
            w = text_width(name, f, self.writer) + 22
            if x + w > width and x > 0:
                x, rows = 0.0, rows + 1
            x += w
        return rows * 12 + 2

    # ---- chart painting (QPainterPath: vector in the PDF)

    def _legend(self, p: QPainter, rect: QRectF, names: list[str], colors: list[QColor],
                lines: list[Qt.PenStyle] | None = None) -> float:
        """Swatches (or line samples, for line charts) with names, wrapped like _legend_height assumes."""
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

    def _axes(self, p: QPainter, plot: QRectF, xs: list[float], ys: list[float], x_label: str, y_label: str,
              x_fmt: Callable[[float], str] = fmt_tick) -> tuple[Callable[[float], float], Callable[[float], float]]:
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
            p.drawText(QPointF(tick_x(fx(v), text_width(label, f, self.writer), plot), plot.bottom() + 10), label)
        for v in ys:
            grid.moveTo(plot.left(), fy(v))
            grid.lineTo(plot.right(), fy(v))
            label = fmt_tick(v)
            p.drawText(QPointF(plot.left() - text_width(label, f, self.writer) - 3, fy(v) + 3), label)
        p.setPen(QPen(GRID, 0.5))
        p.drawPath(grid)
        p.setPen(QPen(RULE, 0.8))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(plot)
        p.setPen(TEXT)
        p.drawText(QPointF(plot.center().x() - text_width(x_label, f, self.writer) / 2, plot.bottom() + 21), x_label)
        p.save()
        p.translate(plot.left() - 32, plot.center().y() + text_width(y_label, f, self.writer) / 2)
        p.rotate(-90)
        p.drawText(QPointF(0, 0), y_label)
        p.restore()
        return fx, fy

    def _bar(self, p: QPainter, rect: QRectF, chart: BarChart) -> None:
        colors = [series_color(i) for i in range(len(chart.series))]
        names = [s.name for s in chart.series] + ([chart.marker_label or "limit"] if chart.markers else [])
        top = self._legend(p, rect, names, colors + ([TEXT] if chart.markers else []))
        f = font(7.5)
        label_w, _row = self._bar_geometry(chart)
        plot = QRectF(rect.left() + label_w, rect.top() + top, rect.width() - label_w - 8,
                      rect.height() - top - 24)
        n = max(len(chart.categories), 1)
        ends = [sum(s.values[i] for s in chart.series) if chart.stacked else max(s.values[i] for s in chart.series)
                for i in range(len(chart.categories))]
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
            p.drawText(QPointF(tick_x(fx(v), text_width(label, font(7), self.writer), plot), plot.bottom() + 10),
                       label)
        p.setPen(QPen(GRID, 0.5))
        p.drawPath(grid)
        p.setPen(TEXT)
        p.drawText(QPointF(plot.center().x() - text_width(chart.unit, font(7), self.writer) / 2, plot.bottom() + 21),
                   chart.unit)
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
                    path.addRect(QRectF(fx(left), y0 + row_h * 0.15, fx(left + value) - fx(left), row_h * 0.7))
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
        top = self._legend(p, rect, ["configuration", chart.highlight_label], [QColor(MUTED), QColor(HIGHLIGHT)])
        plot = QRectF(rect.left() + 44, rect.top() + top, rect.width() - 52, rect.height() - top - 26)
        if not chart.points:
            return
        xs = nice_ticks(0.0, max(pt.x for pt in chart.points))
        ys = nice_ticks(0.0, max(pt.y for pt in chart.points))
        fx, fy = self._axes(p, plot, xs, ys, chart.x_label, chart.y_label)
        rest, front = QPainterPath(), QPainterPath()
        for pt in chart.points:
            (front if pt.highlight else rest).addEllipse(QPointF(fx(pt.x), fy(pt.y)), 3.2 if pt.highlight else 2.4,
                                                         3.2 if pt.highlight else 2.4)
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
        styles = [Qt.PenStyle.DashLine if s.style == "dashed" else Qt.PenStyle.SolidLine for s in chart.series]
        top = self._legend(p, rect, [s.name for s in chart.series], colors, lines=styles)
        plot = QRectF(rect.left() + 44, rect.top() + top, rect.width() - 52, rect.height() - top - 26)
        if not chart.x:
            return
        values = [v for s in chart.series for v in s.values if math.isfinite(v)]
        xs = nice_ticks(min(0.0, min(chart.x)), max(chart.x))
        top_value = max(values, default=1.0)
        if chart.y_max is not None:
            top_value = min(top_value, chart.y_max)
        ys = nice_ticks(min(0.0, min(values, default=0.0)), top_value)
        fx, fy = self._axes(p, plot, xs, ys, chart.x_label, chart.y_label,
                            x_fmt=fmt_percent if chart.x_percent else fmt_tick)
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
            p.setPen(QPen(colors[s], 1.4, Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine))
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
            p.drawText(QPointF(fx(chart.vline) + 3, plot.top() + 10),
                       f"{label} {chart.vline:.0%}".strip() if chart.x_percent else label)
        p.restore()

    # ---- pages

    def _paginate(self) -> list[list[tuple[float, Item]]]:
        pages: list[list[tuple[float, Item]]] = [[]]
        y = 0.0
        i = 0
        while i < len(self.items):
            item = self.items[i]
            need, j = item.height, i
            while self.items[j].keep_with_next and j + 1 < len(self.items):  # headings stay with what follows
                j += 1
                need += self.items[j].height
            if y + need > self.height and y > 0:
                pages.append([])
                y = 0.0
                head = getattr(item.draw, "table_header", None)
                if isinstance(head, Item) and not item.keep_with_next:
                    pages[-1].append((y, head))
                    y += head.height
            pages[-1].append((y, item))
            y += item.height
            i += 1
        return pages

    def render(self, report: Report) -> int:
        self.text(report.title, font(17, bold=True), space=2)
        self.text(f"tuneplan report · {report.date}", font(9), color=QColor(MUTED), space=10)
        self.text(report.conclusion, font(11, bold=True), space=10)
        self.key_figures(report.key_figures)
        for section in report.sections:
            self.items.append(Item(10, lambda p, x, y: None))
            self.text(section.title, font(13, bold=True), space=6, keep=True)
            for block in section.blocks:
                if isinstance(block, Paragraph):
                    self.text(block.text, font(9.5), space=6)
                elif isinstance(block, Bullets):
                    self.bullets(block.items)
                elif isinstance(block, Table):
                    self.table(block)
                else:
                    self.chart(block)
                self.items.append(Item(6, lambda p, x, y: None))
        pages = self._paginate()
        painter = QPainter(self.writer)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            rect = self.writer.pageLayout().paintRectPoints()
            for n, page in enumerate(pages):
                if n:
                    self.writer.newPage()
                for y, item in page:
                    painter.save()
                    painter.setBrush(Qt.BrushStyle.NoBrush)
                    item.draw(painter, 0.0, y)
                    painter.restore()
                painter.setPen(QColor(MUTED))
                painter.setFont(font(7.5))
                footer = f"{report.title} · page {n + 1} of {len(pages)}"
                painter.drawText(QPointF(0, rect.height() - 6), footer)
        finally:
            painter.end()
        return len(pages)


def render_headless(report: Report) -> tuple[bytes, int]:
    """pdf_bytes for the command line: the offscreen platform when there is no display, and a
    QGuiApplication if none exists yet (fonts need one)."""
    if not os.environ.get("QT_QPA_PLATFORM") and sys.platform.startswith("linux") and not (
            os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if QGuiApplication.instance() is None:
        global _APP
        _APP = QGuiApplication(sys.argv[:1])
    return pdf_bytes(report)


_APP: QGuiApplication | None = None


def render_report(report: Report, path: Path, mode: int | None = None) -> int:
    """Write the report to `path` as an A4 PDF through core.output_file (never through a link at the name;
    `mode` 0o600 for a report naming hosts); returns the page count. Needs a QGuiApplication."""
    format_of(path, {".pdf": "pdf"})  # before the drawing: a report.json never holds a PDF
    data, pages = pdf_bytes(report)
    write_file(path, data, mode=mode)
    return pages


def pdf_bytes(report: Report) -> tuple[bytes, int]:
    """The report as an A4 PDF in memory, and its page count: the file is written by core.output_file alone
    (QPdfWriter given a name would open it itself, following a symlink or waiting on a pipe there)."""
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setResolution(DPI)
    writer.setTitle(report.title)
    writer.setCreator("tuneplan")
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                                     QMarginsF(MARGIN, MARGIN, MARGIN, MARGIN), QPageLayout.Unit.Point))
    pages = Renderer(writer).render(report)  # QPainter.end() completes the document in the buffer
    del writer
    return bytes(buffer.data().data()), pages

