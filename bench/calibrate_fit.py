"""Fit the step model's named efficiencies (core/planner/speed/efficiency.py) on half A of the published runs.

    python -m bench.calibrate --fit-all

Method, chosen to be explainable rather than clever: coordinate descent over the constants of
`efficiency.CONSTANTS`, each scanned on a log grid within its bounds around the prior, minimising

    mean over half-A throughput figures of |ln(planned ÷ published)|  +  PRIOR_WEIGHT · Σ ln(value ÷ prior)²

The second term is a weak pull towards the cited prior: a constant the data says nothing about stays at its
prior instead of wandering to a bound. Three rounds over all constants; each value found is rounded to two
significant figures, because the data cannot tell more apart. Only half A is ever planned here; half B is
reported with whatever this prints, pasted into efficiency.py by hand (the planner never fits at run time).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from bench.calibrate_cases import Built, source_of
from core.catalog import Catalog
from core.planner.speed import efficiency

PRIOR_WEIGHT = 0.01
GRID = 25
ROUNDS = 3


@dataclass(frozen=True)
class Fitted:
    name: str
    prior: float
    value: float
    low: float
    high: float


@contextlib.contextmanager
def values_in_place(values: dict[str, float]) -> Iterator[None]:
    """efficiency.NAME = value for each, restored afterwards."""
    before = {name: getattr(efficiency, name) for name in values}
    for name, value in values.items():
        setattr(efficiency, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(efficiency, name, value)


def _round2(x: float) -> float:
    return float(f"{x:.2g}")


def objective(built: Sequence[Built], catalog: Catalog, values: dict[str, float]) -> float:
    """Mean |log error| of half A's throughput figures with `values` in place, plus the prior pull."""
    from bench.calibrate import compare  # late: calibrate imports this module for its command line

    with values_in_place(values):
        errors = [compare(b, catalog, baseline=False).log_error for b in built]
    planned = [e for e in errors if e is not None]
    if not planned:
        return math.inf
    pull = sum(math.log(values[c.name] / c.prior) ** 2 for c in efficiency.CONSTANTS)
    return sum(planned) / len(planned) + PRIOR_WEIGHT * pull


def fit_all(built: Sequence[Built], catalog: Catalog) -> tuple[list[Fitted], float, float]:
    """(each constant fitted, the objective at the priors, the objective at the fit)."""
    values = {c.name: c.prior for c in efficiency.CONSTANTS}
    start = objective(built, catalog, values)
    for _ in range(ROUNDS):
        for c in efficiency.CONSTANTS:
            grid = [min(max(_round2(v), c.low), c.high) for v in np.geomspace(c.low, c.high, GRID)]
            grid += [c.prior, values[c.name]]
            scores = {v: objective(built, catalog, {**values, c.name: v}) for v in sorted(set(grid))}
            values[c.name] = min(scores, key=lambda v: (scores[v], abs(math.log(v / c.prior))))
    end = objective(built, catalog, values)
    return [Fitted(c.name, c.prior, values[c.name], c.low, c.high) for c in efficiency.CONSTANTS], start, end


def held_out_folds(built: Sequence[Built], catalog: Catalog) -> dict[str, dict[str, float]]:
    """Leave one source out: for each half-A source, the constants `fit_all` finds on the other sources.

    In-sample residuals flatter the model (the fit has already bent towards each case), and a user's run is, like
    every half-B run, a source the fit never saw; a case's residual under the constants fitted without its source
    is the error such a run can expect. Slow (one full fit per source): only `--write-bands` calls it.
    """
    folds = {}
    for source in sorted({source_of(b.case) for b in built}):
        fitted, _, _ = fit_all([b for b in built if source_of(b.case) != source], catalog)
        folds[source] = {f.name: f.value for f in fitted}
    return folds


def held_out_residuals(built: Sequence[Built], catalog: Catalog,
                       folds: dict[str, dict[str, float]]) -> list[tuple[Built, float]]:
    """Each planned case's ln(published ÷ planned tokens/s) under its source's fold (`held_out_folds`)."""
    from bench.calibrate import compare  # late: calibrate imports this module for its command line
    from bench.calibrate_bands import residual

    out = []
    for b in built:
        with values_in_place(folds[source_of(b.case)]):
            row = compare(b, catalog, baseline=False)
        if row.planned is not None:
            out.append((b, residual(row.metric, row.published, row.planned)))
    return out


def fit_text(fitted: Sequence[Fitted], start: float, end: float, cases: int) -> str:
    lines = [f"Fitted on {cases} half-A throughput figures: objective {start:.3f} at the priors → {end:.3f}"]
    for f in fitted:
        shipped = getattr(efficiency, f.name)
        lines.append(f"  {f.name:24} prior {f.prior:<8g} fitted {f.value:<8g} (bounds {f.low:g}–{f.high:g}; "
                     f"shipped {shipped:g})")
    return "\n".join(lines)


def constants_markdown() -> str:
    """Every fitted constant of core/planner/speed/efficiency.py: prior, fitted value, bounds, half, source."""
    out = ["| constant | what it is | prior | fitted | bounds searched | fitted on | prior's source |",
           "|---|---|---:|---:|---|---|---|"]
    for c, value in efficiency.constants():
        out.append(f"| `{c.name}` | {c.meaning} | {c.prior:g} | {value:g} | {c.low:g}–{c.high:g} | half {c.half} | "
                   f"{c.source} |")
    return "\n".join(out)
