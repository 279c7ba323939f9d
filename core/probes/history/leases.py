"""Who is running a probe run: a lease (pid, host, process start time) in its row, to tell a dead
client's run from one another tuneplan is running right now.

A run the store still calls ``running`` may be (a) going on in another tuneplan - a second window, a
CLI run in another terminal - or (b) left behind by a client that was killed (SIGKILL, a crash, a
power cut) before it could write how the run ended. Only (b) may be marked ``interrupted``: marking
(a) would corrupt a live run.

How the two are told apart, on the next start of tuneplan (``mark_stale_runs``, called by `tuneplan
probe` and by the window when it opens the probe history):
- the lease's host is not this machine: nothing here can tell whether that process lives, so the run
  is left alone (a probe history shared over a network home is the only way this happens);
- ``os.kill(pid, 0)`` says no such process: the client is dead;
- a process with that pid exists but started at another time than the lease says (its start time
  from /proc/PID/stat, to the second): the pid was reused after the client died, so the client is
  dead;
- otherwise the client lives (also when ``kill`` is refused with EPERM: the process exists, under
  another user).
A ``running`` row with no lease was written before leases existed, by a client that cannot still be
running after an upgrade; it is marked too. Samples, evidence and outcomes are kept: only the status
and end time change.
"""

from __future__ import annotations

import errno
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from core.probes.history.store import ProbeStore

# /proc start times are in clock ticks since boot; boot time itself is to the second
START_TOLERANCE_S = 2.0


@dataclass(frozen=True)
class Lease:
    pid: int
    host: str
    # the process's start time (Unix seconds); None where the platform does not say
    start: float | None


def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def process_start(pid: int) -> float | None:
    """When process ``pid`` started (Unix seconds), from /proc/PID/stat field 22 (starttime, in
    clock ticks since boot; proc(5)); None when there is no /proc or no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the command name in (...) may contain spaces
    boot = _boot_time()
    if boot is None or len(fields) < 20:
        return None
    try:
        ticks = int(fields[19])  # field 22 overall; fields[0] is field 3 (state)
    except ValueError:
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def current_lease() -> Lease:
    """The lease of this process."""
    return Lease(pid=os.getpid(), host=socket.gethostname(), start=process_start(os.getpid()))


def holder_alive(lease: Lease) -> bool:
    """True when the process holding ``lease`` may still be running (see the module docstring)."""
    if lease.host != socket.gethostname():
        return True
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError as exc:
        return exc.errno != errno.ESRCH
    if lease.start is None:
        return True
    started = process_start(lease.pid)
    return started is None or abs(started - lease.start) <= START_TOLERANCE_S


def take_lease(store: ProbeStore, run_id: int, lease: Lease | None = None) -> None:
    """Write this process's lease into a run's row (the runner, right after ``start_run``)."""
    lease = lease or current_lease()
    store.execute_write(
        "UPDATE runs SET lease_pid = ?, lease_host = ?, lease_start = ? WHERE id = ?",
        [lease.pid, lease.host, lease.start, run_id],
    )


def mark_stale_runs(store: ProbeStore, now: float | None = None) -> list[int]:
    """Mark every ``running`` run whose client is dead as ``interrupted``; returns their ids."""
    rows = store.query(
        "SELECT id, started, lease_pid, lease_host, lease_start FROM runs WHERE status = 'running'"
    )
    stale = []
    for row in rows:
        if (
            row["lease_pid"] is not None
            and row["lease_host"] is not None
            and holder_alive(
                Lease(
                    pid=int(row["lease_pid"]), host=str(row["lease_host"]), start=row["lease_start"]
                )
            )
        ):
            continue
        stale.append((int(row["id"]), float(row["started"])))
    ended = now if now is not None else time.time()
    for run_id, started in stale:
        store.execute_write(
            "UPDATE runs SET status = 'interrupted', ended = COALESCE(ended, ?) "
            "WHERE id = ? AND status = 'running'",
            [ended, run_id],
        )
        store.add_event(
            run_id,
            round(max(0.0, ended - started), 3),
            "log",
            "error",
            "the run was interrupted: the tuneplan process running it stopped before the run ended "
            "(found on the next start)",
        )
    return [run_id for run_id, _ in stale]


__all__ = [
    "Lease",
    "current_lease",
    "holder_alive",
    "mark_stale_runs",
    "process_start",
    "take_lease",
]
