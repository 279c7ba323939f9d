"""The ledger of what this app created on which host (work directories, storage test directories),
kept in the probe history so that what a dropped connection or a killed client left behind is
removed later.

Why a ledger: cleanup at the end of a run cannot reach a host whose connection just dropped, and a
killed client runs no cleanup at all. So every directory is written down (host label, resolved path)
as soon as it is made - the probe hands it to the runner's queue and the runner writes it within a
fraction of a second, before the probe's long work in it (fio, the burn) - and struck out once it is
removed; the runner retries what is left right after a reconnect and at the start of the next run on
that host (``sweep``). The ledger is also the guard: ``sweep`` removes nothing that is not in it,
and the transports' ``remove_workdir`` removes only a resolved path whose last part is one of our
names (``tuneplan.*``). Entries of a run still ``running`` (a live tuneplan, see
core.probes.history.leases) are not swept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from core.probes.history.store import ProbeStore
from core.probes.transport.base import Transport, TransportError

Kind = Literal["workdir", "storage"]


@dataclass(frozen=True)
class Created:
    host: str
    path: str
    kind: str
    run_id: int | None


def remember(store: ProbeStore, host: str, path: str, kind: Kind, run_id: int | None) -> None:
    """Write down a directory this app made on ``host`` (again: a no-op)."""
    store.execute_write(
        "INSERT OR IGNORE INTO created_paths (host, path, kind, run_id, created) "
        "VALUES (?, ?, ?, ?, ?)",
        [host, path, kind, run_id, time.time()],
    )


def forget(store: ProbeStore, host: str, path: str) -> None:
    """Strike out a directory once it is removed."""
    store.execute_write("DELETE FROM created_paths WHERE host = ? AND path = ?", [host, path])


def leftovers(store: ProbeStore, host: str) -> list[Created]:
    """What is still to be removed on ``host``, oldest first, leaving out directories of runs still
    running."""
    rows = store.query(
        "SELECT c.host, c.path, c.kind, c.run_id FROM created_paths c LEFT JOIN runs r ON r.id = "
        "c.run_id WHERE c.host = ? AND (r.status IS NULL OR r.status != 'running') ORDER BY c.id",
        [host],
    )
    return [
        Created(host=r["host"], path=r["path"], kind=r["kind"], run_id=r["run_id"]) for r in rows
    ]


def sweep(
    transport: Transport,
    entries: list[Created],
    removed: Callable[[Created], None],
    warn: Callable[[str], None],
) -> int:
    """Remove each ledger entry on a connected host; ``removed`` is told of each one gone (also when
    it was already gone). Returns how many went. Never raises for one entry: the next start tries
    again."""
    done = 0
    for entry in entries:
        try:
            transport.remove_workdir(entry.path)
        except (TransportError, ValueError) as exc:
            warn(f"could not remove {entry.path} left by an earlier run: {exc}")
            continue
        removed(entry)
        done += 1
    return done


__all__ = ["Created", "forget", "leftovers", "remember", "sweep"]
