"""Both stores on real faults: a full 1 MiB tmpfs, a read-only mount, a lock held by another
connection, a damaged page, and the file modes they are created with.

The mounts need root (CI runs as root); elsewhere those tests skip and say why. Nothing here mocks
SQLite: the kernel says ENOSPC / EROFS and SQLite says SQLITE_FULL / SQLITE_READONLY / SQLITE_BUSY /
SQLITE_CORRUPT.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.library.store import PlanStore, StoreError
from core.probes.history.records import HostProfile
from core.probes.history.store import ProbeStore, ProbeStoreError
from core.sqlite_store import FULL, LOCKED, READ_ONLY

ROOT = Path(__file__).resolve().parents[2]
REQUEST = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2e8}}
# A request as big as the whole tmpfs (a user's notes would not be this long, but a full disk is a
# full disk).
BIG_REQUEST = {**REQUEST, "notes": "x" * (1 << 20)}


def _can_mount() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "mounting a tmpfs or a read-only view needs root (CI runs as root)"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "mount(8) is not installed"
    probe = Path(tempfile.mkdtemp(prefix="tuneplan-mount-probe-"))
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return f"this machine does not allow mounts here: {done.stderr.strip()}"
        subprocess.run(["umount", str(probe)], check=True)
        return None
    finally:
        probe.rmdir()


MOUNT_PROBLEM = _can_mount()
needs_mount = pytest.mark.skipif(MOUNT_PROBLEM is not None, reason=MOUNT_PROBLEM or "")


@contextmanager
def tmpfs(where: Path, size: str = "1m") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)], check=True
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


@contextmanager
def read_only_view(source: Path, where: Path) -> Iterator[Path]:
    """``source`` seen through a read-only bind mount: as root chmod would not stop a write, a mount
    does."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(source), str(where)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def fill(folder: Path) -> Path:
    """Write a filler file until the kernel says ENOSPC: the disk is then really full."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        chunk = b"\0" * 4096
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
    finally:
        os.close(fd)
    return filler


def names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# --------------------------------------------------------------------------- disk full


@needs_mount
def test_a_full_disk_keeps_the_plan_library_and_says_the_plan_was_not_saved(tmp_path):
    with tmpfs(tmp_path / "mnt") as mnt:
        store = PlanStore(mnt / "tuneplan.db")
        kept_id = store.save("kept", REQUEST)
        fill(mnt)
        with pytest.raises(StoreError) as caught:
            store.save("too big", BIG_REQUEST)
        assert caught.value.kind == FULL
        message = str(caught.value)
        assert "disk it is on is full" in message and "“too big” was not saved" in message
        assert "\n" not in message
        assert [r.name for r in store.list()] == ["kept"]
        store.close()
        again = PlanStore(mnt / "tuneplan.db")  # the disk is still full: reading needs no space
        assert [r.id for r in again.list()] == [kept_id] and again.notice is None
        again.close()
        assert not any(".damaged-" in n for n in names(mnt))


@needs_mount
def test_a_new_probe_history_on_a_full_disk_is_one_sentence_and_nothing_renamed(tmp_path):
    with tmpfs(tmp_path / "mnt") as mnt:
        fill(mnt)
        with pytest.raises(ProbeStoreError) as caught:
            ProbeStore(mnt / "probes.db")
        assert caught.value.kind == FULL and "disk it is on is full" in str(caught.value)
        # what `tuneplan probe` and the window do
        memory = ProbeStore.open_or_memory(mnt / "probes.db")
        assert (
            memory.path is None
            and memory.fault is not None
            and "kept in memory only" in memory.fault
        )
        assert not any(".damaged-" in n for n in names(mnt))


@needs_mount
def test_a_disk_that_fills_mid_run_keeps_the_run_in_memory(tmp_path):
    with tmpfs(tmp_path / "mnt") as mnt:
        store = ProbeStore(mnt / "probes.db")
        run_id = store.start_run("box", "quick", ["burn"])
        store.add_event(run_id, 1.0, "log", "info", "before the disk filled")
        fill(mnt)
        # cannot fit: the run moves to memory
        store.add_event(run_id, 2.0, "log", "info", "y" * (1 << 20))
        store.add_event(run_id, 3.0, "log", "info", "after")
        store.finish_run(run_id, "completed")
        run = store.load_run(run_id)
        assert [e.t for e in run.events] == [1.0, 2.0, 3.0]
        assert run.summary.status == "completed"
        assert store.fault is not None and "disk it is on is full" in store.fault
        assert "kept in memory only" in store.fault
        assert names(mnt) >= {"probes.db"} and not any(".damaged-" in n for n in names(mnt))


# --------------------------------------------------------------------------- read-only


@needs_mount
def test_a_read_only_folder_gives_one_sentence_for_both_stores_and_renames_nothing(tmp_path):
    source = tmp_path / "data"
    library = PlanStore(source / "tuneplan.db")
    library.save("mine", REQUEST)
    library.close()
    history = ProbeStore(source / "probes.db")
    history.start_run("box", "quick", ["inventory"])
    history.close()
    before = names(source)
    with read_only_view(source, tmp_path / "ro") as ro:
        with pytest.raises(StoreError) as plan_error:
            PlanStore(ro / "tuneplan.db")
        with pytest.raises(ProbeStoreError) as probe_error:
            ProbeStore(ro / "probes.db")
        for error, what in (
            (plan_error.value, "plan library"),
            (probe_error.value, "probe history"),
        ):
            assert error.kind == READ_ONLY
            assert str(error).startswith(f"the {what} {ro}") and "read-only" in str(error)
            assert "\n" not in str(error)
        assert names(ro) == before
    assert [r.name for r in PlanStore(source / "tuneplan.db").list()] == ["mine"]
    assert len(ProbeStore(source / "probes.db").runs()) == 1


# --------------------------------------------------------------------------- locked


def _hold_exclusive(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    return other


def test_a_plan_library_locked_by_another_connection_says_locked(tmp_path):
    path = tmp_path / "tuneplan.db"
    store = PlanStore(path, busy_timeout=0.2)
    store.save("first", REQUEST)
    other = _hold_exclusive(path)
    try:
        with pytest.raises(StoreError) as caught:
            store.save("second", REQUEST)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert caught.value.kind == LOCKED and "locked by another program" in str(caught.value)
    assert [r.name for r in store.list()] == ["first"] and names(tmp_path) >= {"tuneplan.db"}
    assert not any(".damaged-" in n for n in names(tmp_path))


def test_a_probe_history_locked_mid_run_keeps_the_run_and_says_locked(tmp_path):
    path = tmp_path / "probes.db"
    store = ProbeStore(path, busy_timeout=0.2)
    run_id = store.start_run("box", "quick", ["inventory"])
    other = _hold_exclusive(path)
    try:
        store.add_event(run_id, 1.0, "log", "info", "while locked")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.fault is not None and "locked by another program" in store.fault
    assert [e.message for e in store.load_run(run_id).events] == ["while locked"]
    assert not any(".damaged-" in n for n in names(tmp_path))
    # the file is as it was: the run row written before the lock
    assert len(ProbeStore(path).runs()) == 1


# --------------------------------------------------------------------------- damaged


def _damage_page_2(path: Path) -> int:
    """Overwrite page 2 of a closed SQLite file with a pattern no b-tree page has; return the page
    size.

    The page size is the big-endian 2-byte value at offset 16 of the header (1 means 65536),
    https://www.sqlite.org/fileformat.html#the_database_header."""
    header = path.read_bytes()[:100]
    assert header[:16] == b"SQLite format 3\0"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    with path.open("r+b") as handle:
        handle.seek(page_size)  # page 2 starts one page in (pages are numbered from 1)
        handle.write(b"\xa5" * page_size)
    return page_size


def _history_with_one_run(path: Path) -> int:
    store = ProbeStore(path)
    store.save_host(HostProfile(name="box", target="box"))
    run_id = store.start_run("box", "quick", ["inventory"])
    for i in range(20):
        store.add_event(run_id, float(i), "log", "info", f"line {i} " + "z" * 500)
    store.finish_run(run_id, "completed")
    store.close()  # the last connection checkpoints the WAL into the file and removes it
    assert not (path.parent / (path.name + "-wal")).exists()
    return run_id


def test_a_damaged_probe_history_is_moved_aside_and_a_new_one_started(tmp_path):
    path = tmp_path / "probes.db"
    run_id = _history_with_one_run(path)
    _damage_page_2(path)
    damaged_bytes = path.read_bytes()
    store = ProbeStore(path)
    moved = [p for p in tmp_path.iterdir() if p.name.startswith("probes.db.damaged-")]
    assert len(moved) == 1 and moved[0].read_bytes() == damaged_bytes
    assert (
        store.notice is not None
        and str(moved[0]) in store.notice
        and "new, empty history" in store.notice
    )
    assert store.runs() == []
    with pytest.raises(KeyError):
        store.load_run(run_id)
    store.close()


def test_probe_report_of_a_run_in_a_moved_history_explains_it_cannot_be_read(tmp_path):
    home = tmp_path / "home"
    db = home / "data" / "tuneplan" / "probes.db"
    run_id = _history_with_one_run(db)
    _damage_page_2(db)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    first = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuneplan",
            "probe-report",
            str(run_id),
            "-o",
            str(tmp_path / "r.pdf"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    moved = [p for p in db.parent.iterdir() if p.name.startswith("probes.db.damaged-")]
    assert len(moved) == 1
    assert first.returncode != 0 and "Traceback" not in first.stderr
    assert f"it was moved to {moved[0]}" in first.stderr  # the notice: where the damaged file went
    assert (
        f"run {run_id} cannot be read" in first.stderr
        and moved[0].name in first.stderr.splitlines()[-1]
    )
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuneplan",
            "probe-report",
            str(run_id),
            "-o",
            str(tmp_path / "r.pdf"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert again.returncode != 0 and len(again.stderr.strip().splitlines()) == 1
    assert f"run {run_id} cannot be read" in again.stderr and moved[0].name in again.stderr
    assert not (tmp_path / "r.pdf").exists()


def test_damage_found_mid_run_moves_the_file_aside_and_keeps_the_run(tmp_path):
    path = tmp_path / "probes.db"
    store = ProbeStore(path)
    run_id = store.start_run("box", "quick", ["burn"])
    for i in range(40):
        store.add_event(run_id, float(i), "log", "info", "w" * 2000)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    with path.open("r+b") as handle:  # every page but the header page, as a failing disk might
        handle.seek(4096)
        handle.write(b"\xa5" * (size - 4096))
    # forget cached pages, so the next write reads the damage
    store.db.execute("PRAGMA shrink_memory")
    store.add_event(run_id, 99.0, "log", "info", "after the damage")
    store.finish_run(run_id, "completed")
    assert store.fault is not None and "damaged" in store.fault and "moved to" in store.fault
    run = store.load_run(run_id)  # the row rebuilt in memory: the run is still there to print
    assert run.summary.status == "completed" and run.events[-1].message == "after the damage"
    assert any(p.name.startswith("probes.db.damaged-") for p in tmp_path.iterdir())
    assert not path.exists()


def test_a_damaged_plan_library_page_is_moved_aside(tmp_path):
    path = tmp_path / "tuneplan.db"
    store = PlanStore(path)
    for i in range(30):
        store.save(f"plan {i}", {**REQUEST, "notes": "n" * 1000})
    store.close()
    _damage_page_2(path)
    again = PlanStore(path)
    assert again.notice is not None and ".damaged-" in again.notice and again.list() == []
    assert sum(p.name.startswith("tuneplan.db.damaged-") for p in tmp_path.iterdir()) == 1


# --------------------------------------------------------------------------- modes


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_store_files_are_created_0600_in_a_0700_folder(tmp_path):
    library = PlanStore(tmp_path / "new" / "tuneplan.db")
    library.save("mine", REQUEST)
    history = ProbeStore(tmp_path / "new2" / "probes.db")
    history.start_run("box", "quick", [])
    assert mode(tmp_path / "new") == 0o700 and mode(tmp_path / "new2") == 0o700
    for path in (
        tmp_path / "new" / "tuneplan.db",
        tmp_path / "new" / "tuneplan.db-wal",
        tmp_path / "new2" / "probes.db",
        tmp_path / "new2" / "probes.db-wal",
    ):
        assert mode(path) == 0o600, path
    library.close()
    history.close()


def test_an_existing_data_folder_and_files_are_tightened_on_open(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    folder = tmp_path / "tuneplan"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    old = sqlite3.connect(folder / "probes.db")
    old.execute("CREATE TABLE t (x)")
    old.commit()
    old.close()
    (folder / "probes.db").chmod(0o644)
    ProbeStore().close()
    PlanStore().close()
    assert mode(folder) == 0o700
    assert mode(folder / "probes.db") == 0o600 and mode(folder / "tuneplan.db") == 0o600


def test_a_db_path_in_a_shared_folder_leaves_the_folder_as_it_is(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    ProbeStore(shared / "probes.db").close()
    assert mode(shared) == 0o755 and mode(shared / "probes.db") == 0o600


# --------------------------------------------------------------------------- what `tuneplan probe`
# says


def _probe_local(db: Path) -> list[str]:
    return ["probe", "--local", "--suite", "inventory", "--json", "--db", str(db)]


@needs_mount
def test_probe_on_a_full_disk_runs_in_memory_and_prints_the_whole_run(tmp_path, capsys):
    from cli.main import main as cli_main

    with tmpfs(tmp_path / "mnt") as mnt:
        fill(mnt)
        code = cli_main(_probe_local(mnt / "probes.db"))
        out, err = capsys.readouterr()
        assert code == 0, err
        assert json.loads(out)["evidence"]["inventory"]["hostname"] == socket.gethostname()
        assert (
            "disk it is on is full" in err
            and "kept in memory only" in err
            and "Traceback" not in err
        )
        assert not any(".damaged-" in n for n in names(mnt))


def test_probe_with_its_history_locked_mid_run_keeps_the_run_and_says_so(tmp_path, capsys):
    from cli.main import main as cli_main

    db = tmp_path / "probes.db"
    ProbeStore(db).close()
    # held from before the run starts: the first write waits, then gives up
    other = _hold_exclusive(db)
    try:
        code = cli_main(_probe_local(db))
    finally:
        other.execute("ROLLBACK")
        other.close()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["evidence"]["inventory"]["hostname"] == socket.gethostname()
    said = [line for line in err.splitlines() if "could not be kept" in line]
    assert len(said) == 1 and "locked by another program" in said[0]
    assert ProbeStore(db).runs() == []  # nothing half-written in the file


def test_probe_with_a_damaged_history_says_where_it_went(tmp_path, capsys):
    from cli.main import main as cli_main

    db = tmp_path / "probes.db"
    _history_with_one_run(db)
    _damage_page_2(db)
    code = cli_main(_probe_local(db))
    out, err = capsys.readouterr()
    assert code == 0, err
    moved = [p for p in tmp_path.iterdir() if p.name.startswith("probes.db.damaged-")]
    assert len(moved) == 1 and f"moved to {moved[0]}" in err
    assert json.loads(out)["evidence"]["inventory"]["hostname"] == socket.gethostname()
    assert len(ProbeStore(db).runs()) == 1  # the new history holds this run, and only this one


@needs_mount
def test_probe_report_reads_a_read_only_history_and_writes_its_pdf_0600(tmp_path):
    from core.probes.evidence import ProbeEvidence, StorageResult

    source = tmp_path / "data"
    store = ProbeStore(source / "probes.db")
    run_id = store.start_run("root@10.0.0.5:22", "storage", ["storage"])
    store.finish_run(
        run_id,
        "completed",
        evidence=ProbeEvidence(
            storage=[StorageResult(path="/data", role="data", tool="fio", seq_read_bytes_per_s=2e9)]
        ),
    )
    store.close()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update(
        PYTHONPATH=str(ROOT),
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "home" / "data"),
    )
    pdf = tmp_path / "report.pdf"
    with read_only_view(source, tmp_path / "ro") as ro:
        before = names(ro)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tuneplan",
                "probe-report",
                str(run_id),
                "--db",
                str(ro / "probes.db"),
                "-o",
                str(pdf),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert names(ro) == before  # reading made no side file
    assert pdf.read_bytes().startswith(b"%PDF")
    assert stat.S_IMODE(pdf.stat().st_mode) == 0o600  # it names the host, as the 0600 history does


@needs_mount
def test_a_disk_that_fills_mid_run_ends_the_run_in_the_file_saying_so_not_as_a_killed_client(
    tmp_path,
):
    from core.probes.history.leases import Lease, mark_stale_runs, take_lease

    with tmpfs(tmp_path / "mnt") as mnt:
        store = ProbeStore(mnt / "probes.db")
        run_id = store.start_run("box", "quick", ["burn"])
        gone = subprocess.Popen(["true"])  # a client that has exited since: its lease is a dead one
        gone.wait()
        take_lease(store, run_id, Lease(pid=gone.pid, host=socket.gethostname(), start=None))
        store.add_event(run_id, 1.0, "log", "info", "before the disk filled")
        fill(mnt)
        # cannot fit: the run moves to memory
        store.add_event(run_id, 2.0, "log", "info", "y" * (1 << 20))
        store.finish_run(run_id, "completed")
        # the run itself went on, in memory
        assert store.load_run(run_id).summary.status == "completed"
        store.close()
        again = ProbeStore(mnt / "probes.db")  # the next start, on the disk still full
        try:
            assert mark_stale_runs(again) == []  # not taken for a run whose tuneplan was killed
            kept = again.load_run(run_id)
        finally:
            again.close()
        assert kept.summary.status == "interrupted"
        assert [e.message for e in kept.events] == [
            "before the disk filled",
            "the disk of the probe history filled up: the rest of this run was kept in "
            "memory only, so the history ends it here",
        ]
