"""The probe history's tables, one migration a schema version (core.probes.history.store opens and
migrates the file).

Kept apart from the store so that what the file holds reads in one place, oldest first: a version,
once shipped, is never edited; a new column or table is a new function at the end.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils


def _v1(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE hosts (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, target TEXT NOT NULL, port INTEGER, user TEXT,
        identity_file TEXT, data_path TEXT, checkpoint_path TEXT, local INTEGER NOT NULL DEFAULT 0,
        created REAL NOT NULL, updated REAL NOT NULL)""")  # noqa: E501
    db.execute("""CREATE TABLE runs (
        id INTEGER PRIMARY KEY, host TEXT NOT NULL, suite TEXT NOT NULL, probes TEXT NOT NULL DEFAULT '[]',
        options TEXT NOT NULL DEFAULT '{}', started REAL NOT NULL, ended REAL, status TEXT NOT NULL,
        verdict TEXT, workdir TEXT, evidence TEXT, scorecard TEXT)""")  # noqa: E501
    db.execute("CREATE INDEX runs_host ON runs(host, started)")
    db.execute("""CREATE TABLE outcomes (
        run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, status TEXT NOT NULL,
        started REAL NOT NULL, ended REAL NOT NULL, warnings TEXT NOT NULL DEFAULT '[]', error TEXT)""")  # noqa: E501
    db.execute("CREATE INDEX outcomes_run ON outcomes(run_id)")
    # One row per flushed batch; data = little-endian float64 matrix, rows x len(SAMPLE_COLUMNS),
    # row-major.
    db.execute("""CREATE TABLE sample_blocks (
        run_id INTEGER NOT NULL, t_first REAL NOT NULL, t_last REAL NOT NULL, rows INTEGER NOT NULL,
        data BLOB NOT NULL)""")
    db.execute("CREATE INDEX sample_blocks_run ON sample_blocks(run_id)")
    db.execute("""CREATE TABLE series (
        run_id INTEGER NOT NULL, t REAL NOT NULL, series TEXT NOT NULL, x REAL NOT NULL, y REAL NOT NULL,
        label TEXT NOT NULL DEFAULT '')""")  # noqa: E501
    db.execute("CREATE INDEX series_run ON series(run_id)")
    db.execute("""CREATE TABLE raw_outputs (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, t REAL NOT NULL, probe TEXT NOT NULL,
        command TEXT NOT NULL, stdout TEXT NOT NULL, stderr TEXT NOT NULL, exit_code INTEGER,
        duration_s REAL NOT NULL, timed_out INTEGER NOT NULL DEFAULT 0, cancelled INTEGER NOT NULL DEFAULT 0)""")  # noqa: E501
    db.execute("CREATE INDEX raw_outputs_run ON raw_outputs(run_id)")
    db.execute("""CREATE TABLE events (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, t REAL NOT NULL, kind TEXT NOT NULL,
        level TEXT NOT NULL, probe TEXT, message TEXT NOT NULL)""")
    db.execute("CREATE INDEX events_run ON events(run_id)")


def _v2(db: sqlite_utils.Database) -> None:
    """The run's lease (who is running it: history.leases) and the ledger of what this app created
    on which host (history.ledger), so a dead client's run is told apart from a live one and its
    leftovers are swept."""
    for column, kind in (("lease_pid", "INTEGER"), ("lease_host", "TEXT"), ("lease_start", "REAL")):
        db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
    db.execute("""CREATE TABLE created_paths (
        id INTEGER PRIMARY KEY, host TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL,
        run_id INTEGER, created REAL NOT NULL, UNIQUE(host, path))""")


def _v3(db: sqlite_utils.Database) -> None:
    """Host groups (cluster targets, history.host_groups): a name and its member host names as a
    JSON list."""
    db.execute("""CREATE TABLE host_groups (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, hosts TEXT NOT NULL DEFAULT '[]',
        created REAL NOT NULL, updated REAL NOT NULL)""")


def _v4(db: sqlite_utils.Database) -> None:
    """The host's Python interpreter (its torch may live in a venv or conda env the login PATH does
    not reach)."""
    db.execute("ALTER TABLE hosts ADD COLUMN python TEXT")


# MIGRATIONS[i] makes version i + 1
MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_v1, _v2, _v3, _v4]
