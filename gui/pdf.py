"""Render a ``core.document.Report`` to PDF with QPdfWriter + QPainter: the page flow and the file.

Layout runs first (every block measured against the page width, tables split by row with the header
repeated), then painting, so the footer can say "page i of n". Text is measured and wrapped by
``gui/pdf_text.py`` (nothing is clipped), charts are painted by ``gui/pdf_charts.py``. Works without
a window system (offscreen platform) and off the GUI thread.
"""

from __future__ import annotations

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
    QPainter,
    QPdfWriter,
    QPen,
    QTextLayout,
)

from core.document import (
    BarChart,
    Bullets,
    KeyFigure,
    LineChart,
    Paragraph,
    Report,
    ScatterChart,
    Table,
)
from core.output_file import format_of, write_file
from gui.colors import MUTED
from gui.pdf_charts import ChartPainter
from gui.pdf_text import CAPTION, GRID, TEXT, font, layout_text

DPI = 72  # one device unit = one point
MARGIN = 48.0
FOOTER = 24.0
CHART_HEIGHT = 230.0

Draw = Callable[[QPainter, float, float], None]


@dataclass
class Item:
    height: float
    draw: Draw
    keep_with_next: bool = False


class Renderer:
    """Flows blocks onto pages; call :meth:`render` once."""

    def __init__(self, writer: QPdfWriter) -> None:
        self.writer = writer
        rect = writer.pageLayout().paintRectPoints()
        self.width = float(rect.width())
        self.height = float(rect.height()) - FOOTER
        self.items: list[Item] = []
        self.charts = ChartPainter(writer, self.width)

    # ---- blocks → items

    def text(
        self,
        text: str,
        f: QFont,
        indent: float = 0.0,
        color: QColor = TEXT,
        space: float = 4.0,
        keep: bool = False,
    ) -> None:
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
        self.table(
            Table(header=["", ""], rows=[[k.label, k.value] for k in figures], widths=[1, 2]),
            header=False,
        )

    def table(self, table: Table, header: bool = True) -> None:
        n = len(table.header)
        weights = table.widths or [1.0] * n
        total = sum(weights)
        cols = [self.width * w / total for w in weights]
        pad = 3.0

        def row_item(cells: list[str], bold: bool, shade: bool) -> Item:
            f = font(8.5, bold=bold)
            layouts = [
                layout_text(c, f, cols[i] - 2 * pad, self.writer) for i, c in enumerate(cells)
            ]
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
            names = [s.name for s in chart.series] + (
                [chart.marker_label or "limit"] if chart.markers else []
            )
            _label_w, row_h = self.charts.bar_geometry(chart)
            height = (
                self.charts.legend_height(names, self.width) + len(chart.categories) * row_h + 44
            )
            height = max(120.0, min(self.height * 0.85, height))

        def draw(p: QPainter, x: float, y: float) -> None:
            self.charts.paint(p, QRectF(x, y, self.width, height - 10), chart)

        self.items.append(Item(height, draw, keep_with_next=bool(chart.caption)))
        if chart.caption:
            self.text(chart.caption, font(8, italic=True), color=CAPTION, space=4)

    # ---- pages

    def _paginate(self) -> list[list[tuple[float, Item]]]:
        pages: list[list[tuple[float, Item]]] = [[]]
        y = 0.0
        i = 0
        while i < len(self.items):
            item = self.items[i]
            need, j = item.height, i
            # headings stay with what follows
            while self.items[j].keep_with_next and j + 1 < len(self.items):
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
    if (
        not os.environ.get("QT_QPA_PLATFORM")
        and sys.platform.startswith("linux")
        and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    ):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if QGuiApplication.instance() is None:
        global _APP
        _APP = QGuiApplication(sys.argv[:1])
    return pdf_bytes(report)


_APP: QGuiApplication | None = None


def render_report(report: Report, path: Path, mode: int | None = None) -> int:
    """Write the report to `path` as an A4 PDF through core.output_file (never through a link at the
    name; `mode` 0o600 for a report naming hosts); returns the page count. Needs a
    QGuiApplication."""
    format_of(path, {".pdf": "pdf"})  # before the drawing: a report.json never holds a PDF
    data, pages = pdf_bytes(report)
    write_file(path, data, mode=mode)
    return pages


def pdf_bytes(report: Report) -> tuple[bytes, int]:
    """The report as an A4 PDF in memory, and its page count: the file is written by
    core.output_file alone (QPdfWriter given a name would open it itself, following a symlink or
    waiting on a pipe there)."""
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setResolution(DPI)
    writer.setTitle(report.title)
    writer.setCreator("tuneplan")
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4),
            QPageLayout.Orientation.Portrait,
            QMarginsF(MARGIN, MARGIN, MARGIN, MARGIN),
            QPageLayout.Unit.Point,
        )
    )
    pages = Renderer(writer).render(report)  # QPainter.end() completes the document in the buffer
    del writer
    return bytes(buffer.data().data()), pages
