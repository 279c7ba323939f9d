"""The probes, one module each: a function ``run(ctx)`` that fills its part of the evidence, plus an
ETA.

The runner looks probes up here by the names in `core.probes.run.options.PROBE_NAMES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.probes.checks import (
    burn,
    collectives,
    compute,
    distributed,
    gpu_metrics,
    health,
    inventory,
    step,
    storage,
)
from core.probes.checks.base import ProbeContext


@dataclass(frozen=True)
class ProbeSpec:
    run: Callable[[ProbeContext], None]
    eta: Callable[[ProbeContext], float]  # rough seconds, for progress bars


def _storage_eta(ctx: ProbeContext) -> float:
    paths = len({p for p in (ctx.options.data_path, ctx.options.checkpoint_path) if p}) or 1
    return paths * (4 * max(1.0, ctx.options.fio_runtime_s) + 6)


PROBES: dict[str, ProbeSpec] = {
    "inventory": ProbeSpec(inventory.run, lambda ctx: 3.0 + 2.0 * ctx.facts.nvidia),
    "gpu_metrics": ProbeSpec(gpu_metrics.run, lambda ctx: ctx.options.metrics_seconds),
    "health": ProbeSpec(health.run, lambda ctx: 3.0),
    "compute": ProbeSpec(compute.run, lambda ctx: 6.0 + 2.0 * max(1, ctx.facts.gpu_count)),
    "collectives": ProbeSpec(collectives.run, lambda ctx: 30.0 if ctx.facts.nvidia else 10.0),
    "storage": ProbeSpec(storage.run, _storage_eta),
    "distributed": ProbeSpec(distributed.run, lambda ctx: 15.0 if ctx.facts.nvidia else 6.0),
    "burn": ProbeSpec(burn.run, lambda ctx: ctx.options.burn_seconds + 10.0),
    "step": ProbeSpec(step.run, step.eta),
}

__all__ = ["PROBES", "ProbeSpec"]
