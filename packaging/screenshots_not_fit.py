"""Render a plan that does not fit to docs/screenshots/not-fit-*.png: the Hardware page
(``not-fit-wizard-5-hardware.png``), the Summary page (``not-fit-wizard-7-summary.png``) and the PDF report's first
page (``not-fit-report-page-1.png``, pdftoppm at 60 dpi). The request is a 1T-parameter full fine-tune on one
RTX 6000 Ada: each picture must say that it does not fit, by how much and what would, and show no price.

Run it in a real window: ``xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python packaging/screenshots_not_fit.py
[OUT_DIR]``. Files it writes are replaced; ``packaging/screenshots.py`` leaves ``not-fit-*`` files alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshots import ROOT, SIZE, save, settle  # sets the Qt platform first

REQUEST = {"model": {"params": "1T"}, "data": {"tokens": "2e8"}, "training": {"method": "full"},
           "hardware": {"gpu": "RTX-6000-ADA", "gpus_per_node": 1, "nodes": 1}}


def main(out: Path) -> int:
    from PySide6.QtCore import QSettings

    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tuneplan-not-fit-"))
    os.environ["XDG_CONFIG_HOME"] = str(scratch / "config")
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    from core.library.store import PlanStore
    from core.planner.report import build_report
    from gui.app import make_app
    from gui.main_window import MainWindow
    from gui.pdf import render_report
    from gui.workers import InlineExecutor

    app = make_app(["screenshots"])
    window = MainWindow(InlineExecutor(), PlanStore(scratch / "library.db"),
                        QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat), debounce_ms=0)
    window.resize(*SIZE)
    window.show()
    wizard, state = window.wizard, window.wizard.state
    wizard.load_request(REQUEST, name="1T full fine-tune on one RTX 6000 Ada")
    settle(state)
    if state.analysis is None or state.analysis.result.memory.fits:
        print("the plan did not come back as one that does not fit", file=sys.stderr)
        return 1
    for page, name in ((wizard.hardware_page, "not-fit-wizard-5-hardware.png"),
                       (wizard.summary_page, "not-fit-wizard-7-summary.png")):
        while wizard.currentPage() is not page:
            wizard.next()
            settle(state)
        save(window, out / name)
    pdf = scratch / "plan.pdf"
    render_report(build_report(state.analysis), pdf)
    subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile", str(pdf),
                    str(out / "not-fit-report-page-1")], check=True, timeout=120)
    print(out / "not-fit-report-page-1.png")
    window.close()
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"))
