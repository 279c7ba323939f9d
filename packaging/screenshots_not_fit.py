"""Render a plan that does not fit to docs/screenshots/not-fit-*.png: the Hardware page
(``not-fit-wizard-5-hardware.png``), the Time & cost page (``not-fit-wizard-6-cost.png``, then a
screen at a time), the Summary page (``not-fit-wizard-7-summary.png``) and the PDF report's pages
(``not-fit-report-page-N.png``, pdftoppm at 60 dpi). The request is a 1T-parameter full fine-tune on
one RTX 4090, a GPU priced only on a marketplace and sold at $1,599: each picture must say that it
does not fit, by how much and what would, and show no money at all (no price, storage line,
buy-vs-rent chart or price age).

Run it in a real window: ``xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python
packaging/screenshots_not_fit.py [OUT_DIR]``. Files it writes are replaced;
``packaging/screenshots.py`` leaves ``not-fit-*`` files alone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshots import (  # sets the Qt platform first
    ROOT,
    close_window,
    planning_window,
    save,
    save_page,
    scratch_folder,
    settle,
    turn_to,
)

REQUEST = {
    "model": {"params": "1T"},
    "data": {"tokens": "2e8"},
    "training": {"method": "full"},
    "hardware": {"gpu": "RTX-4090", "gpus_per_node": 1, "nodes": 1},
}


def pdf_pages(analysis: object, scratch: Path, out: Path, stem: str) -> None:
    """Every page of the plan's PDF as out/stem-N.png at 60 dpi (pdftoppm): the cost section is past
    page 1."""
    from core.planner.report import build_report
    from gui.pdf import render_report

    pdf = scratch / "plan.pdf"
    render_report(build_report(analysis), pdf)  # type: ignore[arg-type]
    subprocess.run(
        ["pdftoppm", "-png", "-r", "60", str(pdf), str(out / stem)], check=True, timeout=120
    )
    print(out / f"{stem}-*.png")


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    scratch = scratch_folder("tuneplan-not-fit-")
    app, window = planning_window(scratch)
    wizard, state = window.wizard, window.wizard.state
    wizard.load_request(REQUEST, name="1T full fine-tune on one RTX 4090")
    settle(state)
    if state.analysis is None or state.analysis.result.memory.fits:
        print("the plan did not come back as one that does not fit", file=sys.stderr)
        return 1
    for page, name in (
        (wizard.hardware_page, "not-fit-wizard-5-hardware.png"),
        (wizard.cost_page, "not-fit-wizard-6-cost.png"),
        (wizard.summary_page, "not-fit-wizard-7-summary.png"),
    ):
        turn_to(wizard, page)
        save_page(window, page, out / name) if page is wizard.cost_page else save(
            window, out / name
        )
    pdf_pages(state.analysis, scratch, out, "not-fit-report-page")
    return close_window(app, window, scratch)


if __name__ == "__main__":
    raise SystemExit(
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots")
    )
