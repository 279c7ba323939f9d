"""The one place threads are made.

Work runs on a private QThreadPool; results come back through a QObject that lives on the GUI
thread, so callbacks always run there (queued connection) and workers never touch widgets. Results
cross threads as ``Signal(object)``: PySide6 ``Signal(int)`` is 32-bit and byte counts overflow it.

Errors never end on stderr. A job's exception goes to its ``on_error``; a job without one, and a
callback that itself raises, would otherwise be lost silently or printed by PySide as a traceback on
the terminal, where a user of the window never looks. Both become one sentence
(:func:`error_message`) handed to the
:class:`ThreadExecutor`'s ``report`` (the main window shows it in its status bar); until a window
sets ``report`` they are kept in ``unreported``. A job that outlives its window (closed while the
job ran) reports to no one: once cancelled it sends nothing, and a send that finds the relay deleted
by Qt's teardown is dropped.

Tests inject :class:`InlineExecutor`, which runs each job at once on the calling thread (the idea of
Picard's ``FakeThreadPool``), so a test can assert on the window right after an edit; it raises what
no one handles, so a test sees the bug.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, SignalInstance, Slot

Done = Callable[[Any], None]
Failed = Callable[[BaseException], None]
Report = Callable[[str], None]
log = logging.getLogger(__name__)
UNREPORTED_KEPT = 20


def error_message(exc: BaseException) -> str:
    """One sentence for the window: the error's own text (the project words its errors as
    sentences), with its type named when the text alone would not say what happened."""
    text = " ".join(str(exc).split()).rstrip(".")
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    kind = type(exc).__name__
    if not text:
        return f"A background task failed ({kind})."
    if isinstance(exc, ValueError | LookupError | OSError) or type(exc).__module__.startswith(
        "core."
    ):
        return f"A background task failed: {text}."
    return f"A background task failed: {text} ({kind})."


class Job:
    """A handle on submitted work; :meth:`cancel` only sets a flag that the work checks between
    steps."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()


class Executor(Protocol):
    """What a place needs to run work off the GUI thread."""

    def submit(
        self, fn: Callable[[], Any], on_done: Done, on_error: Failed | None = None
    ) -> Job: ...

    def stream(
        self,
        gen_fn: Callable[[Job], Iterator[Any]],
        on_item: Done,
        on_done: Done | None = None,
        on_error: Failed | None = None,
    ) -> Job: ...

    def stop_all(self, timeout_ms: int = 2000) -> bool: ...


class _Relay(QObject):
    """Lives on the GUI thread; its signals are emitted from a worker and delivered here, queued.

    Signals: ``item(object)`` one streamed value, ``done(object)`` the result, ``failed(object)``
    the exception.
    """

    item = Signal(object)
    done = Signal(object)
    failed = Signal(object)

    def __init__(
        self,
        job: Job,
        on_item: Done | None,
        on_done: Done | None,
        on_error: Failed | None,
        forget: Callable[[_Relay], None],
        unhandled: Failed,
    ) -> None:
        super().__init__()
        self.job = job
        self._on_item, self._on_done, self._on_error, self._forget = (
            on_item,
            on_done,
            on_error,
            forget,
        )
        self._unhandled = unhandled
        self.item.connect(self._deliver_item)
        self.done.connect(self._deliver_done)
        self.failed.connect(self._deliver_failed)

    def _call(self, callback: Callable[[Any], None], value: Any) -> None:
        """Run a callback on the GUI thread; what it raises is reported, never printed by PySide."""
        try:
            callback(value)
        # by design: a broken callback must not reach the terminal as a traceback
        except Exception as exc:
            self._unhandled(exc)

    @Slot(object)
    def _deliver_item(self, value: Any) -> None:
        if not self.job.cancelled and self._on_item is not None:
            self._call(self._on_item, value)

    @Slot(object)
    def _deliver_done(self, value: Any) -> None:
        self._forget(self)
        if not self.job.cancelled and self._on_done is not None:
            self._call(self._on_done, value)

    @Slot(object)
    def _deliver_failed(self, exc: Any) -> None:
        self._forget(self)
        if self.job.cancelled:
            return
        if self._on_error is not None:
            self._call(self._on_error, exc)
        else:
            self._unhandled(exc)


class _Runnable(QRunnable):
    def __init__(self, body: Callable[[], None]) -> None:
        super().__init__()
        self._body = body
        self.setAutoDelete(True)

    def run(self) -> None:
        self._body()


def _hand_over(relay: _Relay, signal: SignalInstance, value: Any) -> None:
    """Send a worker's value to the relay on the GUI thread, unless the relay is gone.

    A job cancelled by :meth:`ThreadExecutor.stop_all` sends nothing, but one can finish between
    that check and the send while the application ends: Qt's teardown deletes every QObject, relays
    included, and a send then raises RuntimeError ("Signal source has been deleted") on the worker,
    which PySide prints on the terminal. With the window gone there is no one to tell, so that send
    is dropped. PySide checks the relay and sends while holding the GIL, which Qt's teardown from
    Python needs too, so the relay cannot go half-way through.
    """
    try:
        signal.emit(value)
    except RuntimeError:
        if shiboken6.isValid(relay):
            raise


def _run_stream(gen_fn: Callable[[Job], Iterator[Any]], job: Job, emit_item: Done) -> None:
    """Relay values until the generator ends or the job is cancelled (checked between values)."""
    for value in gen_fn(job):
        if job.cancelled:
            break
        emit_item(value)


class ThreadExecutor:
    """Runs jobs on its own pool and keeps a registry of live ones so :meth:`stop_all` can end
    them."""

    def __init__(self, max_threads: int = 2, report: Report | None = None) -> None:
        self._pool = QThreadPool()
        self._pool.setMaxThreadCount(max_threads)
        self._live: set[_Relay] = set()
        self._lock = threading.Lock()
        self.report = report
        self.unreported: list[str] = []

    def set_report(self, report: Report | None) -> None:
        """Where sentences for unhandled errors go from now on; those kept so far are reported at
        once."""
        self.report = report
        kept, self.unreported = self.unreported, []
        for message in kept:
            self._report(message)

    def _unhandled(self, exc: BaseException) -> None:
        """An error no callback handled (GUI thread): one sentence to ``report``, kept until there
        is one."""
        log.debug("unhandled error in a background task", exc_info=exc)
        self._report(error_message(exc))

    def _report(self, message: str) -> None:
        try:
            if self.report is not None:
                self.report(message)
                return
        except RuntimeError:  # the window that showed them is gone (its C++ side deleted)
            self.report = None
        self.unreported = [*self.unreported[-(UNREPORTED_KEPT - 1) :], message]

    def _forget(self, relay: _Relay) -> None:
        with self._lock:
            self._live.discard(relay)

    def _start(self, relay: _Relay, body: Callable[[], Any]) -> Job:
        with self._lock:
            self._live.add(relay)

        def guarded() -> None:
            outcome: tuple[SignalInstance, Any] | None = None
            if not relay.job.cancelled:
                try:
                    outcome = relay.done, body()
                except BaseException as exc:
                    outcome = relay.failed, exc
            # a cancelled job is delivered to no one: forgotten here, nothing sent
            if relay.job.cancelled:
                self._forget(relay)
            elif outcome is not None:
                _hand_over(relay, *outcome)

        self._pool.start(_Runnable(guarded))
        return relay.job

    def submit(self, fn: Callable[[], Any], on_done: Done, on_error: Failed | None = None) -> Job:
        relay = _Relay(Job(), None, on_done, on_error, self._forget, self._unhandled)
        return self._start(relay, fn)

    def stream(
        self,
        gen_fn: Callable[[Job], Iterator[Any]],
        on_item: Done,
        on_done: Done | None = None,
        on_error: Failed | None = None,
    ) -> Job:
        relay = _Relay(Job(), on_item, on_done, on_error, self._forget, self._unhandled)
        return self._start(
            relay,
            lambda: _run_stream(
                gen_fn, relay.job, lambda value: _hand_over(relay, relay.item, value)
            ),
        )

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._live)

    def stop_all(self, timeout_ms: int = 2000) -> bool:
        """Cancel every job, drop queued ones, and wait (bounded) for running ones; True when all
        ended."""
        with self._lock:
            live = list(self._live)
        for relay in live:
            relay.job.cancel()
        self._pool.clear()
        return bool(self._pool.waitForDone(timeout_ms))


class InlineExecutor:
    """Runs every job at once on the calling thread: for tests and headless rendering. An error
    without an ``on_error`` is raised to the caller."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Callable[[], Any], on_done: Done, on_error: Failed | None = None) -> Job:
        self.submitted += 1
        job = Job()
        try:
            result = fn()
        except Exception as exc:
            if on_error is None:
                raise
            on_error(exc)
        else:
            on_done(result)
        return job

    def stream(
        self,
        gen_fn: Callable[[Job], Iterator[Any]],
        on_item: Done,
        on_done: Done | None = None,
        on_error: Failed | None = None,
    ) -> Job:
        self.submitted += 1
        job = Job()
        try:
            _run_stream(gen_fn, job, on_item)
        except Exception as exc:
            if on_error is None:
                raise
            on_error(exc)
        else:
            if on_done is not None:
                on_done(None)
        return job

    @property
    def active(self) -> int:
        return 0

    def stop_all(self, timeout_ms: int = 2000) -> bool:
        return True
