"""GUI test setup: offscreen Qt, isolated user folders, an inline executor, and leak checks (qt_leaks.py)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QSettings

from core.planner.store import PlanStore
from gui.workers import InlineExecutor
from tests.gui.dialogs import answering
from tests.gui.qt_leaks import LeakWatch
from tests.gui.wizard_driver import settle

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot

    from gui.main_window import MainWindow


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.gui)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """A test that leaves unsaved edits in a window ends as a person quitting would: pressing Discard.

    pytest-qt closes the test's widgets next, and a window with unsaved edits asks first; unanswered, the
    question would wait for ever.
    """
    from PySide6.QtWidgets import QApplication

    from gui.main_window import MainWindow

    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, MainWindow) and widget.isVisible() and widget.isWindowModified():
            with answering(("Discard", None)):
                widget.close()
    return (yield)


@pytest.fixture(autouse=True)
def user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Catalog overrides and the library go to a temporary folder, never the user's own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture(autouse=True)
def no_leaked_workers_or_timers(monkeypatch: pytest.MonkeyPatch) -> Iterator[LeakWatch]:
    """Fail the test (at teardown) when it leaves a ThreadExecutor worker running or a QTimer ticking.

    pytest-qt has closed the test's widgets by then, so a window that stops its work on close passes.
    """
    watch = LeakWatch(monkeypatch)
    yield watch
    # pytest-qt has closed the test's widgets and asked Qt to delete them, which outside an event loop would only
    # happen in the next test's first wait, after their timers had their chance to fire there. Delete them now:
    # what is gone cannot leak.
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    leaks = watch.leaks()
    assert not leaks, "the test left these running:\n" + "\n".join(leaks)


@pytest.fixture
def executor() -> InlineExecutor:
    return InlineExecutor()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PlanStore]:
    s = PlanStore(tmp_path / "library.db")
    yield s
    s.close()


@pytest.fixture
def settings(tmp_path: Path) -> QSettings:
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot: QtBot, executor: InlineExecutor, store: PlanStore, settings: QSettings) -> MainWindow:
    from gui.main_window import MainWindow

    w = MainWindow(executor, store, settings, debounce_ms=0)
    qtbot.addWidget(w)
    w.resize(1280, 900)
    w.show()
    settle(qtbot, w.wizard.state)
    return w
