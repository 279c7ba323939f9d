"""Plans carrying likely ranges the test chose, so the CLI, window and PDF tests check how a band is
shown and not what calibration makes of it (the real bands come from ``core.planner`` and change as
its data does).

``install()`` wraps the planner where the CLI (``core.planner.plan.plan``, which the face's
``make_plan`` reads) and the window and report (``core.planner.analysis.plan``) call it;
``install(bands=False)`` takes every band away, for the "no range shown" side. A subprocess runs
``python -c`` with ``SUBPROCESS`` (see tests/cli/test_cli_ranges.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from core.planner import analysis
from core.planner import plan as plan_module
from core.planner.result import Band, PlanResult

LOW, HIGH = 0.8, 1.3  # the band's ends as multiples of the planned figure
COVERAGE, REGIME, CASES, SOURCES = 0.8, "test regime: LoRA on one node", 24, 5


def band(value: float) -> Band:
    return Band(
        low=value * LOW,
        high=value * HIGH,
        coverage=COVERAGE,
        regime=REGIME,
        cases=CASES,
        sources=SOURCES,
    )


def with_bands(result: PlanResult, bands: bool = True) -> PlanResult:
    """The result with the test's bands on time, tokens/s and (when priced) total cost; none with
    bands=False."""
    total = result.cost.total_usd
    return result.model_copy(
        update={
            "time": result.time.model_copy(
                update={"hours_range": band(result.time.hours) if bands else None}
            ),
            "compute": result.compute.model_copy(
                update={
                    "tokens_per_second_range": band(result.compute.tokens_per_second)
                    if bands
                    else None
                }
            ),
            "cost": result.cost.model_copy(
                update={"total_usd_range": band(total) if bands and total is not None else None}
            ),
        }
    )


def install(monkeypatch: pytest.MonkeyPatch | None = None, bands: bool = True) -> None:
    """Make every plan carry the test's bands (or none); undone by the monkeypatch, or for the whole
    process."""
    real = plan_module.plan

    def planned(*args: Any, **kwargs: Any) -> PlanResult:
        return with_bands(real(*args, **kwargs), bands)

    patch = monkeypatch or pytest.MonkeyPatch()  # a MonkeyPatch never undone: for the whole process
    for module in (plan_module, analysis):
        patch.setattr(module, "plan", planned)


SUBPROCESS = (
    "import sys, tests.bands as b; b.install(bands=sys.argv[1] == 'bands'); "
    "from cli.main import main; raise SystemExit(main(sys.argv[2:]))"
)
