"""One interface for running commands on a host, so the probe runner is the same for SSH and the
local box.

A `Transport` runs a shell command with a timeout and cooperative cancellation. Cancelling or timing
out kills the command's whole process group (children included), because probes start child programs
(fio jobs, torchrun workers, ``nvidia-smi -lms``) that would otherwise outlive the run. The
implementations are `core.probes.transport.local` (this machine) and `core.probes.transport.ssh` (a
remote box).

Threading: a transport belongs to the run's worker thread, which connects, reconnects and closes it.
Each command runs in a process (or SSH channel) of its own, so one other thread may run commands on
it at the same time: the metrics sampler streams ``nvidia-smi`` over the worker's transport while
the checks run theirs (``core.probes.run.runner`` says why). The ``cancel`` events may be set from
any thread.
"""

from __future__ import annotations

import shlex
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType

from pydantic import BaseModel, Field

WORKDIR_PREFIX = "tuneplan."


class CommandResult(BaseModel):
    """What one command did. ``exit_code`` is None when no exit status came back (killed, timed
    out)."""

    command: str = Field(description="The command as given (before any wrapping).")
    exit_code: int | None = Field(
        description="Exit status; None if the process was ended by a signal."
    )
    stdout: str = Field(
        description="Standard output, decoded as UTF-8 with replacement characters."
    )
    stderr: str = Field(description="Standard error, decoded as UTF-8 with replacement characters.")
    duration_s: float = Field(ge=0, description="Wall-clock seconds from start to end.")
    timed_out: bool = Field(default=False, description="The timeout ended the command.")
    cancelled: bool = Field(
        default=False, description="The caller's cancel event ended the command."
    )

    @property
    def ok(self) -> bool:
        """True when the command ran to the end and exited with status 0."""
        return self.exit_code == 0 and not self.timed_out and not self.cancelled


class TransportError(Exception):
    """A host could not be reached or used; the message is one sentence fit to show the user."""


class ShellStartTimeout(TransportError):
    """The host accepted the command but its shell never got to run it: the login's startup files
    are still running (a ``~/.bashrc`` waiting on a lock, a network mount, a slow ``conda
    init``)."""


class HostKeyUnknown(TransportError):
    """The host's key is in no known-hosts file; the user must compare ``fingerprint`` and accept
    it."""

    def __init__(
        self,
        message: str,
        *,
        fingerprint: str,
        host: str,
        key_type: str,
        expected: str | None = None,
    ) -> None:
        super().__init__(message)
        self.fingerprint = fingerprint
        self.host = host
        self.key_type = key_type
        self.expected = expected


class HostKeyChanged(TransportError):
    """The host presented a different key than the one remembered; never overridable (possible
    attack)."""

    def __init__(self, message: str, *, host: str, expected: str, got: str) -> None:
        super().__init__(message)
        self.host = host
        self.expected = expected
        self.got = got


class HostKeyRevoked(TransportError):
    """The host presented a key a known_hosts file marks ``@revoked``: never accepted, whatever else
    says."""

    def __init__(self, message: str, *, host: str, fingerprint: str) -> None:
        super().__init__(message)
        self.host = host
        self.fingerprint = fingerprint


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
    """Stdout lines of a running command; after the last line, ``result`` holds exit status and
    stderr.

    Stopping early (``close()``, or leaving a ``for`` loop over it and dropping it) kills the
    process group.
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


def line_break_in(text: str) -> str | None:
    """The first character of ``text`` that ends a line for some reader, or NUL, as Python writes it
    ('\\u2028'), else None. Not only ``\\n`` and ``\\r``: Python's ``str.splitlines`` also ends
    lines at VT, FF, the file, group and record separators, NEL, U+2028 and U+2029, so a remote path
    holding one of them reads as two lines, the last of which is another path. Such paths are
    refused where the user names them (RunOptions) and before anything is removed
    (`check_workdir_name`, `check_workdir_path`)."""
    for ch in text:
        if ch == "\0" or len(f"a{ch}b".splitlines()) > 1:
            return ascii(ch).strip("'")
    return None


def last_output_line(text: str) -> str:
    """The last line of a remote command's output that is not blank, split on ``\\n`` alone (a
    ``\\r`` before it dropped) and otherwise as printed: a path the shell printed whole stays whole,
    whatever else it holds."""
    lines = [line.removesuffix("\r") for line in text.split("\n") if line.strip()]
    return lines[-1] if lines else ""


def check_workdir_name(path: str) -> None:
    """Before a path is resolved: absolute, on one line, and its last part one of our names. ``..``
    and symlinks are allowed here: the transport resolves the path on the host (realpath) and checks
    the result with `check_workdir_path`, so '/data/../scratch/tuneplan.io.x' is removed rather than
    refused."""
    pure = PurePosixPath(path)
    if not pure.is_absolute() or not pure.name.startswith(WORKDIR_PREFIX) or line_break_in(path):
        raise ValueError(
            f"'{path}' is not one this app created; expected an absolute path whose last part "
            f"starts with '{WORKDIR_PREFIX}'"
        )


def resolve_script(path: str) -> str:
    """A shell line printing the resolved path of ``path`` (nothing when it is gone): ``realpath
    -e`` (GNU coreutils ≥ 8.15), else ``readlink -f``."""
    quoted = shlex.quote(path)
    return (
        f"if [ -e {quoted} ] || [ -L {quoted} ]; then realpath -e -- {quoted} 2>/dev/null "
        f"|| readlink -f -- {quoted}; fi"
    )


def check_workdir_path(path: str) -> None:
    """Refuse to delete anything but a work directory we made (guards ``rm -rf`` against bad
    input)."""
    pure = PurePosixPath(path)
    if (
        not pure.is_absolute()
        or ".." in pure.parts
        or not pure.name.startswith(WORKDIR_PREFIX)
        or line_break_in(path)
    ):
        raise ValueError(
            f"work directory '{path}' is not one this app created; expected an absolute path "
            f"whose last part starts with '{WORKDIR_PREFIX}'"
        )


def failure_line(result: CommandResult) -> str:
    """A failed command's first line of stderr (else stdout), or its exit status."""
    text = (result.stderr.strip() or result.stdout.strip()).splitlines()
    return text[0] if text else f"exit status {result.exit_code}"


def make_remote_workdir(transport: Transport, description: str, timeout: float = 60) -> str:
    """A private work directory made by a shell on the host (``mktemp -d`` under its TMPDIR, mode
    0700), checked to be one of ours: the SSH and Slurm transports' `make_workdir`."""
    script = (
        f'umask 077 && d=$(mktemp -d "${{TMPDIR:-/tmp}}/{WORKDIR_PREFIX}XXXXXXXX") '
        '&& chmod 700 "$d" && printf "%s\\n" "$d"'
    )
    result = transport.run(script, timeout=timeout)
    path = last_output_line(result.stdout)
    if not result.ok:
        raise TransportError(
            f"could not create a work directory on {description}: {failure_line(result)}"
        )
    try:
        check_workdir_path(path)
    except ValueError as exc:
        raise TransportError(
            f"{description} returned an unexpected work directory '{path}'"
        ) from exc
    return path


def remove_remote_workdir(
    transport: Transport, description: str, path: str, timeout: float = 120
) -> None:
    """Resolve ``path`` on the host (``..``, symlinks), check the result is one of ours, remove it;
    a path that is already gone is fine: the SSH and Slurm transports' `remove_workdir`."""
    check_workdir_name(path)
    found = transport.run(resolve_script(path), timeout=60)
    if not found.ok:
        raise TransportError(f"could not resolve {path} on {description}: {failure_line(found)}")
    resolved = last_output_line(found.stdout)
    if not resolved:
        return
    try:
        check_workdir_path(resolved)
    except ValueError as exc:
        raise ValueError(f"{path} resolves to {resolved} on {description}: {exc}") from None
    result = transport.run(f"rm -rf -- {shlex.quote(resolved)}", timeout=timeout)
    if not result.ok:
        raise TransportError(f"could not remove {path} on {description}: {failure_line(result)}")


class Transport(ABC):
    """Run commands on one host. See the module docstring for threading rules."""

    description: str
    # Told the seconds waited, every few seconds, while a command waits for the host's shell to
    # start (its startup files run first): the run shows "waiting for the remote shell" instead of
    # sitting silent.
    shell_wait: Callable[[float], None] | None = None

    @abstractmethod
    def run(
        self,
        command: str,
        *,
        timeout: float,
        input: bytes | None = None,
        cancel: threading.Event | None = None,
    ) -> CommandResult:
        """Run ``command`` with bash and wait for it; on timeout or cancel kill its process
        group."""

    @abstractmethod
    def stream(
        self, command: str, *, timeout: float | None, cancel: threading.Event
    ) -> Iterator[str]:
        """Yield stdout lines as they arrive; on cancel or timeout kill the process group and stop.

        Raises `Disconnected` if the connection drops. The returned `CommandStream` has ``result``
        after the last line (exit status, stderr, whether it timed out or was cancelled).
        """

    @abstractmethod
    def put_file(self, local: Path, remote_path: str, mode: int = 0o755) -> None:
        """Copy a local file to ``remote_path`` and set its mode."""

    @abstractmethod
    def make_workdir(self) -> str:
        """Create a private (mode 700) temporary directory for this run and return its absolute
        path."""

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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ChunkedTransport(Transport):
    """Implements `run` and `stream` once, on top of a generator of raw stdout chunks
    (`_execute`)."""

    @abstractmethod
    def _execute(
        self,
        command: str,
        *,
        timeout: float | None,
        cancel: threading.Event | None,
        input: bytes | None,
    ) -> ExecGenerator:
        """Start ``command``; yield stdout bytes as they come; return how it ended. Closing it kills
        it."""

    def run(
        self,
        command: str,
        *,
        timeout: float,
        input: bytes | None = None,
        cancel: threading.Event | None = None,
    ) -> CommandResult:
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

    def stream(
        self, command: str, *, timeout: float | None, cancel: threading.Event
    ) -> CommandStream:
        return CommandStream(
            command, self._execute(command, timeout=timeout, cancel=cancel, input=None)
        )
