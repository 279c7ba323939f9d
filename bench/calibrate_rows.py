"""One run the calibration compares (`Row`), the tolerance it is judged by, and the markers of its
docs section.

bench/calibrate.py builds the rows and bench/calibrate_report.py writes them up; both read these,
which live apart so that the report does not import the script that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.calibrate_cases import MEMORY_METRICS, THROUGHPUT_METRICS

MEMORY_TOLERANCE = 0.10
THROUGHPUT_TOLERANCE = 0.20

BEGIN, END = "<!-- calibrate:begin -->", "<!-- calibrate:end -->"


def kind_of(metric: str) -> str:
    if metric in MEMORY_METRICS:
        return "memory"
    if metric in THROUGHPUT_METRICS:
        return "throughput"
    raise KeyError(f"unknown metric {metric}")


@dataclass(frozen=True)
class Row:
    """One run compared: the published figure, the out-of-source plan (None: not planned) and
    why."""

    id: str
    source: str
    method: str
    metric: str
    published: float
    planned: float | None
    reason: str | None = None
    assumed: tuple[str, ...] = field(default=())
    measured: bool = True
    baseline: float | None = None  # the same figure from a flat 50%-of-peak plan (throughput only)
    # the same figure from llm-analysis 0.2.2, where it can express the run
    llm_analysis: float | None = None
    prior: float | None = None  # the figure planned at sustained efficiency 1 (before any fit)
    group: str | None = None  # the sustained-efficiency group its fold's factor came from
    regimes: tuple[str, ...] = field(default=())

    @property
    def kind(self) -> str:
        return kind_of(self.metric)

    @property
    def tolerance(self) -> float:
        return MEMORY_TOLERANCE if self.kind == "memory" else THROUGHPUT_TOLERANCE

    @property
    def error(self) -> float | None:
        """planned ÷ published − 1 (positive: the planner says more)."""
        return None if self.planned is None else self.planned / self.published - 1

    @property
    def within(self) -> bool | None:
        err = self.error
        return None if err is None else abs(err) <= self.tolerance

    def other_within(self, figure: float | None) -> bool | None:
        return None if figure is None else abs(figure / self.published - 1) <= self.tolerance
