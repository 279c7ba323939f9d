"""Help as a person finds it: F1 opens the user guide (docs/guide.md, shipped with the app), Help ›
Keyboard shortcuts lists the keys the window answers to; Help had only About."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from core.resources import guide_path
from gui.help import GuideWindow, guide_markdown

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"
PICTURE = re.compile(r"!\[[^\]]*\]\(screenshots/")


def press(
    qtbot, key: Qt.Key, modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
) -> None:
    qtbot.keyClick(QApplication.focusWidget(), key, modifiers)


def test_f1_opens_the_user_guide(qtbot, window):
    assert [a.text() for a in window.menuBar().actions()] == ["&File", "&View", "&Help"]
    press(qtbot, Qt.Key.Key_F1)
    qtbot.waitUntil(
        lambda: window.help.guide is not None and window.help.guide.isVisible(), timeout=5000
    )
    guide = window.help.guide
    assert isinstance(guide, GuideWindow)
    text = guide.browser.toPlainText()
    # The guide's own headings, as docs/guide.md writes them.
    for heading in (
        "The tuneplan user guide",
        "Plan a run",
        "Save, compare and export the PDF",
        "Probe a cluster",
    ):
        assert heading in text
    guide.close()


def test_keyboard_shortcuts_lists_what_the_keys_do(qtbot, window):
    press(qtbot, Qt.Key.Key_Slash, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(
        lambda: window.help.shortcuts is not None and window.help.shortcuts.isVisible(),
        timeout=5000,
    )
    rows = {row.cells[0]: row.cells[1] for row in window.help.shortcuts.model.rows()}
    # The menus' own keys (main_window.py) and the library's (gui/library/widget.py).
    assert (
        rows["New plan"] == "Ctrl+N" and rows["Export PDF"] == "Ctrl+E" and rows["Quit"] == "Ctrl+Q"
    )
    assert rows["User guide"] == "F1" and rows["Keyboard shortcuts"] == "Ctrl+/"
    assert (
        rows["Go to Library"] == "Ctrl+2"
        and rows["Delete plan"] == "Del"
        and rows["Undo"] == "Ctrl+Z"
    )
    # each once, though View and the window share them
    assert len(rows) == len(window.help.shortcuts.model.rows())
    # a window manager activates the dialog that opens; Xvfb runs none
    window.help.shortcuts.activateWindow()
    qtbot.waitUntil(window.help.shortcuts.isActiveWindow, timeout=2000)
    press(qtbot, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.help.shortcuts.isVisible(), timeout=2000)


def test_an_installed_app_reads_the_guide_it_ships(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Installed, resources/ is <prefix>/share/tuneplan/resources with guide.md in it and no
    screenshots: the guide is read there, its pictures left out, not drawn as broken images."""
    shipped = tmp_path / "share" / "tuneplan" / "resources"
    shutil.copytree(ROOT / "resources" / "catalog", shipped / "catalog")
    shutil.copy(GUIDE, shipped / "guide.md")
    monkeypatch.setenv("TUNEPLAN_RESOURCES", str(shipped))
    assert guide_path() == shipped / "guide.md"
    text = guide_markdown(shipped / "guide.md")
    assert not PICTURE.search(text) and "## Plan a run" in text
    assert PICTURE.search(guide_markdown(GUIDE))  # a source checkout has them beside the guide


def test_every_package_ships_the_guide_where_the_app_reads_it():
    """The wheel's data files put docs/guide.md in share/tuneplan/resources and the PyInstaller
    bundle in its resources/, the two places core.resources looks for resources/guide.md."""
    data_files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "data-files"
    ]
    assert "docs/guide.md" in data_files["share/tuneplan/resources"]
    spec = (ROOT / "packaging" / "tuneplan.spec").read_text()
    assert '(str(ROOT / "docs" / "guide.md"), "resources")' in spec


def test_the_guides_contents_links_go_to_their_headings(qtbot, window):
    # The guide opens with links to its sections ([Probe a cluster](#probe-a-cluster)); Qt's
    # Markdown gives the headings no anchors, so a click did nothing. A person tabs to a link and
    # presses Enter.
    press(qtbot, Qt.Key.Key_F1)
    qtbot.waitUntil(
        lambda: window.help.guide is not None and window.help.guide.isVisible(), timeout=5000
    )
    guide = window.help.guide
    browser = guide.browser
    guide.activateWindow()
    browser.setFocus()
    qtbot.waitUntil(browser.hasFocus, timeout=2000)
    assert browser.verticalScrollBar().value() == 0
    press(qtbot, Qt.Key.Key_Tab)  # the first link: "Plan a run"
    press(qtbot, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: browser.verticalScrollBar().value() > 0, timeout=2000)
    # its heading at the top
    assert browser.cursorForPosition(QPoint(8, 8)).block().text() == "Plan a run"
    for anchor in re.findall(r"\]\(#([\w-]+)\)", GUIDE.read_text(encoding="utf-8")):
        assert anchor in guide.headings, anchor  # every contents link of the guide has its heading
    guide.close()
