"""The memory chart's data: the job's memory per GPU on every catalog GPU type, each at the search's
pick for it.

Holding the GPU count fixed would draw the same bar for every type, so each type is searched and
planned on its own; that is most of an analysis's time, so rows are kept across requests that differ
only in what memory does not depend on. It stands apart from the analysis (core/planner/analysis.py)
because it is one question with its own cache and its own notion of sameness (_memory_key), not a
figure of the planned configuration.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import OrderedDict
from typing import Literal

from pydantic import BaseModel

from core.catalog import GPU, Catalog, CatalogError
from core.planner.choose import search
from core.planner.model.params import Architecture
from core.planner.plan import PlanError, on_candidate, plan, resolve_model
from core.planner.request import PlanRequest, Sharding
from core.planner.result import Candidate, PlanResult
from core.units import plural


class GpuMemory(BaseModel):
    """One bar of the memory chart: the job on this GPU type, component by component.

    ``basis`` says which configuration the bar is for: ``plan`` is the planned GPU with the plan's
    own counts and sharding; ``search`` is the configuration the hardware search picks for this GPU
    type (GPUs per node, nodes, sharding, recomputation, micro-batch), the rest of the request
    unchanged; ``as_planned`` is a GPU type on which nothing fits within the search limits, shown at
    the plan's counts and sharding.
    """

    gpu: str
    capacity: int
    basis: Literal["plan", "search", "as_planned"] = "search"
    gpus_per_node: int = 0
    nodes: int = 0
    sharding: Sharding | None = None
    micro_batch_size: int = 0
    gradient_checkpointing: bool | Literal["selective"] = False
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    weights: int = 0
    gradients: int = 0
    optimizer: int = 0
    activations: int = 0
    logits: int = 0
    overhead: int = 0
    total: int = 0
    fits: bool = False
    max_micro_batch: int = 0
    max_seq_len: int = 0
    note: str | None = None
    error: str | None = None

    @property
    def configuration(self) -> str:
        """'8× zero3', '2×8 fsdp' (nodes × GPUs per node); '' when the GPU could not be planned."""
        if self.error is not None or self.sharding is None:
            return ""
        gpus = f"{self.gpus_per_node}×" if self.nodes == 1 else f"{self.nodes}×{self.gpus_per_node}"
        recompute = {True: ", recompute", "selective": ", selective recompute"}.get(
            self.gradient_checkpointing, ""
        )
        layout = (
            f", tp {self.tensor_parallel} × pp {self.pipeline_parallel}"
            if self.tensor_parallel * self.pipeline_parallel > 1
            else ""
        )
        return f"{gpus} {self.sharding.value}" + layout + recompute


def _memory_row(
    gpu: str,
    result: PlanResult,
    basis: Literal["plan", "search", "as_planned"],
    note: str | None = None,
) -> GpuMemory:
    m, hw, t = result.memory, result.hardware, result.request.training
    return GpuMemory(
        gpu=gpu,
        capacity=m.gpu_memory,
        basis=basis,
        gpus_per_node=hw.gpus_per_node,
        nodes=hw.nodes,
        sharding=t.sharding,
        micro_batch_size=t.micro_batch_size,
        gradient_checkpointing=t.gradient_checkpointing,
        tensor_parallel=t.tensor_parallel,
        pipeline_parallel=t.pipeline_parallel,
        fits=m.fits,
        max_micro_batch=m.max_micro_batch,
        max_seq_len=m.max_seq_len,
        note=note,
        **m.per_gpu.model_dump(),
    )


def _search_choice(
    arch: Architecture, planned: PlanRequest, gpu: str, catalog: Catalog
) -> Candidate | None:
    """The configuration the hardware search picks for one GPU type.

    With a single GPU type every configuration pays the same price per GPU-hour, so ranking by cost
    is ranking by GPU-hours; a flat 1 USD price ranks GPU types without a catalog price the same
    way.
    """
    single = planned.model_copy(
        update={
            "hardware": None,
            "search": planned.search.model_copy(update={"gpus": [gpu]}),
            "pricing": planned.pricing.model_copy(
                update={"usd_per_gpu_hour": 1.0, "discount": 0.0}
            ),
        }
    )
    try:
        return search.search(arch, single, catalog).best
    except (PlanError, CatalogError, ValueError):
        return None


def _other_gpu_row(
    arch: Architecture,
    planned: PlanRequest,
    result: PlanResult,
    gpu: GPU,
    catalog: Catalog,
    today: dt.date | None,
) -> GpuMemory:
    choice = _search_choice(arch, planned, gpu.id, catalog)
    try:
        if choice is not None:
            r = plan(on_candidate(planned, choice), catalog, today)
            return _memory_row(gpu.id, r, "search")
        spec = result.hardware.model_copy(update={"gpu": gpu.id})
        r = plan(planned.model_copy(update={"hardware": spec}), catalog, today)
    except (PlanError, CatalogError) as exc:
        return GpuMemory(gpu=gpu.id, capacity=gpu.memory_bytes, basis="as_planned", error=str(exc))
    return _memory_row(
        gpu.id,
        r,
        "as_planned",
        note=f"nothing fits on {gpu.id} with up to {plural(planned.search.max_gpus, 'GPU')}",
    )


def _memory_key(planned: PlanRequest) -> str:
    """What a GPU row depends on: memory never depends on the prices. The search's pick for one GPU
    type does depend on the dataset size: every configuration pays the same start-up on each of its
    GPUs, so a short job is cheapest on fewer GPUs than a long one (1× L40 at 2e8 tokens, 4× at
    7e8), and a row kept across token counts would show another configuration's memory."""
    key = planned.model_dump(mode="json", exclude={"pricing": True})
    return json.dumps(key, sort_keys=True)


_ROWS: OrderedDict[tuple[str, str], tuple[Catalog, GpuMemory]] = OrderedDict()
_ROWS_LOCK = threading.Lock()
_ROWS_KEPT = 512  # about two dozen requests' worth of rows


def memory_by_gpu(
    result: PlanResult, catalog: Catalog, today: dt.date | None = None
) -> list[GpuMemory]:
    """The job's memory per GPU on every catalog GPU type, each at the configuration the search
    picks for it.

    Holding the GPU count fixed would draw the same bar for every type (memory per GPU depends on
    the count and sharding, not on the card), so each type gets its own best configuration; the
    planned GPU shows the plan. A search and a plan per GPU type take most of an analysis, so rows
    are kept for requests that differ only in what they do not depend on (see _memory_key): typing a
    new token count does not redo them.
    """
    planned = result.request
    arch, _ = resolve_model(planned.model, catalog)
    key = _memory_key(planned)
    rows = []
    for gpu in catalog.gpus.values():
        if gpu.id == result.hardware.gpu:
            rows.append(_memory_row(gpu.id, result, "plan"))
            continue
        with _ROWS_LOCK:
            kept = _ROWS.get((gpu.id, key))
        if kept is not None and kept[0] is catalog:
            rows.append(kept[1])
            continue
        row = _other_gpu_row(arch, planned, result, gpu, catalog, today)
        with _ROWS_LOCK:
            _ROWS[(gpu.id, key)] = (catalog, row)
            while len(_ROWS) > _ROWS_KEPT:
                _ROWS.popitem(last=False)
        rows.append(row)
    return rows
