"""The plan library store: schema migrations, damaged files moved aside, crash safety, round
trips."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.library.store import (
    SCHEMA_VERSION,
    PlanStore,
    StoreError,
    default_db_path,
    library_is_empty,
    request_to_dict,
)
from core.planner.request import PlanRequest
from core.sqlite_schema import transaction

REQUEST = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2e8}}
FIXED = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)


def make_v1(path: Path) -> None:
    """A library as version 1 wrote it (no hours column), with one planned row."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE plans (id INTEGER PRIMARY KEY, name TEXT NOT NULL, model TEXT NOT NULL DEFAULT '',
            method TEXT NOT NULL DEFAULT '', gpu TEXT NOT NULL DEFAULT '', cost_usd REAL, request_json TEXT NOT NULL,
            result_json TEXT, created TEXT NOT NULL, updated TEXT NOT NULL);
        PRAGMA user_version = 1;""")  # noqa: E501
    con.execute(
        "INSERT INTO plans (name, model, method, gpu, cost_usd, request_json, result_json, "
        "created, updated) VALUES ('old', 'llama-3.1-8b', 'lora', '8× H100-SXM', 12.5, ?, ?, "
        "'2025-01-01', '2025-01-02')",
        [json.dumps(REQUEST), json.dumps({"time": {"hours": 3.5}})],
    )
    con.commit()
    con.close()


def test_default_path_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_db_path() == tmp_path / "tuneplan" / "tuneplan.db"


def test_new_library_is_at_the_latest_schema_in_wal_mode(tmp_path):
    store = PlanStore(tmp_path / "lib.db")
    assert store.schema_version == SCHEMA_VERSION == 4
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.notice is None


def test_migrates_from_v1_and_backfills_hours(tmp_path):
    db = tmp_path / "lib.db"
    make_v1(db)
    store = PlanStore(db)
    assert store.schema_version == 4
    [old] = store.list()
    assert (old.name, old.cost_usd, old.hours, old.created) == ("old", 12.5, 3.5, "2025-01-01")
    assert "plans_updated" in {i.name for i in store.db.table("plans").indexes}


def make_v2(path: Path, names: list[str]) -> None:
    """A library as version 2 wrote it (ids that SQLite reuses: INTEGER PRIMARY KEY alone), one row
    per name."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE plans (id INTEGER PRIMARY KEY, name TEXT NOT NULL, model TEXT NOT NULL DEFAULT '',
            method TEXT NOT NULL DEFAULT '', gpu TEXT NOT NULL DEFAULT '', cost_usd REAL, request_json TEXT NOT NULL,
            result_json TEXT, created TEXT NOT NULL, updated TEXT NOT NULL, hours REAL);
        CREATE INDEX plans_updated ON plans(updated);
        PRAGMA user_version = 2;""")  # noqa: E501
    for name in names:
        con.execute(
            "INSERT INTO plans (name, model, request_json, created, updated, hours) "
            "VALUES (?, 'llama-3.1-8b', ?, '2025-01-01', '2025-01-02', 2.5)",
            [name, json.dumps(REQUEST)],
        )
    con.commit()
    con.close()


def test_an_undone_delete_gets_its_plan_back_after_another_save(tmp_path):
    """Deleting the newest plan and saving another before Undo: SQLite gave the new plan the deleted
    one's id, and putting the deleted plan back failed (IntegrityError), losing it. Both plans are
    kept now."""
    store = PlanStore(tmp_path / "lib.db")
    store.save("first", REQUEST)
    newest = store.save("newest", REQUEST)
    gone = store.delete(newest)
    other = store.save("saved meanwhile", REQUEST)
    assert other != newest  # the deleted plan's id is not given again
    assert store.restore(gone) == newest
    assert sorted(r.name for r in store.list()) == ["first", "newest", "saved meanwhile"]
    assert store.get(newest) == gone


def test_a_library_written_by_version_2_is_migrated_and_never_reuses_an_id(tmp_path):
    db = tmp_path / "lib.db"
    make_v2(db, ["a", "b", "c"])
    store = PlanStore(db)
    assert store.schema_version == 4
    assert [
        (r.id, r.name, r.hours, r.created) for r in sorted(store.list(), key=lambda r: r.id)
    ] == [(1, "a", 2.5, "2025-01-01"), (2, "b", 2.5, "2025-01-01"), (3, "c", 2.5, "2025-01-01")]
    assert "plans_updated" in {i.name for i in store.db.table("plans").indexes}
    gone = store.delete(3)
    assert store.save("d", REQUEST) == 4
    assert store.restore(gone) == 3


def test_a_record_whose_id_is_taken_comes_back_under_a_new_one(tmp_path):
    """Restoring is never refused for the id: a record put back twice (or into a library where its
    id went to another plan) is kept as a plan of its own."""
    store = PlanStore(tmp_path / "lib.db")
    gone = store.delete(store.save("twice", REQUEST))
    assert store.restore(gone) == gone.id
    again = store.restore(gone)
    assert again != gone.id
    assert [r.name for r in store.list()] == ["twice", "twice"]
    assert store.get(again).request == gone.request and store.get(again).created == gone.created


def test_library_is_empty_reads_the_first_run_without_opening_the_store(tmp_path):
    """The window's first-run question, answered with plain sqlite3 before the store's SQLite layer
    is loaded."""
    db = tmp_path / "lib.db"
    assert library_is_empty(db) is True  # no file yet: the first run
    assert not db.exists()  # and asking created nothing
    store = PlanStore(db)
    assert library_is_empty(db) is True  # a library with no plan
    store.save("mine", REQUEST)
    assert library_is_empty(db) is False  # read while the store holds the file open (WAL)
    store.close()
    assert library_is_empty(db) is False


def test_library_is_empty_leaves_files_it_cannot_judge_to_the_store(tmp_path):
    """None (open the store now) for what only the store may handle: an older schema it migrates, a
    newer one it refuses, a file that is no database; none of them is changed by the question."""
    v1 = tmp_path / "v1.db"
    make_v1(v1)
    newer = tmp_path / "newer.db"
    con = sqlite3.connect(newer)
    # empty: only its version says not to read it
    con.execute("CREATE TABLE plans (id INTEGER PRIMARY KEY)")
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database, " * 512)
    for path in (v1, newer, garbage):
        before = path.read_bytes()
        assert library_is_empty(path) is None, path.name
        assert path.read_bytes() == before, path.name


def test_a_newer_library_is_refused_not_touched(tmp_path):
    db = tmp_path / "lib.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 99")
    con.close()
    before = db.read_bytes()
    with pytest.raises(StoreError, match="newer tuneplan"):
        PlanStore(db)
    assert db.read_bytes() == before


def test_damaged_file_is_moved_aside_with_a_message(tmp_path):
    db = tmp_path / "lib.db"
    db.write_bytes(b"definitely not a database\n" * 100)
    store = PlanStore(db, now=lambda: FIXED)
    moved = tmp_path / "lib.db.damaged-20260304-050607"
    assert moved.read_bytes().startswith(b"definitely not")
    assert store.notice is not None and str(moved) in store.notice
    assert store.list() == []
    assert store.save("fresh", REQUEST) == 1


def test_truncated_database_is_moved_aside(tmp_path):
    db = tmp_path / "lib.db"
    store = PlanStore(db)
    for i in range(50):
        store.save(f"plan {i}", REQUEST)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = db.read_bytes()
    db.write_bytes(data[:4096] + b"\0" * 100)  # header intact, pages gone
    again = PlanStore(db, now=lambda: FIXED)
    assert again.notice is not None
    assert (tmp_path / "lib.db.damaged-20260304-050607").exists()


def test_save_rename_duplicate_delete_restore(tmp_path):
    store = PlanStore(tmp_path / "lib.db", now=lambda: FIXED)
    a = store.save("a", REQUEST)
    rec = store.get(a)
    assert (rec.model, rec.method, rec.gpu, rec.cost_usd) == ("llama-3.1-8b", "lora", "", None)
    assert rec.created == rec.updated == "2026-03-04T05:06:07+00:00"
    store.rename(a, "  baseline ")
    assert store.get(a).name == "baseline"
    with pytest.raises(ValueError, match="empty"):
        store.rename(a, " ")
    with pytest.raises(KeyError):
        store.rename(12345, "x")
    b = store.duplicate(a)
    assert store.get(b).name == "baseline (copy)" and store.get(b).request == REQUEST
    gone = store.delete(a)
    assert [r.id for r in store.list()] == [b]
    store.restore(gone)
    assert store.get(a) == gone
    assert store.save("replaced", {**REQUEST, "data": {"tokens": 1e8}}, plan_id=a) == a
    assert store.get(a).request["data"]["tokens"] == 1e8


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    store = PlanStore(tmp_path / "lib.db")
    store.save("kept", REQUEST)
    with pytest.raises(sqlite3.IntegrityError), transaction(store.db):
        store.db.execute(
            "INSERT INTO plans (name, request_json, created, updated) VALUES ('half', '{}', 'x', "
            "'x')"
        )
        # id 1 is taken: the whole write fails
        store.db.execute(
            "INSERT INTO plans (id, name, request_json, created, updated) "
            "VALUES (1, 'clash', '{}', 'x', 'x')"
        )
    assert [r.name for r in store.list()] == ["kept"]
    with pytest.raises(TypeError):
        store.save("unserialisable", {"model": object()})
    assert len(store.list()) == 1


def test_a_crash_in_the_middle_of_a_write_loses_nothing_committed(tmp_path):
    db = tmp_path / "lib.db"
    store = PlanStore(db)
    store.save("committed", REQUEST)
    store.close()
    crash = textwrap.dedent(f"""
        import os
        from core.library.store import PlanStore
        s = PlanStore({str(db)!r})
        s.db.conn.execute("BEGIN IMMEDIATE")
        s.db.conn.execute("INSERT INTO plans (name, request_json, created, updated) VALUES ('half', '{{}}', 'x', 'x')")
        s.db.conn.execute("UPDATE plans SET name = 'overwritten' WHERE name = 'committed'")
        os._exit(9)  # killed before COMMIT
    """)  # noqa: E501
    done = subprocess.run([sys.executable, "-c", crash], cwd=Path(__file__).parents[2], timeout=60)
    assert done.returncode == 9
    again = PlanStore(db)
    assert again.notice is None
    assert [r.name for r in again.list()] == ["committed"]


def test_request_to_dict_round_trips_the_public_format():
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": "200M", "seq_len": 4096},
            "training": {"method": "qlora", "lora_rank": 8},
            "assumptions": {"mfu": 0.4},
        }
    )
    out = request_to_dict(request)
    assert out["model"] == {"preset": "llama-3.1-8b"}
    assert out["data"]["tokens"] == 2e8
    assert out["training"]["method"] == "qlora" and out["training"]["lora_rank"] == 8
    assert out["assumptions"] == {"mfu": 0.4}
    assert "search" not in out and "hardware" not in out
    assert PlanRequest.model_validate(json.loads(json.dumps(out))) == request


def test_is_empty_until_a_plan_is_saved_and_again_once_it_is_deleted(tmp_path):
    store = PlanStore(tmp_path / "lib.db")
    assert store.is_empty()
    plan_id = store.save("one", REQUEST)
    assert not store.is_empty()
    store.delete(plan_id)
    assert store.is_empty()
