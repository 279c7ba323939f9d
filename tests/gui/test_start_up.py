"""Start-up: the window `tuneplan` opens is built and shown before the modules only later work needs
are imported (the planner and NumPy, sqlite-utils, the PDF writer, the launch-file writers,
pyqtgraph), and that work still happens once the event loop runs: the first plan arrives and the
plan library opens (docs/performance.md, "Desktop bundle"); what the app keeps for its whole life is
then out of Python's full collections (gui/long_lived.py).

A fresh interpreter is the only honest witness: this test process has imported all of them long ago.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What gui.app.run does, with the loop run until the first plan is on screen and the library open.
_CHILD = r"""
import gc, json, sys
from PySide6.QtCore import QTimer
from gui.app import make_app
app = make_app(["tuneplan"])
from gui.library.widget import LibraryWidget
from gui.main_window import MainWindow
LATER = ("numpy", "sqlite_utils", "core.planner.analysis", "core.planner.plan", "core.launch", "gui.pdf",
         "pyqtgraph", "paramiko")
window = MainWindow.create_default()
window.show()
shown = {"loaded": sorted(m for m in LATER if m in sys.modules),
         "library_open": isinstance(window.places["Library"], LibraryWidget)}
waited = 0

def poll():
    global waited
    waited += 50
    library = window.places["Library"]
    if (window.wizard.state.analysis is None or not isinstance(library, LibraryWidget)) and waited < 30000:
        return
    timer.stop()
    print(json.dumps({"shown": shown, "planned": window.wizard.state.analysis is not None,
                      "library_open": isinstance(library, LibraryWidget), "plans": library.model.rowCount(),
                      "title": window.windowTitle(), "library_file": str(window.store.path),
                      "frozen": gc.get_freeze_count(), "scanned": len(gc.get_objects())}))
    window.close()
    app.quit()

timer = QTimer()
timer.timeout.connect(poll)
timer.start(50)
app.exec()
"""  # noqa: E501


def test_the_window_shows_before_the_planner_and_the_library_load_and_both_follow(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNEPLAN_", "XDG_"))}
    env.update(
        HOME=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        QT_QPA_PLATFORM="offscreen",
        PYTHONPATH=str(ROOT),
    )
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["shown"] == {"loaded": [], "library_open": False}
    assert out["planned"] and out["library_open"]  # the deferred work happened, once the loop ran
    # an empty library: the first run
    assert out["plans"] == 0 and out["title"].startswith("Sample plan")
    assert out["library_file"] == str(tmp_path / "data" / "tuneplan" / "tuneplan.db")
    assert Path(out["library_file"]).is_file()
    # What lives as long as the app (modules, classes, the catalog, NumPy) is out of the full
    # collections once the planner is in: a full collection on the UI thread scanned all of it, a 50
    # ms pause while typing.
    assert out["frozen"] > out["scanned"], out
