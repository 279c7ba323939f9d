"""Start the window: environment, QApplication, palette that follows the system light/dark scheme."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

# pyqtgraph picks PyQt6 when it is installed; pin it to PySide6 before anything imports pyqtgraph.
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from gui.colors import hint_color, is_dark

APP_NAME = "tuneplan"
ORG_NAME = "tuneplan"


def prefers_dark(app: QGuiApplication) -> bool:
    """The system's choice where Qt can read it (Qt ≥ 6.5), else whether the current palette is dark."""
    scheme = app.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    return is_dark(app.palette())


def dark_palette() -> QPalette:
    """A Fusion dark palette; Fusion draws the same on every platform, so one palette suffices."""
    pal = QPalette()
    roles = {
        QPalette.ColorRole.Window: "#2b2b2b", QPalette.ColorRole.WindowText: "#e6e6e6",
        QPalette.ColorRole.Base: "#1f1f1f", QPalette.ColorRole.AlternateBase: "#2a2a2a",
        QPalette.ColorRole.ToolTipBase: "#3a3a3a", QPalette.ColorRole.ToolTipText: "#e6e6e6",
        QPalette.ColorRole.Text: "#e6e6e6", QPalette.ColorRole.Button: "#353535",
        QPalette.ColorRole.ButtonText: "#e6e6e6", QPalette.ColorRole.BrightText: "#ff6060",
        QPalette.ColorRole.Highlight: "#3d7bd9", QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Link: "#6ea8ff", QPalette.ColorRole.PlaceholderText: hint_color(dark=True),
    }
    for role, color in roles.items():
        pal.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7a7a7a"))
    return pal


def light_palette(app: QApplication) -> QPalette:
    """Fusion's light palette with hint text dark enough to read (its own is 3.9:1 on the window)."""
    pal = QPalette(app.style().standardPalette())
    pal.setColor(QPalette.ColorRole.PlaceholderText, QColor(hint_color(dark=False)))
    return pal


def apply_scheme(app: QApplication) -> None:
    """Fusion with the light or dark palette the system asks for; charts follow via gui.charts.theme()."""
    app.setStyle("Fusion")
    app.setPalette(dark_palette() if prefers_dark(app) else light_palette(app))


def app_icon() -> QIcon:
    """The app's icon from resources/icons: the SVG for any size, the PNGs where SVG cannot be drawn."""
    from core.resources import resources_root

    icon = QIcon()
    try:
        folder = resources_root() / "icons"
    except FileNotFoundError:
        return icon  # no resources: the window still opens (the smoke test reports it)
    for png in sorted(folder.glob("tuneplan-*.png")):
        icon.addFile(str(png))
    icon.addFile(str(folder / "tuneplan.svg"))
    return icon


def make_app(argv: Sequence[str] | None = None) -> QApplication:
    """The QApplication (created once), named so QSettings and the data folder agree."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
    QCoreApplication.setOrganizationName(ORG_NAME)
    QCoreApplication.setApplicationName(APP_NAME)
    app = QApplication(list(argv) if argv is not None else sys.argv[:1])
    app.setDesktopFileName(APP_NAME)
    app.setWindowIcon(app_icon())
    apply_scheme(app)
    app.styleHints().colorSchemeChanged.connect(lambda _scheme: apply_scheme(app))
    return app


def quiet_library_logs() -> None:
    """Keep library logs off the terminal of a window session. The probe runner logs a bug with its traceback from
    its worker thread, paramiko a failed handshake; with no handler configured Python's last-resort handler prints
    them on stderr, which the window's user never reads. What they mean already reaches the window (the run's
    event log, the status bar), so a handler that drops them is enough."""
    logging.getLogger().addHandler(logging.NullHandler())


def run() -> int:
    """The `tuneplan` entry point without arguments: open the window and run the event loop."""
    quiet_library_logs()
    app = make_app()
    from gui import smoke
    from gui.main_window import MainWindow  # after the app exists: widgets need it

    window = MainWindow.create_default()
    window.show()
    smoke.install(app, window)
    return int(app.exec())


if __name__ == "__main__":
    raise SystemExit(run())
