"""The leak check of tests/gui/conftest.py fails a test that leaks, and only that test.

A tiny test file runs through the real conftest (copied verbatim into a pytester folder, in this
process and on this QApplication): one test leaves a worker running on a ThreadExecutor, one leaves
a QTimer running, one tidies up after itself. The first two must error at teardown with the check's
message, the third must pass. A module fixture of the tiny file releases the worker and stops the
timer after the checks have run, so nothing leaks out of this test either.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LEAKY_TESTS = '''
import threading
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from gui.workers import ThreadExecutor

RELEASE = threading.Event()
LEFT_RUNNING: list[ThreadExecutor | QTimer] = []


@pytest.fixture(scope="module", autouse=True)
def clean_up_after_the_checks() -> Iterator[None]:
    """Module scope: torn down after every test's own teardown, where the leak check runs."""
    yield
    RELEASE.set()
    for thing in LEFT_RUNNING:
        if isinstance(thing, ThreadExecutor):
            assert thing.stop_all(5000)
        else:
            thing.stop()


def test_leaves_a_worker_running() -> None:
    executor = ThreadExecutor()
    LEFT_RUNNING.append(executor)
    started = threading.Event()

    def work() -> None:
        started.set()
        RELEASE.wait(30)

    executor.submit(work, lambda _result: None)
    assert started.wait(5)


def test_leaves_a_timer_running(qapp: QApplication) -> None:
    timer = QTimer()
    LEFT_RUNNING.append(timer)
    timer.start(60_000)


def test_tidies_up(qapp: QApplication) -> None:
    executor = ThreadExecutor()
    executor.submit(lambda: None, lambda _result: None)
    timer = QTimer()
    timer.start(60_000)
    timer.stop()
    assert executor.stop_all(5000)
'''


def test_the_leak_check_fails_the_tests_that_leak(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nqt_api = pyside6\nmarkers =\n    gui: needs Qt (offscreen)\n")
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_leaky=LEAKY_TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_a_worker_running*",
            "*a ThreadExecutor made during the test still has 1 worker(s) running 2000 ms after "
            "it*",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_a_timer_running*",
            "*a repeating QTimer (60000 ms, no parent) started at *test_leaky.py:* is still "
            "running after the test*",
        ],
        consecutive=False,
    )
    assert "test_tidies_up" not in "\n".join(
        line for line in result.outlines if line.startswith("ERROR")
    )
