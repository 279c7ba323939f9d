"""Fonts, wrapped text and ink colours: what the PDF's page flow and its charts both measure with.

It stands alone so the page flow (``gui/pdf.py``) and the chart painting (``gui/pdf_charts.py``)
share one measure of text without importing each other; text wraps at word boundaries, or anywhere
for long URLs.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QFont, QPaintDevice, QTextLayout, QTextOption

TEXT = QColor("#1a1a1a")
GRID = QColor("#d9d9d9")
RULE = QColor("#9a9a9a")
CAPTION = QColor("#4d4d4d")


def font(size: float, bold: bool = False, italic: bool = False) -> QFont:
    f = QFont("DejaVu Sans")
    f.setStyleHint(QFont.StyleHint.SansSerif)
    f.setPointSizeF(size)
    f.setBold(bold)
    f.setItalic(italic)
    return f


def layout_text(
    text: str, f: QFont, width: float, device: QPaintDevice
) -> tuple[QTextLayout, float]:
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
