"""GUI test setup: offscreen Qt, isolated user folders, an inline executor, and leak checks."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QThreadPool
from wizard_driver import settle

from core.planner.store import PlanStore
from gui.workers import InlineExecutor


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.gui)


@pytest.fixture(autouse=True)
def user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Catalog overrides and the library go to a temporary folder, never the user's own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    yield
    assert QThreadPool.globalInstance().waitForDone(2000), "a global-pool thread outlived the test"


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
def window(qtbot, executor, store, settings):  # type: ignore[no-untyped-def]
    from gui.main_window import MainWindow

    w = MainWindow(executor, store, settings, debounce_ms=0)
    qtbot.addWidget(w)
    w.resize(1280, 900)
    w.show()
    settle(qtbot, w.wizard.state)
    return w
