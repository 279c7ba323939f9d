"""Hardware search: every GPU × GPUs per node × nodes × layout × sharding × checkpointing ×
micro-batch at once.

The numeric axes are NumPy arrays evaluated by the same formulas as a single plan (step.evaluate);
only the few categorical choices (tensor × pipeline parallel layout, sharding, checkpointing) loop
in Python. Layouts the frameworks refuse are dropped (core/planner/model/parallel.py), and tp · pp >
1 is tried only when no GPU of the search holds the model's unsharded states: a model that fits
needs no model parallelism, and the search stays within its 100 ms budget (layouts.py says which are
tried). The GPUs' rates and prices come as one table (gpu_table.py). Ranking uses failure-free
GPU-hours × the catalog price (ranking.py); the chosen plan then adds checkpoint writes, spot losses
and storage.

The list keeps one row per GPU, GPUs per node, nodes, layout and sharding: the best micro-batch and
recomputation of that configuration. Within such a group the price per GPU-hour and the GPU count
are the same, so the cheapest row is also the fastest, and the rest were a dozen rows that differed
only by micro-batch. Between equally good rows the request's own training settings win, so the
search changes a setting the user chose only for a gain.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from core.catalog import network
from core.planner.choose.gpu_table import GpuTable, allow_hint, gpu_table
from core.planner.choose.layouts import (
    MODEL_PARALLEL_SHARDINGS,
    layout_shardings,
    layouts,
    odd_part,
)
from core.planner.choose.ranking import Rows, SearchOutcome, Table, pareto_mask, rank
from core.planner.model import parallel
from core.planner.model.params import Architecture
from core.planner.request import Method, PlanRequest, Sharding, TrainingSpec
from core.planner.result import Candidate
from core.planner.speed import sustained
from core.planner.speed.frameworks import effective_training
from core.planner.speed.hardware import Hardware
from core.planner.speed.step import evaluate, global_batch

if TYPE_CHECKING:
    from core.catalog import Catalog

GPUS_PER_NODE = (1, 2, 4, 8)
NODES = (1, 2, 4, 8, 16, 32, 64)
MICRO_BATCHES = (1, 2, 4, 8, 16, 32)
SHARDINGS = (Sharding.none, Sharding.zero2, Sharding.zero3, Sharding.fsdp, Sharding.hsdp)


@dataclass(frozen=True)
class Grid:
    """The GPU counts a search tries. ``pinned``: the user's own hardware, whose counts are taken as
    given (no odd multiples for odd layouts, no rentable-instance or max_gpus filter): only the
    training settings vary."""

    per_node: tuple[int, ...] = GPUS_PER_NODE
    nodes: tuple[int, ...] = NODES
    pinned: bool = False


def _column(values: np.ndarray) -> np.ndarray:
    """GPU properties along the first axis of the (GPU, GPUs per node, nodes, micro-batch) grid."""
    return values.reshape(-1, 1, 1, 1)


@dataclass(frozen=True)
class _Axes:
    """The categorical choices a search loops over, and the grid every layout is evaluated on."""

    micro_batches: tuple[int, ...]
    shardings: tuple[Sharding, ...]
    all_shardings: tuple[Sharding, ...]  # the index space of the rows' sharding column
    checkpointing: tuple[bool | str, ...]
    gpn: np.ndarray
    shape: tuple[int, int, int, int]
    grid: Grid


def _axes(request: PlanRequest, gpus: int, keep: frozenset[str], grid: Grid) -> _Axes:
    t = request.training
    micro_batches = (t.micro_batch_size,) if "micro_batch_size" in keep else MICRO_BATCHES
    shardings = (t.sharding,) if "sharding" in keep else SHARDINGS
    # Off and full recompute are always tried; selective too when the request asks for it.
    checkpointing = (
        (t.gradient_checkpointing,)
        if "gradient_checkpointing" in keep
        else tuple(dict.fromkeys((False, t.gradient_checkpointing, True)))
    )
    return _Axes(
        micro_batches,
        shardings,
        tuple(dict.fromkeys([*shardings, *MODEL_PARALLEL_SHARDINGS])),
        checkpointing,
        np.array(grid.per_node, float).reshape(1, -1, 1, 1),
        (gpus, len(grid.per_node), len(grid.nodes), len(micro_batches)),
        grid,
    )


def _grid_hardware(
    table: GpuTable, gpn: np.ndarray, grid: Grid, training: TrainingSpec
) -> Hardware:
    """Every GPU of the table along the grid's first axis, GPUs per node along the second, nodes the
    third."""
    nodes = np.array(grid.nodes, float).reshape(1, 1, -1, 1)
    kept = [sustained.factor(training.framework, training.method, a) for a in table.architectures]
    return Hardware(
        sustained=np.array(kept, float).reshape(-1, 1, 1, 1),
        fp8_gain=np.array(table.fp8_gain, float).reshape(-1, 1, 1, 1),
        memory_bytes=_column(table.memory),
        peak_tflops=_column(table.peak),
        intra_gbs=_column(table.intra),
        hbm_gbs=_column(table.hbm),
        matmul_efficiency=_column(table.matmul),
        attention_efficiency=_column(table.attention),
        pcie_gbs=_column(table.pcie),
        gpus_per_node=gpn,
        nodes=nodes,
        gpu_net_gbps=np.stack(
            [
                np.broadcast_to(network.typical_gpu_net_gbps(link, arch_name, gpn), gpn.shape)
                for link, arch_name in zip(table.links, table.architectures, strict=True)
            ]
        ).reshape(len(table.ids), -1, 1, 1),
    )


def _layout_rows(
    arch: Architecture,
    request: PlanRequest,
    table: GpuTable,
    hw: Hardware,
    axes: _Axes,
    tp: int,
    pp: int,
    sharding: Sharding,
    ckpt: bool | str,
) -> tuple[Rows | None, int]:
    """The rows of one layout × sharding × checkpointing that fit and run, and how many
    configurations it tried."""
    t, gpn, shape = request.training, axes.gpn, axes.shape
    training = t.model_copy(
        update={
            "sharding": sharding,
            "gradient_checkpointing": ckpt,
            "tensor_parallel": tp,
            "pipeline_parallel": pp,
            "pipeline_virtual_stages": t.pipeline_virtual_stages if pp > 1 else 1,
            "sequence_parallel": t.sequence_parallel and tp > 1,
        }
    )
    if training.offload.value != "none" and sharding is Sharding.none:
        return None, 0
    mp = training.model_parallel
    # An odd factor in tp·pp·cp (pp = 3, 5, 7, 15 for a 105-layer model) never divides a
    # power-of-two GPU count: such a layout gets node counts that are multiples of it (1, 2, 4 … ×
    # the odd factor).
    layout_nodes = np.array(axes.grid.nodes, float) * (1 if axes.grid.pinned else odd_part(mp))
    nodes = layout_nodes.reshape(1, 1, -1, 1)
    mb = np.array(axes.micro_batches, float).reshape(1, 1, 1, -1)
    layout_ok = np.broadcast_to(
        ((gpn * nodes) <= request.search.max_gpus) | axes.grid.pinned, shape
    )
    gpus = gpn * nodes
    dp = parallel.data_parallel(gpus, training)
    ok = layout_ok.copy()
    # whole instances one can rent (the user's own hardware is theirs to say)
    if not axes.grid.pinned:
        ok &= np.broadcast_to(table.offered.reshape(len(table.ids), -1, 1, 1), shape)
    ok &= (np.broadcast_to(nodes, shape) > 1) if sharding is Sharding.hsdp else True
    # The layout on this hardware (parallel.hardware_problem, vectorised): tp inside a node, whole
    # replicas, and a full micro-batch for every replica.
    ok &= np.broadcast_to((gpn >= tp) & (gpn % tp == 0) & (gpus % mp == 0), shape)
    ok &= np.broadcast_to(
        parallel.batch_fits(dp, mb, global_batch(training, request.data.seq_len, dp, mb)), shape
    )
    if sharding is not Sharding.none:
        ok &= np.broadcast_to(dp, shape) > 1
    # nothing of this layout can run (sharding on one replica, HSDP on one node): skip its step
    if not ok.any():
        return None, int(layout_ok.sum())
    est = evaluate(
        arch, training, request.data, replace(hw, nodes=nodes), request.assumptions, micro_batch=mb
    )
    ok &= np.broadcast_to(est.fits, shape)
    idx = np.nonzero(ok)
    if not idx[0].size:
        return None, int(layout_ok.sum())
    n = idx[0].size
    return Rows(
        gi=idx[0],
        gp=np.array(axes.grid.per_node)[idx[1]],
        nd=layout_nodes.astype(int)[idx[2]],
        m=np.array(axes.micro_batches)[idx[3]],
        sh=np.full(n, axes.all_shardings.index(sharding)),
        ck=np.full(n, axes.checkpointing.index(ckpt)),
        tps=np.full(n, tp),
        pps=np.full(n, pp),
        hours=np.broadcast_to(est.hours, shape)[idx],
        # hours × nodes × node price
        cost=np.broadcast_to(est.gpu_hours, shape)[idx] * table.price[idx[0], idx[1]],
        mem=np.broadcast_to(est.memory.total, shape)[idx],
        eff=np.broadcast_to(est.scaling_efficiency, shape)[idx],
    ), int(layout_ok.sum())


def search(
    arch: Architecture,
    request: PlanRequest,
    catalog: Catalog,
    keep: frozenset[str] = frozenset(),
    grid: Grid = Grid(),
) -> SearchOutcome:
    """Rank every configuration that fits. ``keep`` names training settings (sharding,
    gradient_checkpointing, micro_batch_size) held at the request's value instead of searched: what
    the best plan would be without overriding them, so the window can say why the search did.
    ``grid`` the GPU counts tried (``on_hardware``)."""
    request = request.model_copy(update={"training": effective_training(request.training)})
    table = gpu_table(request, catalog, grid.per_node)
    if not table.ids:
        return SearchOutcome(
            reason="no GPU in the catalog has "
            + ("an " if request.pricing.mode.value == "on_demand" else "a ")
            + f"{request.pricing.mode.value.replace('_', '-')} price"
            + (f" at {request.pricing.provider}" if request.pricing.provider else "")
            + allow_hint(request, catalog)
        )
    axes = _axes(request, len(table.ids), keep, grid)
    hw = _grid_hardware(table, axes.gpn, grid, request.training)
    found: list[Rows] = []
    evaluated = 0
    for tp, pp in layouts(arch, request, float(table.memory.max()), keep):
        for sharding in layout_shardings(axes.shardings, tp, pp, keep):
            for ckpt in axes.checkpointing:
                rows, tried = _layout_rows(arch, request, table, hw, axes, tp, pp, sharding, ckpt)
                evaluated += tried
                if rows is not None:
                    found.append(rows)
    if not found:
        which = (
            f"no configuration of {', '.join(table.ids)}"
            if request.search.gpus
            else "no catalog GPU"
        )
        return SearchOutcome(
            evaluated=evaluated,
            reason=(
                f"nothing fits: {which}, up to {request.search.max_gpus} GPUs with any sharding "
                f"and tensor × pipeline layout, holds {arch.name} for method "
                f"{request.training.method.value} at seq_len {request.data.seq_len}; "
                "try method qlora, a shorter data.seq_len or a larger search.max_gpus"
            ),
        )
    view = Table(
        table.ids,
        table.memory,
        table.billed,
        table.instance,
        table.provider,
        grid.per_node,
        table.outlier,
    )
    return rank(
        arch,
        request,
        view,
        Rows.concatenate(found),
        axes.all_shardings,
        axes.checkpointing,
        evaluated,
    )


def on_hardware(
    arch: Architecture, request: PlanRequest, catalog: Catalog, keep: frozenset[str]
) -> Candidate | None:
    """The best training settings for the hardware the request names (its GPU, GPUs per node and
    nodes): the search over micro-batch, sharding and recomputation on those counts alone, the
    settings in `keep` and the tensor × pipeline layout held. Every row runs on the same GPUs at the
    same price, so the fastest is also the cheapest, and a row with memory headroom is preferred, as
    the search prefers it. None when nothing fits."""
    hw = request.hardware
    assert hw is not None
    pinned = request.model_copy(
        update={
            "hardware": None,
            "search": request.search.model_copy(
                update={"gpus": [hw.gpu], "objective": "time", "longest_hours": None}
            ),
            "pricing": request.pricing.model_copy(
                update={"usd_per_gpu_hour": 1.0, "discount": 0.0}
            ),
        }
    )
    grid = Grid(per_node=(hw.gpus_per_node,), nodes=(hw.nodes,), pinned=True)
    return search(arch, pinned, catalog, keep | {"parallel"}, grid).best


def shown_candidates(candidates: list[Candidate], limit: int) -> list[Candidate]:
    """The first `limit` rows, plus the fastest and the cheapest wherever they rank: a table that
    drops either hides the trade-off the ranking made."""
    if not candidates:
        return []
    fastest = min(range(len(candidates)), key=lambda i: candidates[i].hours)
    priced = [i for i, c in enumerate(candidates) if c.cost_usd is not None]
    cheapest = [min(priced, key=lambda i: candidates[i].cost_usd or 0.0)] if priced else []
    keep = sorted({*range(min(limit, len(candidates))), fastest, *cheapest})
    return [candidates[i] for i in keep]


def scaling_curve(
    arch: Architecture, request: PlanRequest, hw: Hardware, nodes: tuple[int, ...] = NODES
) -> dict[str, Any]:
    """Throughput and efficiency vs node count for one GPU and interconnect: where more GPUs stop
    paying.

    Node counts whose data-parallel replicas (GPUs ÷ tp·pp·cp) would outnumber what the global batch
    can feed (dp × micro-batch > global batch), or that are not whole replicas, are dropped: such a
    job cannot run one optimizer step at that size, so drawing it at ideal efficiency would promise
    speed that does not exist. `dropped_nodes` names them and `global_batch` says why; the chart's
    caption says it.
    """
    t = request.training
    # the default before it grows: what the caption names
    batch = global_batch(t, request.data.seq_len)
    gpus = hw.gpus_per_node * np.array(nodes, float)
    dp = parallel.data_parallel(gpus, t)
    possible = parallel.batch_fits(
        dp, t.micro_batch_size, global_batch(t, request.data.seq_len, dp)
    )
    possible &= gpus % t.model_parallel == 0
    n = np.array(nodes, float)[possible]
    dropped = [float(x) for x in np.array(nodes, float)[~possible]]
    if not n.size:
        return {
            "nodes": [],
            "tokens_per_s": [],
            "efficiency": [],
            "hours": [],
            "fits": [],
            "global_batch": batch,
            "dropped_nodes": dropped,
        }
    scaled = replace(hw, nodes=n)
    est = evaluate(arch, t, request.data, scaled, request.assumptions)
    tps = np.broadcast_to(est.tokens_per_s, n.shape)
    single = tps[0] / (hw.gpus_per_node * n[0])
    efficiency = tps / (single * hw.gpus_per_node * n)
    return {
        "nodes": n.tolist(),
        "tokens_per_s": tps.tolist(),
        "efficiency": efficiency.tolist(),
        "hours": np.broadcast_to(est.hours, n.shape).tolist(),
        "fits": np.broadcast_to(est.fits, n.shape).tolist(),
        "global_batch": batch,
        "dropped_nodes": dropped,
    }


__all__ = [
    "Grid",
    "Method",
    "SearchOutcome",
    "on_hardware",
    "pareto_mask",
    "scaling_curve",
    "search",
    "shown_candidates",
]
