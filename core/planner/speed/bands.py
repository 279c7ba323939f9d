"""The error band of a plan's time: how far published runs of its regime landed from their plans.

Every published run is planned with the sustained efficiencies fitted without its own source (leave
one source out); its residual ln(published ÷ planned tokens/s) is what a user's run, which the fit
never saw either, can expect. `bench/calibrate.py --write-bands` stores the residual quantiles per
regime (framework × method × scale) in resources/calibration/bands.json, with the share of runs that
fell inside a band built without their source (the coverage a plan states) and how many sources
stand behind each. A regime backed by fewer than MIN_SOURCES sources has no band of its own: the
plan takes the next coarser one (framework × method, method, all), widened by WIDEN, and says so.
The planner only reads the file; nothing is fitted at run time.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from core import resources
from core.planner.request import Method, TrainingSpec
from core.planner.result import Band

BANDS_FILE = ("calibration", "bands.json")
ALL = "all"
# a regime states its own band and coverage only with runs of at least this many publishers
MIN_SOURCES = 3
# a coarser regime's band stands in for a finer one with too few sources: each side × this (in log)
WIDEN = 1.25


def scale_of(gpus: int, nodes: int) -> str:
    """'1 GPU', '1 node' or 'multi-node': where the step's communication runs."""
    if gpus <= 1:
        return "1 GPU"
    return "1 node" if nodes <= 1 else "multi-node"


def method_of(method: Method) -> str:
    """'full' or 'adapter' (LoRA and QLoRA share frozen weights and skinny adapter GEMMs)."""
    return "full" if method is Method.full else "adapter"


def regime_keys(training: TrainingSpec, gpus: int, nodes: int) -> list[str]:
    """The plan's regime, finest first: framework × method × scale, framework × method, method,
    all."""
    fw, method = training.framework.value, method_of(training.method)
    return [f"{fw} · {method} · {scale_of(gpus, nodes)}", f"{fw} · {method}", method, ALL]


@lru_cache(maxsize=1)
def shipped_table() -> dict[str, Any] | None:
    """resources/calibration/bands.json as written by `python -m bench.calibrate --write-bands`;
    None before the first calibration wrote it (a plan then states no band rather than an invented
    one)."""
    try:
        table: dict[str, Any] = resources.read_json(*BANDS_FILE)
    except FileNotFoundError:
        return None
    return table


def regime_entry(keys: list[str], table: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The finest regime of `keys` the table holds (the table always holds 'all')."""
    regimes = table["regimes"]
    for key in keys:
        if key in regimes:
            return key, regimes[key]
    return ALL, regimes[ALL]


def log_band(keys: list[str], table: dict[str, Any]) -> tuple[float, float, str, bool]:
    """(ln low, ln high) of tokens/s, the regime used, and whether it stands in (widened) for a
    finer one.

    low ≤ 0 ≤ high always: the band contains the point estimate even where every residual has one
    sign.
    """
    key, entry = regime_entry(keys, table)
    widened = key != keys[0]
    scale = WIDEN if widened else 1.0
    return (
        min(float(entry["log_low"]), 0.0) * scale,
        max(float(entry["log_high"]), 0.0) * scale,
        key,
        widened,
    )


def ratio_band(keys: list[str], table: dict[str, Any]) -> tuple[float, float, str, int, float]:
    """(low, high) multipliers of tokens/s, the regime used (named '… (widened)' when it stands in
    for a finer one), its runs and the stated coverage."""
    lo, hi, key, widened = log_band(keys, table)
    entry = table["regimes"][key]
    name = f"{key} (widened: {keys[0]} has fewer than {MIN_SOURCES} sources)" if widened else key
    return math.exp(lo), math.exp(hi), name, int(entry["cases"]), float(entry["coverage"])


def sources_of(keys: list[str], table: dict[str, Any]) -> int:
    """How many publishers stand behind the band (and its coverage) a plan of these regimes
    states."""
    _, entry = regime_entry(keys, table)
    return int(entry.get("coverage_sources", entry.get("sources", 0)))


def time_bands(
    training: TrainingSpec,
    gpus: int,
    nodes: int,
    tokens_per_s: float,
    hours: float,
    fixed_hours: float,
    table: dict[str, Any] | None = None,
) -> tuple[Band | None, Band | None]:
    """(tokens/s band, hours band), from `table` or the shipped bands.json (None, None without one).

    `fixed_hours` is the part of `hours` that does not scale with speed (the job's start); the rest
    scales as 1 ÷ tokens/s, so the fast end of one band is the short end of the other."""
    table = table if table is not None else shipped_table()
    if table is None:
        return None, None
    keys = regime_keys(training, gpus, nodes)
    low, high, key, cases, coverage = ratio_band(keys, table)
    sources = sources_of(keys, table)
    tps = Band(
        low=tokens_per_s * low,
        high=tokens_per_s * high,
        coverage=coverage,
        regime=key,
        cases=cases,
        sources=sources,
    )
    moving = max(hours - fixed_hours, 0.0)
    fixed = hours - moving
    h = Band(
        low=fixed + moving / high,
        high=fixed + moving / low,
        coverage=coverage,
        regime=key,
        cases=cases,
        sources=sources,
    )
    return tps, h


def cost_band(
    hours_band: Band | None, hours: float, compute_usd: float | None, total_usd: float | None
) -> Band | None:
    """The total cost at the ends of the hours' band: compute scales with hours, storage and egress
    do not."""
    if hours_band is None or total_usd is None or compute_usd is None or hours <= 0:
        return None
    rest = total_usd - compute_usd
    return Band(
        low=rest + compute_usd * hours_band.low / hours,
        high=rest + compute_usd * hours_band.high / hours,
        coverage=hours_band.coverage,
        regime=hours_band.regime,
        cases=hours_band.cases,
        sources=hours_band.sources,
    )
