"""Stale runs and the ledger of created directories, with real processes and real directories.

A dead client is a real child process that exited (its pid is then free); a live one is this test
process; a reused pid is this process with a lease whose start time is an hour off."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from core.probes.history import ledger
from core.probes.history.leases import (
    Lease,
    current_lease,
    holder_alive,
    mark_stale_runs,
    process_start,
    take_lease,
)
from core.probes.history.store import ProbeStore
from core.probes.samples import GpuMetric
from core.probes.transport.local import LocalTransport


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_live_process_holds_its_lease_and_a_dead_one_does_not() -> None:
    me = current_lease()
    assert holder_alive(me)
    assert not holder_alive(Lease(pid=dead_pid(), host=socket.gethostname(), start=me.start))


@pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="process start times come from /proc"
)
def test_a_reused_pid_is_told_apart_by_its_start_time() -> None:
    me = current_lease()
    assert me.start is not None and process_start(me.pid) == me.start
    assert not holder_alive(Lease(pid=me.pid, host=me.host, start=me.start - 3600))


def test_a_lease_from_another_machine_is_left_alone() -> None:
    assert holder_alive(Lease(pid=dead_pid(), host=socket.gethostname() + "-elsewhere", start=0.0))


def test_only_the_dead_clients_runs_are_marked_interrupted_and_their_samples_stay(
    tmp_path: Path,
) -> None:
    store = ProbeStore(tmp_path / "probes.db")
    live = store.start_run("h", "quick", ["inventory"])
    take_lease(store, live)
    dead = store.start_run("h", "quick", ["inventory", "burn"])
    take_lease(store, dead, Lease(pid=dead_pid(), host=socket.gethostname(), start=None))
    store.add_samples(
        dead, [GpuMetric(t=1.0, gpu=0, power_w=631.95), GpuMetric(t=1.5, gpu=0, power_w=630.0)]
    )
    assert mark_stale_runs(store) == [dead]
    runs = {r.id: r for r in store.runs()}
    assert runs[live].status == "running"
    assert runs[dead].status == "interrupted" and runs[dead].ended is not None
    assert store.load_samples(dead).power.tolist() == [631.95, 630.0]
    assert mark_stale_runs(store) == []


def test_the_ledger_sweeps_what_runs_left_but_not_what_a_live_run_uses(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "probes.db")
    old = store.start_run("h", "quick", [])
    store.finish_run(old, "interrupted")
    live = store.start_run("h", "quick", [])
    take_lease(store, live)
    left, in_use = tmp_path / "tuneplan.io.left", tmp_path / "tuneplan.live"
    for directory in (left, in_use):
        directory.mkdir()
        (directory / "tuneplan_seq.dat").write_bytes(b"\0" * 4096)
    ledger.remember(store, "h", str(left), "storage", old)
    ledger.remember(store, "h", str(in_use), "workdir", live)
    ledger.remember(store, "other host", str(left), "storage", old)
    entries = ledger.leftovers(store, "h")
    assert [e.path for e in entries] == [str(left)]
    notes: list[str] = []
    gone = ledger.sweep(
        LocalTransport(), entries, lambda e: ledger.forget(store, e.host, e.path), notes.append
    )
    assert gone == 1 and notes == []
    assert not left.exists() and in_use.exists()
    assert ledger.leftovers(store, "h") == []
    assert [e.path for e in ledger.leftovers(store, "other host")] == [str(left)]


def test_the_ledger_refuses_an_entry_that_is_not_ours_and_keeps_it(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "probes.db")
    precious = tmp_path / "data"
    precious.mkdir()
    ledger.remember(store, "h", str(precious), "storage", None)
    notes: list[str] = []
    gone = ledger.sweep(
        LocalTransport(),
        ledger.leftovers(store, "h"),
        lambda e: ledger.forget(store, e.host, e.path),
        notes.append,
    )
    assert gone == 0 and precious.is_dir()
    assert len(notes) == 1 and "not one this app created" in notes[0]
    assert [e.path for e in ledger.leftovers(store, "h")] == [str(precious)]
