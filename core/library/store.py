"""The plan library: saved plans in one SQLite file in the user's data folder.

Why it is built this way:
- every write is one transaction in WAL mode with synchronous=FULL, so a crash mid-write leaves the
  last committed state and never half a plan;
- the schema carries a version (PRAGMA user_version) and migrates forward one step at a time from
  v1;
- a plan keeps its request as the user set it (what is left out, the planner chooses or a default
  fills) beside the result it was saved with, so it reopens as the same plan
  (core.library.provenance; before v4 every default was written out as if set, and such a request is
  read back through its stored result);
- an id is never given twice (AUTOINCREMENT, since v3), so undoing a delete puts the plan back under
  its own id even after other saves; :meth:`PlanStore.restore` still gives it a new id should its
  own be taken;
- only a damaged file (SQLITE_CORRUPT / NOTADB, or PRAGMA quick_check not "ok") is moved aside with
  a timestamp and reported to the caller, never wiped; a full disk, a read-only folder or a lock is
  one sentence (StoreError, with its kind) and nothing is renamed (core.sqlite_store tells them
  apart);
- the file is created 0600 in a 0700 folder: plans are the user's own work;
- the connection belongs to the thread that opened the store (the GUI thread): sqlite3's rule;
- sqlite-utils (with NumPy, click and pluggy, a tenth of a second) is imported when a store opens,
  not with this module: the window asks :func:`library_is_empty` with plain sqlite3 and opens the
  store once it is on screen.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from core.library.provenance import from_complete
from core.paths import data_dir
from core.planner.request import PlanRequest
from core.planner.result import PlanResult
from core.sqlite_schema import migrate, transaction
from core.sqlite_store import (
    StoreFault,
    check_integrity,
    fault,
    open_or_recover,
    secure_file,
    secure_folder,
)
from core.units import fmt_hours, fmt_usd
from core.validation import validation_message

if TYPE_CHECKING:
    import sqlite_utils

SCHEMA_VERSION = 4
DB_NAME = "tuneplan.db"


class StoreError(StoreFault):
    """The library cannot be used as it is (a full disk, a read-only folder, a lock, a newer
    tuneplan wrote it); one sentence, and ``kind`` says which (core.sqlite_store)."""

    def __init__(self, message: str, kind: str = "other") -> None:
        super().__init__(message, kind)


def default_db_path() -> Path:
    """The plan library in the user's data folder (core.paths.data_dir)."""
    return data_dir() / DB_NAME


def library_is_empty(path: Path | None = None) -> bool | None:
    """Whether the library at `path` holds no plan (the first run), read with plain sqlite3 and
    without opening the store: True when there is no file yet; None when the file cannot be read as
    it is (damaged, locked, of another schema version), and then only opening the store can say what
    is wrong, or recover it.

    Nothing is created, migrated or moved aside here: the store does that when it opens. (Reading a
    WAL file may leave its -wal and -shm beside it, empty and with the file's own 0600 mode; the
    store removes them when it closes.)
    """
    path = Path(path) if path is not None else default_db_path()
    if not path.exists():
        return True
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0.5)
    except sqlite3.Error:
        return None
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version != SCHEMA_VERSION:
            return None
        return conn.execute("SELECT 1 FROM plans LIMIT 1").fetchone() is None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def request_to_dict(request: PlanRequest) -> dict[str, Any]:
    """The request in the public JSON format (DESIGN §3.1) as the user set it: a field never set
    stays out, so the planner chooses it (sharding, micro-batch, recomputation) or its default
    applies, when the request is planned again, by the window, `tuneplan plan` or another tuneplan.
    Writing defaults out would pin them: the planner keeps what a request sets."""
    return request.model_dump(mode="json", exclude_unset=True, exclude_none=True)


# request_form: as the user set it (v4 on), every default written out
AS_SET, COMPLETE = "as_set", "complete"


@dataclass(frozen=True)
class PlanRecord:
    id: int
    name: str
    model: str
    method: str
    gpu: str
    cost_usd: float | None
    hours: float | None
    request_json: str  # as written in the file: restore writes it back unchanged, readable or not
    result_json: str | None
    created: str
    updated: str
    request_form: str = AS_SET

    def cells(self) -> list[str]:
        """Name, model, method, GPU, cost, time and when it was last saved, in words: the columns
        the library lists a plan under, in the window and on the command line alike."""
        return [
            self.name,
            self.model,
            self.method,
            self.gpu,
            fmt_usd(self.cost_usd),
            fmt_hours(self.hours) if self.hours else "—",
            self.updated.replace("T", " ")[:16],
        ]

    def result(self) -> PlanResult | None:
        """The stored result, or None when there is none or it cannot be read
        (:attr:`result_problem` says why)."""
        return self._read_result[0]

    @property
    def result_problem(self) -> str | None:
        """One sentence naming the plan when its stored result cannot be read; None when it can or
        there is none."""
        return self._read_result[1]

    @property
    def problems(self) -> list[str]:
        """What of this plan could not be read, each said with the plan's name."""
        return [p for p in (self.request_problem, self.result_problem) if p]

    @cached_property
    def _read_result(self) -> tuple[PlanResult | None, str | None]:
        if not self.result_json:
            return None, None
        try:
            return PlanResult.model_validate_json(self.result_json), None
        except ValidationError as exc:
            return None, (
                f"plan “{self.name}” (id {self.id}): its saved result cannot be read "
                f"({validation_message(exc)}), so it is shown as not planned"
            )

    @cached_property
    def _read_request(self) -> tuple[dict[str, Any], str | None]:
        try:
            request = json.loads(self.request_json)
        except ValueError as exc:
            return {}, f"plan “{self.name}” (id {self.id}): its saved request is not JSON ({exc})"
        if not isinstance(request, dict):
            return (
                {},
                f"plan “{self.name}” (id {self.id}): its saved request is a JSON "
                f"{type(request).__name__}, "
                "not an object",
            )
        return request, None

    @property
    def stored_request(self) -> dict[str, Any]:
        """The request as the file holds it ({} when it cannot be read: :attr:`request_problem` says
        why)."""
        return self._read_request[0]

    @property
    def request_problem(self) -> str | None:
        return self._read_request[1]

    @cached_property
    def request(self) -> dict[str, Any]:
        """The request as the user set it: what the window opens, `library export` writes and
        Compare lists."""
        if self.request_form == COMPLETE:
            return from_complete(self.stored_request, self.result())
        return self.stored_request


def _summary(request: dict[str, Any], result: PlanResult | None) -> dict[str, Any]:
    """The list columns: what the library shows without parsing the JSON."""
    if result is not None:
        hw = result.hardware
        gpu = f"{hw.gpus}× {hw.gpu}" if hw.nodes == 1 else f"{hw.nodes}×{hw.gpus_per_node} {hw.gpu}"
        return {
            "model": result.model_name,
            "method": result.request.training.method.value,
            "gpu": gpu,
            "cost_usd": result.cost.total_usd,
            "hours": result.time.hours,
        }
    model = request.get("model") or {}
    name = (
        model.get("preset")
        or model.get("_name_or_path")
        or (f"{model['params']} params" if "params" in model else "custom")
    )
    hardware = request.get("hardware") or {}
    return {
        "model": str(name),
        "method": str((request.get("training") or {}).get("method", "lora")),
        "gpu": str(hardware.get("gpu", "")),
        "cost_usd": None,
        "hours": None,
    }


# --------------------------------------------------------------------------- migrations

# all but id
_COLUMNS = "name, model, method, gpu, cost_usd, hours, request_json, result_json, created, updated"


def _v1(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE plans (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        method TEXT NOT NULL DEFAULT '',
        gpu TEXT NOT NULL DEFAULT '',
        cost_usd REAL,
        request_json TEXT NOT NULL,
        result_json TEXT,
        created TEXT NOT NULL,
        updated TEXT NOT NULL)""")


def _v2(db: sqlite_utils.Database) -> None:
    """Wall hours as a column (sortable without parsing JSON), backfilled; an index for the
    newest-first list."""
    db.execute("ALTER TABLE plans ADD COLUMN hours REAL")
    for row in db.query("SELECT id, result_json FROM plans WHERE result_json IS NOT NULL"):
        try:
            hours = json.loads(row["result_json"])["time"]["hours"]
        except (ValueError, KeyError, TypeError):
            continue
        db.execute("UPDATE plans SET hours = ? WHERE id = ?", [hours, row["id"]])
    db.execute("CREATE INDEX plans_updated ON plans(updated)")


def _v3(db: sqlite_utils.Database) -> None:
    """Ids never reused (AUTOINCREMENT): without it SQLite gave a new plan the id of the newest one
    deleted, and undoing that delete then failed with the plan lost. SQLite cannot add AUTOINCREMENT
    to a table, so the table is rebuilt with its rows, ids and index; the ids it ever gave start
    from the largest one kept."""
    db.execute("ALTER TABLE plans RENAME TO plans_v2")
    db.execute("""CREATE TABLE plans (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        method TEXT NOT NULL DEFAULT '',
        gpu TEXT NOT NULL DEFAULT '',
        cost_usd REAL,
        request_json TEXT NOT NULL,
        result_json TEXT,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        hours REAL)""")
    db.execute(f"INSERT INTO plans (id, {_COLUMNS}) SELECT id, {_COLUMNS} FROM plans_v2")
    db.execute("DROP TABLE plans_v2")  # and its index
    db.execute("CREATE INDEX plans_updated ON plans(updated)")


def _v4(db: sqlite_utils.Database) -> None:
    """Requests saved as the user set them from now on; the rows before held every default as if
    set, and say so (read back through their stored result, core.library.provenance.from_complete;
    the file's text is kept)."""
    db.execute(f"ALTER TABLE plans ADD COLUMN request_form TEXT NOT NULL DEFAULT '{COMPLETE}'")


# MIGRATIONS[i] makes version i + 1
MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_v1, _v2, _v3, _v4]


# --------------------------------------------------------------------------- store


class PlanStore:
    """Open (creating, migrating or recovering) the library at `path`; ``notice`` says if a file was
    moved aside."""

    def __init__(
        self,
        path: Path | None = None,
        now: Callable[[], dt.datetime] | None = None,
        *,
        busy_timeout: float = 5.0,
    ) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        # seconds a write waits for another program's lock before saying so
        self._busy_timeout = busy_timeout
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
        self.notice: str | None = None
        self.db, self.notice = open_or_recover(
            self._open, self.path, "plan library", StoreError, self._now()
        )

    # ---- opening

    def _open(self) -> sqlite_utils.Database:
        import sqlite_utils

        secure_folder(self.path.parent, tighten=self.path.parent == data_dir())
        secure_file(self.path)
        db = sqlite_utils.Database(sqlite3.connect(str(self.path), timeout=self._busy_timeout))
        try:
            check_integrity(db.conn)
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the plan library {self.path} was written by a newer tuneplan (schema "
                    f"{version}, this one reads up to {SCHEMA_VERSION}); update tuneplan to open "
                    "it"
                )
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            migrate(db, MIGRATIONS, version)
        except BaseException:
            db.conn.close()
            raise
        return db

    @contextmanager
    def _write(self, doing: str) -> Iterator[None]:
        """One transaction; a failure is a StoreError sentence (``doing``: what was not done), the
        file untouched."""
        try:
            with transaction(self.db):
                yield
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError):
                raise
            raise fault(exc, "plan library", self.path, doing, StoreError) from None

    @property
    def schema_version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self.db.conn.close()

    # ---- reading

    def _record(self, row: dict[str, Any]) -> PlanRecord:
        return PlanRecord(
            id=row["id"],
            name=row["name"],
            model=row["model"],
            method=row["method"],
            gpu=row["gpu"],
            cost_usd=row["cost_usd"],
            hours=row["hours"],
            request_json=row["request_json"],
            result_json=row["result_json"],
            created=row["created"],
            updated=row["updated"],
            request_form=row["request_form"],
        )

    def is_empty(self) -> bool:
        """No plan saved yet (the first run): one indexed row read, not the whole library."""
        return not list(self.db.query("SELECT 1 FROM plans LIMIT 1"))

    def list(self) -> list[PlanRecord]:
        """All plans, most recently changed first."""
        return [
            self._record(r)
            for r in self.db.query("SELECT * FROM plans ORDER BY updated DESC, id DESC")
        ]

    def get(self, plan_id: int) -> PlanRecord:
        rows = list(self.db.query("SELECT * FROM plans WHERE id = ?", [plan_id]))
        if not rows:
            raise KeyError(f"no plan with id {plan_id} in the library")
        return self._record(rows[0])

    # ---- writing (each one transaction)

    def _stamp(self) -> str:
        return self._now().isoformat(timespec="seconds")

    def save(
        self,
        name: str,
        request: dict[str, Any],
        result: PlanResult | None = None,
        plan_id: int | None = None,
    ) -> int:
        """Insert a plan (or replace plan_id's content) and return its id."""
        name = name.strip() or "untitled plan"
        values = {
            "name": name,
            "request_json": json.dumps(request, sort_keys=True),
            "request_form": AS_SET,
            "result_json": result.model_dump_json() if result is not None else None,
            **_summary(request, result),
            "updated": self._stamp(),
        }
        with self._write(f"written (plan “{name}” was not saved)"):
            if plan_id is not None:
                cursor = self.db.execute(
                    "UPDATE plans SET "
                    + ", ".join(f"{k} = :{k}" for k in values)
                    + " WHERE id = :id",
                    {**values, "id": plan_id},
                )
                if cursor.rowcount == 1:
                    return plan_id
            values["created"] = values["updated"]
            cols = ", ".join(values)
            cursor = self.db.execute(
                f"INSERT INTO plans ({cols}) VALUES ({', '.join(':' + k for k in values)})", values
            )
            return int(cursor.lastrowid or 0)

    def rename(self, plan_id: int, name: str) -> None:
        name = name.strip()
        if not name:
            raise ValueError("a plan name cannot be empty")
        with self._write("written (the plan was not renamed)"):
            cursor = self.db.execute(
                "UPDATE plans SET name = ?, updated = ? WHERE id = ?",
                [name, self._stamp(), plan_id],
            )
            if cursor.rowcount != 1:
                raise KeyError(f"no plan with id {plan_id} in the library")

    def duplicate(self, plan_id: int, name: str | None = None) -> int:
        record = self.get(plan_id)
        result = record.result()
        new_id = self.save(name or f"{record.name} (copy)", record.request, result)
        # keep a result this version cannot parse, as it was
        if result is None and record.result_json:
            with self._write("written (the copy has no result)"):
                self.db.execute(
                    "UPDATE plans SET result_json = ? WHERE id = ?", [record.result_json, new_id]
                )
        return new_id

    def delete(self, plan_id: int) -> PlanRecord:
        """Delete and return the record, so the caller can offer undo (:meth:`restore`)."""
        return self.delete_all([plan_id])[0]

    def delete_all(self, plan_ids: Sequence[int]) -> tuple[PlanRecord, ...]:
        """Delete the plans in one transaction (all or none) and return their records for
        :meth:`restore_all`."""
        records = tuple(self.get(plan_id) for plan_id in plan_ids)
        with self._write(
            "written (the plan was not deleted)"
            if len(records) == 1
            else f"written (the {len(records)} plans were not deleted)"
        ):
            self.db.conn.executemany(
                "DELETE FROM plans WHERE id = ?", [[plan_id] for plan_id in plan_ids]
            )
        return records

    def restore(self, record: PlanRecord) -> int:
        """Put a deleted record back, with its dates, and return its id: its own, or a new one where
        another plan has it (a library written before ids were never reused, or the record restored
        twice): a deleted plan always comes back."""
        return self.restore_all([record])[0]

    def restore_all(self, records: Sequence[PlanRecord]) -> tuple[int, ...]:
        """:meth:`restore` for several records in one transaction: all come back, or none and a
        StoreError says why (the records are the caller's to try again with)."""
        ids: tuple[int, ...] = ()
        shown = (
            f"plan “{records[0].name}” was"
            if len(records) == 1
            else f"the {len(records)} plans were"
        )
        with self._write(f"written ({shown} not restored)"):
            for record in records:
                values = [
                    record.name,
                    record.model,
                    record.method,
                    record.gpu,
                    record.cost_usd,
                    record.hours,
                    record.request_json,
                    record.result_json,
                    record.created,
                    record.updated,
                    record.request_form,
                ]
                marks = ", ".join("?" * len(values))
                if not list(self.db.query("SELECT 1 FROM plans WHERE id = ?", [record.id])):
                    self.db.execute(
                        f"INSERT INTO plans (id, {_COLUMNS}, request_form) VALUES (?, {marks})",
                        [record.id, *values],
                    )
                    ids += (record.id,)
                else:
                    cursor = self.db.execute(
                        f"INSERT INTO plans ({_COLUMNS}, request_form) VALUES ({marks})", values
                    )
                    ids += (int(cursor.lastrowid or 0),)
        return ids
