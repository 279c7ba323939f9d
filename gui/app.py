"""Start the window: environment, QApplication, palette that follows the system light/dark
scheme."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence

# pyqtgraph picks PyQt6 when it is installed; pin it to PySide6 before anything imports pyqtgraph.
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

from PySide6.QtCore import QCoreApplication, QSocketNotifier, Qt, QTimer
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from gui.colors import hint_color, is_dark
from gui.long_lived import freeze_once

APP_NAME = "tuneplan"
ORG_NAME = "tuneplan"


def prefers_dark(app: QGuiApplication) -> bool:
    """The system's choice where Qt can read it (Qt ≥ 6.5), else whether the current palette is
    dark."""
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
        QPalette.ColorRole.Window: "#2b2b2b",
        QPalette.ColorRole.WindowText: "#e6e6e6",
        QPalette.ColorRole.Base: "#1f1f1f",
        QPalette.ColorRole.AlternateBase: "#2a2a2a",
        QPalette.ColorRole.ToolTipBase: "#3a3a3a",
        QPalette.ColorRole.ToolTipText: "#e6e6e6",
        QPalette.ColorRole.Text: "#e6e6e6",
        QPalette.ColorRole.Button: "#353535",
        QPalette.ColorRole.ButtonText: "#e6e6e6",
        QPalette.ColorRole.BrightText: "#ff6060",
        QPalette.ColorRole.Highlight: "#3d7bd9",
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Link: "#6ea8ff",
        QPalette.ColorRole.PlaceholderText: hint_color(dark=True),
    }
    for role, color in roles.items():
        pal.setColor(role, QColor(color))
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
        QPalette.ColorRole.WindowText,
    ):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7a7a7a"))
    return pal


def light_palette(app: QApplication) -> QPalette:
    """Fusion's light palette with hint text dark enough to read (its own is 3.9:1 on the
    window)."""
    pal = QPalette(app.style().standardPalette())
    pal.setColor(QPalette.ColorRole.PlaceholderText, QColor(hint_color(dark=False)))
    return pal


def apply_scheme(app: QApplication) -> None:
    """Fusion with the light or dark palette the system asks for; charts follow via
    gui.charts.theme()."""
    app.setStyle("Fusion")
    app.setPalette(dark_palette() if prefers_dark(app) else light_palette(app))


def app_icon() -> QIcon:
    """The app's icon from resources/icons: the SVG for any size, the PNGs where SVG cannot be
    drawn."""
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
    QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
        Qt.HighDpiScaleFactorRoundingPolicy.PassThrough
    )
    QCoreApplication.setOrganizationName(ORG_NAME)
    QCoreApplication.setApplicationName(APP_NAME)
    app = QApplication(list(argv) if argv is not None else sys.argv[:1])
    app.setDesktopFileName(APP_NAME)
    app.setWindowIcon(app_icon())
    apply_scheme(app)
    app.styleHints().colorSchemeChanged.connect(lambda _scheme: apply_scheme(app))
    return app


def quiet_library_logs() -> None:
    """Keep library logs off the terminal of a window session. The probe runner logs a bug with its
    traceback from its worker thread, paramiko a failed handshake; with no handler configured
    Python's last-resort handler prints them on stderr, which the window's user never reads. What
    they mean already reaches the window (the run's event log, the status bar), so a handler that
    drops them is enough."""
    logging.getLogger().addHandler(logging.NullHandler())


def close_on_sigint(app: QApplication) -> Callable[[], None]:
    """Ctrl-C in the terminal closes the windows as Quit does (a probe run is stopped, unsaved edits
    asked about).

    Python runs a signal handler only when it gets control, and Qt's event loop is C++: without help
    the signal waits until the next mouse move. ``signal.set_wakeup_fd`` makes the interpreter write
    a byte to a socket when a signal arrives; a QSocketNotifier on the other end wakes the loop, and
    the Python handler then runs. The handler only schedules the close, so it never runs inside a
    half-finished Qt call.
    """
    reader, writer = socket.socketpair()
    for end in (reader, writer):
        end.setblocking(False)
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, app)

    def drain() -> None:
        with contextlib.suppress(OSError):
            reader.recv(256)

    def close_all() -> None:
        # each window's closeEvent stops what it runs, or keeps the window (Cancel)
        app.closeAllWindows()
        if not any(w.isVisible() for w in app.topLevelWidgets()):
            app.quit()

    notifier.activated.connect(drain)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: QTimer.singleShot(0, close_all))

    def restore() -> None:
        """Put back what was there before (the event loop has ended)."""
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(previous_fd)
        notifier.setEnabled(False)
        reader.close()
        writer.close()

    return restore


def run() -> int:
    """The `tuneplan` entry point without arguments: open the window and run the event loop."""
    quiet_library_logs()
    app = make_app()
    # before the window: a Ctrl-C while it opens closes it once the loop runs
    restore = close_on_sigint(app)
    try:
        from gui import smoke
        from gui.main_window import MainWindow  # after the app exists: widgets need it

        window = MainWindow.create_default()
        window.show()
        freeze_once("window")
        smoke.install(app, window)
        return int(app.exec())
    finally:
        restore()


if __name__ == "__main__":
    raise SystemExit(run())
