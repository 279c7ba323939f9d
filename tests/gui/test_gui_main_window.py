"""The window: places, shortcuts, geometry kept in QSettings, accessible names, clean shutdown."""

from __future__ import annotations

import json
import os
from pathlib import Path

from PySide6.QtCore import QRect, QSettings
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from core.library.store import PlanStore
from gui.main_window import MainWindow
from tests.gui.dialogs import press_ok, the_dialog
from tests.gui.wizard_driver import settle


def test_places_and_a_later_one(window):
    assert list(window.places) == ["Plan", "Library", "Catalog"]
    probe = QLabel("probe pane")
    index = window.add_place("Probe", probe)
    assert index == 3
    window.show_place("Probe")
    assert window.stack.currentWidget() is probe
    assert window.sidebar.item(3).text() == "Probe"


def test_shortcuts(window):
    expected = {
        "new": "Ctrl+N",
        "open": "Ctrl+O",
        "save": "Ctrl+S",
        "pdf": "Ctrl+E",
        "quit": "Ctrl+Q",
    }
    for name, keys in expected.items():
        assert window.actions_by_name[name].shortcut() == QKeySequence(keys), name


def test_geometry_is_remembered(qtbot, executor, tmp_path: Path):
    ini = str(tmp_path / "geometry.ini")
    first = MainWindow(
        executor, PlanStore(tmp_path / "a.db"), QSettings(ini, QSettings.Format.IniFormat)
    )
    qtbot.addWidget(first)
    first.show()
    # the offscreen screen is 800×600; the window's minimum is wider
    first.setGeometry(QRect(3, 4, 700, 433))
    size = (first.width(), first.height())
    assert size[1] == 433
    first.close()
    second = MainWindow(
        executor, PlanStore(tmp_path / "a.db"), QSettings(ini, QSettings.Format.IniFormat)
    )
    qtbot.addWidget(second)
    assert (second.width(), second.height()) == size
    second.close()


def internal(widget: QWidget) -> bool:
    """Parts Qt builds inside a control (a combo's popup list, a line edit's clear button)."""
    parent = widget.parent()
    while parent is not None:
        if isinstance(parent, QComboBox | QLineEdit | QAbstractItemView):
            return True
        parent = parent.parent()
    return False


def test_every_control_has_an_accessible_name(window):
    window.wizard.state.recompute_now()
    unnamed = []
    kinds = (QAbstractButton, QLineEdit, QComboBox, QAbstractItemView, QPlainTextEdit)
    for widget in window.findChildren(QWidget):
        if not isinstance(widget, kinds) or widget.parent() is None:
            continue
        if type(widget).__name__ in ("QScrollBar", "QHeaderView") or widget.objectName().startswith(
            "qt_"
        ):
            continue
        if internal(widget):
            continue
        name = widget.accessibleName() or (
            widget.text() if isinstance(widget, QAbstractButton) else ""
        )
        if not name:
            unnamed.append(f"{type(widget).__name__} in {type(widget.parent()).__name__}")
    assert not unnamed, unnamed


def test_open_request_file_and_refuse_garbage(qtbot, window, tmp_path: Path):
    good = tmp_path / "req.json"
    good.write_text(json.dumps({"model": {"preset": "mistral-7b-v0.3"}, "data": {"tokens": "5e7"}}))
    assert window.open_request(good)
    settle(qtbot, window.wizard.state)
    assert window.wizard.state.get("model") == {"preset": "mistral-7b-v0.3"}
    assert window.wizard.model_page.list.currentIndex().data(256) == "mistral-7b-v0.3"
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert not window.open_request(bad)
    box = the_dialog(qtbot)
    assert box.text().startswith("bad.json is not valid JSON")
    press_ok(qtbot, box)
    assert window.wizard.state.get("model") == {"preset": "mistral-7b-v0.3"}


def test_close_stops_workers(qtbot, tmp_path: Path, settings):
    from gui.workers import ThreadExecutor

    ex = ThreadExecutor()
    w = MainWindow(ex, PlanStore(tmp_path / "b.db"), settings, debounce_ms=0)
    qtbot.addWidget(w)
    w.show()
    w.wizard.state.recompute_now()
    w.close()
    assert ex.active == 0 or ex.stop_all(100)


def test_export_json_and_pdf(qtbot, window, tmp_path: Path):
    settle(qtbot, window.wizard.state)
    out = window.export_json(tmp_path / "plan.json")
    assert out is not None
    data = json.loads(out.read_text())
    assert data["hardware"]["gpu"] == window.wizard.state.analysis.result.hardware.gpu
    window.export_pdf(tmp_path / "plan.pdf")
    assert (tmp_path / "plan.pdf").read_bytes().startswith(b"%PDF")


def test_exports_replace_a_planted_link_and_refuse_a_pipe(qtbot, window, tmp_path: Path):
    """The window's exports go through the one writer (core/output_file.py): a symlink at the chosen
    name is replaced, its target left as it was; a named pipe there is said on the status line, not
    waited on."""
    settle(qtbot, window.wizard.state)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    for name in ("plan.json", "plan.pdf"):
        (tmp_path / name).symlink_to(victim)
    assert window.export_json(tmp_path / "plan.json") is not None
    window.export_pdf(tmp_path / "plan.pdf")
    assert victim.read_text() == "the user's own file\n"
    assert not (tmp_path / "plan.json").is_symlink() and json.loads(
        (tmp_path / "plan.json").read_text()
    )
    assert not (tmp_path / "plan.pdf").is_symlink() and (
        tmp_path / "plan.pdf"
    ).read_bytes().startswith(b"%PDF")
    os.mkfifo(tmp_path / "pipe.json")
    assert window.export_json(tmp_path / "pipe.json") is None
    assert "pipe.json is a named pipe, not a file" in window.statusBar().currentMessage()
