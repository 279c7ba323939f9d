"""LocalTransport: the same Transport contract as SSH, on this machine through ``bash -c``.

"Nothing left running" is checked with ``pgrep -f`` on a sleep duration unique to each test.
"""

from __future__ import annotations

import os
import secrets
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from core.probes.transport.base import (
    CommandResult,
    Disconnected,
    TransportError,
    check_workdir_path,
)
from core.probes.transport.local import LocalTransport

pytestmark = pytest.mark.integration  # every test starts bash


@pytest.fixture
def local() -> LocalTransport:
    return LocalTransport()


def marker_seconds() -> str:
    return f"5{secrets.randbelow(10**6):06d}.5"


def pids_of(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def wait_until_gone(pattern: str, within_s: float = 2.0) -> list[int]:
    end = time.monotonic() + within_s
    while pids_of(pattern) and time.monotonic() < end:
        time.sleep(0.02)
    return pids_of(pattern)


def test_run_reports_output_and_exit_codes(local: LocalTransport) -> None:
    assert local.description == "local"
    result = local.run("echo out; echo err >&2; exit 3", timeout=10)
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.ok and not result.timed_out and not result.cancelled
    assert local.run("true", timeout=10).ok


def test_stdin_and_large_output_do_not_deadlock(local: LocalTransport) -> None:
    data = b"x" * 3_000_000
    result = local.run("cat; head -c 2000000 /dev/zero | tr '\\0' e >&2", timeout=30, input=data)
    assert len(result.stdout) == 3_000_000
    assert len(result.stderr) == 2_000_000 and set(result.stderr) == {"e"}


def test_invalid_utf8_is_replaced_not_fatal(local: LocalTransport) -> None:
    result = local.run("printf 'ok \\377\\n'", timeout=10)
    assert result.stdout == "ok \ufffd\n"


def test_killed_by_signal_has_no_exit_code(local: LocalTransport) -> None:
    result = local.run("kill -KILL $$", timeout=10)
    assert result.exit_code is None and not result.timed_out


def test_timeout_kills_the_whole_process_group(local: LocalTransport) -> None:
    seconds = marker_seconds()
    started = time.monotonic()
    result = local.run(f"sleep {seconds} & bash -c 'sleep {seconds}'; echo never", timeout=0.5)
    assert isinstance(result, CommandResult)
    assert result.timed_out and result.exit_code is None and "never" not in result.stdout
    assert time.monotonic() - started < 3
    assert wait_until_gone(f"sleep {seconds}") == []


def test_stream_yields_lines_live(local: LocalTransport, tmp_path: Path) -> None:
    # "second" is printed only after the test has seen "first" (the command waits up to 5 s for a
    # flag file).
    flag = tmp_path / "seen"
    command = (
        f"echo first; for i in $(seq 50); do [ -e {flag} ] && break; sleep 0.1; done; "
        "printf 'second\\r\\n'; printf 'tail without newline'"
    )
    started = time.monotonic()
    stream = local.stream(command, timeout=20, cancel=threading.Event())
    lines = []
    for line in stream:
        lines.append(line)
        if line == "first":
            flag.touch()
    assert lines == ["first", "second", "tail without newline"]
    assert time.monotonic() - started < 4
    assert (
        stream.result is not None and stream.result.exit_code == 0 and not stream.result.cancelled
    )
    with pytest.raises(StopIteration):
        next(stream)  # exhausted streams stay exhausted
    assert stream.result.exit_code == 0


def test_stream_cancel_kills_children(local: LocalTransport) -> None:
    seconds = marker_seconds()
    cancel = threading.Event()
    stream = local.stream(
        f"sleep {seconds} & sleep {seconds} & echo started; wait", timeout=None, cancel=cancel
    )
    for line in stream:
        assert line == "started"
        assert len(pids_of(f"sleep {seconds}")) >= 2
        cancel.set()
    assert stream.result is not None and stream.result.cancelled and stream.result.exit_code is None
    assert wait_until_gone(f"sleep {seconds}", within_s=0.5) == []


def test_cancel_from_another_thread_during_run(local: LocalTransport) -> None:
    seconds = marker_seconds()
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    result = local.run(f"sleep {seconds}", timeout=30, cancel=cancel)
    assert result.cancelled and result.duration_s < 3
    assert wait_until_gone(f"sleep {seconds}") == []


def test_term_ignoring_command_is_killed(local: LocalTransport) -> None:
    seconds = marker_seconds()
    result = local.run(f"trap '' TERM; sleep {seconds}; true", timeout=0.3)
    assert result.timed_out
    assert wait_until_gone(f"sleep {seconds}", within_s=3) == []


def test_closing_a_stream_early_kills_the_command(local: LocalTransport) -> None:
    seconds = marker_seconds()
    stream = local.stream(f"echo go; sleep {seconds}", timeout=None, cancel=threading.Event())
    assert next(stream) == "go"
    stream.close()
    assert wait_until_gone(f"sleep {seconds}", within_s=0.5) == []


def test_background_child_holding_stdout_does_not_hang_run(local: LocalTransport) -> None:
    seconds = marker_seconds()
    started = time.monotonic()
    result = local.run(f"sleep {seconds} & echo done", timeout=20)
    try:
        assert (result.stdout, result.exit_code) == ("done\n", 0)
        assert time.monotonic() - started < 3
    finally:
        for pid in pids_of(f"sleep {seconds}"):
            os.kill(pid, signal.SIGKILL)


def test_workdir_put_file_and_removal(local: LocalTransport, tmp_path: Path) -> None:
    workdir = local.make_workdir()
    assert os.path.basename(workdir).startswith("tuneplan.")
    assert stat.S_IMODE(os.stat(workdir).st_mode) == 0o700
    script = tmp_path / "probe.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    local.put_file(script, f"{workdir}/probe.sh", mode=0o700)
    assert stat.S_IMODE(os.stat(f"{workdir}/probe.sh").st_mode) == 0o700
    assert local.run(f"{workdir}/probe.sh", timeout=10).stdout == "ran\n"
    local.remove_workdir(workdir)
    assert not os.path.exists(workdir)
    with pytest.raises(TransportError, match="could not copy"):
        local.put_file(tmp_path / "absent", f"{tmp_path}/dest")


@pytest.mark.parametrize(
    "path", ["/", "/etc", "tmp/tuneplan.x", "/tmp/tuneplan.x/..", "/tmp/other"]
)
def test_only_our_work_directories_can_be_removed(local: LocalTransport, path: str) -> None:
    with pytest.raises(ValueError, match="not one this app created"):
        local.remove_workdir(path)
    with pytest.raises(ValueError):
        check_workdir_path(path)


def test_a_path_with_dotdot_is_resolved_and_removed(local: LocalTransport, tmp_path: Path) -> None:
    target = tmp_path / "data" / "tuneplan.io.abc"
    target.mkdir(parents=True)
    (target / "tuneplan_seq.dat").write_bytes(b"x" * 1024)
    (tmp_path / "other").mkdir()
    local.remove_workdir(f"{tmp_path}/other/../data/tuneplan.io.abc")
    assert not target.exists()
    assert (tmp_path / "data").is_dir() and (tmp_path / "other").is_dir()
    # already gone: nothing to do, no error
    local.remove_workdir(f"{tmp_path}/data/tuneplan.io.abc")


def test_a_symlink_named_like_ours_to_elsewhere_is_refused(
    local: LocalTransport, tmp_path: Path
) -> None:
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    (tmp_path / "tuneplan.trap").symlink_to(precious)
    with pytest.raises(ValueError, match=f"resolves to {precious}"):
        local.remove_workdir(str(tmp_path / "tuneplan.trap"))
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_closed_transport_refuses_to_run(local: LocalTransport) -> None:
    with local:
        assert local.is_alive()
    assert not local.is_alive()
    with pytest.raises(Disconnected):
        local.run("true", timeout=5)
