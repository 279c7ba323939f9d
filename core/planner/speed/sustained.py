"""The sustained efficiency a framework carries on a GPU family: what its runs keep of the modelled
step.

The explicit costs (step_time.py) time each kernel from a benchmark rate. A real stack keeps a share
of that which depends on the stack as much as on the chip: Megatron-Core with Transformer Engine
keeps fused kernels and overlapped collectives on a Hopper, a Hugging Face model under PEFT and FSDP
pays hooks, wrappers and small kernels on the same chip. One factor per GPU family cannot serve both
(refitting the Hopper factor on Composer and AutoModel runs moved Megatron pre-training from within
6% to 18–25% too slow), so the factor is carried by the framework: `exp(log_factor)` multiplies the
step's speed, per framework × method × GPU family where published runs exist, else framework ×
family, else the family, else every run.

`python -m bench.calibrate --write-bands` writes resources/calibration/efficiency.json: each group's
factor is the source-weighted median of ln(published ÷ planned tokens/s) of its runs planned at
factor 1, pooled with its parent group's factor by how many sources back it (a closed form: no
search, so leave-one-source-out refits it exactly for every fold). The planner only reads the file.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from core import resources
from core.planner.request import Framework, Method
from core.planner.speed import efficiency

EFFICIENCY_FILE = ("calibration", "efficiency.json")
ALL = "all"
# Sources a group needs for a factor of its own: one, because partial pooling
# (bench/calibrate_fit.py) keeps a group that few sources back close to its parent's factor.
MIN_SOURCES = 1

# The table in use when not None (the calibration sets it to plan at factor 1, and to each fold's
# fit).
OVERRIDE: dict[str, Any] | None = None


def method_class(method: Method) -> str:
    return "full" if method is Method.full else "adapter"


def group_keys(framework: Framework, method: Method, architecture: str) -> list[str]:
    """Finest first: framework × method × family, framework × family, family, all."""
    fam = efficiency.family(architecture)
    fw = framework.value
    return [f"{fw} · {method_class(method)} · {fam}", f"{fw} · {fam}", fam, ALL]


@lru_cache(maxsize=1)
def shipped_table() -> dict[str, Any] | None:
    try:
        table: dict[str, Any] = resources.read_json(*EFFICIENCY_FILE)
    except FileNotFoundError:
        return None
    return table


def lookup(keys: list[str], table: dict[str, Any] | None = None) -> tuple[float, str, int]:
    """(speed factor, the group it came from, the sources behind it); 1.0 with no table."""
    table = table if table is not None else (OVERRIDE if OVERRIDE is not None else shipped_table())
    if table is None:
        return 1.0, ALL, 0
    groups = table["groups"]
    for key in keys:
        if key in groups:
            entry = groups[key]
            return math.exp(float(entry["log_factor"])), key, int(entry["sources"])
    return 1.0, ALL, 0


def factor(framework: Framework, method: Method, architecture: str) -> float:
    """The speed factor of a plan's framework, method and GPU family (≤ 1 slows the step)."""
    return lookup(group_keys(framework, method, architecture))[0]
