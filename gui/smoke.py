"""A start-up self-check for builds: ``TUNEPLAN_SMOKE_TEST=1 tuneplan`` opens the window, checks
what a frozen bundle can silently lose, prints one line per check and exits (0 when all hold, 1
otherwise).

A PyInstaller bundle that misses a Qt plugin, an image-format plugin, the shipped catalog or the
user guide still starts far enough to look fine in a build log; only a started window shows it
(Friture's scripts/smoke_test.py checks its bundle the same way). Nothing here runs unless the
variable is set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication, QImageReader
from PySide6.QtWidgets import QApplication, QMainWindow

ENV_VAR = "TUNEPLAN_SMOKE_TEST"


def _checks(window: QMainWindow) -> list[tuple[str, Callable[[], str]]]:
    def window_shown() -> str:
        if not window.isVisible():
            raise RuntimeError("the main window is not visible")
        return f"'{window.windowTitle()}' on the {QGuiApplication.platformName()} platform plugin"

    def svg_plugin() -> str:
        formats = {bytes(f.data()).decode() for f in QImageReader.supportedImageFormats()}
        if "svg" not in formats:
            raise RuntimeError(f"no svg image-format plugin (have: {', '.join(sorted(formats))})")
        return "svg image format available"

    def icon() -> str:
        if QApplication.windowIcon().isNull():
            raise RuntimeError("the window icon did not load from resources/icons")
        return "window icon loaded"

    def catalog() -> str:
        from core.catalog import shipped_catalog
        from core.resources import resources_root

        cat = shipped_catalog()
        return f"{len(cat.gpus)} GPUs, {len(cat.prices)} prices from {resources_root()}"

    def probe_scripts() -> str:
        from core.resources import resources_root

        scripts = sorted(p.name for p in (resources_root() / "probes").iterdir())
        if not scripts:
            raise RuntimeError("resources/probes is empty")
        return f"{len(scripts)} probe scripts"

    def guide() -> str:
        from core.resources import guide_path

        path = guide_path()
        if path is None:
            raise RuntimeError(
                "the user guide (resources/guide.md) is missing: Help › User guide would be empty"
            )
        return f"user guide at {path}"

    return [
        ("window", window_shown),
        ("svg", svg_plugin),
        ("icon", icon),
        ("catalog", catalog),
        ("probe scripts", probe_scripts),
        ("guide", guide),
    ]


def run_checks(window: QMainWindow) -> int:
    """Print one line per check; 0 when every check holds."""
    failed = 0
    for name, check in _checks(window):
        try:
            print(f"smoke ok    {name}: {check()}", flush=True)
        except Exception as exc:  # a smoke test reports every failure, whatever its type
            failed += 1
            print(f"smoke FAIL  {name}: {exc}", flush=True)
    return 1 if failed else 0


def install(app: QApplication, window: QMainWindow) -> None:
    """When the variable is set, check and quit once the event loop has shown the window."""
    if not os.environ.get(ENV_VAR):
        return

    def finish() -> None:
        print("smoke: interactive", flush=True)  # the event loop is running with the window shown
        code = run_checks(window)
        window.close()
        app.exit(code)

    QTimer.singleShot(int(os.environ.get("TUNEPLAN_SMOKE_DELAY_MS", "300")), finish)
    print(f"smoke: {sys.executable} started", flush=True)
