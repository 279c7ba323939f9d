"""The one home of the window's colours: the series sets shared by the on-screen charts and the PDF,
the PASS/WARN/FAIL and log-level colours, the hint and error text colours (at least 4.5:1 on their
window, WCAG), and :func:`is_dark`, read from a palette.

Series colours are Okabe–Ito (safe for colour-vision deficiencies). The PDF is printed on white, so
it always uses the light set. On a dark window the two darkest entries (blue and black) would vanish
into the background, so the dark set lightens the blue and swaps black for near-white.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

SERIES_COLORS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
)
SERIES_COLORS_DARK = (
    "#3C9BE0",
    "#E69F00",
    "#19B58A",
    "#DE8FBD",
    "#8BD0F5",
    "#F07A2A",
    "#F0E442",
    "#E6E6E6",
)
HIGHLIGHT = "#D55E00"
HIGHLIGHT_DARK = "#F07A2A"
MUTED = "#8c8c8c"
ERROR = "#c0392b"  # 4.7:1 on the light Fusion window (#efefef)
ERROR_DARK = "#ff7b72"  # 5.6:1 on the dark window (#2b2b2b)
# Hint text (the palette's PlaceholderText: hints under fields, placeholders in them). Fusion's own
# is black at half opacity, 3.9:1 on its window; these reach WCAG's 4.5:1 for body text on the
# window and on fields.
HINT = "#5f5f5f"  # 5.6:1 on #efefef, 6.4:1 on #ffffff
HINT_DARK = "#a3a3a3"  # 5.6:1 on #2b2b2b, 6.5:1 on #1f1f1f

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
    "INCOMPLETE": "#6d4c41",  # not a grade of the box: part of it was not measured
    "NOT READY": "#c62828",
}
LEVEL_COLORS = {
    "debug": "#8c8c8c",
    "info": "",
    "warning": "#e69f00",
    "error": "#d55e00",
    "critical": "#c62828",
}


def is_dark(palette: QPalette) -> bool:
    """Whether the palette is a dark one: its window background is darker than mid-grey. (The
    window's palettes, Fusion's light one and gui.app's dark one, agree on this for every background
    role.)"""
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def series_colors(dark: bool = False) -> tuple[str, ...]:
    return SERIES_COLORS_DARK if dark else SERIES_COLORS


def highlight_color(dark: bool = False) -> str:
    return HIGHLIGHT_DARK if dark else HIGHLIGHT


def error_color(dark: bool = False) -> str:
    return ERROR_DARK if dark else ERROR


def hint_color(dark: bool = False) -> str:
    return HINT_DARK if dark else HINT


def seen_on(color: QColor, background: QColor) -> str:
    """The '#rrggbb' a translucent ``color`` shows as on ``background`` (what contrast is measured
    on)."""
    a = color.alphaF()
    front = (color.red(), color.green(), color.blue())
    back = (background.red(), background.green(), background.blue())
    return "#" + "".join(
        f"{round(a * f + (1 - a) * b):02x}" for f, b in zip(front, back, strict=True)
    )


def contrast_ratio(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two '#rrggbb' colours (4.5 is the minimum for body text)."""

    def luminance(hex_color: str) -> float:
        channels = [int(hex_color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


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


def gpu_color(gpu: int, foreground: QColor) -> QColor:
    """Okabe–Ito colour per GPU; the palette's text colour stands in for black so dark themes show
    it."""
    c = series_color(gpu)
    return foreground if c.lightness() < 10 else c
