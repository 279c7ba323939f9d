"""Failures, checkpoint intervals and the wall-clock time they cost.

Pure functions. The interval, MTBF and expected-time functions take floats or NumPy arrays
(broadcast together) because the hardware search evaluates thousands of candidates at once; floats
in give a float out.

Sources (see docs/formulas_storage_cost.md):
- Young 1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9).
- Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps",
  Future Generation Computer Systems 22(3) 303-312.
- Llama 3 (arXiv:2407.21783 §3.3.4) for the default per-GPU MTBF; Databricks' 1 %/year GPU failure
  rule.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from core.planner.result import CheckpointResult

FloatArray = NDArray[np.float64]
Num = float | FloatArray

SECONDS_PER_HOUR = 3600.0
DAYS_PER_YEAR = 365.0
_MIN_INTERVAL_S = 1e-6  # keeps T_s / tau finite when checkpoints are free or the job is empty


def _arr(value: Any, name: str, *, positive: bool = False, allow_inf: bool = False) -> FloatArray:
    """Validate a float-or-array argument once, so errors name the field instead of surfacing as
    NaN."""
    arr = np.asarray(value, dtype=np.float64)
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} must be a number (got NaN)")
    if not allow_inf and np.any(np.isinf(arr)):
        raise ValueError(f"{name} must be finite")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be greater than 0")
    if not positive and np.any(arr < 0):
        raise ValueError(f"{name} must be 0 or more")
    return arr


def _out(arr: Any) -> Num:
    """Return a plain float for scalar inputs so callers can format and round it."""
    result = np.asarray(arr, dtype=np.float64)
    return float(result) if result.ndim == 0 else result


# --------------------------------------------------------------------------- checkpoint interval


@overload
def young_interval_s(delta_s: float, mtbf_s: float) -> float: ...  # type: ignore[overload-overlap]
@overload
def young_interval_s(delta_s: Num, mtbf_s: Num) -> FloatArray: ...
def young_interval_s(delta_s: Num, mtbf_s: Num) -> Num:
    """Young's first-order optimum compute time between checkpoints: tau = sqrt(2 delta M)."""
    delta = _arr(delta_s, "delta_s (checkpoint write time)")
    mtbf = _arr(mtbf_s, "mtbf_s (job MTBF)", positive=True, allow_inf=True)
    with np.errstate(invalid="ignore"):
        tau = np.sqrt(2.0 * delta * mtbf)
    return _out(np.where(delta == 0, 0.0, tau))  # free checkpoints: 0 x inf is 0 here, not NaN


@overload
def daly_interval_s(delta_s: float, mtbf_s: float) -> float: ...  # type: ignore[overload-overlap]
@overload
def daly_interval_s(delta_s: Num, mtbf_s: Num) -> FloatArray: ...
def daly_interval_s(delta_s: Num, mtbf_s: Num) -> Num:
    """Daly's higher-order optimum interval; Young's rule over-checkpoints when writes are slow vs
    M.

    tau = sqrt(2 delta M) * [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta   for delta <
    2M, tau = M                                                                           otherwise.
    """
    delta = _arr(delta_s, "delta_s (checkpoint write time)")
    mtbf = _arr(mtbf_s, "mtbf_s (job MTBF)", positive=True, allow_inf=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = delta / (2.0 * mtbf)
        tau = np.sqrt(2.0 * delta * mtbf) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - delta
    return _out(np.where(delta == 0, 0.0, np.where(delta < 2.0 * mtbf, tau, mtbf)))


# --------------------------------------------------------------------------- failure rates


@overload
def job_mtbf_hours(  # type: ignore[overload-overlap]
    gpu_mtbf_hours: float, gpus: float, preemptions_per_hour: float = 0.0
) -> float: ...
@overload
def job_mtbf_hours(
    gpu_mtbf_hours: Num, gpus: Num, preemptions_per_hour: Num = 0.0
) -> FloatArray: ...
def job_mtbf_hours(gpu_mtbf_hours: Num, gpus: Num, preemptions_per_hour: Num = 0.0) -> Num:
    """Mean time between job-killing events: any one GPU failing, or a spot preemption.

    1/M = N / M_gpu + lambda. Failures of independent GPUs add as rates; a synchronous job stops on
    the first. lambda is the preemption rate of the whole job (for N independent spot instances pass
    N x the per-instance rate). Returns inf when nothing can interrupt the job.
    """
    m_gpu = _arr(gpu_mtbf_hours, "gpu_mtbf_hours", positive=True, allow_inf=True)
    n = _arr(gpus, "gpus", positive=True)
    lam = _arr(preemptions_per_hour, "preemptions_per_hour")
    rate = n / m_gpu + lam
    with np.errstate(divide="ignore"):
        return _out(np.where(rate > 0, 1.0 / np.where(rate > 0, rate, 1.0), np.inf))


@overload
def expected_wall_hours(  # type: ignore[overload-overlap]
    solve_hours: float, interval_s: float, delta_s: float, restart_s: float, mtbf_s: float
) -> float: ...
@overload
def expected_wall_hours(
    solve_hours: Num, interval_s: Num, delta_s: Num, restart_s: Num, mtbf_s: Num
) -> FloatArray: ...
def expected_wall_hours(
    solve_hours: Num, interval_s: Num, delta_s: Num, restart_s: Num, mtbf_s: Num
) -> Num:
    """Daly's complete model of expected wall-clock time: checkpoint writes, lost rework and
    restarts.

    T_w = M e^(R/M) (e^((tau+delta)/M) - 1) T_s / tau    (all in seconds; returned in hours).
    Assumes exponentially distributed failures and that failures can strike during writes and
    restarts. As M -> inf this tends to T_s (1 + delta/tau): only the checkpoint writes remain.
    """
    t_s = _arr(solve_hours, "solve_hours") * SECONDS_PER_HOUR
    tau = _arr(interval_s, "interval_s (compute time between checkpoints)", positive=True)
    delta = _arr(delta_s, "delta_s (checkpoint write time)")
    restart = _arr(restart_s, "restart_s")
    mtbf = _arr(mtbf_s, "mtbf_s (job MTBF)", positive=True, allow_inf=True)
    finite = np.isfinite(mtbf)
    # placeholder where M is infinite; that branch is replaced below
    m = np.where(finite, mtbf, 1.0)
    with np.errstate(over="ignore"):
        # expm1 keeps precision when (tau + delta) << M, the usual case for small jobs.
        wall = m * np.exp(restart / m) * np.expm1((tau + delta) / m) * t_s / tau
    no_failures = t_s * (1.0 + delta / tau)
    return _out(np.where(finite, wall, no_failures) / SECONDS_PER_HOUR)


@overload
def expected_failures(wall_hours: float, mtbf_hours: float) -> float: ...  # type: ignore[overload-overlap]
@overload
def expected_failures(wall_hours: Num, mtbf_hours: Num) -> FloatArray: ...
def expected_failures(wall_hours: Num, mtbf_hours: Num) -> Num:
    """Expected number of job-killing events during the run: T_w / M (Poisson mean)."""
    wall = _arr(wall_hours, "wall_hours")
    mtbf = _arr(mtbf_hours, "mtbf_hours", positive=True, allow_inf=True)
    return _out(wall / mtbf)


def failure_probability(gpus: float, days: float, annual_rate: float = 0.01) -> float:
    """Chance that at least one of N GPUs fails within the period (Databricks' 1 %/GPU-year rule).

    P = 1 - (1 - rate)^(N * days / 365).
    """
    if gpus <= 0:
        raise ValueError(f"gpus must be greater than 0 (got {gpus})")
    if days < 0:
        raise ValueError(f"days must be 0 or more (got {days})")
    if not 0 <= annual_rate < 1:
        raise ValueError(f"annual_rate must be in [0, 1) (got {annual_rate})")
    return float(1.0 - (1.0 - annual_rate) ** (gpus * days / DAYS_PER_YEAR))


# --------------------------------------------------------------------------- at the optimum


@overload
def optimal_interval_s(  # type: ignore[overload-overlap]
    delta_s: float, mtbf_s: float, solve_hours: float
) -> float: ...
@overload
def optimal_interval_s(delta_s: Num, mtbf_s: Num, solve_hours: Num) -> FloatArray: ...
def optimal_interval_s(delta_s: Num, mtbf_s: Num, solve_hours: Num) -> Num:
    """Daly's optimum, but never longer than the job: a short job checkpoints once, at the end."""
    solve_s = _arr(solve_hours, "solve_hours") * SECONDS_PER_HOUR
    tau = np.minimum(daly_interval_s(np.asarray(delta_s, dtype=np.float64), mtbf_s), solve_s)
    return _out(np.maximum(tau, _MIN_INTERVAL_S))


@overload
def expected_wall_hours_at_optimum(  # type: ignore[overload-overlap]
    solve_hours: float, delta_s: float, restart_s: float, mtbf_s: float
) -> float: ...
@overload
def expected_wall_hours_at_optimum(
    solve_hours: Num, delta_s: Num, restart_s: Num, mtbf_s: Num
) -> FloatArray: ...
def expected_wall_hours_at_optimum(
    solve_hours: Num, delta_s: Num, restart_s: Num, mtbf_s: Num
) -> Num:
    """Expected wall-clock hours when checkpointing at the (capped) Daly interval."""
    tau = optimal_interval_s(delta_s, mtbf_s, solve_hours)
    return _out(expected_wall_hours(solve_hours, tau, delta_s, restart_s, mtbf_s))


# --------------------------------------------------------------------------- the whole checkpoint
# plan


def plan_checkpoints(
    *,
    size_bytes: float,
    write_seconds: float,
    solve_hours: float,
    gpu_mtbf_hours: float,
    gpus: int,
    preemptions_per_hour: float = 0.0,
    restart_s: float = 600.0,
) -> CheckpointResult:
    """Interval, expected failures and time overhead for one configuration, as the plan result
    reports them.

    ``solve_hours`` is the failure-free compute time; ``restart_s`` covers requeue, reload and
    warm-up.
    """
    m_hours = job_mtbf_hours(gpu_mtbf_hours, gpus, preemptions_per_hour)
    m_s = m_hours * SECONDS_PER_HOUR
    tau = optimal_interval_s(write_seconds, m_s, solve_hours)
    young = max(
        min(young_interval_s(write_seconds, m_s), solve_hours * SECONDS_PER_HOUR), _MIN_INTERVAL_S
    )
    wall = expected_wall_hours(solve_hours, tau, write_seconds, restart_s, m_s)
    return CheckpointResult(
        size_bytes=round(size_bytes),
        write_seconds=float(write_seconds),
        interval_minutes=tau / 60.0,
        interval_young_minutes=young / 60.0,
        job_mtbf_hours=m_hours,
        expected_failures=expected_failures(wall, m_hours),
        overhead_fraction=(wall / solve_hours - 1.0) if solve_hours > 0 else 0.0,
    )
