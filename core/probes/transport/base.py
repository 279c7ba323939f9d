"""One interface for running commands on a host, so the probe runner is the same for SSH and the local box.

A `Transport` runs a shell command with a timeout and cooperative cancellation. Cancelling or timing out kills
the command's whole process group (children included), because probes start child programs (fio jobs, torchrun
workers, ``nvidia-smi -lms``) that would otherwise outlive the run.

Threading: a transport is used by one thread at a time (the worker that owns it); only the ``cancel`` event
may be set from another thread.
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
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType

from pydantic import BaseModel, Field

WORKDIR_PREFIX = "tuneplan."
KILL_GRACE_S = 2.0
_READ_CHUNK = 65536
_POLL_S = 0.05
_EOF_GRACE_S = 0.5


class CommandResult(BaseModel):
    """What one command did. ``exit_code`` is None when no exit status came back (killed, timed out)."""

    command: str = Field(description="The command as given (before any wrapping).")
    exit_code: int | None = Field(description="Exit status; None if the process was ended by a signal.")
    stdout: str = Field(description="Standard output, decoded as UTF-8 with replacement characters.")
    stderr: str = Field(description="Standard error, decoded as UTF-8 with replacement characters.")
    duration_s: float = Field(ge=0, description="Wall-clock seconds from start to end.")
    timed_out: bool = Field(default=False, description="The timeout ended the command.")
    cancelled: bool = Field(default=False, description="The caller's cancel event ended the command.")

    @property
    def ok(self) -> bool:
        """True when the command ran to the end and exited with status 0."""
        return self.exit_code == 0 and not self.timed_out and not self.cancelled


class TransportError(Exception):
    """A host could not be reached or used; the message is one sentence fit to show the user."""


class HostKeyUnknown(TransportError):
    """The host's key is in no known-hosts file; the user must compare ``fingerprint`` and accept it."""

    def __init__(self, message: str, *, fingerprint: str, host: str, key_type: str,
                 expected: str | None = None) -> None:
        super().__init__(message)
        self.fingerprint = fingerprint
        self.host = host
        self.key_type = key_type
        self.expected = expected


class HostKeyChanged(TransportError):
    """The host presented a different key than the one remembered; never overridable (possible attack)."""

    def __init__(self, message: str, *, host: str, expected: str, got: str) -> None:
        super().__init__(message)
        self.host = host
        self.expected = expected
        self.got = got


class AuthenticationFailed(TransportError):
    """No key, agent identity or password was accepted."""


class Unreachable(TransportError):
    """No SSH session could be set up: refused, timed out, name not resolved, proxy failed."""


class Disconnected(TransportError):
    """The connection was lost (or never opened) while the transport was being used."""


@dataclass
class ExecOutcome:
    """How a process ended, as reported by a transport's low-level execution generator."""

    exit_code: int | None
    stderr: bytes
    timed_out: bool
    cancelled: bool


ExecGenerator = Generator[bytes, None, ExecOutcome]


class CommandStream(Iterator[str]):
    """Stdout lines of a running command; after the last line, ``result`` holds exit status and stderr.

    Stopping early (``close()``, or leaving a ``for`` loop over it and dropping it) kills the process group.
    """

    def __init__(self, command: str, chunks: ExecGenerator) -> None:
        self._command = command
        self._chunks = chunks
        self._lines = _lines_of(chunks)
        self._started = time.monotonic()
        self.result: CommandResult | None = None

    def __iter__(self) -> CommandStream:
        return self

    def __next__(self) -> str:
        if self.result is not None:
            raise StopIteration
        try:
            return next(self._lines)
        except StopIteration as stop:
            outcome: ExecOutcome = stop.value
            self.result = _result(self._command, b"", outcome, self._started)
            raise

    def close(self) -> None:
        """Stop reading and kill the command if it still runs."""
        self._lines.close()

    def __enter__(self) -> CommandStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lines_of(chunks: ExecGenerator) -> Generator[str, None, ExecOutcome]:
    """Split raw stdout chunks into lines; a byte split on ``\\n`` never cuts a UTF-8 character."""
    pending = b""
    try:
        while True:
            try:
                chunk = next(chunks)
            except StopIteration as stop:
                if pending:
                    yield _decode(pending).rstrip("\r")
                outcome: ExecOutcome = stop.value
                return outcome
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield _decode(line).rstrip("\r")
    finally:
        chunks.close()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _result(command: str, stdout: bytes, outcome: ExecOutcome, started: float) -> CommandResult:
    return CommandResult(
        command=command,
        exit_code=outcome.exit_code,
        stdout=_decode(stdout),
        stderr=_decode(outcome.stderr),
        duration_s=time.monotonic() - started,
        timed_out=outcome.timed_out,
        cancelled=outcome.cancelled,
    )


def check_workdir_path(path: str) -> None:
    """Refuse to delete anything but a work directory we made (guards ``rm -rf`` against bad input)."""
    pure = PurePosixPath(path)
    if not pure.is_absolute() or ".." in pure.parts or not pure.name.startswith(WORKDIR_PREFIX) \
            or any(c in path for c in "\n\r\0"):
        raise ValueError(
            f"work directory '{path}' is not one this app created; expected an absolute path whose last part "
            f"starts with '{WORKDIR_PREFIX}'"
        )


class Transport(ABC):
    """Run commands on one host. See the module docstring for threading rules."""

    description: str

    @abstractmethod
    def run(self, command: str, *, timeout: float, input: bytes | None = None,
            cancel: threading.Event | None = None) -> CommandResult:
        """Run ``command`` with bash and wait for it; on timeout or cancel kill its process group."""

    @abstractmethod
    def stream(self, command: str, *, timeout: float | None, cancel: threading.Event) -> Iterator[str]:
        """Yield stdout lines as they arrive; on cancel or timeout kill the process group and stop.

        Raises `Disconnected` if the connection drops. The returned `CommandStream` has ``result`` after the
        last line (exit status, stderr, whether it timed out or was cancelled).
        """

    @abstractmethod
    def put_file(self, local: Path, remote_path: str, mode: int = 0o755) -> None:
        """Copy a local file to ``remote_path`` and set its mode."""

    @abstractmethod
    def make_workdir(self) -> str:
        """Create a private (mode 700) temporary directory for this run and return its absolute path."""

    @abstractmethod
    def remove_workdir(self, path: str) -> None:
        """Delete a directory made by `make_workdir` (anything else is refused)."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection; the transport cannot run commands afterwards."""

    @abstractmethod
    def is_alive(self) -> bool:
        """True while commands can be run."""

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class ChunkedTransport(Transport):
    """Implements `run` and `stream` once, on top of a generator of raw stdout chunks (`_execute`)."""

    @abstractmethod
    def _execute(self, command: str, *, timeout: float | None, cancel: threading.Event | None,
                 input: bytes | None) -> ExecGenerator:
        """Start ``command``; yield stdout bytes as they come; return how it ended. Closing it kills it."""

    def run(self, command: str, *, timeout: float, input: bytes | None = None,
            cancel: threading.Event | None = None) -> CommandResult:
        started = time.monotonic()
        chunks = self._execute(command, timeout=timeout, cancel=cancel, input=input)
        out = bytearray()
        try:
            while True:
                try:
                    out += next(chunks)
                except StopIteration as stop:
                    return _result(command, bytes(out), stop.value, started)
        finally:
            chunks.close()

    def stream(self, command: str, *, timeout: float | None, cancel: threading.Event) -> CommandStream:
        return CommandStream(command, self._execute(command, timeout=timeout, cancel=cancel, input=None))


class LocalTransport(ChunkedTransport):
    """Run probes on the machine the app runs on, through ``bash -c`` in a new session (own process group)."""

    def __init__(self) -> None:
        self.description = "local"
        self._closed = False

    def _execute(self, command: str, *, timeout: float | None, cancel: threading.Event | None,
                 input: bytes | None) -> ExecGenerator:
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
            raise TransportError(f"could not start bash on this machine: {exc.strerror or exc}") from exc
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
            raise TransportError(f"could not copy {local} to {remote_path}: {exc.strerror or exc}") from exc

    def make_workdir(self) -> str:
        return tempfile.mkdtemp(prefix=WORKDIR_PREFIX)

    def remove_workdir(self, path: str) -> None:
        check_workdir_path(path)
        shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        self._closed = True

    def is_alive(self) -> bool:
        return not self._closed


def _read_nonblocking(fd: int) -> bytes | None:
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None


def _feed_stdin(proc: subprocess.Popen[bytes], sel: selectors.BaseSelector, pending: bytes) -> bytes:
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

    Reads /proc where there is one: in containers whose init does not reap, orphaned zombies would keep
    ``killpg(pgid, 0)`` succeeding long after the work is dead.
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
    return any(len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z" for _, fields in proc_stats())


def proc_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the /proc/PID/stat fields after the command name: state, ppid, pgrp, ...) of every process."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        yield int(entry.name), stat[stat.rfind(")") + 2:].split()
