"""The plan result: what the planner answers, the public JSON contract's output (``tuneplan plan
--json``).

Field names are stable; sizes are bytes, times seconds or hours as named, money USD. It stands apart
from the request (core/planner/request.py) because it is built by the planner's rooms (memory, step
time, money, search), while the request is read and validated from the user's file; a result carries
its request whole.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, Field

from core.planner.choices import Method, Sharding
from core.planner.measured_step import StepSource
from core.planner.request import HardwareSpec, PlanRequest


class MemoryBreakdown(BaseModel):
    weights: int
    gradients: int
    optimizer: int
    activations: int
    logits: int
    overhead: int
    total: int


class MemoryResult(BaseModel):
    per_gpu: MemoryBreakdown
    gpu_memory: int
    fits: bool
    cpu_ram_needed: int
    measure: Literal["reserved", "allocated"] = "reserved"
    allocated_peak: int = Field(
        ..., description="peak of torch.cuda.max_memory_allocated (no context, no reserve)"
    )
    max_micro_batch: int = Field(
        ..., description="largest micro-batch that fits at this seq_len (0: none)"
    )
    max_seq_len: int = Field(
        ..., description="longest sequence that fits at micro-batch 1 (0: none)"
    )
    short_bytes: int = Field(0, description="bytes per GPU beyond the GPU's memory (0: it fits)")
    suggestions: list[str] = Field(
        default_factory=list, description="what would make it fit (empty when it fits)"
    )


class StepBreakdown(BaseModel):
    """Seconds of one optimizer step by kind of work, per GPU; they add up to `step_time_s`."""

    gemm: float = 0.0
    attention: float = 0.0
    memory_bound: float = 0.0
    optimizer: float = 0.0
    host_transfer: float = 0.0
    exposed_comm: float = 0.0
    bubble: float = 0.0


class Band(BaseModel):
    """A planned figure's likely range: the estimate scaled by its regime's calibration residuals'
    spread."""

    low: float
    high: float
    coverage: float = Field(
        ..., description="the share of held-out published runs of this regime inside their band"
    )
    regime: str = Field(
        ..., description="the calibration regime the band is taken from (framework, method, scale)"
    )
    cases: int = Field(..., description="published runs behind the band's width")
    sources: int = Field(
        0, description="publishers behind the band and its coverage (leave-one-source-out)"
    )


class ComputeResult(StepSource):
    params_total: int
    params_active: int
    params_trainable: int
    flops_per_token: float = Field(
        ..., description="hardware FLOPs per trained token, including recomputation"
    )
    model_flops_per_token: float = Field(
        0.0, description="6N + causal attention (PaLM), no recomputation"
    )
    total_flops: float
    tokens_per_second: float
    mfu: float = Field(
        ..., description="achieved model-FLOPs utilisation after every cost of the step"
    )
    hfu: float = Field(
        0.0, description="achieved hardware-FLOPs utilisation (recomputation counted)"
    )
    achieved_tflops_per_gpu: float = Field(
        ..., description="hardware FLOP/s per GPU over the whole step"
    )
    step_time_s: float
    comm_time_s: float
    scaling_efficiency: float
    steps: int
    tokens_per_step: int
    step_breakdown_s: StepBreakdown = Field(default_factory=StepBreakdown)
    tokens_per_second_range: Band | None = Field(
        None, description="likely tokens/s (low-high), from calibration"
    )


class TimeBreakdown(BaseModel):
    """Seconds of the wall time by what fills them; they add up to `hours` × 3600."""

    steps: float = Field(0.0, description="the training steps")
    start_up: float = Field(
        0.0, description="the first start: requeue, model load, warm-up (restart_minutes)"
    )
    evaluation: float = Field(
        0.0, description="evaluation passes (eval_every_steps × eval_tokens, forward only)"
    )
    checkpoint_writes: float = Field(0.0, description="checkpoint writes at the planned interval")
    failures: float = Field(
        0.0, description="expected restarts and lost work after failures or preemptions"
    )


class TimeResult(BaseModel):
    hours: float
    gpu_hours: float
    hours_range: Band | None = Field(
        None, description="likely wall hours (low-high), from calibration residuals"
    )
    breakdown_s: TimeBreakdown = Field(default_factory=TimeBreakdown)


class CheckpointResult(BaseModel):
    size_bytes: int
    write_seconds: float
    interval_minutes: float
    interval_young_minutes: float
    job_mtbf_hours: float
    expected_failures: float
    overhead_fraction: float


class StorageResult(BaseModel):
    dataset_raw_bytes: int
    dataset_tokenized_bytes: int
    read_bytes_per_s_needed: float
    tier_read_bytes_per_s: float
    unpacked_requests: int
    packed_requests: int
    unpacked_request_usd: float | None
    packed_request_usd: float | None


class Cited(Protocol):
    """Anything priced from a dated, sourced figure (a catalog price row)."""

    @property
    def source(self) -> str | None: ...

    @property
    def date(self) -> str | None: ...


class CostLine(BaseModel):
    item: str
    usd: float | None
    detail: str
    source: str | None = None
    date: str | None = None

    @classmethod
    def cited(cls, item: str, usd: float | None, detail: str, row: Cited | None) -> CostLine:
        """A line that cites the figure it was priced from (no source when no row had a price)."""
        return cls(
            item=item,
            usd=usd,
            detail=detail,
            source=row.source if row else None,
            date=row.date if row else None,
        )


class ComputeCost(BaseModel):
    on_demand: float | None
    spot: float | None
    reserved: float | None


class BuyVsRent(BaseModel):
    usd_per_gpu_hour_owned: float
    usd_per_gpu_hour_rented: float | None
    break_even_utilization: float | None


class CostResult(BaseModel):
    provider: str | None
    price_date: str | None
    price_source: str | None
    instance: str | None = Field(
        None, description="the instance type the chosen mode's price is for"
    )
    region: str | None = Field(
        None, description="the region that price is for ('any': the same in every region)"
    )
    pricing_model: str | None = Field(
        None, description="on_demand, spot, reserved, marketplace or auction"
    )
    confidence: str | None = Field(None, description="the price record's confidence: normal or low")
    billed_gpus_per_node: int | None = Field(
        None,
        description="GPUs paid for per node: the smallest instance of the offer that holds the "
        "node",
    )
    billed_gpu_hours: float | None = Field(
        None, description="hours × nodes × billed GPUs per node (chosen mode)"
    )
    billing: str = Field("", description="why it pays for more GPUs than it uses, or ''")
    usd_per_gpu_hour: ComputeCost
    compute_usd: ComputeCost
    spot_expected_lost_hours: float | None
    storage_usd: float | None = Field(
        description="storage lines' sum; null for a plan that cannot run"
    )
    egress_usd: float | None = Field(description="data out; null for a plan that cannot run")
    idle_usd: float | None = Field(description="stopped disks; null for a plan that cannot run")
    total_usd: float | None
    total_usd_range: Band | None = Field(
        None, description="the total cost at the ends of the hours' band"
    )
    unpriced_reason: str | None = Field(
        None, description="why compute_usd and total_usd are null: it does not fit"
    )
    items: list[CostLine]
    buy_vs_rent: BuyVsRent | None

    def side_usd(self) -> float:
        """Storage, egress and idle disks together: what every pricing mode adds to its compute (0
        when unpriced)."""
        return (self.storage_usd or 0.0) + (self.egress_usd or 0.0) + (self.idle_usd or 0.0)


class Candidate(BaseModel):
    gpu: str
    gpus_per_node: int
    nodes: int
    sharding: Sharding
    method: Method
    gradient_checkpointing: bool | Literal["selective"]
    micro_batch_size: int
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    fits: bool
    memory_per_gpu: int
    hours: float
    cost_usd: float | None
    provider: str | None
    pareto: bool
    why: str
    instance: str | None = Field(None, description="the instance type the node is priced from")
    billed_gpus: int | None = Field(None, description="GPUs paid for per node (≥ gpus_per_node)")
    variants: list[Sharding] = Field(
        default_factory=list, description="other shardings with the same outcome"
    )


class Assumption(BaseModel):
    name: str
    value: str
    source: str
    date: str | None = None


SanityKind = Literal[
    "does_not_fit",
    "price_outlier",
    "not_rentable",
    "low_headroom",
    "long_run",
    "huge_cost",
    "cost_range",
    "stale_price",
    "undated_price",
]


class SanityWarning(BaseModel):
    """One finding of the sanity layer (core.planner.money.sanity): what kind, one sentence, the
    figure it is about."""

    kind: SanityKind
    message: str
    figure: float | None = None


class PlanResult(BaseModel):
    request: PlanRequest
    model_name: str
    hardware: HardwareSpec
    memory: MemoryResult
    compute: ComputeResult
    time: TimeResult
    checkpoint: CheckpointResult
    storage: StorageResult
    cost: CostResult
    candidates: list[Candidate] = Field(default_factory=list)
    assumptions: list[Assumption] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    sanity: list[SanityWarning] = Field(default_factory=list)
