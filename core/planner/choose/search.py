"""Hardware search: every GPU × GPUs per node × nodes × layout × sharding × checkpointing × micro-batch at once.

The numeric axes are NumPy arrays evaluated by the same formulas as a single plan (step.evaluate); only the
few categorical choices (tensor × pipeline parallel layout, sharding, checkpointing) loop in Python. Layouts the
frameworks refuse are dropped (core/planner/model/parallel.py), and tp · pp > 1 is tried only when no GPU of the
search holds the model's unsharded states: a model that fits needs no model parallelism, and the search stays
within its 100 ms budget. Ranking uses failure-free GPU-hours × the
catalog price; the chosen plan then adds checkpoint writes, spot losses and storage.

The list keeps one row per GPU, GPUs per node, nodes, layout and sharding: the best micro-batch and recomputation of
that configuration. Within such a group the price per GPU-hour and the GPU count are the same, so the cheapest
row is also the fastest, and the rest were a dozen rows that differed only by micro-batch. Between equally good
rows the request's own training settings win, so the search changes a setting the user chose only for a gain.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from core.catalog import network
from core.planner.choose.ranking import Rows, SearchOutcome, Table, pareto_mask, rank
from core.planner.model import memory, parallel
from core.planner.model.params import Architecture
from core.planner.money import pricing, sanity
from core.planner.request import Method, Offload, PlanRequest, Sharding, TrainingSpec
from core.planner.result import Candidate
from core.planner.speed import gpu_rates, sustained
from core.planner.speed.frameworks import effective_training
from core.planner.speed.hardware import Hardware
from core.planner.speed.step import evaluate, global_batch

if TYPE_CHECKING:
    from core.catalog import Catalog

GPUS_PER_NODE = (1, 2, 4, 8)
NODES = (1, 2, 4, 8, 16, 32, 64)
MICRO_BATCHES = (1, 2, 4, 8, 16, 32)
SHARDINGS = (Sharding.none, Sharding.zero2, Sharding.zero3, Sharding.fsdp, Sharding.hsdp)
TENSOR_PARALLEL = (1, 2, 4, 8)  # inside an NVLink node of at most 8 GPUs (parallel.hardware_problem)
PIPELINE_PARALLEL = (1, 2, 4, 8, 16)
# With tp · pp > 1: plain data parallel, Megatron's distributed optimizer / DeepSpeed ZeRO-1 (the one ZeRO stage
# pipelines allow) and torchtitan's FSDP2 + TP + PP.
MODEL_PARALLEL_SHARDINGS = (Sharding.none, Sharding.zero1, Sharding.fsdp)


@dataclass(frozen=True)
class Grid:
    """The GPU counts a search tries. ``pinned``: the user's own hardware, whose counts are taken as given (no
    odd multiples for odd layouts, no rentable-instance or max_gpus filter): only the training settings vary."""

    per_node: tuple[int, ...] = GPUS_PER_NODE
    nodes: tuple[int, ...] = NODES
    pinned: bool = False


@dataclass(frozen=True)
class _GpuTable:
    ids: list[str]
    memory: np.ndarray
    peak: np.ndarray
    intra: np.ndarray
    hbm: np.ndarray
    matmul: np.ndarray  # E_mm per GPU (MAMF table or heuristic)
    attention: np.ndarray
    pcie: np.ndarray
    price: np.ndarray  # (GPU, GPUs per node): USD per GPU-hour used = a whole node's price / its GPUs; NaN: none
    offered: np.ndarray  # (GPU, GPUs per node): False where the GPU has prices but no offer holds such a node
    provider: list[list[str | None]]  # [GPU][GPUs per node]
    instance: list[list[str | None]]
    billed: list[list[int | None]]  # GPUs paid for per node
    outlier: np.ndarray  # (GPU, GPUs per node): the offer's price is one the plan would flag as an outlier
    links: list[str]
    architectures: list[str]
    fp8_gain: list[float]


def _node_prices(request: PlanRequest, catalog: Catalog, gpu_id: str, per_node: tuple[int, ...]) -> tuple[
        list[float], list[bool], list[str | None], list[str | None], list[int | None], list[bool]] | None:
    """Per GPUs-per-node choice: the price per used GPU-hour (whole instances), whether a node of that size can
    be rented, from which offer, and whether that offer's list price is one the plan's sanity checks flag as an
    outlier (sanity.is_outlier: under a quarter of the providers' median; an offer of a pricing model the user
    allowed, auction or marketplace, is not); None when the GPU has no price in the mode at all."""
    p, mode = request.pricing, request.pricing.mode.value
    allow = [a.value for a in p.allow]
    trusted = not pricing.low_confidence_ok(request, gpu_id, searched=True)
    factor = 1 - p.discount
    if p.usd_per_gpu_hour is not None:  # the user's own price: per GPU used, any node size
        row = pricing.any_offer(catalog, gpu_id, mode, provider=p.provider, allow=allow, trusted_only=trusted)
        name = row.provider_name if row else None
        n = len(per_node)
        return [p.usd_per_gpu_hour * factor] * n, [True] * n, [name] * n, [None] * n, list(per_node), [False] * n
    if pricing.any_offer(catalog, gpu_id, mode, provider=p.provider, allow=allow, trusted_only=trusted) is None:
        return None
    price, offered, provider, instance, billed, outlier = [], [], [], [], [], []
    for gpn in per_node:
        offer = pricing.node_offer(catalog, gpu_id, mode, gpn, provider=p.provider, allow=allow, trusted_only=trusted)
        price.append(np.nan if offer is None else offer.usd_per_used_gpu_hour * factor)
        offered.append(offer is not None)
        provider.append(offer.row.provider_name if offer else None)
        instance.append(offer.row.instance if offer else None)
        billed.append(offer.billed_gpus if offer else None)
        # an auction floor or marketplace host the user allowed is expected far under list; a list price is not
        outlier.append(offer is not None and str(offer.row.pricing_model) not in allow
                       and sanity.is_outlier(catalog, gpu_id, mode, offer.row.usd_per_gpu_hour))
    return price, offered, provider, instance, billed, outlier


def _gpu_table(request: PlanRequest, catalog: Catalog, per_node: tuple[int, ...]) -> _GpuTable:
    wanted = request.search.gpus
    gpus = [catalog.gpu(g) for g in wanted] if wanted else list(catalog.gpus.values())
    ids, mem, peak, intra, price, offered, prov, inst, billed, links, archs = [], [], [], [], [], [], [], [], [], [], []
    outlier: list[list[bool]] = []
    hbm, matmul, attention, pcie, gains = [], [], [], [], []
    n = len(per_node)
    for gpu in gpus:
        if not gpu.supports(request.training.precision.value):
            continue  # no published peak for this precision: cannot be timed honestly
        node = _node_prices(request, catalog, gpu.id, per_node)
        if node is None and request.search.objective != "time":
            continue
        ids.append(gpu.id)
        mem.append(gpu.memory_bytes)
        peak.append(gpu.peak_tflops(request.training.precision.value))
        intra.append(network.intra_node_gbs(gpu, 8))  # one figure for every node width; no bridged pairs
        r = gpu_rates.rates(gpu, request.training.precision)
        hbm.append(r.hbm_gbs)
        matmul.append(r.matmul_efficiency)
        attention.append(r.attention_efficiency)
        pcie.append(r.pcie_gbs)
        gains.append(r.fp8_gain)
        # A GPU with no price at all stays in a time-ranked search at every node size (unpriced).
        usd, ok, names, instances, pays, flagged = node or (
            [np.nan] * n, [True] * n, [None] * n, [None] * n, [None] * n, [False] * n)
        price.append(usd)
        outlier.append(flagged)
        offered.append(ok)
        prov.append(names)
        inst.append(instances)
        billed.append(pays)
        links.append(str(gpu.intra_node_link))
        archs.append(gpu.architecture)
    return _GpuTable(
        ids,
        np.array(mem, float),
        np.array(peak, float),
        np.array(intra, float),
        np.array(hbm, float),
        np.array(matmul, float),
        np.array(attention, float),
        np.array(pcie, float),
        np.array(price, float).reshape(-1, n),
        np.array(offered, bool).reshape(-1, n),
        prov,
        inst,
        billed,
        np.array(outlier, bool).reshape(-1, n),
        links,
        archs,
        gains,
    )


def _allow_hint(request: PlanRequest, catalog: Catalog) -> str:
    """'; its marketplace prices count only with pricing.allow ["marketplace"]' when such offers would serve."""
    mode = request.pricing.mode.value
    name = {"on_demand": "marketplace", "spot": "auction"}.get(mode)
    if name is None or name in [a.value for a in request.pricing.allow]:
        return ""
    slug = catalog.provider_id(request.pricing.provider) if request.pricing.provider else None
    if any(p.pricing_model.value == name and (slug is None or p.provider == slug) for p in catalog.prices):
        return f"; {name} prices count only with pricing.allow [\"{name}\"]"
    return ""


def _column(values: np.ndarray) -> np.ndarray:
    """GPU properties along the first axis of the (GPU, GPUs per node, nodes, micro-batch) grid."""
    return values.reshape(-1, 1, 1, 1)


def needs_model_parallel(arch: Architecture, training: TrainingSpec, largest_gpu_bytes: float, tp: int = 1) -> bool:
    """True when no GPU of the search holds the model's unsharded weights, gradients and optimizer states
    (split over `tp` tensor-parallel GPUs)."""
    whole = training.model_copy(update={"sharding": Sharding.none, "offload": Offload.none, "tensor_parallel": tp,
                                        "pipeline_parallel": 1, "pipeline_virtual_stages": 1,
                                        "sequence_parallel": False, "expert_parallel": 1})
    states = memory.model_states(arch, whole, dp=1)
    return float(states.weights + states.gradients + states.optimizer) > largest_gpu_bytes


def layouts(arch: Architecture, request: PlanRequest, largest_gpu_bytes: float,
            keep: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    """(tp, pp) pairs to try: the request's when it set one (or keeps it), else 1 × 1 plus, where the model
    needs them, the pairs the model's heads and layers allow (parallel.model_problem).

    Pipelines only where tensor parallel 8 alone still leaves the states too big for the largest GPU, and then
    with tp 4 or 8: Narayanan et al. 2021 (arXiv:2104.04473 §3.3, takeaway #1) use tensor parallelism up to
    the GPUs of a node and pipeline parallelism beyond it. This keeps a full-catalog search under 100 ms.
    """
    t = request.training
    if "parallel" in keep or t.tensor_parallel > 1 or t.pipeline_parallel > 1:
        return [(t.tensor_parallel, t.pipeline_parallel)]
    if not needs_model_parallel(arch, t, largest_gpu_bytes):
        return [(1, 1)]
    out = []
    deep = needs_model_parallel(arch, t, largest_gpu_bytes, tp=max(TENSOR_PARALLEL))
    pairs = [(tp, 1) for tp in TENSOR_PARALLEL]
    if deep:
        pairs += [(tp, pp) for tp in (4, 8) for pp in _pipeline_choices(arch) if pp > 1]
    for tp, pp in pairs:
        trial = t.model_copy(update={"tensor_parallel": tp, "pipeline_parallel": pp, "sharding": Sharding.none,
                                     "pipeline_virtual_stages": 1, "sequence_parallel": False})
        if parallel.model_problem(arch, trial, request.data.seq_len) is None:
            out.append((tp, pp))
    return out


def _odd_part(n: int) -> int:
    """n without its factors of two: 15 for 120, 1 for 64."""
    while n % 2 == 0:
        n //= 2
    return n


def _pipeline_choices(arch: Architecture) -> tuple[int, ...]:
    """Powers of two, and where none of them divides the layers (105 in MT-NLG), the layer count's divisors up
    to 16: Megatron needs layers % pp == 0, and MT-NLG itself ran 35 stages of 3 layers."""
    powers = tuple(p for p in PIPELINE_PARALLEL if arch.layers % p == 0)
    if len(powers) > 1:
        return powers
    return tuple(d for d in range(1, 17) if arch.layers % d == 0)


def _shardings(base: tuple[Sharding, ...], tp: int, pp: int, keep: frozenset[str]) -> tuple[Sharding, ...]:
    """Sharding choices for one layout: the searched set at 1 × 1, the model-parallel set otherwise."""
    if tp * pp > 1 and "sharding" not in keep:
        base = MODEL_PARALLEL_SHARDINGS
    return tuple(s for s in base if pp == 1 or s not in parallel.PIPELINE_INCOMPATIBLE)


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
    checkpointing = ((t.gradient_checkpointing,) if "gradient_checkpointing" in keep
                     else tuple(dict.fromkeys((False, t.gradient_checkpointing, True))))
    return _Axes(micro_batches, shardings, tuple(dict.fromkeys([*shardings, *MODEL_PARALLEL_SHARDINGS])),
                 checkpointing, np.array(grid.per_node, float).reshape(1, -1, 1, 1),
                 (gpus, len(grid.per_node), len(grid.nodes), len(micro_batches)), grid)


def _grid_hardware(table: _GpuTable, gpn: np.ndarray, grid: Grid, training: TrainingSpec) -> Hardware:
    """Every GPU of the table along the grid's first axis, GPUs per node along the second, nodes the third."""
    nodes = np.array(grid.nodes, float).reshape(1, 1, -1, 1)
    kept = [sustained.factor(training.framework, training.method, a) for a in table.architectures]
    return Hardware(
        sustained=np.array(kept, float).reshape(-1, 1, 1, 1),
        fp8_gain=np.array(table.fp8_gain, float).reshape(-1, 1, 1, 1),
        memory_bytes=_column(table.memory), peak_tflops=_column(table.peak), intra_gbs=_column(table.intra),
        hbm_gbs=_column(table.hbm), matmul_efficiency=_column(table.matmul),
        attention_efficiency=_column(table.attention), pcie_gbs=_column(table.pcie), gpus_per_node=gpn,
        nodes=nodes,
        gpu_net_gbps=np.stack([
            np.broadcast_to(network.typical_gpu_net_gbps(link, arch_name, gpn), gpn.shape)
            for link, arch_name in zip(table.links, table.architectures, strict=True)
        ]).reshape(len(table.ids), -1, 1, 1),
    )


def _layout_rows(arch: Architecture, request: PlanRequest, table: _GpuTable, hw: Hardware, axes: _Axes,
                 tp: int, pp: int, sharding: Sharding, ckpt: bool | str) -> tuple[Rows | None, int]:
    """The rows of one layout × sharding × checkpointing that fit and run, and how many configurations it tried."""
    t, gpn, shape = request.training, axes.gpn, axes.shape
    training = t.model_copy(update={
        "sharding": sharding, "gradient_checkpointing": ckpt, "tensor_parallel": tp, "pipeline_parallel": pp,
        "pipeline_virtual_stages": t.pipeline_virtual_stages if pp > 1 else 1,
        "sequence_parallel": t.sequence_parallel and tp > 1})
    if training.offload.value != "none" and sharding is Sharding.none:
        return None, 0
    mp = training.model_parallel
    # An odd factor in tp·pp·cp (pp = 3, 5, 7, 15 for a 105-layer model) never divides a power-of-two GPU
    # count: such a layout gets node counts that are multiples of it (1, 2, 4 … × the odd factor).
    layout_nodes = np.array(axes.grid.nodes, float) * (1 if axes.grid.pinned else _odd_part(mp))
    nodes = layout_nodes.reshape(1, 1, -1, 1)
    mb = np.array(axes.micro_batches, float).reshape(1, 1, 1, -1)
    layout_ok = np.broadcast_to(((gpn * nodes) <= request.search.max_gpus) | axes.grid.pinned, shape)
    gpus = gpn * nodes
    dp = parallel.data_parallel(gpus, training)
    ok = layout_ok.copy()
    if not axes.grid.pinned:  # whole instances one can rent (the user's own hardware is theirs to say)
        ok &= np.broadcast_to(table.offered.reshape(len(table.ids), -1, 1, 1), shape)
    ok &= (np.broadcast_to(nodes, shape) > 1) if sharding is Sharding.hsdp else True
    # The layout on this hardware (parallel.hardware_problem, vectorised): tp inside a node, whole replicas,
    # and a full micro-batch for every replica.
    ok &= np.broadcast_to((gpn >= tp) & (gpn % tp == 0) & (gpus % mp == 0), shape)
    ok &= np.broadcast_to(parallel.batch_fits(dp, mb, global_batch(training, request.data.seq_len, dp, mb)), shape)
    if sharding is not Sharding.none:
        ok &= np.broadcast_to(dp, shape) > 1
    if not ok.any():  # nothing of this layout can run (sharding on one replica, HSDP on one node): skip its step
        return None, int(layout_ok.sum())
    est = evaluate(arch, training, request.data, replace(hw, nodes=nodes), request.assumptions, micro_batch=mb)
    ok &= np.broadcast_to(est.fits, shape)
    idx = np.nonzero(ok)
    if not idx[0].size:
        return None, int(layout_ok.sum())
    n = idx[0].size
    return Rows(
        gi=idx[0], gp=np.array(axes.grid.per_node)[idx[1]], nd=layout_nodes.astype(int)[idx[2]],
        m=np.array(axes.micro_batches)[idx[3]], sh=np.full(n, axes.all_shardings.index(sharding)),
        ck=np.full(n, axes.checkpointing.index(ckpt)), tps=np.full(n, tp), pps=np.full(n, pp),
        hours=np.broadcast_to(est.hours, shape)[idx],
        cost=np.broadcast_to(est.gpu_hours, shape)[idx] * table.price[idx[0], idx[1]],  # hours × nodes × node price
        mem=np.broadcast_to(est.memory.total, shape)[idx], eff=np.broadcast_to(est.scaling_efficiency, shape)[idx],
    ), int(layout_ok.sum())


def search(
    arch: Architecture, request: PlanRequest, catalog: Catalog, keep: frozenset[str] = frozenset(),
    grid: Grid = Grid(),
) -> SearchOutcome:
    """Rank every configuration that fits. ``keep`` names training settings (sharding, gradient_checkpointing,
    micro_batch_size) held at the request's value instead of searched: what the best plan would be without
    overriding them, so the window can say why the search did. ``grid`` the GPU counts tried (``on_hardware``)."""
    request = request.model_copy(update={"training": effective_training(request.training)})
    table = _gpu_table(request, catalog, grid.per_node)
    if not table.ids:
        return SearchOutcome(
            reason="no GPU in the catalog has " + ("an " if request.pricing.mode.value == "on_demand" else "a ")
            + f"{request.pricing.mode.value.replace('_', '-')} price"
            + (f" at {request.pricing.provider}" if request.pricing.provider else "")
            + _allow_hint(request, catalog)
        )
    axes = _axes(request, len(table.ids), keep, grid)
    hw = _grid_hardware(table, axes.gpn, grid, request.training)
    found: list[Rows] = []
    evaluated = 0
    for tp, pp in layouts(arch, request, float(table.memory.max()), keep):
        for sharding in _shardings(axes.shardings, tp, pp, keep):
            for ckpt in axes.checkpointing:
                rows, tried = _layout_rows(arch, request, table, hw, axes, tp, pp, sharding, ckpt)
                evaluated += tried
                if rows is not None:
                    found.append(rows)
    if not found:
        which = f"no configuration of {', '.join(table.ids)}" if request.search.gpus else "no catalog GPU"
        return SearchOutcome(
            evaluated=evaluated,
            reason=(
                f"nothing fits: {which}, up to {request.search.max_gpus} GPUs with any sharding and tensor × "
                f"pipeline layout, holds "
                f"{arch.name} for method {request.training.method.value} at seq_len {request.data.seq_len}; "
                "try method qlora, a shorter data.seq_len or a larger search.max_gpus"
            ),
        )
    view = Table(table.ids, table.memory, table.billed, table.instance, table.provider, grid.per_node, table.outlier)
    return rank(arch, request, view, Rows.concatenate(found), axes.all_shardings, axes.checkpointing, evaluated)


def on_hardware(arch: Architecture, request: PlanRequest, catalog: Catalog, keep: frozenset[str]) -> Candidate | None:
    """The best training settings for the hardware the request names (its GPU, GPUs per node and nodes): the
    search over micro-batch, sharding and recomputation on those counts alone, the settings in `keep` and the
    tensor × pipeline layout held. Every row runs on the same GPUs at the same price, so the fastest is also the
    cheapest, and a row with memory headroom is preferred, as the search prefers it. None when nothing fits."""
    hw = request.hardware
    assert hw is not None
    pinned = request.model_copy(update={
        "hardware": None,
        "search": request.search.model_copy(update={"gpus": [hw.gpu], "objective": "time", "longest_hours": None}),
        "pricing": request.pricing.model_copy(update={"usd_per_gpu_hour": 1.0, "discount": 0.0})})
    grid = Grid(per_node=(hw.gpus_per_node,), nodes=(hw.nodes,), pinned=True)
    return search(arch, pinned, catalog, keep | {"parallel"}, grid).best


def shown_candidates(candidates: list[Candidate], limit: int) -> list[Candidate]:
    """The first `limit` rows, plus the fastest and the cheapest wherever they rank: a table that drops either
    hides the trade-off the ranking made."""
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
    """Throughput and efficiency vs node count for one GPU and interconnect: where more GPUs stop paying.

    Node counts whose data-parallel replicas (GPUs ÷ tp·pp·cp) would outnumber what the global batch can feed
    (dp × micro-batch > global batch), or that are not whole replicas, are dropped: such a job cannot run one
    optimizer step at that size, so drawing it at ideal efficiency would promise speed that does not exist.
    `dropped_nodes` names them and `global_batch` says why; the chart's caption says it.
    """
    t = request.training
    batch = global_batch(t, request.data.seq_len)  # the default before it grows: what the caption names
    gpus = hw.gpus_per_node * np.array(nodes, float)
    dp = parallel.data_parallel(gpus, t)
    possible = parallel.batch_fits(dp, t.micro_batch_size, global_batch(t, request.data.seq_len, dp))
    possible &= gpus % t.model_parallel == 0
    n = np.array(nodes, float)[possible]
    dropped = [float(x) for x in np.array(nodes, float)[~possible]]
    if not n.size:
        return {"nodes": [], "tokens_per_s": [], "efficiency": [], "hours": [], "fits": [],
                "global_batch": batch, "dropped_nodes": dropped}
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


__all__ = ["Grid", "Method", "SearchOutcome", "layouts", "on_hardware", "pareto_mask", "scaling_curve", "search",
           "shown_candidates"]
