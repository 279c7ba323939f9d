"""The Probe pane's build on the Probe place's first open: how long the UI thread is held, in fresh
processes.

    python -m bench.bench_probe_open [--runs 5] [--write docs/performance.md]

The place imports the pane's modules on a worker and then builds the pane on the UI thread
(gui/probe/place.py); this times that build as the place does it, after the imports:
``ProbePane.create_default`` and its first show, then the longest turn of the event loop in the next
3 s (a zero-interval heartbeat timer, which fires on every turn) while the pane's ten pyqtgraph
plots are made, one per turn (gui/probe/staged.py). Each run is a fresh process with the offscreen
Qt platform and an empty data folder, so nothing is cached but bytecode.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import perf_doc

SECTION_TITLE = "## Probe place, the pane's build"
ROOT = Path(__file__).resolve().parents[1]
WATCH_S = 3.0

_CHILD = """
import json, os, sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
import pyqtgraph
import gui.probe.pane as pane_module
from gui.workers import ThreadExecutor
executor = ThreadExecutor()
started = time.perf_counter()
pane = pane_module.ProbePane.create_default(executor)
pane.resize(1280, 900)
pane.show()
build = time.perf_counter() - started
plots_at_show = len(pane.findChildren(pyqtgraph.PlotWidget))
turns, last = [], [time.perf_counter()]
def beat():
    now = time.perf_counter()
    turns.append(now - last[0])
    last[0] = now
heartbeat = QTimer()
heartbeat.setInterval(0)
heartbeat.timeout.connect(beat)
heartbeat.start()
end = time.perf_counter() + float(sys.argv[1])
while time.perf_counter() < end:
    app.processEvents()
print(json.dumps({"build_s": build, "longest_turn_s": max(turns), "plots_at_show": plots_at_show,
                  "plots": len(pane.findChildren(pyqtgraph.PlotWidget))}))
pane.shutdown()
executor.stop_all(5000)
"""


def one_run() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="tuneplan-bench-") as data:
        env = {
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "XDG_DATA_HOME": data,
            "PYTHONPATH": str(ROOT),
        }
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(WATCH_S)],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def section(runs: int) -> str:
    one_run()  # writes the bytecode caches
    results = [one_run() for _ in range(runs)]
    build = sorted(r["build_s"] * 1000 for r in results)
    turn = sorted(r["longest_turn_s"] * 1000 for r in results)
    m = perf_doc.machine()
    return (
        f"{SECTION_TITLE}\n\n"
        f"Measured {dt.date.today().isoformat()} with `python -m bench.bench_probe_open --runs "
        f"{runs}` on {m['cpu']}, {m['cores']}, Python {m['python']}, {m['os']}; load {m['load']}. "
        "Fresh processes, offscreen "
        "Qt, the pane's modules imported first (the place imports them on a worker); then the UI "
        "thread's part.\n\n| case | median | worst |\n|---|---:|---:|\n"
        f"| `ProbePane.create_default` and its first show | {statistics.median(build):.0f} ms | "
        f"{build[-1]:.0f} ms |\n| longest event-loop turn in the {WATCH_S:g} s after, while its "
        f"plots are made | {statistics.median(turn):.0f} ms | {turn[-1]:.0f} ms |\n\nPlots made "
        f"by the first show: {max(int(r['plots_at_show']) for r in results)}; after {WATCH_S:g} "
        f"s: {min(int(r['plots']) for r in results)}. The ten pyqtgraph plots (about 20 ms each) "
        "used to be made in the "
        "pane's constructor, all in one turn; they are made one per turn once the Live tab shows "
        "(gui/probe/staged.py), so the longest turn is one plot and the first paint.\n"
    )


def main(argv: list[str] | None = None) -> int:
    return perf_doc.section_main(argv, __doc__, SECTION_TITLE, section, "runs", 5)


if __name__ == "__main__":
    raise SystemExit(main())
