"""Render a plan that does not fit to docs/screenshots/not-fit-*.png: the Hardware page
(``not-fit-wizard-5-hardware.png``), the Summary page (``not-fit-wizard-7-summary.png``) and the PDF report's first
page (``not-fit-report-page-1.png``, pdftoppm at 60 dpi). The request is a 1T-parameter full fine-tune on one
RTX 6000 Ada: each picture must say that it does not fit, by how much and what would, and show no price.

Run it in a real window: ``xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python packaging/screenshots_not_fit.py
[OUT_DIR]``. Files it writes are replaced; ``packaging/screenshots.py`` leaves ``not-fit-*`` files alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshots import (  # sets the Qt platform first
    ROOT,
    close_window,
    pdf_first_page,
    planning_window,
    save,
    scratch_folder,
    settle,
    turn_to,
)

REQUEST = {"model": {"params": "1T"}, "data": {"tokens": "2e8"}, "training": {"method": "full"},
           "hardware": {"gpu": "RTX-6000-ADA", "gpus_per_node": 1, "nodes": 1}}


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    scratch = scratch_folder("tuneplan-not-fit-")
    app, window = planning_window(scratch)
    wizard, state = window.wizard, window.wizard.state
    wizard.load_request(REQUEST, name="1T full fine-tune on one RTX 6000 Ada")
    settle(state)
    if state.analysis is None or state.analysis.result.memory.fits:
        print("the plan did not come back as one that does not fit", file=sys.stderr)
        return 1
    for page, name in ((wizard.hardware_page, "not-fit-wizard-5-hardware.png"),
                       (wizard.summary_page, "not-fit-wizard-7-summary.png")):
        turn_to(wizard, page)
        save(window, out / name)
    pdf_first_page(state.analysis, scratch, out, "not-fit-report-page-1")
    return close_window(app, window, scratch)


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"))
