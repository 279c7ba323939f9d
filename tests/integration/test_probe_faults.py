"""Faults a flaky rented box injects, against a real OpenSSH server on 127.0.0.1, through `tuneplan
probe`.

The serving sshd child (the per-connection ``sshd: user`` process, found as a descendant of the
listening sshd by its parent pid: ``SshdServer.kill_connections``) is killed while the burn, the
all_reduce benchmark or fio runs; the client is SIGKILLed mid-run; data paths hold ``..``, ``:`` or
only 5 MiB. The run must then say what it did not measure (exit 6, verdict INCOMPLETE), keep what it
measured before the drop, and leave nothing on the host. Server and client are one machine, so
"nothing left" is checked on the local file system. The moment to kill is found by reading the probe
history the CLI writes (a WAL SQLite file readable while it is written): the first live chart point
of the probe under test.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cli.main import main as cli_main
from core.probes.evidence import ProbeStatus, Verdict
from core.probes.history import ledger
from core.probes.history.records import StoredRun
from core.probes.history.store import ProbeStore
from core.probes.transport import ssh

try:
    from tests.integration.sshd import SshdServer, unavailable
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from sshd import SshdServer, unavailable  # type: ignore[no-redef]

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def probe_args(sshd: SshdServer, known_hosts: Path, db: Path, *more: str) -> list[str]:
    return [
        "probe",
        sshd.target,
        "-i",
        str(sshd.client_key_path),
        "--known-hosts",
        str(known_hosts),
        "--db",
        str(db),
        "--python",
        sys.executable,
        *more,
    ]


def first_point(
    db: Path, series: str, within_s: float = 90.0, alive: Callable[[], bool] = lambda: True
) -> None:
    """Wait until the run has stored a chart point of ``series`` (the probe under test is
    working)."""
    end = time.monotonic() + within_s
    while time.monotonic() < end and alive():
        try:
            with sqlite3.connect(db, timeout=1) as conn:
                found = conn.execute(
                    "SELECT COUNT(*) FROM series WHERE series = ?", [series]
                ).fetchone()[0]
        except sqlite3.Error:
            found = 0  # not created yet
        if found:
            return
        time.sleep(0.05)
    raise AssertionError(f"no '{series}' point arrived within {within_s:.0f} s")


def cli_with_a_drop(sshd: SshdServer, args: list[str], db: Path, series: str) -> int:
    """Run `tuneplan probe` (in a thread, as it runs in a terminal) and kill the serving sshd child
    once the first ``series`` point is stored; return its exit code."""
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", cli_main(args)), daemon=True)
    thread.start()
    first_point(db, series, alive=thread.is_alive)
    assert sshd.kill_connections(kill_commands=True) >= 1
    thread.join(timeout=120)
    assert not thread.is_alive(), "the CLI did not end after the drop"
    return int(result["code"])


def only_run(db: Path) -> StoredRun:
    store = ProbeStore(db)
    try:
        (summary,) = store.runs()
        return store.load_run(summary.id)
    finally:
        store.close()


def leftovers(db: Path, host: str) -> list[str]:
    store = ProbeStore(db)
    try:
        return [e.path for e in ledger.leftovers(store, host)]
    finally:
        store.close()


def ours(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("tuneplan"))


def assert_lost_and_incomplete(run: StoredRun, probe: str) -> None:
    assert run.summary.status == "incomplete"
    assert {o.name: o.status for o in run.outcomes}[probe] is ProbeStatus.lost
    card = run.scorecard
    assert card is not None and card.verdict is Verdict.incomplete
    assert card.summary.startswith(f"INCOMPLETE: {probe} was not measured")
    line = next(c for c in card.checks if c.name == f"{probe}: not measured")
    assert line.measured.startswith("partial: ")
    assert run.summary.workdir and not Path(run.summary.workdir).exists()


# -- a benchmark cut short without a drop
# ---------------------------------------------------------------------


def test_a_sweep_whose_ranks_die_between_two_sizes_is_a_failed_probe_shown_partial_and_never_graded(
    sshd_factory: Callable[..., SshdServer],
    tmp_path: Path,
    need_torch: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every rank ends (exit 3) at the sweep's third size, 64 KiB
    (tests/integration/sweep_cut/sitecustomize.py, on the host's PYTHONPATH): the connection stays
    up, and the rows of 4 and 16 KiB came back."""
    server = sshd_factory(
        session_env={
            "PYTHONPATH": str(ROOT / "tests" / "integration" / "sweep_cut"),
            "TUNEPLAN_TEST_CUT_AT": str(64 << 10),
            "TUNEPLAN_TEST_CUT_EXIT": "1",
            "TUNEPLAN_TEST_CUT_MARKER": str(tmp_path / "cut"),
        }
    )
    known = server.trusted_known_hosts(tmp_path / "known_hosts")
    db = tmp_path / "probes.db"
    code = cli_main(probe_args(server, known, db, "--suite", "collectives", "--json"))
    capsys.readouterr()
    assert code == 0 and (tmp_path / "cut").exists()
    run = only_run(db)
    assert run.summary.status == "completed"
    outcome = {o.name: o for o in run.outcomes}["collectives"]
    # The gloo sweep is 4 KiB to 16 MiB, each size 4 times the last: 7 sizes.
    cut = (
        "2 of 7 message sizes, up to 16 KiB (64 KiB, 256 KiB, 1 MiB, 4 MiB and 16 MiB not reached)"
    )
    assert (
        outcome.status is ProbeStatus.failed and outcome.error is not None and cut in outcome.error
    )
    assert run.evidence is not None and run.evidence.collectives is not None
    assert [r.size_bytes for r in run.evidence.collectives.rows] == [4 << 10, 16 << 10]
    assert run.scorecard is not None
    checks = {c.name: c for c in run.scorecard.checks}
    busbw = checks["All-reduce busbw"]
    assert busbw.status.value == "INFO" and busbw.measured.startswith("partial: ")
    assert busbw.reason == f"not graded: the sweep was cut after {cut}"
    assert checks["collectives: failed"].status.value == "FAIL"
    # its only graded line says what was not measured
    assert run.scorecard.verdict is Verdict.incomplete
    assert leftovers(db, server.target) == []


# -- the serving sshd child killed mid-probe
# ------------------------------------------------------------------


def test_a_drop_during_the_burn_exits_6_and_keeps_the_burn_so_far(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_torch: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "probes.db"
    code = cli_with_a_drop(
        sshd,
        probe_args(sshd, ssh_trusted_known_hosts, db, "--suite", "burn", "--duration", "30"),
        db,
        "tflops",
    )
    assert code == 6, capsys.readouterr().err
    run = only_run(db)
    assert_lost_and_incomplete(run, "burn")
    assert run.evidence is not None and run.evidence.burn is not None
    assert run.evidence.burn.completed is False and 0 < run.evidence.burn.duration_s < 30
    assert "burn" in run.evidence.partial
    assert any(p.series == "tflops" for p in run.series)
    out, err = capsys.readouterr()
    assert "burn not measured" in err and "incomplete" in err
    assert "verdict: INCOMPLETE: burn was not measured" in out
    assert f"  burn: {run.evidence.partial['burn']}" in out  # the text report names what is partial
    assert leftovers(db, sshd.target) == []


def test_a_drop_during_collectives_exits_6_and_keeps_the_sizes_measured(
    sshd: SshdServer, ssh_trusted_known_hosts: Path, tmp_path: Path, need_torch: None
) -> None:
    db = tmp_path / "probes.db"
    before = set(glob.glob("/tmp/torchelastic_*"))
    code = cli_with_a_drop(
        sshd, probe_args(sshd, ssh_trusted_known_hosts, db, "--suite", "collectives"), db, "busbw"
    )
    assert code == 6
    run = only_run(db)
    assert_lost_and_incomplete(run, "collectives")
    assert run.evidence is not None and "collectives" in run.evidence.partial
    points = [p for p in run.series if p.series == "busbw"]
    coll = run.evidence.collectives
    assert coll is not None and coll.tool == "torch_all_reduce_bench"
    assert len(coll.rows) >= 1 and {r.size_bytes for r in coll.rows} <= {int(p.x) for p in points}
    # The gloo sweep is 4 KiB to 16 MiB, each size 4 times the last: 7 sizes, and the drop came
    # before the last.
    assert run.evidence.partial["collectives"].startswith(
        f"{len(coll.rows)} of 7 message sizes, up to "
    )
    assert run.scorecard is not None
    # shown, never graded
    busbw = next(c for c in run.scorecard.checks if c.name == "All-reduce busbw")
    assert busbw.status.value == "INFO" and busbw.measured.startswith("partial: ")
    assert busbw.reason.startswith(
        f"not graded: the sweep was cut after {len(coll.rows)} of 7 message sizes"
    )
    # torchrun kept its files in the work directory
    assert set(glob.glob("/tmp/torchelastic_*")) == before
    assert leftovers(db, sshd.target) == []


def test_a_drop_during_storage_exits_6_keeps_the_fio_report_and_leaves_the_data_path_empty(
    sshd: SshdServer, ssh_trusted_known_hosts: Path, tmp_path: Path, need_fio: None
) -> None:
    db, data = tmp_path / "probes.db", tmp_path / "data"
    data.mkdir()
    code = cli_with_a_drop(
        sshd,
        probe_args(
            sshd,
            ssh_trusted_known_hosts,
            db,
            "--suite",
            "storage",
            "--data-path",
            str(data),
            "--fio-size",
            "16M",
            "--fio-runtime",
            "5",
        ),
        db,
        "fio_read",
    )
    assert code == 6
    run = only_run(db)
    assert_lost_and_incomplete(run, "storage")
    assert run.evidence is not None
    (storage,) = run.evidence.storage
    assert storage.path == str(data) and storage.fio, (
        "fio's report from before the drop was not kept"
    )
    assert "fio's last report" in run.evidence.partial["storage"]
    messages = [e.message for e in run.events]
    # at the drop
    assert any(m.startswith("could not remove the storage test directory") for m in messages)
    # after reconnecting
    assert "removed 1 directory by storage before the drop on " + sshd.target in messages
    assert ours(data) == []
    assert leftovers(db, sshd.target) == []


# -- the serving sshd child frozen mid-probe (a silent peer)
# ----------------------------------------------------


def test_a_silent_peer_is_lost_at_the_keepalive_deadline_exits_6_and_leaves_nothing(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_fio: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the README's 15 s and 30 s, shortened to keep the test short
    monkeypatch.setattr(ssh, "KEEPALIVE_S", 1.0)
    monkeypatch.setattr(ssh, "KEEPALIVE_REPLY_S", 3.0)
    db, data = tmp_path / "probes.db", tmp_path / "data"
    data.mkdir()
    args = probe_args(
        sshd,
        ssh_trusted_known_hosts,
        db,
        "--suite",
        "storage",
        "--data-path",
        str(data),
        "--fio-size",
        "16M",
        "--fio-runtime",
        "30",
    )
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", cli_main(args)), daemon=True)
    thread.start()
    first_point(db, "fio_read", alive=thread.is_alive)
    frozen_at = time.monotonic()
    assert sshd.freeze_connections() >= 1
    thread.join(timeout=90)
    assert not thread.is_alive(), "the CLI still waits on a peer that stopped answering"
    assert time.monotonic() - frozen_at < 60  # fio alone would have run on for up to 30 s
    assert result["code"] == 6, capsys.readouterr().err
    run = only_run(db)
    assert_lost_and_incomplete(run, "storage")
    (outcome,) = run.outcomes
    assert outcome.error and outcome.error.endswith(
        f"{sshd.target} stopped answering: no reply to a keepalive within 3 s"
    )
    # fio, still running under the frozen session, was ended before its files went
    assert ours(data) == []
    assert leftovers(db, sshd.target) == []


# -- the client killed mid-run
# --------------------------------------------------------------------------------


def test_a_killed_client_leaves_a_run_the_next_start_marks_interrupted_and_sweeps(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_fio: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, data = tmp_path / "probes.db", tmp_path / "data"
    data.mkdir()
    # compute first (its evidence is saved before storage starts); no inventory, so a GPU-less test
    # machine's "no NVIDIA GPU found" does not decide the verdict
    args = probe_args(
        sshd,
        ssh_trusted_known_hosts,
        db,
        "--suite",
        "compute,storage",
        "--data-path",
        str(data),
        "--fio-size",
        "16M",
        "--fio-runtime",
        "30",
    )
    client = subprocess.Popen(
        [sys.executable, "-m", "cli", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        first_point(db, "fio_read", alive=lambda: client.poll() is None)
        assert ours(data), "fio's directory should be there while it runs"
        os.kill(client.pid, signal.SIGKILL)
        client.wait(timeout=10)
    finally:
        if client.poll() is None:
            client.kill()
    killed = only_run(db)
    assert killed.summary.status == "running"  # nobody could write how it ended
    workdir = killed.summary.workdir
    assert workdir and Path(workdir).exists()

    code = cli_main(probe_args(sshd, ssh_trusted_known_hosts, db, "--suite", "inventory"))
    out = capsys.readouterr().out
    assert code == 0
    assert f"run {killed.summary.id} stopped without an end" in out
    store = ProbeStore(db)
    again = store.load_run(killed.summary.id)
    store.close()
    assert again.summary.status == "interrupted"
    # samples and evidence kept
    assert len(again.series) >= len(killed.series) and again.evidence is not None
    assert ours(data) == [] and not Path(workdir).exists()
    assert leftovers(db, sshd.target) == []

    assert cli_main(["probe-report", str(killed.summary.id), "--json", "--db", str(db)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["conclusion"].startswith(
        "INCOMPLETE: the run was interrupted: storage was not measured"
    )
    figures = {k["label"]: k["value"] for k in report["key_figures"]}
    assert figures["Run"] == "interrupted" and figures["Verdict"] == "INCOMPLETE"


# -- data paths
# -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["with..dots", "with:colon"])
def test_data_paths_with_dotdot_and_colon_are_measured_and_left_clean(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_fio: None,
    name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / name
    data.mkdir()
    (tmp_path / "elsewhere").mkdir()
    given = f"{tmp_path}/elsewhere/../{name}" if "dots" in name else str(data)
    db = tmp_path / "probes.db"
    code = cli_main(
        probe_args(
            sshd,
            ssh_trusted_known_hosts,
            db,
            "--suite",
            "storage",
            "--data-path",
            given,
            "--fio-size",
            "4M",
            "--fio-runtime",
            "1",
            "--json",
        )
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert {o["name"]: o["status"] for o in doc["outcomes"]} == {"storage": "ok"}
    (storage,) = doc["evidence"]["storage"]
    assert (
        storage["path"] == given
        and storage["tool"] == "fio"
        and storage["seq_read_bytes_per_s"] > 0
    )
    assert ours(data) == [] and ours(tmp_path / "elsewhere") == []
    assert "could not remove" not in err


@pytest.mark.parametrize("separator", ["\u2028", "\x85", "\v", "\f"], ids=ascii)
def test_a_data_path_holding_a_line_separator_is_refused_before_anything_is_made(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    separator: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Read back split at that separator, the test directory made in such a path was another path:
    never measured, never removed, and in no ledger."""
    data = Path(f"{tmp_path}/data{separator}{tmp_path}/elsewhere")
    data.mkdir(parents=True)
    db = tmp_path / "probes.db"
    code = cli_main(
        probe_args(
            sshd,
            ssh_trusted_known_hosts,
            db,
            "--suite",
            "storage",
            "--data-path",
            str(data),
            "--fio-size",
            "4M",
            "--fio-runtime",
            "1",
            "--json",
        )
    )
    _, err = capsys.readouterr()
    assert code == 2, err
    assert (
        err.startswith("tuneplan: --data-path: must be a path on one line")
        and len(err.splitlines()) == 1
    )
    assert ascii(separator).strip("'") in err
    assert ours(data) == [] and ours(tmp_path) == []


@contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``path`` (made here) with the mount ``options``, unmounted after the test;
    skipped where mounting needs root this test does not have."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        unavailable(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def test_a_data_path_with_5_mib_free_is_skipped_with_the_reason_and_the_verdict_is_not_ready(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_fio: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with tmpfs(tmp_path / "small", "size=5m") as small:
        db = tmp_path / "probes.db"
        code = cli_main(
            probe_args(
                sshd,
                ssh_trusted_known_hosts,
                db,
                "--suite",
                "storage",
                "--data-path",
                str(small),
                "--json",
            )
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        doc = json.loads(out)
        (outcome,) = doc["outcomes"]
        assert outcome["status"] == "skipped" and "refused to run" in outcome["error"]
        (storage,) = doc["evidence"]["storage"]
        assert (
            storage["free_bytes"] <= 5 << 20
            and "twice the 256 MiB test size" in storage["skipped_reason"]
        )
        card = doc["scorecard"]
        assert card["verdict"] not in (None, "READY")
        line = next(c for c in card["checks"] if c["area"] == "storage")
        assert (line["status"], line["measured"]) == ("WARN", "not measured")
        assert ours(small) == []


def test_a_data_path_that_fills_during_the_small_file_step_fails_that_check_instead_of_dropping_it(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_fio: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Room for fio's 16 MiB file and the free-space check, but only 64 inodes: the small-file step's
    # 2,000 files run out of them ("OSError: [Errno 28] No space left on device") after fio has
    # measured.
    with tmpfs(tmp_path / "inodes", "size=600m,nr_inodes=64") as full:
        db = tmp_path / "probes.db"
        code = cli_main(
            probe_args(
                sshd,
                ssh_trusted_known_hosts,
                db,
                "--suite",
                "storage",
                "--data-path",
                str(full),
                "--fio-size",
                "16M",
                "--fio-runtime",
                "1",
                "--json",
            )
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        card = json.loads(out)["scorecard"]
        lines = {c["name"]: c for c in card["checks"]}
        small = lines[f"Small files, data ({full})"]
        assert (small["status"], small["measured"]) == ("FAIL", "not measured")
        assert "No space left on device" in small["reason"]
        # fio did measure
        assert lines[f"Sequential read, data ({full})"]["measured"] != "not measured"
        assert card["verdict"] == "NOT READY" and "the small files test failed" in card["summary"]
        assert ours(full) == []


@pytest.mark.parametrize("case", ["missing", "a file", "too big"])
def test_a_storage_run_that_measured_nothing_has_an_incomplete_verdict(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_fio: None,
    case: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "plain").write_text("not a directory\n")
    path, size = {
        "missing": (tmp_path / "nonexistent" / "x", "16M"),
        "a file": (tmp_path / "plain", "16M"),
        "too big": (tmp_path, "1000T"),
    }[case]
    db = tmp_path / "probes.db"
    code = cli_main(
        probe_args(
            sshd,
            ssh_trusted_known_hosts,
            db,
            "--suite",
            "storage",
            "--data-path",
            str(path),
            "--fio-size",
            size,
            "--json",
        )
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    card = json.loads(out)["scorecard"]
    assert card["verdict"] == "INCOMPLETE"
    assert card["summary"].startswith(
        f"INCOMPLETE: nothing was measured: storage at {path} was not measured: "
    )
    assert [c["measured"] for c in card["checks"] if c["status"] != "INFO"] == ["not measured"]
