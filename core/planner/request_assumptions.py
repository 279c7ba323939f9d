"""The request's assumptions: the figures a plan is timed and priced under, not a description of the
run.

``assumptions`` in a plan request (README "The plan request"): failures and restarts, evaluation
passes, where checkpoints and data are stored and for how long, egress, idle hours, the ZeRO
accounting, and the owning-instead-of- renting figures (``assumptions.buy``). Each has a sourced
default the user may replace. They stand apart from the run's own fields (core/planner/request.py:
model, data, training, hardware, pricing, search) because the run is what the user plans and these
are what the world is taken to be while it runs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from core.catalog.records import StorageTier
from core.planner.request_fields import TEN_YEARS_HOURS, within
from core.planner.request_ranges import RequestModel


class BuySpec(RequestModel):
    """Owning instead of renting; defaults from REFERENCES.md (Epoch, Uptime Institute)."""

    capex_usd_per_gpu: Annotated[
        float | None,
        within(0, 10_000_000, "more than $0 and at most $10,000,000 per GPU", low_open=True),
    ] = Field(None, gt=0, title="Price per GPU incl. server share")
    years: float = Field(3.0, gt=0, le=10, title="Depreciation (years)")
    residual_fraction: float = Field(0.30, ge=0, lt=1, title="Residual value")
    kw_per_gpu: float = Field(
        1.275, gt=0, le=100, title="kW per GPU incl. host (10.2 kW / 8 for HGX H100)"
    )
    load_fraction: float = Field(0.8, gt=0, le=1, title="Average power draw vs peak")
    pue: float = Field(1.56, ge=1, le=3, title="PUE")
    usd_per_kwh: float = Field(0.10, ge=0, le=10, title="Electricity USD/kWh")
    colo_usd_per_kw_month: float = Field(
        200.0, ge=0, le=100_000, title="Colocation USD per kW-month"
    )
    ops_usd_per_gpu_year: float = Field(
        0.0, ge=0, le=10_000_000, title="Operations USD per GPU-year"
    )
    utilization: float = Field(0.6, gt=0, le=1, title="Utilisation")


class Assumptions(RequestModel):
    mfu: Annotated[float | None, within(0.01, 1, "0.01 to 1 (1% to 100% of the GPU's peak)")] = (
        Field(None, title="MFU", description="override the default model FLOPs utilisation")
    )
    gpu_mtbf_hours: Annotated[
        float, within(0, 1e9, "more than 0 and at most 1e9 GPU-hours", low_open=True)
    ] = Field(
        50_700.0,
        gt=0,
        title="GPU MTBF (h)",
        description="GPU-hours per job-killing failure per GPU (Llama 3: 16,384 H100, one every "
        "~3.1 h)",
    )
    spot_preemptions_per_hour: Annotated[float, within(0, 60, "0 to 60 per hour")] = Field(
        0.05, ge=0, title="Spot preemptions per hour"
    )
    restart_minutes: Annotated[float, within(0, 10_080, "0 to 10,080 minutes (a week)")] = Field(
        10.0, ge=0, title="Restart time (min)", description="requeue, load, warm-up"
    )
    eval_every_steps: Annotated[int, within(0, 10**9, "0 (no evaluation) to 1e9 steps")] = Field(
        0,
        ge=0,
        title="Evaluate every (steps)",
        description="0: no evaluation passes during training",
    )
    eval_tokens: Annotated[float, within(0, 1e12, "0 to 1e12 tokens")] = Field(
        0.0,
        ge=0,
        title="Tokens per evaluation",
        description="tokens one evaluation pass reads (forward only)",
    )
    checkpoint_tier: StorageTier = Field(StorageTier.local_nvme, title="Checkpoint storage")
    data_tier: StorageTier = Field(StorageTier.object, title="Dataset storage")
    checkpoints_kept: int = Field(2, ge=1, le=1000, title="Hot checkpoints kept")
    archive_final_checkpoint: bool = Field(
        True, title="Archive the final checkpoint to object storage"
    )
    idle_hours: Annotated[float, within(0, TEN_YEARS_HOURS, "0 to 87,660 hours (10 years)")] = (
        Field(0.0, ge=0, title="Idle hours (stopped instances, disks kept)")
    )
    egress_gb: Annotated[float, within(0, 1e9, "0 to 1e9 GB (an exabyte)")] = Field(
        0.0, ge=0, title="Egress (GB)", description="e.g. downloading the final weights"
    )
    storage_months: Annotated[float, within(0, 120, "0 to 120 months (10 years)")] = Field(
        1.0, ge=0, title="Months of storage billed"
    )
    zero_accounting: Literal["deepspeed", "paper"] = Field(
        "deepspeed",
        title="ZeRO accounting",
        description="deepspeed: DeepSpeed's buffers (fp32 grad partition); paper: the ZeRO "
        "paper's K=12 model",
    )
    comm_overlap: float = Field(0.7, ge=0, le=1, title="Comm/compute overlap")
    buy: BuySpec = Field(default_factory=BuySpec)
