"""What the plan library and the probe history share about their SQLite files: atomic writes and
migrations."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

# only named here: the stores import it when they open (sqlite-utils loads NumPy, click, pluggy)
if TYPE_CHECKING:
    import sqlite_utils

Migration = Callable[["sqlite_utils.Database"], None]


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[None]:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any error: all of a write or none of it."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # SQLite has already rolled back after some errors (a full disk: SQLITE_FULL)
        if db.conn.in_transaction:
            with suppress(sqlite3.Error):
                db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


def migrate(db: sqlite_utils.Database, migrations: Sequence[Migration], version: int) -> None:
    """Apply migrations[version:] one transaction each, recording each step in PRAGMA
    user_version."""
    for target in range(version + 1, len(migrations) + 1):
        with transaction(db):
            migrations[target - 1](db)
            db.execute(f"PRAGMA user_version = {target}")
