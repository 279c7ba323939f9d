"""Helpers for driving the Probe place the way a person does: clicks on what is on screen, keys to
whatever has the focus."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QApplication, QTabWidget, QWidget

from core.probes.history.store import ProbeStore
from gui.probe import backend
from gui.probe.pane import ProbePane
from gui.workers import Executor

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot


def with_this_python(choice: Any) -> Any:
    """The runner's options for the pane's choice, measuring with the interpreter the tests run in
    (it has numpy)."""
    return backend.make_options(choice).model_copy(update={"python": sys.executable})


def show_pane(
    qtbot: QtBot,
    store: ProbeStore,
    tmp_path: Path,
    executor: Executor,
    runner: Any = None,
    size: tuple[int, int] = (1280, 900),
) -> ProbePane:
    """The pane in a window of its own, shown; ``runner`` None means the real runner on this
    machine."""
    pane = ProbePane(
        executor,
        store,
        run_suite=runner,
        make_options=with_this_python if runner is None else None,
        known_hosts_file=tmp_path / "known_hosts",
    )
    qtbot.addWidget(pane)
    pane.resize(*size)
    pane.show()
    qtbot.waitExposed(pane)
    return pane


def click(qtbot: QtBot, widget: QWidget) -> None:
    assert widget.isEnabled(), f"{widget.accessibleName() or widget} is disabled"
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def click_row(
    qtbot: QtBot,
    view: QAbstractItemView,
    row: int,
    modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier,
) -> None:
    rect = view.visualRect(view.model().index(row, 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())


def click_host(qtbot: QtBot, pane: ProbePane, name: str) -> None:
    names = [
        pane.hosts.list.item(i).text().split("  —  ")[0] for i in range(pane.hosts.list.count())
    ]
    click_row(qtbot, pane.hosts.list, names.index(name))
    assert pane.hosts.current().name == name


def click_tab(qtbot: QtBot, tabs: QTabWidget, title: str) -> None:
    bar = tabs.tabBar()
    index = next(i for i in range(bar.count()) if bar.tabText(i) == title)
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())
    assert tabs.currentIndex() == index


def pick_probes(qtbot: QtBot, pane: ProbePane, *names: str) -> None:
    """Custom suite, then tick exactly ``names`` the way a person does: one click per box that is
    wrong."""
    click(qtbot, pane.suite.mode_buttons["custom"])
    for name, box in pane.suite.checks.items():
        if box.isChecked() != (name in names):
            click(qtbot, box)
    assert pane.suite.choice().probes == names


def type_keys(qtbot: QtBot, text: str) -> None:
    """Each character to whatever has the focus, as a keyboard sends it."""
    for char in text:
        qtbot.keyClick(QApplication.focusWidget(), char)
        qtbot.wait(5)


def click_into(qtbot: QtBot, field: QWidget) -> None:
    """Click a text field and wait until it has the focus, as a person does before typing."""
    qtbot.mouseClick(field, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is field, timeout=2000)


def run_and_wait(qtbot: QtBot, pane: ProbePane) -> None:
    """Press Start and wait for the run to end (the real runner on this machine takes seconds)."""
    click(qtbot, pane.start_button)
    qtbot.waitUntil(lambda: not pane.running, timeout=120_000)


def table_cells(view: QAbstractItemView) -> list[list[str]]:
    """Every cell's text as shown, row by row."""
    model = view.model()
    return [
        [str(model.index(r, c).data()) for c in range(model.columnCount())]
        for r in range(model.rowCount())
    ]
