"""One plan's data and checkpoints: the dataset's size and reads, the checkpoint interval, and what
storing both costs.

plan() needs these figures for the wall time (checkpoint writes and restarts), the cost (storage
lines) and the result's storage section; they are worked out together here because they share the
checkpoint's size, the tiers and the object store's price, and none of them depends on how the
hardware was chosen (core/planner/plan.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.catalog import Catalog, PricingMode
from core.catalog.records import StorageTier
from core.planner.model.params import Architecture
from core.planner.model.states import checkpoint_bytes
from core.planner.money import reliability, storage
from core.planner.request import PlanRequest, Sharding
from core.planner.result import CheckpointResult, CostLine, StorageResult
from core.planner.speed.step import StepEstimate


@dataclass(frozen=True)
class StoragePlan:
    """The dataset, the checkpoints and what keeping them costs."""

    raw: float
    tokenized: float
    needed: float  # bytes per second the run reads
    checkpoint_bytes: float
    ckpt_on_demand: CheckpointResult  # failures only: the on-demand and reserved hours
    ckpt: CheckpointResult  # the plan's: with preemptions for a spot plan
    requests: storage.ObjectRequests
    object_price: Any
    lines: list[CostLine]
    disk: float


def storage_plan(
    arch: Architecture, request: PlanRequest, est: StepEstimate, catalog: Catalog
) -> StoragePlan:
    hw_spec, a = request.hardware, request.assumptions
    assert hw_spec is not None
    raw, tokenized = storage.dataset_bytes(
        request.data.tokens, request.data.bytes_per_token, arch.vocab
    )
    needed = storage.read_bytes_per_s_needed(float(est.tokens_per_s), arch.vocab)
    ckpt_size = checkpoint_bytes(arch, request.training)
    sharded = request.training.sharding is not Sharding.none
    write_s = float(
        storage.checkpoint_write_seconds(
            ckpt_size, a.checkpoint_tier, hw_spec.nodes if sharded else 1
        )
    )
    # Failures alone for the on-demand and reserved hours; a spot plan checkpoints for failures and
    # preemptions together (1/M = N/M_gpu + λ), the rate its cost already bills, so its interval,
    # its expected wall time and the launch files' save interval are the ones a preempted job needs.
    ckpt_args: dict[str, Any] = dict(
        size_bytes=ckpt_size,
        write_seconds=write_s,
        solve_hours=float(est.hours),
        gpu_mtbf_hours=a.gpu_mtbf_hours,
        gpus=hw_spec.gpus,
        restart_s=a.restart_minutes * 60,
    )
    ckpt_on_demand = reliability.plan_checkpoints(**ckpt_args)
    ckpt = (
        ckpt_on_demand
        if request.pricing.mode is not PricingMode.spot
        else reliability.plan_checkpoints(
            **ckpt_args, preemptions_per_hour=a.spot_preemptions_per_hour
        )
    )
    requests = storage.object_request_counts(
        tokenized, request.data.epochs, request.data.file_count, raw_bytes=raw
    )
    provider = request.pricing.provider or "aws"
    obj = catalog.storage_price(provider, StorageTier.object.value)
    lines = storage.storage_cost(
        dataset_bytes=tokenized,
        data_tier=a.data_tier,
        data_price=catalog.storage_price(provider, a.data_tier.value),
        checkpoint_bytes=ckpt_size,
        checkpoints_kept=a.checkpoints_kept,
        checkpoint_tier=a.checkpoint_tier,
        checkpoint_price=catalog.storage_price(provider, a.checkpoint_tier.value),
        archive_final=a.archive_final_checkpoint,
        object_price=obj,
        months=a.storage_months,
        get_requests=requests.packed_gets if a.data_tier is StorageTier.object else 0,
        get_usd_per_1000=obj.get_per_1000 if obj else None,
        request_source=obj.source if obj else None,
        request_date=obj.date if obj else None,
    )
    return StoragePlan(
        raw,
        tokenized,
        needed,
        ckpt_size,
        ckpt_on_demand,
        ckpt,
        requests,
        obj,
        lines,
        tokenized + ckpt_size * a.checkpoints_kept,
    )


def storage_result(request: PlanRequest, st: StoragePlan, priced: bool) -> StorageResult:
    """The data's size, reads and request counts; their dollars only for a plan that can run
    (`priced`)."""
    assert request.hardware is not None
    per_1000 = st.object_price.get_per_1000 if st.object_price and priced else None
    return StorageResult(
        dataset_raw_bytes=int(st.raw),
        dataset_tokenized_bytes=int(st.tokenized),
        read_bytes_per_s_needed=st.needed,
        tier_read_bytes_per_s=float(
            storage.tier_read_bytes_per_s(request.assumptions.data_tier, request.hardware.nodes)
        ),
        unpacked_requests=st.requests.unpacked_gets,
        packed_requests=st.requests.packed_gets,
        unpacked_request_usd=storage.request_cost(st.requests.unpacked_gets, per_1000),
        packed_request_usd=storage.request_cost(st.requests.packed_gets, per_1000),
    )
