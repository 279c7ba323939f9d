"""Render a plan's likely ranges to docs/screenshots/ranges-*.png: the Time & cost page
(``ranges-wizard-6-cost.png``), the Summary page (``ranges-wizard-7-summary.png``) and the PDF
report's first page (``ranges-report-page-1.png``, pdftoppm at 60 dpi), for the same request as
``packaging/screenshots.py``.

Run it in a real window: ``xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python
packaging/screenshots_ranges.py [--example-band] [OUT_DIR]``. The pictures show the bands the
planner gives (its calibration's); a plan without one stops the script, so a picture never shows a
range the planner does not. ``--example-band`` puts a fixed, illustrative band on a plan that has
none (0.8–1.3 × the planned figure, 80% coverage, regime "illustrative example, not calibrated",
said so on screen): for the pictures of the layout before calibration fills the bands. Files it
writes are replaced; ``packaging/screenshots.py`` leaves ``ranges-*`` files alone.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshots import (  # sets the Qt platform first
    REQUEST,
    ROOT,
    close_window,
    pdf_first_page,
    planning_window,
    save,
    scratch_folder,
    settle,
    turn_to,
)

# ends as multiples of the planned figure
EXAMPLE_LOW, EXAMPLE_HIGH, EXAMPLE_COVERAGE = 0.8, 1.3, 0.8
EXAMPLE_REGIME = "illustrative example, not calibrated"  # on screen, so the picture says what it is


def example_bands() -> None:
    """Give every plan that has no band the fixed illustrative one (a plan with a real band keeps
    it)."""
    from core.planner import analysis
    from core.planner.result import Band, PlanResult

    real = analysis.plan

    def band(value: float) -> Band:
        return Band(
            low=value * EXAMPLE_LOW,
            high=value * EXAMPLE_HIGH,
            coverage=EXAMPLE_COVERAGE,
            regime=EXAMPLE_REGIME,
            cases=0,
        )

    def planned(*args: Any, **kwargs: Any) -> PlanResult:
        r = real(*args, **kwargs)
        if r.time.hours_range is not None:
            return r
        total = r.cost.total_usd
        return r.model_copy(
            update={
                "time": r.time.model_copy(update={"hours_range": band(r.time.hours)}),
                "compute": r.compute.model_copy(
                    update={"tokens_per_second_range": band(r.compute.tokens_per_second)}
                ),
                "cost": r.cost.model_copy(
                    update={"total_usd_range": band(total) if total is not None else None}
                ),
            }
        )

    analysis.plan = planned


def main(out: Path, example: bool) -> int:
    out.mkdir(parents=True, exist_ok=True)
    scratch = scratch_folder("tuneplan-ranges-")
    if example:
        example_bands()
    app, window = planning_window(scratch)
    wizard, state = window.wizard, window.wizard.state
    wizard.load_request(REQUEST, name="Llama 3.1 8B LoRA on 8× H100")
    settle(state)
    if state.analysis is None or state.analysis.result.time.hours_range is None:
        print(
            "the plan has no likely range (no calibration band): rerun with --example-band for "
            "the layout",
            file=sys.stderr,
        )
        return 1
    turn_to(wizard, wizard.cost_page)
    save(window, out / "ranges-wizard-6-cost.png")
    turn_to(wizard, wizard.summary_page)
    save(window, out / "ranges-wizard-7-summary.png")
    pdf_first_page(state.analysis, scratch, out, "ranges-report-page-1")
    return close_window(app, window, scratch)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--example-band"]
    raise SystemExit(
        main(Path(args[0]) if args else ROOT / "docs" / "screenshots", "--example-band" in sys.argv)
    )
