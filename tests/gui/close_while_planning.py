"""A person's session, run as its own process by test_gui_workers.py: the window as `tuneplan` opens
it, a few keys typed into the Data page's token count, and the window closed while the plan for
those keys is still computing.

Run as ``python -m tests.gui.close_while_planning`` with DISPLAY set (the suite's Xvfb); prints
"worker finished" once the plan that outlived the window has ended, and exits with the window's exit
status.

The plan is made slower than the window's close waits for its workers
(``ThreadExecutor.stop_all(2000)``), as on a loaded laptop where the first plan also imports the
planner: ``SLOW_PLAN_S`` of sleep before the real plan. The process then ends as an interpreter
does: its exit functions first, which tear Qt down, while the plan's thread still runs. That thread
finishing is awaited before the process goes, so what it does after the window and Qt are gone
(report to them, or not) is always seen on stderr, whatever the machine's speed.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWizard

from gui.app import make_app, run
from gui.wizard import state as plan_state
from tests.gui.dialogs import answering, typed_by_keyboard

if TYPE_CHECKING:
    from core.planner.analysis import Analysis
    from core.planner.request import PlanRequest
    from gui.main_window import MainWindow

SLOW_PLAN_S = 3.0  # longer than the 2 s the window's close waits for running work
# a quick typist: the plan starts once, after the last key and the 150 ms debounce
KEY_PAUSE_MS = 40
finished = threading.Event()
real_plan = plan_state.plan_on_worker


def slow_plan(request: PlanRequest) -> Analysis:
    """The real plan, after a pause that makes it outlast the window's close."""
    try:
        time.sleep(SLOW_PLAN_S)
        return real_plan(request)
    finally:
        finished.set()


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"close_while_planning: {what} did not happen within {seconds} s")
        QTest.qWait(20)


def session() -> None:
    """Open the Data page, type a token count, and close the window 0.3 s after the last key
    (Discard)."""
    from gui.main_window import MainWindow

    window: MainWindow = next(
        w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)
    )
    wizard = window.wizard
    wait_for(window.isVisible, 20, "the window showing")
    window.activateWindow()
    wait_for(window.isActiveWindow, 10, "the window taking the keyboard")
    wait_for(lambda: wizard.state.analysis is not None, 60, "the sample plan arriving")
    QTest.mouseClick(wizard.button(QWizard.WizardButton.NextButton), Qt.MouseButton.LeftButton)
    wait_for(lambda: wizard.currentPage() is wizard.data_page, 10, "the Data page showing")
    tokens = next(f.editor for f in wizard.data_page.fields if f.path == "data.tokens")
    QTest.mouseClick(tokens, Qt.MouseButton.LeftButton)
    finished.clear()
    plan_state.plan_on_worker = slow_plan
    typed_by_keyboard("3e8", KEY_PAUSE_MS)
    QTest.qWait(300)  # the debounce has fired: the plan for "3e8" runs on a worker
    print(f"closing while planning: {wizard.state.busy}", flush=True)
    with answering(("Discard", None)):
        window.close()


def main() -> int:
    make_app()
    QTimer.singleShot(0, session)
    code = run()
    # what the interpreter does first on the way out: Qt's own teardown among them
    atexit._run_exitfuncs()
    if finished.wait(30):
        time.sleep(0.5)  # the plan's thread hands over its result, or not, after the plan returned
        print("worker finished", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
