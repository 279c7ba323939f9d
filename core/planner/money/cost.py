"""Money: compute by pricing mode, spot with its expected lost work, idle disks, egress, and buy vs
rent.

Pure functions; prices come in as plain floats (per GPU-hour, per GB, per GB-month) so the caller
decides where they come from (catalog, user override) and carries their provider, date and source.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, overload

import numpy as np
from numpy.typing import NDArray

from core.planner.money.reliability import (
    SECONDS_PER_HOUR,
    expected_wall_hours_at_optimum,
    job_mtbf_hours,
)
from core.planner.request_assumptions import BuySpec
from core.planner.result import BuyVsRent, ComputeCost

# 365.25 days, as the buy-vs-rent formula in REFERENCES.md uses
from core.units import HOURS_PER_YEAR

FloatArray = NDArray[np.float64]
Num = float | FloatArray

GB = 1e9
HOURS_PER_MONTH = 730.0  # cloud GB-month billing convention (8,760 h / 12)
MONTHS_PER_YEAR = 12.0


def _check(value: float | None, name: str) -> None:
    if value is not None and (value < 0 or not math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number, 0 or more (got {value})")


def _check_discount(discount: float) -> None:
    if not 0 <= discount < 1:
        raise ValueError(f"discount must be at least 0 and below 1 (got {discount})")


# --------------------------------------------------------------------------- compute


def compute_costs(
    gpu_hours: float,
    on_demand: float | None,
    spot: float | None,
    reserved: float | None,
    discount: float = 0.0,
    *,
    spot_gpu_hours: float | None = None,
) -> ComputeCost:
    """GPU-hours x price per GPU-hour for each mode; None where the provider has no such price.

    ``discount`` (0-1) is taken off every listed price (a negotiated rate). Spot usually runs longer
    than the failure-free time: pass ``spot_gpu_hours`` from :func:`spot_cost` to bill its expected
    lost work.
    """
    _check(gpu_hours, "gpu_hours")
    _check(spot_gpu_hours, "spot_gpu_hours")
    for name, price in (("on_demand", on_demand), ("spot", spot), ("reserved", reserved)):
        _check(price, f"{name} price")
    _check_discount(discount)
    factor = 1.0 - discount
    spot_hours = gpu_hours if spot_gpu_hours is None else spot_gpu_hours
    return ComputeCost(
        on_demand=None if on_demand is None else gpu_hours * on_demand * factor,
        spot=None if spot is None else spot_hours * spot * factor,
        reserved=None if reserved is None else gpu_hours * reserved * factor,
    )


@overload
def spot_wall_hours(  # type: ignore[overload-overlap]
    solve_hours: float,
    gpus: float,
    gpu_mtbf_hours: float,
    preemptions_per_hour: float,
    checkpoint_write_s: float,
    restart_s: float,
) -> float: ...
@overload
def spot_wall_hours(
    solve_hours: Num,
    gpus: Num,
    gpu_mtbf_hours: Num,
    preemptions_per_hour: Num,
    checkpoint_write_s: Num,
    restart_s: Num,
) -> FloatArray: ...
def spot_wall_hours(
    solve_hours: Num,
    gpus: Num,
    gpu_mtbf_hours: Num,
    preemptions_per_hour: Num,
    checkpoint_write_s: Num,
    restart_s: Num,
) -> Num:
    """Expected wall-clock hours of a spot job (vectorised).

    Job MTBF combines hardware failures and preemptions (1/M = N/M_gpu + lambda); the job
    checkpoints at Daly's optimum interval for that M; Daly's complete model then gives writes +
    lost rework + restarts. A preemption is treated like a failure: work since the last checkpoint
    is lost (the 2-minute notice some providers give is not counted on).
    """
    m_s = np.asarray(job_mtbf_hours(gpu_mtbf_hours, gpus, preemptions_per_hour)) * SECONDS_PER_HOUR
    wall = expected_wall_hours_at_optimum(solve_hours, checkpoint_write_s, restart_s, m_s)
    return float(wall) if np.ndim(wall) == 0 else np.asarray(wall, dtype=np.float64)


class SpotCost(NamedTuple):
    """Spot compute for one configuration; ``lost_gpu_hours`` = expected GPU-hours beyond
    failure-free."""

    usd: float | None
    wall_hours: float
    gpu_hours: float
    lost_gpu_hours: float
    job_mtbf_hours: float


def spot_cost(
    *,
    solve_hours: float,
    gpus: int,
    spot_usd_per_gpu_hour: float | None,
    gpu_mtbf_hours: float,
    preemptions_per_hour: float,
    checkpoint_write_s: float,
    restart_s: float,
    discount: float = 0.0,
) -> SpotCost:
    """Spot cost including expected lost work and restarts: expected wall hours x GPUs x spot price.

    Every wall-clock hour is billed (checkpoint writes, redone work, restarts), a slight
    overestimate where the instance is not billed while waiting for capacity.
    """
    _check(spot_usd_per_gpu_hour, "spot_usd_per_gpu_hour")
    _check_discount(discount)
    if gpus < 1:
        raise ValueError(f"gpus must be at least 1 (got {gpus})")
    wall = spot_wall_hours(
        solve_hours, gpus, gpu_mtbf_hours, preemptions_per_hour, checkpoint_write_s, restart_s
    )
    gpu_hours = wall * gpus
    usd = (
        None
        if spot_usd_per_gpu_hour is None
        else gpu_hours * spot_usd_per_gpu_hour * (1.0 - discount)
    )
    return SpotCost(
        usd=usd,
        wall_hours=wall,
        gpu_hours=gpu_hours,
        lost_gpu_hours=max(0.0, gpu_hours - solve_hours * gpus),
        job_mtbf_hours=job_mtbf_hours(gpu_mtbf_hours, gpus, preemptions_per_hour),
    )


# --------------------------------------------------------------------------- storage-side money


def idle_cost(
    idle_hours: float, disk_bytes: float, block_usd_per_gb_month: float | None
) -> float | None:
    """Disks billed while instances are stopped: GB x USD/GB-month x idle hours / 730."""
    _check(idle_hours, "idle_hours")
    _check(disk_bytes, "disk_bytes")
    _check(block_usd_per_gb_month, "block_usd_per_gb_month")
    if block_usd_per_gb_month is None:
        return None
    return disk_bytes / GB * block_usd_per_gb_month * idle_hours / HOURS_PER_MONTH


def egress_cost(gb: float, usd_per_gb: float | None, free_gb: float = 0.0) -> float | None:
    """Data transfer out: billable GB (beyond any free allowance) x USD/GB."""
    _check(gb, "gb")
    _check(usd_per_gb, "usd_per_gb")
    _check(free_gb, "free_gb")
    if usd_per_gb is None:
        return None
    return max(0.0, gb - free_gb) * usd_per_gb


# --------------------------------------------------------------------------- buy vs rent


def _capex(buy: BuySpec, capex_per_gpu: float | None) -> float:
    capex = buy.capex_usd_per_gpu if buy.capex_usd_per_gpu is not None else capex_per_gpu
    if capex is None:
        raise ValueError("buy vs rent needs a capex per GPU (assumptions.buy.capex_usd_per_gpu)")
    _check(capex, "capex_per_gpu")
    return capex


def owned_usd_per_gpu_year(buy: BuySpec, capex_per_gpu: float | None) -> float:
    """Yearly cost of owning one GPU, whatever it is used for.

    capex (1 - residual) / years + kW x load x PUE x 8766 h x USD/kWh + kW x colo USD/kW-month x 12
    + ops. The user's ``buy.capex_usd_per_gpu`` wins over ``capex_per_gpu`` (the catalog default).
    """
    capex = _capex(buy, capex_per_gpu)
    depreciation = capex * (1.0 - buy.residual_fraction) / buy.years
    power = buy.kw_per_gpu * buy.load_fraction * buy.pue * HOURS_PER_YEAR * buy.usd_per_kwh
    colocation = buy.kw_per_gpu * buy.colo_usd_per_kw_month * MONTHS_PER_YEAR
    return depreciation + power + colocation + buy.ops_usd_per_gpu_year


def owned_cost_curve(buy: BuySpec, capex_per_gpu: float | None, utilisations: Any) -> FloatArray:
    """Owned USD per *used* GPU-hour at each utilisation (for the break-even chart): yearly / (8766
    u)."""
    u = np.asarray(utilisations, dtype=np.float64)
    if np.any(~(u > 0)) or np.any(u > 1):
        raise ValueError("utilisations must be greater than 0 and at most 1")
    return np.asarray(
        owned_usd_per_gpu_year(buy, capex_per_gpu) / (HOURS_PER_YEAR * u), dtype=np.float64
    )


def buy_vs_rent(
    buy: BuySpec, capex_per_gpu: float | None, rent_usd_per_gpu_hour: float | None
) -> BuyVsRent:
    """Owned cost per GPU-hour at ``buy.utilization`` vs the rental price, and the break-even
    utilisation.

    Break-even u* = yearly owned cost / (8766 x rent): above u*, owning is cheaper. None when
    renting is cheaper even at 100 % utilisation, or when there is no rental price.
    """
    _check(rent_usd_per_gpu_hour, "rent_usd_per_gpu_hour")
    yearly = owned_usd_per_gpu_year(buy, capex_per_gpu)
    owned = yearly / (HOURS_PER_YEAR * buy.utilization)
    break_even: float | None = None
    if rent_usd_per_gpu_hour is not None and rent_usd_per_gpu_hour > 0:
        u_star = yearly / (HOURS_PER_YEAR * rent_usd_per_gpu_hour)
        break_even = u_star if u_star <= 1.0 else None
    return BuyVsRent(
        usd_per_gpu_hour_owned=owned,
        usd_per_gpu_hour_rented=rent_usd_per_gpu_hour,
        break_even_utilization=break_even,
    )
