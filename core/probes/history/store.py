"""Probe history: saved hosts, runs, every GPU sample, chart point, raw tool output and event, in
one SQLite file.

Why it is built this way:
- samples arrive at up to 10 Hz × 8 GPUs for hours: each batch the runner flushes goes in as float64
  blocks with ``insert_all`` and comes back as NumPy columns (core.probes.history.sample_table holds
  that layout); the rows read back become the records of core.probes.history.records;
- the probe runner writes each item as it arrives (WAL, synchronous=NORMAL: an app crash or a
  dropped SSH connection loses nothing already written), so an interrupted run can be reopened with
  what it measured;
- one thread writes (the one iterating the runner); the connection allows use from another thread so
  a GUI may create the store on its main thread and hand it to a worker, and a lock serialises the
  rare overlap;
- the schema carries a version (PRAGMA user_version) and migrates forward one step at a time;
- host profiles hold no secrets: target, port, user, the *path* of an identity file, data and
  checkpoint paths; still, hostnames and kernel logs are the user's business: the file is 0600 in a
  0700 folder;
- a damaged file (found by PRAGMA quick_check on open) is moved aside and a new one started
  (``notice`` says where); a full disk, a read-only folder or a lock is a ProbeStoreError sentence
  and renames nothing (core.sqlite_store); a file that fails mid-run hands the run to memory
  (core.probes.history.store_rescue) and ``fault`` says the history could not be kept (a full disk:
  the runs end there as interrupted, saying why).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from core.paths import data_dir
from core.probes.evidence import ProbeEvidence, ProbeOutcome, Scorecard
from core.probes.history.records import (
    HostProfile,
    RunSummary,
    StoredRun,
    StoredSeriesPoint,
    host_from_row,
    stored_run,
    summary_from_row,
)
from core.probes.history.sample_table import (
    SampleTable,
    pack_samples,
    sample_blocks,
    table_from_blocks,
)
from core.probes.history.store_rescue import can_rescue, end_in_file, kept, to_memory
from core.probes.history.store_schema import MIGRATIONS
from core.probes.samples import GpuMetric
from core.probes.transport.base import CommandResult
from core.sqlite_schema import migrate, transaction
from core.sqlite_store import (
    CORRUPT,
    FULL,
    StoreFault,
    check_integrity,
    fault_kind,
    fault_sentence,
    keep_reserve,
    move_aside,
    open_immutable,
    open_only,
    open_or_recover,
    secure_file,
    secure_folder,
)

SCHEMA_VERSION = len(MIGRATIONS)
DB_NAME = "probes.db"
RUN_STATUSES = ("running", "completed", "incomplete", "cancelled", "interrupted", "failed")
_INSERT_BATCH = 500


class ProbeStoreError(StoreFault):
    """The probe history cannot be used as it is (a full disk, a read-only folder, a lock, a newer
    tuneplan wrote it); one sentence, and ``kind`` says which (core.sqlite_store)."""

    def __init__(self, message: str, kind: str = "other") -> None:
        super().__init__(message, kind)


def default_probe_db_path() -> Path:
    """The probe history in the user's data folder (core.paths.data_dir)."""
    return data_dir() / DB_NAME


# --------------------------------------------------------------------------- store


class ProbeStore:
    """Open (creating or migrating) the probe history at ``path`` (default:
    `default_probe_db_path`).

    ``path=":memory:"`` keeps everything in memory (tests, throwaway runs). ``read_only``: a file in
    a read-only folder, read in place (`open_immutable`); nothing is created, tightened, migrated,
    moved aside or written.
    """

    def __init__(
        self, path: Path | str | None = None, *, busy_timeout: float = 10.0, read_only: bool = False
    ) -> None:
        self.path: Path | None = (
            None
            if path == ":memory:"
            else (Path(path) if path is not None else default_probe_db_path())
        )
        self._busy_timeout = busy_timeout
        self._read_only = read_only
        self._lock = threading.RLock()
        self.notice: str | None = None  # the damaged file moved aside at open, and where
        # why this session's runs are kept in memory only, when they are
        self.fault: str | None = None
        # this session's runs: what start_run wrote, to rebuild the row
        self._started: dict[int, list[Any]] = {}
        opener = open_only if read_only else open_or_recover
        self.db, self.notice = opener(self._open, self.path, "probe history", ProbeStoreError)

    @classmethod
    def open_or_memory(cls, path: Path | str | None = None) -> ProbeStore:
        """The history at ``path``, or, when it cannot be used (full, read-only, locked, newer), one
        in memory whose ``fault`` says why: a probe run is worth more than its history."""
        try:
            return cls(path)
        except ProbeStoreError as exc:
            store = cls(":memory:")
            store.fault = (
                f"{exc}; this session's runs are kept in memory only and will not be in the history"
            )
            return store

    def _open(self) -> sqlite_utils.Database:
        if self._read_only and self.path is not None:
            return sqlite_utils.Database(
                open_immutable(self.path, SCHEMA_VERSION, "probe history", ProbeStoreError)
            )
        if self.path is not None:
            secure_folder(self.path.parent, tighten=self.path.parent == data_dir())
            secure_file(self.path)
        where = ":memory:" if self.path is None else str(self.path)
        conn = sqlite3.connect(
            where, timeout=self._busy_timeout, check_same_thread=False, isolation_level=None
        )
        db = sqlite_utils.Database(conn)
        try:
            if self.path is not None:
                check_integrity(conn)
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise ProbeStoreError(
                    f"the probe history {self.path} was written by a newer tuneplan (schema "
                    f"{version}, this one reads up to {SCHEMA_VERSION}); update tuneplan to open "
                    "it"
                )
            if self.path is not None and db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            migrate(db, MIGRATIONS, version)
            if self.path is not None:
                # only beside a history this tuneplan writes (never a newer one's)
                keep_reserve(self.path)
        except BaseException:
            conn.close()
            raise
        return db

    def _fall_back(self, exc: BaseException) -> bool:
        """The file failed mid-session: carry this session's runs over to memory (what can still be
        read), move a damaged file aside, set ``fault``; False when there is nothing to fall back
        from (already in memory)."""
        if self.path is None or self._read_only or not can_rescue(exc):
            return False
        with self._lock:
            path, old = self.path, self.db
            kind = fault_kind(exc, path)
            memory, unread = to_memory(old.conn, MIGRATIONS, self._started)
            if kind == FULL:
                end_in_file(path, self._started)
            moved = ""
            if kind == CORRUPT:
                try:
                    moved = f"; it was moved to {move_aside(path)}"
                except OSError:
                    moved = ""
            lost = f" (what it held of {', '.join(unread)} could not be read)" if unread else ""
            self.fault = (
                f"{fault_sentence(kind, 'probe history', path, 'written', str(exc))}{moved}; "
                f"this session's runs are kept in memory only{lost} and will not be in the history"
            )
            self.db, self.path = memory, None
        return True

    @property
    def schema_version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self.db.conn.close()

    @contextmanager
    def _write(self) -> Iterator[None]:
        with self._lock, transaction(self.db):
            yield

    @kept
    def execute_write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One write statement in its own transaction (for the modules that own a table: ledger,
        leases)."""
        with self._write():
            self.db.execute(sql, list(params))

    @kept
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Rows of one read statement as dicts."""
        with self._lock:
            return list(self.db.query(sql, list(params)))

    # ---- hosts

    @kept
    def save_host(self, profile: HostProfile) -> int:
        """Insert or update (by name) a host profile; returns its id."""
        now = time.time()
        values = profile.model_dump()
        values["local"] = int(profile.local)
        with self._write():
            row = self.db.execute("SELECT id FROM hosts WHERE name = ?", [profile.name]).fetchone()
            if row is not None:
                sets = ", ".join(f"{k} = :{k}" for k in values)
                self.db.execute(
                    f"UPDATE hosts SET {sets}, updated = :updated WHERE id = :id",
                    {**values, "updated": now, "id": row[0]},
                )
                return int(row[0])
            cursor = self.db.execute(
                f"INSERT INTO hosts ({', '.join(values)}, created, updated) "
                f"VALUES ({', '.join(':' + k for k in values)}, :now, :now)",
                {**values, "now": now},
            )
            return int(cursor.lastrowid or 0)

    def hosts(self) -> list[HostProfile]:
        """Saved host profiles, by name."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM hosts ORDER BY name COLLATE NOCASE"))
        return [host_from_row(r) for r in rows]

    def host(self, name: str) -> HostProfile:
        for profile in self.hosts():
            if profile.name == name:
                return profile
        raise KeyError(f"no saved host named '{name}'")

    @kept
    def delete_host(self, name: str) -> None:
        """Forget a host profile (its past runs stay in the history)."""
        with self._write():
            self.db.execute("DELETE FROM hosts WHERE name = ?", [name])

    # ---- writing a run (called by the runner, from one thread)

    @kept
    def start_run(
        self,
        host: str,
        suite: str,
        probes: Sequence[str],
        options: dict[str, Any] | None = None,
        started: float | None = None,
    ) -> int:
        values = [
            host,
            suite,
            json.dumps(list(probes)),
            json.dumps(options or {}, default=str),
            started if started is not None else time.time(),
            "running",
        ]
        with self._write():
            cursor = self.db.execute(
                "INSERT INTO runs (host, suite, probes, options, started, status) VALUES (?, ?, "
                "?, ?, ?, ?)",
                values,
            )
            run_id = int(cursor.lastrowid or 0)
        # rebuilds the row in memory if the file fails before it can be read back
        self._started[run_id] = values
        return run_id

    @kept
    def set_workdir(self, run_id: int, workdir: str) -> None:
        with self._write():
            self.db.execute("UPDATE runs SET workdir = ? WHERE id = ?", [workdir, run_id])

    @kept
    def add_samples(self, run_id: int, metrics: Sequence[GpuMetric]) -> int:
        """Append GPU samples as one block (one transaction); returns how many."""
        if not metrics:
            return 0
        matrix = pack_samples(metrics)
        with self._write():
            self.db.table("sample_blocks").insert_all(
                sample_blocks(run_id, matrix), batch_size=_INSERT_BATCH
            )
        return int(matrix.shape[0])

    @kept
    def add_series(self, run_id: int, points: Iterable[StoredSeriesPoint]) -> None:
        rows = [{"run_id": run_id, **p.model_dump()} for p in points]
        if rows:
            with self._write():
                self.db.table("series").insert_all(rows, batch_size=_INSERT_BATCH)

    @kept
    def add_raw_output(self, run_id: int, probe: str, result: CommandResult, t: float) -> None:
        with self._write():
            self.db.table("raw_outputs").insert(
                {
                    "run_id": run_id,
                    "t": t,
                    "probe": probe,
                    "command": result.command,
                    "stdout": result.stdout,
                    "stderr": result.stderr,
                    "exit_code": result.exit_code,
                    "duration_s": result.duration_s,
                    "timed_out": int(result.timed_out),
                    "cancelled": int(result.cancelled),
                }
            )

    @kept
    def add_event(
        self, run_id: int, t: float, kind: str, level: str, message: str, probe: str | None = None
    ) -> None:
        with self._write():
            self.db.table("events").insert(
                {
                    "run_id": run_id,
                    "t": t,
                    "kind": kind,
                    "level": level,
                    "probe": probe,
                    "message": message,
                }
            )

    @kept
    def add_outcome(self, run_id: int, outcome: ProbeOutcome) -> None:
        with self._write():
            self.db.table("outcomes").insert(
                {
                    "run_id": run_id,
                    "name": outcome.name,
                    "status": outcome.status.value,
                    "started": outcome.started,
                    "ended": outcome.ended,
                    "warnings": json.dumps(outcome.warnings),
                    "error": outcome.error,
                }
            )

    @kept
    def save_evidence(self, run_id: int, evidence: ProbeEvidence) -> None:
        """Keep the evidence gathered so far (after every probe, so an interrupted run keeps it)."""
        with self._write():
            self.db.execute(
                "UPDATE runs SET evidence = ? WHERE id = ?", [evidence.model_dump_json(), run_id]
            )

    @kept
    def finish_run(
        self,
        run_id: int,
        status: str,
        evidence: ProbeEvidence | None = None,
        scorecard: Scorecard | None = None,
        ended: float | None = None,
    ) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"run status '{status}' is not one of {', '.join(RUN_STATUSES)}")
        with self._write():
            self.db.execute(
                "UPDATE runs SET status = ?, ended = ?, evidence = COALESCE(?, evidence), "
                "scorecard = COALESCE(?, scorecard), verdict = COALESCE(?, verdict) WHERE id = ?",
                [
                    status,
                    ended if ended is not None else time.time(),
                    evidence.model_dump_json() if evidence is not None else None,
                    scorecard.model_dump_json() if scorecard is not None else None,
                    scorecard.verdict.value
                    if scorecard is not None and scorecard.verdict
                    else None,
                    run_id,
                ],
            )

    # ---- reading

    def runs(self) -> list[RunSummary]:
        """Every run, newest first."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runs ORDER BY started DESC, id DESC"))
        return [summary_from_row(r) for r in rows]

    def runs_for_host(self, host: str) -> list[RunSummary]:
        """Runs of one host label, newest first."""
        with self._lock:
            rows = list(
                self.db.query(
                    "SELECT * FROM runs WHERE host = ? ORDER BY started DESC, id DESC", [host]
                )
            )
        return [summary_from_row(r) for r in rows]

    def load_samples(self, run_id: int) -> SampleTable:
        """All GPU samples of a run as NumPy columns (one query; no per-row objects)."""
        with self._lock:
            blobs = self.db.conn.execute(
                "SELECT data FROM sample_blocks WHERE run_id = ? ORDER BY rowid", [run_id]
            ).fetchall()
        return table_from_blocks([blob for (blob,) in blobs])

    @kept
    def load_run(self, run_id: int) -> StoredRun:
        """Everything of one run; KeyError when there is no such run."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
            if not rows:
                raise KeyError(f"no probe run with id {run_id} in the history")
            row = rows[0]
            outcome_rows = list(
                self.db.query("SELECT * FROM outcomes WHERE run_id = ? ORDER BY rowid", [run_id])
            )
            series_rows = list(
                self.db.query(
                    "SELECT t, series, x, y, label FROM series WHERE run_id = ? ORDER BY rowid",
                    [run_id],
                )
            )
            event_rows = list(
                self.db.query(
                    "SELECT t, kind, level, probe, message FROM events WHERE run_id = ? "
                    "ORDER BY id",
                    [run_id],
                )
            )
            raw_rows = list(
                self.db.query("SELECT * FROM raw_outputs WHERE run_id = ? ORDER BY id", [run_id])
            )
        return stored_run(
            row,
            self.load_samples(run_id),
            outcome_rows=outcome_rows,
            series_rows=series_rows,
            event_rows=event_rows,
            raw_rows=raw_rows,
        )

    @kept
    def delete_run(self, run_id: int) -> None:
        with self._write():
            for table in ("sample_blocks", "series", "raw_outputs", "events", "outcomes"):
                self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            self.db.execute("DELETE FROM runs WHERE id = ?", [run_id])


__all__ = ["DB_NAME", "RUN_STATUSES", "ProbeStore", "ProbeStoreError", "default_probe_db_path"]
