"""Two waits a person feels, for bench/bench_gui.py: a typed key until it is on screen while plans
recompute, and the first open of the Probe place in a fresh window.

*Keystroke to screen*: each key is posted as a QKeyEvent to whatever has the focus (as the X
server's events reach the app: queued, behind whatever the UI thread is doing), and timed from the
post to the field's first repaint after its text changed. A key that finds the focus elsewhere is
counted as lost.

*Probe place, first open*: a fresh process starts the window as ``tuneplan`` does, waits for the
first plan and an idle event loop, then clicks "Probe" in the sidebar at once, before the wizard's
quiet-time preload of the chart library: nothing of the Probe place is imported yet. Timed from the
click to the first paint of the place (what the person sees first), to the first paint of the pane's
charts, and the longest gap of a 2 ms heartbeat on the UI thread in between (how long the window
could not answer).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The child for the first open: what gui.app.run does, then a click on "Probe" once the window is
# idle.
_PROBE_CHILD = r"""
import json, time
from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer
from PySide6.QtTest import QTest
from gui.app import make_app
app = make_app(["tuneplan"])
from gui.main_window import MainWindow
window = MainWindow.create_default()
place = window.places["Probe"]
marks, ticks = {}, []

def inside(obj, ancestor):
    while obj is not None:
        if obj is ancestor:
            return True
        obj = obj.parent()
    return False

class Paints(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and "click" in marks:
            now = time.perf_counter()
            if "place" not in marks and inside(obj, place):
                marks["place"] = now
            pane = place.pane
            if "charts" not in marks and pane is not None and inside(obj, pane.gpu_charts):
                marks["charts"] = now
                QTimer.singleShot(0, idle)
        return False

def idle():
    marks["idle"] = time.perf_counter()
    beat.stop()
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    click = marks["click"]
    print(json.dumps({"place": marks["place"] - click, "charts": marks["charts"] - click,
                      "idle": marks["idle"] - click, "gap": max(gaps, default=0.0),
                      "platform": app.platformName()}))
    window.close()
    app.quit()

def click_probe():
    sidebar = window.sidebar
    item = next(sidebar.item(i) for i in range(sidebar.count()) if sidebar.item(i).text() == "Probe")
    ticks.append(time.perf_counter())
    beat.start()
    marks["click"] = time.perf_counter()
    QTest.mouseClick(sidebar.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     sidebar.visualItemRect(item).center())

def planned(_analysis):
    if "planned" not in marks:
        marks["planned"] = True
        QTimer.singleShot(50, click_probe)

beat = QTimer()
beat.setTimerType(Qt.TimerType.PreciseTimer)
beat.setInterval(2)
beat.timeout.connect(lambda: ticks.append(time.perf_counter()))
watch = Paints()
app.installEventFilter(watch)
window.wizard.state.analysis_changed.connect(planned)
window.show()
QTimer.singleShot(30000, app.quit)
app.exec()
"""  # noqa: E501


@dataclass
class ProbeOpen:
    place: list[float]
    charts: list[float]
    idle: list[float]
    gap: list[float]
    first: float  # the run that wrote the bytecode caches


def probe_first_open(env: dict[str, str], runs: int) -> ProbeOpen:
    """Open the Probe place in ``runs`` fresh processes (after one that writes the bytecode
    caches)."""
    rows = []
    for _ in range(runs + 1):
        done = subprocess.run(
            [sys.executable, "-c", _PROBE_CHILD],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"the Probe place did not open: {done.stderr.strip()[-2000:]}")
        rows.append(json.loads(lines[-1]))
    later = rows[1:]
    return ProbeOpen(
        place=[r["place"] for r in later],
        charts=[r["charts"] for r in later],
        idle=[r["idle"] for r in later],
        gap=[r["gap"] for r in later],
        first=rows[0]["charts"],
    )


class KeyToScreen:
    """Posts keys to the focus widget and times each from the post to the field's next repaint with
    new text.

    ``plan_running`` says whether a plan is on the worker when a key is posted: those keys compete
    with it for the interpreter, and are reported apart.
    """

    def __init__(self, edit: Any, plan_running: Callable[[], bool]) -> None:
        from PySide6.QtCore import QEvent, QObject

        self.edit = edit
        self.plan_running = plan_running
        self.all: list[float] = []
        self.during_plan: list[float] = []
        self.lost = 0
        self._posted: float | None = None
        self._changed = False
        self._running = False
        edit.textChanged.connect(self._text_changed)
        paint = QEvent.Type.Paint
        painted = self._painted

        class PaintWatch(QObject):
            def eventFilter(self, obj: Any, event: Any) -> bool:
                if event.type() == paint:
                    painted()
                return False

        self._watch = PaintWatch()
        edit.installEventFilter(self._watch)

    def post(self, char: str | None, select_all: bool = False) -> None:
        """Post one key (or Ctrl+A, not timed) to whatever has the focus now."""
        from PySide6.QtCore import QCoreApplication, QEvent, Qt
        from PySide6.QtGui import QKeyEvent
        from PySide6.QtWidgets import QApplication

        target = QApplication.focusWidget()
        if target is not self.edit:
            self.lost += 1
        target = target or self.edit.window()
        if select_all:
            key, text, modifiers = Qt.Key.Key_A, "", Qt.KeyboardModifier.ControlModifier
        else:
            assert char is not None
            key, text, modifiers = Qt.Key(ord(char.upper())), char, Qt.KeyboardModifier.NoModifier
            self._posted, self._changed, self._running = (
                time.perf_counter(),
                False,
                self.plan_running(),
            )
        for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
            QCoreApplication.postEvent(target, QKeyEvent(kind, key, modifiers, text))

    def _text_changed(self) -> None:
        if self._posted is not None:
            self._changed = True

    def _painted(self) -> None:
        if self._posted is None or not self._changed:
            return
        latency = time.perf_counter() - self._posted
        self.all.append(latency)
        if self._running:
            self.during_plan.append(latency)
        self._posted = None
