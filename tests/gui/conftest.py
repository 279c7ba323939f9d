"""GUI test setup: a real X server (Xvfb, see xvfb.py), isolated user folders, an inline executor or
the real one, and leak checks (qt_leaks.py)."""

from __future__ import annotations

import os

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QSettings

from core.library.store import PlanStore
from core.probes.history.store import ProbeStore
from gui.workers import InlineExecutor, ThreadExecutor
from tests.gui.dialogs import answering
from tests.gui.qt_leaks import LeakWatch
from tests.gui.wizard_driver import settle
from tests.gui.xvfb import choose_display

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot

    from gui.main_window import MainWindow

# Before any QApplication exists: pytest-qt makes it at the first test that asks for it, after this
# import.
DISPLAY = choose_display()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "real_window: needs a real X display (Xvfb); skipped without one, "
        "failed without one under CI=true",
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    DISPLAY.stop()


def pytest_report_header(config: pytest.Config) -> str:
    if DISPLAY.real:
        return f"GUI tests: X display {os.environ.get('DISPLAY')}" + (
            " (Xvfb started for this run)" if DISPLAY.server else ""
        )
    return f"GUI tests: offscreen Qt; {DISPLAY.reason}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.gui)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """A test that leaves unsaved edits in a window ends as a person quitting would: pressing
    Discard.

    pytest-qt closes the test's widgets next, and a window with unsaved edits asks first;
    unanswered, the question would wait for ever.
    """
    from PySide6.QtWidgets import QApplication

    from gui.main_window import MainWindow

    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, MainWindow) and widget.isVisible() and widget.isWindowModified():
            with answering(("Discard", None)):
                widget.close()
    return (yield)


@pytest.fixture(autouse=True)
def real_window_or_skip(request: pytest.FixtureRequest) -> None:
    """A test marked real_window skips on the offscreen fallback, and fails there in CI, where Xvfb
    must exist."""
    if DISPLAY.real or request.node.get_closest_marker("real_window") is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI needs a real X display for this test: {DISPLAY.reason}", pytrace=False)
    pytest.skip(DISPLAY.reason)


@pytest.fixture(autouse=True)
def user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Catalog overrides and the library go to a temporary folder, never the user's own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture(autouse=True)
def no_leaked_workers_or_timers(monkeypatch: pytest.MonkeyPatch) -> Iterator[LeakWatch]:
    """Fail the test (at teardown) when it leaves a ThreadExecutor worker running or a QTimer
    ticking.

    pytest-qt has closed the test's widgets by then, so a window that stops its work on close
    passes.
    """
    watch = LeakWatch(monkeypatch)
    yield watch
    # pytest-qt has closed the test's widgets and asked Qt to delete them, which outside an event
    # loop would only happen in the next test's first wait, after their timers had their chance to
    # fire there. Delete them now: what is gone cannot leak.
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


def open_window(
    qtbot: QtBot,
    executor: InlineExecutor | ThreadExecutor,
    store: PlanStore,
    settings: QSettings,
    debounce_ms: int,
) -> MainWindow:
    """The main window, shown, active (it has the keyboard) and with its first plan on screen."""
    from gui.main_window import MainWindow

    w = MainWindow(executor, store, settings, debounce_ms=debounce_ms)
    qtbot.addWidget(w)
    w.resize(1280, 900)
    with qtbot.waitExposed(w):
        w.show()
    with qtbot.waitActive(w):
        w.activateWindow()
    settle(qtbot, w.wizard.state)
    return w


@pytest.fixture
def window(
    qtbot: QtBot, executor: InlineExecutor, store: PlanStore, settings: QSettings
) -> MainWindow:
    """Plans at once, inline, on every edit: a test can assert right after it."""
    return open_window(qtbot, executor, store, settings, debounce_ms=0)


@pytest.fixture
def live_window(qtbot: QtBot, store: PlanStore, settings: QSettings) -> MainWindow:
    """The window as `tuneplan` runs it: plans on a worker thread after the 150 ms debounce. Closing
    it (pytest-qt does at teardown) stops the worker."""
    return open_window(qtbot, ThreadExecutor(), store, settings, debounce_ms=150)


@pytest.fixture
def probe_store(tmp_path: Path) -> Iterator[ProbeStore]:
    """A probe history of the test's own, closed after it."""
    store = ProbeStore(tmp_path / "probes.db")
    yield store
    store.close()


@pytest.fixture
def threads() -> Iterator[ThreadExecutor]:
    """Real worker threads, every job finished (or the test fails) before the next test."""
    executor = ThreadExecutor()
    yield executor
    assert executor.stop_all(5000)
