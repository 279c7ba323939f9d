"""What a GUI test must not leave behind: workers still running on a ThreadExecutor, and QTimers
still ticking.

Either would act during a later test (a worker's result arrives, a timer slot fires on a closed
window) and make that test fail, or pass, for reasons of its own. The app's threads all come from
``gui.workers.ThreadExecutor`` (each one owns a private QThreadPool), so :class:`LeakWatch` records
every executor and every ``QTimer.start`` made while it is installed, and :meth:`LeakWatch.leaks`
names those still busy afterwards. Timers already running before the watch began are not its
business; ``QTimer.singleShot`` makes no QTimer that Python can see, so those are not watched
either.

``tests/gui/conftest.py`` installs one watch per test; ``test_qt_leaks.py`` proves that it fails on
a leak.
"""

from __future__ import annotations

import sys
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
import shiboken6
from PySide6.QtCore import QTimer

from gui.workers import ThreadExecutor

ROOT = Path(__file__).resolve().parents[2]

# How long a worker may take to end after the test: its result may already be on the GUI thread
# while the thread itself is still returning. A leak costs this wait once; a clean test does not
# wait at all.
GRACE_MS = 2000


def _caller() -> str:
    """Where the code that called into the watched method is, as ``path:line`` relative to the
    repository."""
    try:
        frame = sys._getframe(2)
    except ValueError:  # called straight from Qt, with no Python caller
        return "an unknown place"
    path = Path(frame.f_code.co_filename)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return f"{shown}:{frame.f_lineno}"


def _owner(timer: QTimer) -> str:
    parent = timer.parent()
    return "no parent" if parent is None else f"owned by a {type(parent).__name__}"


class LeakWatch:
    """Records the ThreadExecutors made and the QTimers started from the moment it is made until
    ``monkeypatch`` is undone."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.executors: weakref.WeakSet[ThreadExecutor] = weakref.WeakSet()
        self.timers: weakref.WeakKeyDictionary[QTimer, str] = weakref.WeakKeyDictionary()
        make_executor = ThreadExecutor.__init__
        start_timer = QTimer.start

        def recording_init(executor: ThreadExecutor, *args: Any, **kwargs: Any) -> None:
            make_executor(executor, *args, **kwargs)
            self.executors.add(executor)

        def recording_start(timer: QTimer, *args: Any, **kwargs: Any) -> None:
            self.timers[timer] = _caller()
            start_timer(timer, *args, **kwargs)

        monkeypatch.setattr(ThreadExecutor, "__init__", recording_init)
        monkeypatch.setattr(QTimer, "start", recording_start)

    def busy_executors(self, grace_ms: int = GRACE_MS) -> list[str]:
        """One line per executor whose pool still runs (or queues) work ``grace_ms`` after this
        call."""
        deadline = time.monotonic() + grace_ms / 1000
        found = []
        for executor in list(self.executors):
            pool = executor._pool  # ThreadExecutor has no public "is idle"; its pool is the truth
            left_ms = max(0, round((deadline - time.monotonic()) * 1000))
            if not pool.waitForDone(left_ms):
                found.append(
                    f"a ThreadExecutor made during the test still has {pool.activeThreadCount()} "
                    f"worker(s) running {grace_ms} ms after it: stop_all() it, or wait for its jobs"
                )
        return found

    def running_timers(self) -> list[str]:
        """One line per QTimer started while watching that is still active (deleted ones are
        not)."""
        found = []
        for timer, started_at in list(self.timers.items()):
            if shiboken6.isValid(timer) and timer.isActive():
                kind = "single-shot" if timer.isSingleShot() else "repeating"
                found.append(
                    f"a {kind} QTimer ({timer.interval()} ms, {_owner(timer)}) started at "
                    f"{started_at} "
                    "is still running after the test: stop it, or close what owns it"
                )
        return found

    def leaks(self, grace_ms: int = GRACE_MS) -> list[str]:
        """Everything the test left running, one line each; empty when it left nothing."""
        return self.busy_executors(grace_ms) + self.running_timers()
