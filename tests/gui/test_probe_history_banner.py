"""The Probe place says when its history cannot be kept, or where a damaged one went, instead of
quietly using memory: the banner above the place and the status line."""

from __future__ import annotations

import sqlite3

from core.probes.history.store import ProbeStore
from gui.probe.pane import ProbePane
from gui.workers import InlineExecutor


def test_a_history_written_by_a_newer_tuneplan_is_left_alone_and_the_banner_says_so(
    qtbot, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    db = tmp_path / "xdg" / "tuneplan" / "probes.db"
    db.parent.mkdir(parents=True)
    newer = sqlite3.connect(db)
    newer.execute("PRAGMA user_version = 99")
    newer.close()
    before = db.read_bytes()
    pane = ProbePane.create_default(InlineExecutor())
    qtbot.addWidget(pane)
    pane.show()
    banner = pane.history_banner
    qtbot.waitUntil(banner.isVisible, timeout=2000)
    assert "written by a newer tuneplan" in banner.text() and "kept in memory only" in banner.text()
    assert str(db) in banner.text() and pane.status.text() == banner.text()
    assert pane.store.path is None and db.read_bytes() == before
    assert [p.name for p in db.parent.iterdir()] == ["probes.db"]


def test_a_damaged_history_is_moved_aside_and_the_banner_says_where(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    db = tmp_path / "xdg" / "tuneplan" / "probes.db"
    store = ProbeStore(db)
    store.start_run("box", "quick", ["inventory"])
    store.close()
    db.write_bytes(b"this is not an SQLite file, whatever its name says" * 100)
    pane = ProbePane.create_default(InlineExecutor())
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(pane.history_banner.isVisible, timeout=2000)
    moved = [p for p in db.parent.iterdir() if p.name.startswith("probes.db.damaged-")]
    assert len(moved) == 1 and f"moved to {moved[0]}" in pane.history_banner.text()
    assert pane.store.path == db and pane.store.runs() == []
    pane.store.close()


def test_a_kept_history_shows_no_banner(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    pane = ProbePane.create_default(InlineExecutor())
    qtbot.addWidget(pane)
    pane.show()
    qtbot.wait(50)
    assert not pane.history_banner.isVisible()
    pane.store.close()
