"""Application start: run() opens the window and returns when it closes; palettes for light and dark."""

from __future__ import annotations

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from gui.app import dark_palette, make_app, run


def test_run_opens_the_main_window_and_returns(qapp, user_dirs, monkeypatch):
    from gui.main_window import MainWindow

    seen: list[MainWindow] = []

    def one_turn() -> int:
        """Stand-in for exec(): a real exec() ends the shared test application's event loop for good."""
        qapp.processEvents()
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        seen.extend(windows)
        for w in windows:
            w.close()
        return 0

    monkeypatch.setattr(qapp, "exec", one_turn)
    assert run() == 0
    assert len(seen) == 1
    assert seen[0].windowTitle() == "tuneplan"
    # The library went to the user data folder (XDG_DATA_HOME), not the working directory.
    assert (user_dirs / "data" / "tuneplan" / "tuneplan.db").is_file()


def test_make_app_reuses_the_running_application(qapp):
    assert make_app() is qapp


def test_dark_palette_is_dark_with_readable_text():
    pal = dark_palette()
    window = pal.color(QPalette.ColorRole.Window)
    text = pal.color(QPalette.ColorRole.WindowText)
    assert window.lightness() < 80 < 200 < text.lightness()
