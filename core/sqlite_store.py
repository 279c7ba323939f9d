"""What goes wrong with a store's SQLite file, told apart: disk full, read-only, locked, damaged.

Why this exists: both stores (the plan library, the probe history) used to take any SQLite error for
damage and move a healthy file aside. Only damage justifies that; a full disk, a read-only folder or
a lock held by another program say one sentence and change nothing. SQLite gives the cause as a
result code (``sqlite_errorcode`` on Python ≥ 3.11, https://www.sqlite.org/rescode.html); the
operating system gives it as an errno (ENOSPC, EROFS, EACCES). A file is called damaged only for
SQLITE_CORRUPT / SQLITE_NOTADB or a ``PRAGMA quick_check`` that is not "ok"
(https://www.sqlite.org/pragma.html#pragma_quick_check).

The files hold what the user made and what their hosts printed (hostnames, kernel logs, key paths),
so a store is created mode 0600 in a mode-0700 folder, and an existing one is tightened when the
user owns it.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

FULL = "disk full"
READ_ONLY = "read-only"
LOCKED = "locked"
CORRUPT = "corrupt"
OTHER = "other"

# Primary result codes (the low byte of an extended code), https://www.sqlite.org/rescode.html
_SQLITE_KINDS = {
    13: FULL,
    8: READ_ONLY,
    3: READ_ONLY,
    23: READ_ONLY,
    5: LOCKED,
    6: LOCKED,
    11: CORRUPT,
    26: CORRUPT,
}
_SQLITE_CANTOPEN, _SQLITE_IOERR = 14, 10
_ERRNO_KINDS = {
    errno.ENOSPC: FULL,
    errno.EDQUOT: FULL,
    errno.EROFS: READ_ONLY,
    errno.EACCES: READ_ONLY,
    errno.EPERM: READ_ONLY,
}
# Older sqlite3 modules carry no code: the messages SQLite gives for each (sqlite3ErrStr in SQLite's
# main.c).
_MESSAGES = (
    ("disk is full", FULL),
    ("readonly", READ_ONLY),
    ("read-only", READ_ONLY),
    ("is locked", LOCKED),
    ("malformed", CORRUPT),
    ("not a database", CORRUPT),
)
SIDE_FILES = ("-wal", "-shm")


class DamagedFile(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` found damage (SQLite itself raises nothing until it reads the damaged
    page)."""


class StoreFault(RuntimeError):
    """A store that cannot be used as asked, in one sentence; ``kind`` is one of FULL, READ_ONLY,
    LOCKED, CORRUPT, OTHER."""

    def __init__(self, message: str, kind: str = OTHER) -> None:
        super().__init__(message)
        self.kind = kind


def _folder_kind(path: Path) -> str:
    """SQLITE_CANTOPEN / IOERR say only that a file could not be opened or written: the folder tells
    why."""
    folder = path.parent
    try:
        info = os.statvfs(folder)
    except OSError:
        return OTHER
    if info.f_flag & os.ST_RDONLY or not os.access(folder, os.W_OK):
        return READ_ONLY
    if path.exists() and not os.access(path, os.W_OK):
        return READ_ONLY
    if info.f_bavail == 0:
        return FULL
    return OTHER


def fault_kind(exc: BaseException, path: Path | None = None) -> str:
    """Which of FULL, READ_ONLY, LOCKED, CORRUPT or OTHER an exception from opening or writing
    ``path`` means."""
    if isinstance(exc, StoreFault):
        return exc.kind
    if isinstance(exc, DamagedFile):
        return CORRUPT
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int):
            primary = code & 0xFF
            if primary in _SQLITE_KINDS:
                return _SQLITE_KINDS[primary]
            if primary in (_SQLITE_CANTOPEN, _SQLITE_IOERR) and path is not None:
                return _folder_kind(path)
            return OTHER
        text = str(exc).lower()
        for needle, kind in _MESSAGES:
            if needle in text:
                return kind
        return _folder_kind(path) if path is not None else OTHER
    if isinstance(exc, OSError) and exc.errno in _ERRNO_KINDS:
        return _ERRNO_KINDS[exc.errno]
    return OTHER


def fault_sentence(kind: str, what: str, path: Path | None, doing: str, detail: str) -> str:
    """One sentence for the user: which store, what could not be done, why, and that nothing was
    changed."""
    where = f"the {what} {path}" if path is not None else f"the {what}"
    if kind == FULL:
        return (
            f"{where} could not be {doing}: the disk it is on is full; free some space and try "
            "again"
        )
    if kind == READ_ONLY:
        return (
            f"{where} could not be {doing}: its file or folder is read-only (or not yours to "
            "write); "
            "nothing in it was changed"
        )
    if kind == LOCKED:
        return (
            f"{where} could not be {doing}: it is locked by another program (another tuneplan?); "
            "close that "
            "and try again"
        )
    if kind == CORRUPT:
        return f"{where} is damaged ({detail})"
    return f"{where} could not be {doing}: {detail}"


def fault(
    exc: BaseException,
    what: str,
    path: Path | None,
    doing: str,
    error: type[StoreFault] = StoreFault,
) -> StoreFault:
    """The ``error`` to raise for ``exc``: its kind and its sentence."""
    if isinstance(exc, StoreFault):
        return exc
    kind = fault_kind(exc, path)
    detail = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
    return error(fault_sentence(kind, what, path, doing, detail), kind)


def check_integrity(conn: sqlite3.Connection) -> None:
    """Raise `DamagedFile` unless ``PRAGMA quick_check`` says "ok" (it reads every page, so damage
    shows at open)."""
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if [r[0] for r in rows] != ["ok"]:
        raise DamagedFile("integrity check failed: " + "; ".join(str(r[0]) for r in rows[:3]))


def move_aside(path: Path, now: dt.datetime | None = None) -> Path:
    """Rename a damaged file (and its -wal/-shm) to ``<name>.damaged-<timestamp>`` next to it;
    return the new path.

    Renamed, never deleted: what SQLite cannot read may still be recovered (``sqlite3 FILE
    .recover``)."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    path.rename(target)
    for suffix in SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    return target


Db = TypeVar("Db")


def open_or_recover(
    open_db: Callable[[], Db],
    path: Path | None,
    what: str,
    error: type[StoreFault],
    now: dt.datetime | None = None,
) -> tuple[Db, str | None]:
    """Open a store file with ``open_db``; only when it is damaged, move it aside and start a new
    one.

    Returns the database and the notice the user is told (where the damaged file went), or None.
    Every other fault (full, read-only, locked) raises ``error`` with its one sentence and changes
    nothing on disk; so does a damaged file that cannot be moved or a new one that cannot be
    created. ``path`` None: an in-memory store.
    """
    try:
        return open_db(), None
    except (sqlite3.Error, OSError) as exc:
        if path is None or fault_kind(exc, path) != CORRUPT:
            raise fault(exc, what, path, "opened", error) from None
        damage = exc
    try:
        moved = move_aside(path, now)
    except OSError as move_exc:
        raise fault(move_exc, what, path, "moved aside", error) from None
    try:
        db = open_db()
    except (sqlite3.Error, OSError) as again:
        raise fault(again, what, path, "created", error) from None
    noun = what.split()[-1]  # "plan library" -> "a new, empty library"
    return (
        db,
        f"The {what} {path} was damaged ({damage}); it was moved to {moved} and a new, empty "
        f"{noun} was started.",
    )


RESERVE_BYTES = 256 << 10


def keep_reserve(path: Path) -> None:
    """Keep a small file of zeros beside the store (``<name>.reserve``, 0600), written while there
    is room, so that a disk that fills later still has room to record that it did
    (`release_reserve`). Best effort: with no room now there is no reserve, and nothing else
    changes."""
    reserve = path.with_name(path.name + ".reserve")
    if reserve.exists():
        return
    try:
        with os.fdopen(
            os.open(reserve, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb"
        ) as handle:
            handle.write(bytes(RESERVE_BYTES))  # real blocks: a sparse file would give nothing back
    except OSError:
        reserve.unlink(missing_ok=True)


def release_reserve(path: Path) -> None:
    """Delete the reserve `keep_reserve` wrote: a full disk gets that room back for the store's last
    words."""
    path.with_name(path.name + ".reserve").unlink(missing_ok=True)


def open_immutable(
    path: Path, schema: int, what: str, error: type[StoreFault]
) -> sqlite3.Connection:
    """Read a store file in place where nothing can be written (a read-only mount): ``immutable=1``
    makes SQLite read it as it is, without the -shm/-wal files a WAL database otherwise creates even
    to be read (https://www.sqlite.org/uri.html). Only for a file nobody can be writing; it must
    have schema ``schema``, since a reader cannot migrate it."""
    if not path.is_file():
        raise sqlite3.OperationalError(f"unable to open database file: {path} does not exist")
    conn = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro&immutable=1",
        uri=True,
        check_same_thread=False,
        isolation_level=None,
    )
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error:
        conn.close()
        raise
    if version != schema:
        conn.close()
        raise error(
            f"the {what} {path} is read-only and has schema {version}; this tuneplan reads schema "
            f"{schema}: "
            "open it once where it can be written",
            READ_ONLY,
        )
    return conn


def open_only(
    open_db: Callable[[], Db], path: Path | None, what: str, error: type[StoreFault]
) -> tuple[Db, str | None]:
    """`open_or_recover` for a reader: a fault is one sentence, and nothing is moved aside or
    created."""
    try:
        return open_db(), None
    except (sqlite3.Error, OSError) as exc:
        raise fault(exc, what, path, "read", error) from None


def moved_aside(path: Path) -> list[Path]:
    """Damaged copies of ``path`` moved aside earlier, oldest first (for telling a user where a run
    went)."""
    if not path.parent.is_dir():
        return []
    return sorted(
        p for p in path.parent.glob(f"{path.name}.damaged-*") if not p.name.endswith(SIDE_FILES)
    )


def _owned(info: os.stat_result) -> bool:
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()


def secure_folder(folder: Path, *, tighten: bool) -> None:
    """Create ``folder`` mode 0700; with ``tighten``, narrow an existing one the user owns to 0700.

    ``tighten`` is for the app's own data folder only: a ``--db`` path may sit in a folder the user
    shares on purpose (never /tmp's sticky folder either)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not tighten:
        return
    try:
        info = folder.stat()
        if _owned(info) and not info.st_mode & stat.S_ISVTX and stat.S_IMODE(info.st_mode) & 0o077:
            folder.chmod(0o700)
    except OSError:  # a read-only folder stays as it is; opening it says why
        pass


def secure_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 when missing (SQLite gives its -wal/-shm the same mode),
    and narrow an existing file and its side files the user owns to 0600. An empty file is a valid,
    empty SQLite database."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    except FileExistsError:
        pass
    for candidate in (path, *(path.with_name(path.name + s) for s in SIDE_FILES)):
        try:
            info = candidate.stat()
            if _owned(info) and stat.S_IMODE(info.st_mode) & 0o077:
                candidate.chmod(0o600)
        except OSError:
            continue
