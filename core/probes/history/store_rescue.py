"""Keeping a probe run when its history file fails mid-run: copy what can be read into memory and
carry on.

Why: a run measures for minutes to hours on a rented box; a history file that fills its disk, turns
read-only, stays locked or is found damaged halfway must not cost those measurements. The store
(core.probes.history.store) then switches to an in-memory database holding what this session's runs
had written, so the runner, the CLI's ``--json`` and the window still see the whole run, and the
user is told the history could not be kept.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

import sqlite_utils

from core.sqlite_schema import Migration, migrate
from core.sqlite_store import release_reserve

FULL_DISK_NOTE = (
    "the disk of the probe history filled up: the rest of this run was kept in memory only, so the "
    "history ends it here"
)

P = ParamSpec("P")
R = TypeVar("R")


class _Rescuable(Protocol):
    def _fall_back(self, exc: BaseException) -> bool: ...


def kept(method: Callable[P, R]) -> Callable[P, R]:
    """Run a store method; when its file fails (`_fall_back` says it switched to memory), run it
    once more there."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            store: _Rescuable = args[0]  # type: ignore[assignment]
            if not store._fall_back(exc):
                raise
            return method(*args, **kwargs)

    return wrapper


def can_rescue(exc: BaseException) -> bool:
    """A fault of the file (full, read-only, locked, damaged, I/O), not a bug in how it was
    asked."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(
        exc,
        sqlite3.IntegrityError
        | sqlite3.ProgrammingError
        | sqlite3.InterfaceError
        | sqlite3.DataError,
    )


def copy_runs(
    old: sqlite3.Connection, new: sqlite_utils.Database, run_ids: Collection[int]
) -> list[str]:
    """Copy ``run_ids``' rows (and every row of tables not keyed by run) from ``old`` into ``new``,
    whose schema is the same; return the tables that could not be read (a damaged page), whose rows
    are then missing."""
    unread: list[str] = []
    ids = sorted(set(run_ids))
    marks = ", ".join("?" for _ in ids) or "NULL"
    for table in new.table_names():
        columns = [c.name for c in new.table(table).columns]
        if table == "runs":
            where, params = f" WHERE id IN ({marks})", ids
        elif "run_id" in columns:
            where, params = f" WHERE run_id IN ({marks})", ids
        else:
            where, params = "", []
        try:
            cursor = old.execute(f"SELECT {', '.join(columns)} FROM {table}{where}", params)
            rows: list[dict[str, Any]] = [
                dict(zip(columns, row, strict=True)) for row in cursor.fetchall()
            ]
        except sqlite3.Error:
            unread.append(table)
            continue
        if rows:
            new.table(table).insert_all(rows, batch_size=500)
    return unread


def to_memory(
    old: sqlite3.Connection, migrations: Sequence[Migration], started: dict[int, list[Any]]
) -> tuple[sqlite_utils.Database, list[str]]:
    """A new in-memory history holding the ``started`` runs as far as ``old`` can still be read (the
    ``runs`` row rebuilt from what start_run wrote when it cannot); ``old`` is closed. Also returns
    the tables not read."""
    memory = sqlite_utils.Database(
        sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    )
    migrate(memory, migrations, 0)
    unread = copy_runs(old, memory, started)
    for run_id, values in started.items():
        if memory.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is None:
            memory.execute(
                "INSERT INTO runs (id, host, suite, probes, options, started, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [run_id, *values],
            )
    close_quietly(old)
    return memory, unread


def end_in_file(path: Path, started: dict[int, list[Any]]) -> None:
    """Mark the ``started`` runs still ``running`` in a history file whose disk filled up as
    ``interrupted``, with `FULL_DISK_NOTE` as their last event, in the room the store's reserve
    gives back: left ``running``, the next start would take them for runs whose tuneplan was killed.
    Best effort, since the file has just failed."""
    release_reserve(path)
    now = time.time()
    with suppress(sqlite3.Error):
        conn = sqlite3.connect(path, timeout=1.0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            # values: host, suite, probes, options, started, status
            for run_id, values in started.items():
                ended = conn.execute(
                    "UPDATE runs SET status = 'interrupted', ended = ? WHERE id = ? AND "
                    "status = 'running'",
                    [now, run_id],
                ).rowcount
                if ended:
                    conn.execute(
                        "INSERT INTO events (run_id, t, kind, level, message) VALUES (?, ?, 'log', "
                        "'error', ?)",
                        [run_id, round(max(0.0, now - float(values[4])), 3), FULL_DISK_NOTE],
                    )
            conn.execute("COMMIT")
        finally:
            close_quietly(conn)


def close_quietly(conn: sqlite3.Connection) -> None:
    """Close a connection whose file has failed; closing may fail too, and nothing more can be done
    about it."""
    with suppress(sqlite3.Error):
        conn.close()
