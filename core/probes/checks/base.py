"""What every probe gets: the host's facts, a way to run commands that records their raw output, and
callbacks.

A probe is a function ``run(ctx)`` that fills its part of ``ctx.evidence``. It never builds runner
events itself: it calls ``ctx.log`` / ``ctx.point`` / ``ctx.metrics`` and the runner turns those
into events and store rows, so probes stay testable without a runner. Every remote value is quoted
with `shlex.quote` (`q`).
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from core.probes.evidence import ProbeEvidence
from core.probes.run.options import RunOptions
from core.probes.samples import GpuMetric
from core.probes.transport.base import CommandResult, Transport, TransportError

LogLevel = Literal["info", "warning", "error"]
# bytes of a long stream's stdout kept as raw output (its samples are stored anyway)
RAW_STREAM_LIMIT = 1 << 20


class MetricsHistory(Protocol):
    """What a check reads of the run's GPU metrics stream (`gpu_metrics.MetricsSampler`, started by
    the runner): whether it still runs, how it ended, and the samples since a mark (the burn grades
    clocks and temperatures from them)."""

    count: int
    warnings: list[str]
    disconnected: bool

    @property
    def running(self) -> bool: ...

    def mark(self) -> int: ...

    def since(self, mark: int) -> list[GpuMetric]: ...


def q(value: object) -> str:
    """Shell-quote one value for a remote command line."""
    return shlex.quote(str(value))


class ProbeSkipped(Exception):
    """The probe does not apply to this host (no GPU, no torch...); the message says why, in one
    sentence."""


class ProbeFailed(Exception):
    """The probe ran but could not produce its evidence; the message says why, in one sentence."""


class Cancelled(Exception):
    """The user cancelled the run while this probe was working."""


# What a skipped torch check says the user can do: name the interpreter whose torch the host's runs
# use.
NAME_PYTHON = "set the host's Python: --python, or Python in the window's Add/Edit host"


class PythonInfo(BaseModel):
    """One Python interpreter on the host and what it can import (from ``pyfacts.py``)."""

    path: str
    found: str | None = Field(
        default=None,
        description="how it was found: the env the login shell activates, "
        "on the PATH, a common place, or as the user named it",
    )
    version: str | None = None
    numpy: str | None = None
    torch: str | None = None
    torch_error: str | None = None
    cuda: bool = False
    cuda_devices: int = 0
    cuda_names: list[str] = Field(default_factory=list)
    cuda_version: str | None = None
    nccl_version: str | None = None
    distributed: bool = False
    gloo: bool = False
    nccl: bool = False
    nvml: bool = False


class HostFacts(BaseModel):
    """Tools and interpreters found before any probe runs; probes pick their method from these."""

    tools: dict[str, str] = Field(default_factory=dict, description="tool name -> path on the host")
    uid: int | None = None
    gpu_lines: list[str] = Field(default_factory=list, description="`nvidia-smi -L` lines")
    pythons: list[PythonInfo] = Field(default_factory=list)
    python: PythonInfo | None = Field(default=None, description="the interpreter probes use")
    query_fields_event_reasons: bool = Field(
        default=True, description="driver knows clocks_event_reasons.*"
    )

    def has(self, tool: str) -> bool:
        return tool in self.tools

    @property
    def nvidia(self) -> bool:
        """True when nvidia-smi exists and lists at least one GPU."""
        return self.has("nvidia-smi") and bool(self.gpu_lines)

    @property
    def gpu_count(self) -> int:
        return len(self.gpu_lines)

    @property
    def torch(self) -> bool:
        return self.python is not None and self.python.torch is not None

    @property
    def cuda(self) -> bool:
        return self.python is not None and self.python.cuda and self.python.cuda_devices > 0

    @property
    def is_root(self) -> bool:
        return self.uid == 0


@dataclass
class ProbeCallbacks:
    """How a probe talks to the runner (each callback is thread-safe: it only queues)."""

    log: Callable[[LogLevel, str, str | None], None]
    point: Callable[[str, float, float, str], None]
    raw: Callable[[str, CommandResult], None]
    # The ledger of what this app made on the host (core.probes.history.ledger): (path, kind) once
    # made, path once gone.
    created: Callable[[str, str], None] | None = None
    removed: Callable[[str], None] | None = None


@dataclass
class ProbeContext:
    """Everything one probe needs; the runner makes one per run and sets ``name`` before each
    probe."""

    transport: Transport
    options: RunOptions
    workdir: str
    facts: HostFacts
    evidence: ProbeEvidence
    cancel: threading.Event
    callbacks: ProbeCallbacks
    clock: Callable[[], float]
    resources: Path
    sampler: MetricsHistory | None = None
    name: str = ""
    warnings: list[str] = field(default_factory=list)
    uploaded: dict[str, str] = field(default_factory=dict)

    # -- talking to the runner
    # -----------------------------------------------------------------------

    def log(self, level: LogLevel, message: str) -> None:
        self.callbacks.log(level, message, self.name or None)

    def warn(self, message: str) -> None:
        """A warning for this probe's outcome (shown with the result, not as a live event)."""
        if message not in self.warnings:
            self.warnings.append(message)

    def point(self, series: str, x: float, y: float, label: str = "") -> None:
        self.callbacks.point(series, x, y, label)

    def remember(self, path: str, kind: str) -> None:
        """Write down a directory this probe made on the host, before anything goes in it
        (history.ledger)."""
        if self.callbacks.created is not None:
            self.callbacks.created(path, kind)

    def forget(self, path: str) -> None:
        """Strike out a directory once it is removed."""
        if self.callbacks.removed is not None:
            self.callbacks.removed(path)

    def check_cancel(self) -> None:
        if self.cancel.is_set():
            raise Cancelled(f"{self.name} was cancelled")

    # -- remote work
    # ---------------------------------------------------------------------------------

    def run(
        self, command: str, *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult:
        """Run a command, keep its raw output, raise `Cancelled` if the user cancelled meanwhile."""
        self.check_cancel()
        result = self.transport.run(
            command,
            timeout=timeout or self.options.timeouts.command_s,
            input=input,
            cancel=self.cancel,
        )
        self.callbacks.raw(self.name, result)
        if result.cancelled or self.cancel.is_set():
            raise Cancelled(f"{self.name} was cancelled")
        return result

    def stream(self, command: str, *, timeout: float | None) -> ProbeStream:
        """Stdout lines as they come (iterate the result; then read ``.result``); raw output kept at
        the end."""
        self.check_cancel()
        return ProbeStream(self, command, timeout)

    def upload(self, script: str) -> str:
        """Copy ``resources/probes/<script>`` into the run's work directory once; return its remote
        path."""
        if script in self.uploaded:
            return self.uploaded[script]
        local = self.resources / script
        if not local.is_file():
            raise ProbeFailed(f"the probe script {local} is missing from this installation")
        remote = f"{self.workdir}/{script}"
        self.transport.put_file(local, remote, 0o700)
        self.uploaded[script] = remote
        return remote

    def python(self) -> str:
        """The interpreter probes use (raises `ProbeSkipped` when the host has none)."""
        if self.facts.python is None:
            raise ProbeSkipped("no Python interpreter was found on the host")
        return self.facts.python.path


class ProbeStream:
    """Lines of a streaming command; ``result`` is set once the lines are exhausted (or the loop is
    left)."""

    def __init__(self, ctx: ProbeContext, command: str, timeout: float | None) -> None:
        self._ctx = ctx
        self._command = command
        self._timeout = timeout
        self.result: CommandResult | None = None

    def __iter__(self) -> Iterator[str]:
        ctx = self._ctx
        lines = ctx.transport.stream(self._command, timeout=self._timeout, cancel=ctx.cancel)
        kept: list[str] = []
        size = 0
        started = time.monotonic()
        try:
            for line in lines:
                if size < RAW_STREAM_LIMIT:
                    kept.append(line)
                    size += len(line) + 1
                yield line
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()
            result = getattr(lines, "result", None)
            if not isinstance(result, CommandResult):
                result = CommandResult(
                    command=self._command,
                    exit_code=None,
                    stdout="",
                    stderr="",
                    duration_s=time.monotonic() - started,
                    cancelled=ctx.cancel.is_set(),
                )
            self.result = result.model_copy(update={"stdout": "\n".join(kept)})
            ctx.callbacks.raw(ctx.name, self.result)
        if ctx.cancel.is_set() or self.result.cancelled:
            raise Cancelled(f"{ctx.name} was cancelled")


_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b")


def telling_line(text: str) -> str | None:
    """The line of some output that says what went wrong: the last exception line of a traceback
    ('RuntimeError: Numpy is not available'), else the last line with a word in it; never a rule of
    '=====' or '^^^^' that a library printed after the cause. None when no line has a word."""
    worded = [line.strip() for line in text.splitlines() if any(ch.isalpha() for ch in line)]
    raised = [line for line in worded if _EXCEPTION_LINE.match(line)]
    found = raised or worded
    return found[-1] if found else None


def short_error(result: CommandResult, limit: int = 300) -> str:
    """The most telling line of a failed command: its error in stderr, else in stdout
    (``telling_line``), else the status."""
    for text in (result.stderr, result.stdout):
        line = telling_line(text)
        if line:
            return line[:limit]
    if result.timed_out:
        return f"timed out after {result.duration_s:.0f} s"
    return f"exit status {result.exit_code}"


def require_ok(result: CommandResult, what: str) -> CommandResult:
    """Raise `ProbeFailed` with one sentence when a command did not succeed."""
    if result.timed_out:
        raise ProbeFailed(f"{what} did not finish within {result.duration_s:.0f} s")
    if result.exit_code != 0:
        raise ProbeFailed(f"{what} failed: {short_error(result)}")
    return result


__all__ = [
    "Cancelled",
    "HostFacts",
    "LogLevel",
    "ProbeCallbacks",
    "ProbeContext",
    "ProbeFailed",
    "ProbeSkipped",
    "ProbeStream",
    "PythonInfo",
    "TransportError",
    "q",
    "require_ok",
    "short_error",
]
