"""The error bands a plan states (core/planner/speed/bands.py) and the coverage each states, out of
source only.

    python -m bench.calibrate --write-bands

Input (calibrate_fit.Residual, its groups the plan's regimes): each published throughput run's
leave-one-source-out residual e = ln(published ÷ planned tokens/s), its plan made with the sustained
efficiencies fitted without its source (calibrate_fit). A regime (framework × method × scale, then
framework × method, method, all) gets its own band only when runs of at least MIN_SOURCES sources
back it: the LOW_Q–HIGH_Q quantiles of its residuals, each source weighing the same, widened to hold
0. A plan whose finest regime has no band of its own takes the first coarser one, widened by WIDEN,
and says so.

Coverage is measured the same way, one source out: for each source, the band table is rebuilt from
every other source's residuals, and each of its runs is checked against the band its plan would
state. A regime's stated coverage is that share over all its runs (so at least MIN_SOURCES sources
stand behind every stated figure); the nominal quantiles are never what a plan states.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.calibrate_fit import Residual, grouped, source_weights, weighted_quantiles
from core.planner.speed import bands

LOW_Q, HIGH_Q = 0.05, 0.95
MIN_SOURCES = bands.MIN_SOURCES
BANDS_PATH = Path(__file__).resolve().parent.parent / "resources" / "calibration" / "bands.json"


def residual(metric: str, published: float, planned: float) -> float:
    """ln(published ÷ planned) in tokens/s terms: a wall time or GPU-hours figure is inverse to the
    speed."""
    r = math.log(published / planned)
    return -r if metric in ("wall_time_s", "gpu_hours") else r


def band_table(rows: Sequence[Residual]) -> dict[str, Any]:
    """Regime → its band, for regimes that runs of MIN_SOURCES sources back ('all' always)."""
    regimes = {}
    for key, mine in sorted(grouped(rows).items()):
        sources = [r.source for r in mine]
        if len(set(sources)) < MIN_SOURCES and key != bands.ALL:
            continue
        lo, hi = weighted_quantiles(
            [r.base for r in mine], source_weights(sources), [LOW_Q, HIGH_Q]
        )
        regimes[key] = {
            "log_low": round(min(lo, 0.0), 4),
            "log_high": round(max(hi, 0.0), 4),
            "cases": len(mine),
            "sources": len(set(sources)),
        }
    return {"regimes": regimes}


def inside(row: Residual, table: dict[str, Any]) -> bool:
    low, high, _, _ = bands.log_band(list(row.groups), table)
    return low <= row.base <= high


def coverage(rows: Sequence[Residual]) -> dict[str, bool]:
    """Run id → whether it fell inside the band a table built without its source gives its plan."""
    out = {}
    for source in sorted({r.source for r in rows}):
        table = band_table([r for r in rows if r.source != source])
        out.update({r.id: inside(r, table) for r in rows if r.source == source})
    return out


def width(row: Residual, table: dict[str, Any]) -> float:
    """The band's high ÷ low ratio for this run's plan."""
    low, high, _, _ = bands.log_band(list(row.groups), table)
    return math.exp(high - low)


def build_bands(rows: Sequence[Residual], today: dt.date, extra: dict[str, Any]) -> dict[str, Any]:
    """The bands.json content: the bands from every run, each regime's out-of-source coverage,
    provenance."""
    table = band_table(rows)
    hits = coverage(rows)
    for key, entry in table["regimes"].items():
        mine = [r for r in rows if key in r.groups]
        entry["coverage"] = round(sum(hits[r.id] for r in mine) / len(mine), 3)
        entry["coverage_cases"] = len(mine)
        entry["coverage_sources"] = len({r.source for r in mine})
    overall = sum(hits.values()) / len(hits) if hits else math.nan
    return {
        "provenance": {
            "written_by": "python -m bench.calibrate --write-bands",
            "date": today.isoformat(),
            "residual": "ln(published ÷ planned tokens/s), each run planned with the sustained "
            "efficiencies fitted without its source (leave one source out)",
            "quantiles": [LOW_Q, HIGH_Q],
            "min_sources_per_regime": MIN_SOURCES,
            "widen_fallback": bands.WIDEN,
            "coverage_out_of_source": round(overall, 3),
            "median_width": round(statistics.median(width(r, table) for r in rows), 3)
            if rows
            else None,
            "cases": len(rows),
            "sources": len({r.source for r in rows}),
            **extra,
        },
        **table,
    }


def write(content: dict[str, Any], path: Path = BANDS_PATH) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def bands_markdown(table: dict[str, Any] | None) -> str:
    """The shipped bands.json as a table, with each regime's out-of-source coverage."""
    if table is None:
        return "No bands written yet (`python -m bench.calibrate --write-bands`)."
    prov = table["provenance"]
    out = [
        "Band per regime from the leave-one-source-out residuals ln(published ÷ planned "
        "tokens/s), each source weighing the same, quantiles "
        f"{prov['quantiles'][0]:g}–{prov['quantiles'][1]:g}, widened to hold the point estimate; "
        f"a regime has its own band only when runs of at least {prov['min_sources_per_regime']} "
        "sources back it, else a plan takes the next coarser regime's band widened "
        f"×{prov['widen_fallback']:g} each side, and says so. **Coverage, one source out (each "
        "source's runs checked against bands built without it): "
        f"{prov['coverage_out_of_source']:.0%} of {prov['cases']} runs from {prov['sources']} "
        f"sources; median band width ×{prov['median_width']:.3f} (high ÷ low).** Each regime "
        "states its own "
        "coverage below, measured over all its runs.",
        "",
        "| regime | runs | sources | tokens/s low | tokens/s high | coverage stated (out of "
        "source) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, e in table["regimes"].items():
        out.append(
            f"| {key} | {e['cases']} | {e['sources']} | ×{math.exp(e['log_low']):.2f} | "
            f"×{math.exp(e['log_high']):.2f} | {e['coverage']:.0%} |"
        )
    return "\n".join(out)
