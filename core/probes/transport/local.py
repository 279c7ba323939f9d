"""Run probes on the machine the app runs on: `LocalTransport`, through ``bash -c`` in a process
group of its own.

It is the same `Transport` contract as SSH, so ``tuneplan probe --local`` and the tests use the very
runner and probes a remote run does. Each command starts a new session (its own process group); a
cancel or a timeout kills that whole group (TERM, then KILL after a grace), children included.
Whether the group is still alive is read from /proc (`proc_stats`) where there is one, because
zombies nobody reaps would look alive to ``killpg``.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from core.probes.transport.base import (
    WORKDIR_PREFIX,
    ChunkedTransport,
    Disconnected,
    ExecGenerator,
    ExecOutcome,
    TransportError,
    check_workdir_name,
    check_workdir_path,
)

KILL_GRACE_S = 2.0
_READ_CHUNK = 65536
_POLL_S = 0.05
_EOF_GRACE_S = 0.5


class LocalTransport(ChunkedTransport):
    """Run probes on the machine the app runs on, through ``bash -c`` in a new session (own process
    group)."""

    def __init__(self) -> None:
        self.description = "local"
        self._closed = False

    def _execute(
        self,
        command: str,
        *,
        timeout: float | None,
        cancel: threading.Event | None,
        input: bytes | None,
    ) -> ExecGenerator:
        if self._closed:
            raise Disconnected("the local transport was closed")
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        try:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                stdin=subprocess.PIPE if input else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(
                f"could not start bash on this machine: {exc.strerror or exc}"
            ) from exc
        assert proc.stdout is not None and proc.stderr is not None
        sel = selectors.DefaultSelector()
        for stream_ in (proc.stdout, proc.stderr):
            os.set_blocking(stream_.fileno(), False)
            sel.register(stream_, selectors.EVENT_READ)
        pending_input = input or b""
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        stderr = bytearray()
        timed_out = cancelled = False
        exited_at: float | None = None
        finished = False
        try:
            while sel.get_map():
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    timed_out = True
                    break
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                if exited_at is not None and now - exited_at > _EOF_GRACE_S:
                    break  # a background child still holds the pipes; the command itself is done
                wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - now))
                for key, _ in sel.select(wait):
                    fileobj = key.fileobj
                    if fileobj is proc.stdin:
                        pending_input = _feed_stdin(proc, sel, pending_input)
                        continue
                    assert fileobj is proc.stdout or fileobj is proc.stderr
                    data = _read_nonblocking(fileobj.fileno())
                    if data is None:
                        continue
                    if not data:
                        sel.unregister(fileobj)
                    elif fileobj is proc.stdout:
                        yield data
                    else:
                        stderr += data
            finished = True
        finally:
            if not finished or timed_out or cancelled:
                _kill_local_group(proc)
            sel.close()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        if timed_out or cancelled:
            exit_code = None
        else:
            code = proc.wait()
            exit_code = code if code >= 0 else None
        return ExecOutcome(exit_code, bytes(stderr), timed_out, cancelled)

    def put_file(self, local: Path, remote_path: str, mode: int = 0o755) -> None:
        try:
            shutil.copyfile(local, remote_path)
            os.chmod(remote_path, mode)
        except OSError as exc:
            raise TransportError(
                f"could not copy {local} to {remote_path}: {exc.strerror or exc}"
            ) from exc

    def make_workdir(self) -> str:
        return tempfile.mkdtemp(prefix=WORKDIR_PREFIX)

    def remove_workdir(self, path: str) -> None:
        """Resolve ``path`` (``..``, symlinks), check the result is one of ours, remove it (gone
        already: fine)."""
        check_workdir_name(path)
        if not os.path.lexists(path):
            return
        resolved = os.path.realpath(path)
        try:
            check_workdir_path(resolved)
        except ValueError as exc:
            raise ValueError(f"{path} resolves to {resolved}: {exc}") from None
        shutil.rmtree(resolved, ignore_errors=True)

    def close(self) -> None:
        self._closed = True

    def is_alive(self) -> bool:
        return not self._closed


def _read_nonblocking(fd: int) -> bytes | None:
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None


def _feed_stdin(
    proc: subprocess.Popen[bytes], sel: selectors.BaseSelector, pending: bytes
) -> bytes:
    assert proc.stdin is not None
    try:
        written = os.write(proc.stdin.fileno(), pending[:_READ_CHUNK])
        pending = pending[written:]
    except BlockingIOError:
        return pending
    except BrokenPipeError:
        pending = b""
    if not pending:
        sel.unregister(proc.stdin)
        proc.stdin.close()
    return pending


def _kill_local_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL what is left after a short grace."""
    pgid = proc.pid  # start_new_session: the child leads its own group
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        end = time.monotonic() + grace
        while time.monotonic() < end:
            proc.poll()
            if not group_alive(pgid):
                return
            time.sleep(0.02)
    proc.poll()


def group_alive(pgid: int) -> bool:
    """True while a live (not zombie) process is in group ``pgid``.

    Reads /proc where there is one: in containers whose init does not reap, orphaned zombies would
    keep ``killpg(pgid, 0)`` succeeding long after the work is dead.
    """
    proc_dir = Path("/proc")
    if not (proc_dir / "self" / "stat").exists():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return any(
        len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z"
        for _, fields in proc_stats()
    )


def proc_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the /proc/PID/stat fields after the command name: state, ppid, pgrp, ...) of every
    process."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        yield int(entry.name), stat[stat.rfind(")") + 2 :].split()
