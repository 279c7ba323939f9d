"""The error bands a plan states (core/planner/speed/bands.py), from the calibration residuals; and their coverage.

    python -m bench.calibrate --write-bands

Half A's held-out throughput residuals ln(published ÷ planned tokens/s), each source planned with the constants
fitted on the other half-A sources (calibrate_fit.held_out_folds), are grouped by regime (framework × method ×
scale, and the coarser regimes a plan falls back to); each regime with at least MIN_CASES runs gets the residuals'
LOW_Q and HIGH_Q quantiles (a nominal 80% band), each publication weighing the same (runs from one source share its
software, hardware and way of measuring, so sixteen llm-foundry rows are closer to one witness than to sixteen:
counting them each once made the band as narrow as that one source's spread), widened to contain 0 so that the band
always holds the point estimate. Half B then measures what the band is worth: the share of its runs whose published
figure falls inside the band their plan states. That measured share, not the nominal 80%, is the coverage written
beside each regime (the regime's own half-B share when it has MIN_COVERAGE_CASES runs there, else the share over all
of half B).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.calibrate_cases import Built, source_of
from core.planner.speed import bands, efficiency

LOW_Q, HIGH_Q = 0.10, 0.90
NOMINAL = HIGH_Q - LOW_Q
MIN_CASES = 5
MIN_COVERAGE_CASES = 4
BANDS_PATH = Path(__file__).resolve().parent.parent / "resources" / "calibration" / "bands.json"


def residual(metric: str, published: float, planned: float) -> float:
    """ln(published ÷ planned) in tokens/s terms: a wall time is inverse to the speed."""
    r = math.log(published / planned)
    return -r if metric == "wall_time_s" else r


def keys_of(built: Built) -> list[str]:
    req = built.request
    assert req is not None and req.hardware is not None
    from core.planner.speed.frameworks import effective_training

    return bands.regime_keys(effective_training(req.training), req.hardware.gpus, req.hardware.nodes)


def weighted_quantiles(values: Sequence[float], weights: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Quantiles of a weighted sample (the midpoints of each value's cumulative weight, interpolated)."""
    order = np.argsort(values)
    v, w = np.asarray(values, float)[order], np.asarray(weights, float)[order]
    cum = (np.cumsum(w) - w / 2) / w.sum()
    return [float(np.interp(q, cum, v)) for q in qs]


def table(fit_rows: Sequence[tuple[Built, float]]) -> dict[str, Any]:
    """Regime → source-weighted quantiles of half A's residuals; regimes with fewer than MIN_CASES runs are left
    out."""
    per_source = Counter(source_of(built.case) for built, _ in fit_rows)
    grouped: dict[str, list[tuple[float, str]]] = {}
    for built, r in fit_rows:
        for key in keys_of(built):
            grouped.setdefault(key, []).append((r, source_of(built.case)))
    regimes = {}
    for key, rows in sorted(grouped.items()):
        if len(rows) < MIN_CASES and key != bands.ALL:
            continue
        lo, hi = weighted_quantiles([r for r, _ in rows], [1.0 / per_source[s] for _, s in rows], [LOW_Q, HIGH_Q])
        regimes[key] = {"log_low": round(min(lo, 0.0), 4), "log_high": round(max(hi, 0.0), 4), "cases": len(rows),
                        "sources": len({s for _, s in rows}), "coverage": None}
    return {"regimes": regimes}


def coverage(tab: dict[str, Any], report_rows: Sequence[tuple[Built, float]]) -> tuple[float, dict[str, list[bool]]]:
    """Half B: the share of runs inside their band, overall and by the regime entry each one used."""
    inside: dict[str, list[bool]] = {}
    for built, r in report_rows:
        low, high, key, _, _ = bands.ratio_band(keys_of(built), _with_coverage(tab, 0.0))
        inside.setdefault(key, []).append(math.log(low) <= r <= math.log(high))
    every = [x for xs in inside.values() for x in xs]
    return (sum(every) / len(every) if every else math.nan), inside


def _with_coverage(tab: dict[str, Any], value: float) -> dict[str, Any]:
    return {"regimes": {k: {**v, "coverage": value if v["coverage"] is None else v["coverage"]}
                        for k, v in tab["regimes"].items()}}


def build_bands(fit_rows: Sequence[tuple[Built, float]], report_rows: Sequence[tuple[Built, float]],
                today: dt.date, folds: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The bands.json content: regimes with their half-B coverage, and where every number comes from."""
    tab = table(fit_rows)
    overall, inside = coverage(tab, report_rows)
    for key, entry in tab["regimes"].items():
        mine = inside.get(key, [])
        entry["coverage"] = round(sum(mine) / len(mine) if len(mine) >= MIN_COVERAGE_CASES else overall, 3)
        entry["coverage_cases_half_b"] = len(mine)
    return {
        "provenance": {
            "written_by": "python -m bench.calibrate --write-bands",
            "date": today.isoformat(),
            "cases": "tests/fixtures/planner/throughput_cases.json; half A (fit) sets the widths, half B (report) "
                     "measures the coverage (bench/calibrate.py: HALVES)",
            "residual": "ln(published ÷ planned tokens/s); half A's held out: each source planned with the "
                        "constants fitted on the other half-A sources (folds), half B's with the shipped constants "
                        "of core/planner/speed/efficiency.py",
            "quantiles": [LOW_Q, HIGH_Q],
            "nominal_coverage": round(NOMINAL, 2),
            "min_cases_per_regime": MIN_CASES,
            "coverage_half_b": round(overall, 3),
            "half_b_cases": len(report_rows),
            "efficiency": {c.name: v for c, v in efficiency.constants()},
            "folds": folds,
        },
        **tab,
    }


def write(content: dict[str, Any], path: Path = BANDS_PATH) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def bands_markdown(table: dict[str, Any] | None) -> str:
    """The shipped bands.json as a table, with its measured half-B coverage."""
    if table is None:
        return "No bands written yet (`python -m bench.calibrate --write-bands`)."
    prov = table["provenance"]
    out = [f"Band per regime from half A's held-out residuals ln(published ÷ planned tokens/s) (each half-A "
           f"source planned with the constants fitted on the other sources, as a user's run is planned with "
           f"constants that never saw it), each source weighing the same, quantiles "
           f"{prov['quantiles'][0]:g}–{prov['quantiles'][1]:g} (nominal {prov['nominal_coverage']:.0%}), widened to "
           f"contain the point estimate; at least {prov['min_cases_per_regime']} half-A runs per regime, else the "
           f"plan falls back to a coarser regime. **Coverage measured on half B: {prov['coverage_half_b']:.0%} of "
           f"{prov['half_b_cases']} runs inside the band their plan states** (this is the coverage plans state).",
           "", "| regime | half-A runs | tokens/s low | tokens/s high | coverage stated | half-B runs using it |",
           "|---|---:|---:|---:|---:|---:|"]
    for key, e in table["regimes"].items():
        out.append(f"| {key} | {e['cases']} | ×{math.exp(e['log_low']):.2f} | ×{math.exp(e['log_high']):.2f} | "
                   f"{e['coverage']:.0%} | {e['coverage_cases_half_b']} |")
    return "\n".join(out)
