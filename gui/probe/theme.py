"""Colours the probe pane shares: palette-following chart colours and the PASS/WARN/FAIL status colours."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from gui.colors import SERIES_COLORS

# Status colours chosen to read on both light and dark palettes (text stays the palette's).
STATUS_COLORS = {
    "PASS": "#2e7d32",
    "WARN": "#e69f00",
    "FAIL": "#c62828",
    "INFO": "#5f7f9f",
}
VERDICT_COLORS = {
    "READY": "#2e7d32",
    "READY WITH WARNINGS": "#b26a00",
    "NOT READY": "#c62828",
}
LEVEL_COLORS = {
    "debug": "#8c8c8c",
    "info": "",
    "warning": "#e69f00",
    "error": "#d55e00",
    "critical": "#c62828",
}


def palette_colors() -> tuple[QColor, QColor]:
    """Base (background) and text colours of the running application's palette."""
    app = QApplication.instance()
    pal = app.palette() if isinstance(app, QApplication) else QPalette()
    return pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text)


def status_color(status: str) -> QColor | None:
    code = STATUS_COLORS.get(status.upper())
    return QColor(code) if code else None


def series_color(i: int) -> QColor:
    """Okabe–Ito series colour ``i`` (the set the PDF prints)."""
    return QColor(SERIES_COLORS[i % len(SERIES_COLORS)])
