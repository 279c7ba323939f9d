"""Workers: results arrive on the GUI thread, errors are delivered, stop_all ends everything."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gui.workers import InlineExecutor, ThreadExecutor

ROOT = Path(__file__).resolve().parents[2]


def test_result_is_delivered_on_the_gui_thread(qtbot):
    ex = ThreadExecutor()
    seen: dict[str, object] = {}

    def work() -> int:
        seen["worker"] = threading.current_thread() is threading.main_thread()
        return 2**40  # larger than a 32-bit int: Signal(object) carries it intact

    def done(value: int) -> None:
        seen["value"] = value
        seen["gui"] = threading.current_thread() is threading.main_thread()

    ex.submit(work, done)
    qtbot.waitUntil(lambda: "value" in seen, timeout=3000)
    assert seen == {"worker": False, "value": 2**40, "gui": True}
    assert ex.stop_all(1000)


def test_errors_are_delivered_not_lost(qtbot):
    ex = ThreadExecutor()
    errors: list[BaseException] = []
    ex.submit(lambda: 1 / 0, lambda _v: None, errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=3000)
    assert isinstance(errors[0], ZeroDivisionError)
    assert ex.stop_all(1000)


def test_stop_all_cancels_a_stream_and_waits(qtbot):
    ex = ThreadExecutor()
    items: list[int] = []
    started = threading.Event()

    def numbers(job):
        for i in range(10_000):
            started.set()
            if job.cancelled:
                return
            time.sleep(0.001)
            yield i

    ex.stream(numbers, items.append)
    assert started.wait(2)
    assert ex.stop_all(3000)
    count = len(items)
    qtbot.wait(50)
    assert len(items) == count < 10_000  # nothing delivered after the cancel
    assert ex.active == 0 or ex.stop_all(100)


def test_inline_executor_runs_at_once():
    ex = InlineExecutor()
    out: list[int] = []
    ex.submit(lambda: 3, out.append)
    ex.stream(lambda job: iter([1, 2]), out.append)
    assert out == [3, 1, 2]
    with pytest.raises(ZeroDivisionError):
        ex.submit(lambda: 1 / 0, out.append)
    errors: list[BaseException] = []
    ex.submit(lambda: 1 / 0, out.append, errors.append)
    assert isinstance(errors[0], ZeroDivisionError)


def test_state_drops_a_result_for_an_older_edit(qtbot):
    """With real threads, typing fast must not let a stale plan overwrite a newer one."""
    from gui.wizard.state import PlanState

    ex = ThreadExecutor()
    state = PlanState(ex, debounce_ms=5)
    state.set("data.tokens", "1e8")
    state.recompute_now()  # in flight for 1e8
    state.set("data.tokens", "3e8")
    qtbot.waitUntil(
        lambda: state.analysis is not None and not state.busy and not state.pending, timeout=10000
    )
    assert state.analysis is not None and state.analysis.result.request.data.tokens == 3e8
    assert ex.stop_all(3000)


def test_a_background_job_that_raises_shows_one_sentence_in_the_window_and_nothing_on_stderr(
    qtbot, store, settings, capfd
):
    """Work handed to the window's executor fails where no one catches it: the job itself (no error
    callback), or the callback that receives its result. Either way the window says so in its status
    bar, in one sentence, and the terminal stays quiet (no PySide traceback, no error lost)."""
    from gui.main_window import MainWindow
    from tests.gui.wizard_driver import settle

    ex = ThreadExecutor()
    window = MainWindow(ex, store, settings, debounce_ms=0)
    qtbot.addWidget(window)
    window.show()
    try:
        settle(qtbot, window.wizard.state)
        capfd.readouterr()

        def unreadable() -> None:
            raise ValueError("the catalog override file ~/.config/tuneplan/gpus.json is not JSON")

        ex.submit(unreadable, lambda _value: None)
        message = (
            "A background task failed: the catalog override file ~/.config/tuneplan/gpus.json is "
            "not JSON."
        )
        qtbot.waitUntil(lambda: window.statusBar().currentMessage() == message, timeout=3000)

        def show(pages: int) -> None:
            window.statusBar().showMessage(f"{100 // (pages - 3)} pages")

        ex.submit(lambda: 3, show)
        message = (
            "A background task failed: integer division or modulo by zero (ZeroDivisionError)."
        )
        qtbot.waitUntil(lambda: window.statusBar().currentMessage() == message, timeout=3000)
        qtbot.wait(50)
        assert capfd.readouterr().err == ""
    finally:
        assert ex.stop_all(3000)
        window.close()


@pytest.mark.real_window
def test_closing_the_window_while_a_plan_computes_prints_nothing(tmp_path):
    """A person types a token count and closes the window before its plan arrives (Discard); the
    plan outlives the window's 2 s wait for its workers and ends after Qt has gone. Nothing reaches
    the terminal: before, the worker's hand-off raised "RuntimeError: Signal source has been
    deleted" there (tests/gui/close_while_planning)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "PYTHONWARNINGS")}
    env.update(
        PYTHONPATH=str(ROOT),
        HOME=str(tmp_path),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.gui.close_while_planning"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["closing while planning: True", "worker finished"], (
        done.stdout
    )
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
