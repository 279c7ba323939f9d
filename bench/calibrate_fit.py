"""Fit each framework's sustained efficiency (core/planner/speed/sustained.py), once per held-out
source.

    python -m bench.calibrate --write-bands

Every published throughput run is planned once with the sustained factor at its prior (1: the kernel
model as it is), giving its residual r = ln(published ÷ planned tokens/s). A group's factor
(framework × method × GPU family, then framework × family, family, all) is the median of its runs' r
with each source weighing the same (sixteen rows of one benchmark table are one witness, not
sixteen), pooled with its parent group's factor by how many sources back it (fit_table). The median
is the closed-form least mean absolute log error, so no search is needed, and a factor multiplies
the step's speed, so a run's residual under any fit is r − ln factor: leave-one-source-out refits
the table without each source in turn and predicts that source's runs with it, exactly and in
milliseconds.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.planner.speed import efficiency, sustained

# sources' worth of weight the parent group's factor keeps in a group's own (partial pooling)
SHRINK = 2.0
PRIOR_TABLE: dict[str, Any] = {
    "groups": {sustained.ALL: {"log_factor": 0.0, "runs": 0, "sources": 0}}
}


@dataclass(frozen=True)
class Residual:
    """One throughput run's ln(published ÷ planned tokens/s) and the groups it belongs to, finest
    first (here the efficiency groups at the prior factor; in calibrate_bands the band regimes, out
    of source)."""

    id: str
    source: str
    groups: tuple[str, ...]
    base: float
    # False: predicted and reported, never fitted on (the data flags the figure unexplained)
    steers: bool = True


def grouped(runs: Sequence[Residual]) -> dict[str, list[Residual]]:
    """Group key → the runs that belong to it."""
    out: dict[str, list[Residual]] = {}
    for run in runs:
        for key in run.groups:
            out.setdefault(key, []).append(run)
    return out


@contextlib.contextmanager
def table_in_place(table: dict[str, Any]) -> Iterator[None]:
    """Plans read `table` instead of the shipped efficiency.json for the duration."""
    before = sustained.OVERRIDE
    sustained.OVERRIDE = table
    try:
        yield
    finally:
        sustained.OVERRIDE = before


def weighted_quantiles(
    values: Sequence[float], weights: Sequence[float], qs: Sequence[float]
) -> list[float]:
    """Quantiles of a weighted sample (the midpoints of each value's cumulative weight,
    interpolated)."""
    order = np.argsort(values)
    v, w = np.asarray(values, float)[order], np.asarray(weights, float)[order]
    cum = (np.cumsum(w) - w / 2) / w.sum()
    return [float(np.interp(q, cum, v)) for q in qs]


def source_weights(sources: Sequence[str]) -> list[float]:
    """1 ÷ (the source's runs among these): every source weighs the same."""
    count = Counter(sources)
    return [1.0 / count[s] for s in sources]


def fit_table(runs: Sequence[Residual]) -> dict[str, Any]:
    """The efficiency.json groups from these runs (closed form; see the module docstring).

    Coarse to fine, each group's source-weighted median is pooled with its parent's factor (the next
    coarser group; 'all' with the prior, 0) as (n · median + SHRINK · parent) ÷ (n + SHRINK), n its
    sources: partial pooling, so one or two sources move a group part of the way from its parent and
    one outlying stack cannot set a whole framework's factor. Runs that do not steer
    (`Residual.steers`) are left out."""
    runs = [r for r in runs if r.steers]
    parent: dict[str, str] = {}
    for run in runs:
        for fine, coarse in zip(run.groups, run.groups[1:], strict=False):
            parent.setdefault(fine, coarse)
    members = grouped(runs)
    factors: dict[str, float] = {}

    def pooled(key: str) -> float:
        if key not in factors:
            above = pooled(parent[key]) if key in parent else 0.0
            rows = members.get(key, [])
            sources = [r.source for r in rows]
            n = len(set(sources))
            median = (
                weighted_quantiles([r.base for r in rows], source_weights(sources), [0.5])[0]
                if rows
                else 0.0
            )
            factors[key] = (n * median + SHRINK * above) / (n + SHRINK)
        return factors[key]

    groups = {}
    for key, rows in sorted(members.items()):
        n = len({r.source for r in rows})
        if n >= sustained.MIN_SOURCES or key == sustained.ALL:
            groups[key] = {"log_factor": round(pooled(key), 4), "runs": len(rows), "sources": n}
    groups.setdefault(sustained.ALL, dict(PRIOR_TABLE["groups"][sustained.ALL]))
    return {"groups": groups}


def folds(runs: Sequence[Residual]) -> dict[str, dict[str, Any]]:
    """Source → the table fitted on every other source."""
    return {
        s: fit_table([r for r in runs if r.source != s]) for s in sorted({r.source for r in runs})
    }


def held_out(
    runs: Sequence[Residual], fold_tables: dict[str, dict[str, Any]]
) -> dict[str, tuple[float, str]]:
    """Run id → (its log factor under the fold without its source, the group that factor came
    from)."""
    out = {}
    for r in runs:
        groups = fold_tables[r.source]["groups"]
        key = next(k for k in r.groups if k in groups)
        out[r.id] = (float(groups[key]["log_factor"]), key)
    return out


def constants_markdown() -> str:
    """Every constant of core/planner/speed/efficiency.py: its value (the prior) and source."""
    out = [
        "| constant | what it is | value (prior) | range a study may patch | source |",
        "|---|---|---:|---|---|",
    ]
    for c, value in efficiency.constants():
        out.append(f"| `{c.name}` | {c.meaning} | {value:g} | {c.low:g}–{c.high:g} | {c.source} |")
    return "\n".join(out)


def groups_markdown(table: dict[str, Any] | None) -> str:
    """The shipped efficiency.json as a table."""
    if table is None:
        return "No sustained efficiencies written yet (`python -m bench.calibrate --write-bands`)."
    out = [
        "| group (framework · method · GPU family) | sustained speed factor | runs | sources |",
        "|---|---:|---:|---:|",
    ]
    for key, e in table["groups"].items():
        out.append(f"| {key} | ×{np.exp(e['log_factor']):.2f} | {e['runs']} | {e['sources']} |")
    return "\n".join(out)
