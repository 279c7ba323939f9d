"""What the window's Help menu opens: the user guide, the keyboard shortcuts and the About box.

Apart from the window's frame because it is its own small subject: the windows are made when first
asked for (``gui/help.py`` is loaded then, not at start), the shortcuts are read from the window's
menus and actions and the library's, and the About box names where the user's data is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialog, QMainWindow, QMenu, QMessageBox


class HelpWindows:
    """Help for `window`; `library_path` and `library_actions` ask the window (the library may open
    later)."""

    def __init__(
        self,
        window: QMainWindow,
        library_path: Callable[[], Path],
        library_actions: Callable[[], list[QAction]],
    ) -> None:
        self.window, self.library_path, self.library_actions = window, library_path, library_actions
        self.guide: QDialog | None = None  # made when first asked for
        self.shortcuts: QDialog | None = None

    def about_text(self) -> str:
        """What the About box says: version, the shipped catalog's date, and where the user's data
        is kept."""
        from importlib.metadata import PackageNotFoundError, version

        from core.catalog import shipped_catalog
        from core.paths import config_dir
        from core.probes import default_probe_db_path

        try:
            release = version("tuneplan")
        except PackageNotFoundError:  # a source tree run without installing
            release = "unknown (not installed)"
        return (
            f"tuneplan {release}\n\n"
            "Plans what an LLM fine-tune needs and costs; probes a rented GPU box. Every figure "
            "carries its source and date.\n\n"
            f"Catalog (GPUs, models, prices) retrieved {shipped_catalog().retrieved}\n"
            f"Plan library: {self.library_path()}\n"
            f"Probe history: {default_probe_db_path()}\n"
            f"Your prices, GPUs and discounts: {config_dir()}"
        )

    def about(self) -> None:
        QMessageBox.about(self.window, "About tuneplan", self.about_text())

    def show_guide(self) -> None:
        """Help › User guide: docs/guide.md in a window beside this one (one window, raised when
        asked again)."""
        from gui.help import GuideWindow

        if self.guide is None:
            self.guide = GuideWindow(self.window)
        self.guide.show()
        self.guide.raise_()
        self.guide.activateWindow()

    def show_shortcuts(self) -> None:
        """Help › Keyboard shortcuts: read from the menus, the window's and the library's
        actions."""
        from gui.help import ShortcutsDialog

        window = self.window
        actions = [
            a for menu in window.menuBar().findChildren(QMenu) for a in menu.actions()
        ] + window.actions()
        actions += self.library_actions()
        self.shortcuts = ShortcutsDialog(actions, window)
        self.shortcuts.open()
