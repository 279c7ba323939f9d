"""Hardware search: every GPU × GPUs per node × nodes × sharding × checkpointing × micro-batch at once.

The numeric axes are NumPy arrays evaluated by the same formulas as a single plan (step.evaluate); only the
few categorical choices (sharding, checkpointing) loop in Python. Ranking uses failure-free GPU-hours × the
catalog price; the chosen plan then adds checkpoint writes, spot losses and storage.

The list keeps one row per GPU, GPUs per node, nodes and sharding: the best micro-batch and recomputation of
that configuration. Within such a group the price per GPU-hour and the GPU count are the same, so the cheapest
row is also the fastest, and the rest were a dozen rows that differed only by micro-batch. Between equally good
rows the request's own training settings win, so the search changes a setting the user chose only for a gain.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from core.catalog import network
from core.planner import gpu_rates
from core.planner.models import Candidate, Method, PlanRequest, Sharding
from core.planner.params import Architecture
from core.planner.step import Hardware, evaluate, global_batch

if TYPE_CHECKING:
    from core.catalog import Catalog

GPUS_PER_NODE = (1, 2, 4, 8)
NODES = (1, 2, 4, 8, 16, 32, 64)
MICRO_BATCHES = (1, 2, 4, 8, 16, 32)
SHARDINGS = (Sharding.none, Sharding.zero2, Sharding.zero3, Sharding.fsdp, Sharding.hsdp)
SHOWN = 25


@dataclass
class SearchOutcome:
    candidates: list[Candidate] = field(default_factory=list)
    best: Candidate | None = None
    reason: str | None = None
    evaluated: int = 0


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
    price: np.ndarray  # USD per GPU-hour, NaN where none
    provider: list[str | None]
    links: list[str]
    architectures: list[str]


def _gpu_table(request: PlanRequest, catalog: Catalog) -> _GpuTable:
    mode, provider = request.pricing.mode.value, request.pricing.provider
    wanted = request.search.gpus
    gpus = [catalog.gpu(g) for g in wanted] if wanted else list(catalog.gpus.values())
    ids, mem, peak, intra, price, prov, links, archs = [], [], [], [], [], [], [], []
    hbm, matmul, attention, pcie = [], [], [], []
    for gpu in gpus:
        if not gpu.supports(request.training.precision.value):
            continue  # no published peak for this precision: cannot be timed honestly
        row = catalog.best_price(gpu.id, mode, provider)
        usd = request.pricing.usd_per_gpu_hour or (getattr(row, mode) if row else None)
        if usd is None and request.search.objective != "time":
            continue
        ids.append(gpu.id)
        mem.append(gpu.memory_bytes)
        peak.append(gpu.peak_tflops(request.training.precision.value))
        intra.append(gpu.intra_node_gbs)
        r = gpu_rates.rates(gpu, request.training.precision)
        hbm.append(r.hbm_gbs)
        matmul.append(r.matmul_efficiency)
        attention.append(r.attention_efficiency)
        pcie.append(r.pcie_gbs)
        price.append(np.nan if usd is None else usd * (1 - request.pricing.discount))
        prov.append(row.provider_name if row else None)
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
        np.array(price, float),
        prov,
        links,
        archs,
    )


def _column(values: np.ndarray) -> np.ndarray:
    """GPU properties along the first axis of the (GPU, GPUs per node, nodes, micro-batch) grid."""
    return values.reshape(-1, 1, 1, 1)


def pareto_mask(hours: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """True where no other point is at least as fast and as cheap and strictly better in one."""
    order = np.lexsort((cost, hours))
    mask = np.zeros(len(hours), dtype=bool)
    best_cost = np.inf
    for i in order:
        if cost[i] < best_cost:
            mask[i] = True
            best_cost = cost[i]
    return mask


def search(
    arch: Architecture, request: PlanRequest, catalog: Catalog, keep: frozenset[str] = frozenset()
) -> SearchOutcome:
    """Rank every configuration that fits. ``keep`` names training settings (sharding, gradient_checkpointing,
    micro_batch_size) held at the request's value instead of searched: what the best plan would be without
    overriding them, so the window can say why the search did."""
    table = _gpu_table(request, catalog)
    if not table.ids:
        return SearchOutcome(
            reason="no GPU in the catalog has a "
            f"{request.pricing.mode.value.replace('_', '-')} price"
            + (f" at {request.pricing.provider}" if request.pricing.provider else "")
        )
    t = request.training
    micro_batches = (t.micro_batch_size,) if "micro_batch_size" in keep else MICRO_BATCHES
    shardings = (t.sharding,) if "sharding" in keep else SHARDINGS
    checkpointing = (t.gradient_checkpointing,) if "gradient_checkpointing" in keep else (False, True)
    g = len(table.ids)
    gpn = np.array(GPUS_PER_NODE, float).reshape(1, -1, 1, 1)
    nodes = np.array(NODES, float).reshape(1, 1, -1, 1)
    mb = np.array(micro_batches, float).reshape(1, 1, 1, -1)
    shape = (g, len(GPUS_PER_NODE), len(NODES), len(micro_batches))
    base_ok = np.broadcast_to((gpn * nodes) <= request.search.max_gpus, shape)
    hw = Hardware(
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
        ).reshape(g, -1, 1, 1),
    )

    batch = global_batch(request.training, request.data.seq_len)
    rows: list[tuple[np.ndarray, ...]] = []
    evaluated = 0
    for sharding, ckpt in itertools.product(shardings, checkpointing):
        training = request.training.model_copy(update={"sharding": sharding, "gradient_checkpointing": ckpt})
        if training.offload.value != "none" and sharding is Sharding.none:
            continue
        est = evaluate(arch, training, request.data, hw, request.assumptions, micro_batch=mb)
        ok = base_ok & np.broadcast_to(est.fits, shape)
        ok &= (np.broadcast_to(nodes, shape) > 1) if sharding is Sharding.hsdp else True
        ok &= np.broadcast_to(mb * gpn * nodes, shape) <= batch  # every GPU needs a full micro-batch
        if sharding is not Sharding.none:
            ok &= np.broadcast_to(gpn * nodes, shape) > 1
        evaluated += int(base_ok.sum())
        idx = np.nonzero(ok)
        if not idx[0].size:
            continue
        hours = np.broadcast_to(est.hours, shape)[idx]
        gpu_hours = np.broadcast_to(est.gpu_hours, shape)[idx]
        mem = np.broadcast_to(est.memory.total, shape)[idx]
        eff = np.broadcast_to(est.scaling_efficiency, shape)[idx]
        cost = gpu_hours * table.price[idx[0]]
        rows.append(
            (
                idx[0],
                np.array(GPUS_PER_NODE)[idx[1]],
                np.array(NODES)[idx[2]],
                np.array(micro_batches)[idx[3]],
                np.full(idx[0].size, shardings.index(sharding)),
                np.full(idx[0].size, ckpt),
                hours,
                cost,
                mem,
                eff,
            )
        )
    if not rows:
        which = f"no configuration of {', '.join(table.ids)}" if request.search.gpus else "no catalog GPU"
        return SearchOutcome(
            evaluated=evaluated,
            reason=(
                f"nothing fits: {which}, up to {request.search.max_gpus} GPUs with any sharding, holds "
                f"{arch.name} for method {request.training.method.value} at seq_len {request.data.seq_len}; "
                "try method qlora, a shorter data.seq_len or a larger search.max_gpus"
            ),
        )
    gi, gp, nd, m, sh, ck, hours, cost, mem, eff = (np.concatenate(c) for c in zip(*rows, strict=True))
    priced = ~np.isnan(cost)
    ranking_cost = np.where(priced, cost, np.inf)
    objective = request.search.objective
    deadline = request.search.deadline_hours
    if objective == "time":
        key = hours
    elif objective == "cost_under_deadline" and deadline:
        late = hours > deadline
        if late.all():
            return SearchOutcome(
                evaluated=evaluated,
                reason=(
                    f"search.deadline_hours {deadline:g} h cannot be met: the fastest configuration that fits takes "
                    f"{hours.min():.1f} h"
                ),
            )
        key = np.where(late, np.inf, ranking_cost)
    else:
        key = np.where(priced, ranking_cost, np.inf)
    # Tie-break on fewer GPUs, then fewer nodes: same cost and time, simpler job; then on the request's settings.
    unlike_request = (m != t.micro_batch_size).astype(int) + (ck != t.gradient_checkpointing)
    unlike_request += np.array([s is not t.sharding for s in shardings])[sh]
    order = np.lexsort((unlike_request, gp * nd, hours, key))
    groups = np.stack([gi, gp, nd, sh], axis=1)[order]
    _, first = np.unique(groups, axis=0, return_index=True)
    kept = order[np.sort(first)]  # the best row of each GPU × count × nodes × sharding, still in rank order
    front = np.zeros(len(hours), dtype=bool)
    front[kept] = pareto_mask(hours[kept], ranking_cost[kept]) & priced[kept]
    chosen = list(dict.fromkeys([*kept[:SHOWN].tolist(), *np.nonzero(front)[0].tolist()]))
    chosen.sort(key=lambda i: (key[i], hours[i]))
    best_i = order[0]
    fastest = hours[front].min() if front.any() else hours.min()
    cheapest = ranking_cost[front].min() if front.any() else np.nan

    def why(i: int) -> str:
        parts = []
        if i == best_i:
            parts.append(
                {"time": "fastest that fits", "cost_under_deadline": f"cheapest within {deadline} h"}.get(
                    objective, "cheapest that fits"
                )
            )
        elif front[i]:
            parts.append(
                f"Pareto: {hours[i] / fastest:.1f}× the fastest time for "
                f"{ranking_cost[i] / cheapest:.2f}× the lowest cost"
            )
        else:
            parts.append("fits")
        cap = table.memory[gi[i]]
        parts.append(f"{mem[i] / 1e9:.0f} of {cap / 1e9:.0f} GB")
        if gp[i] * nd[i] > 1:
            parts.append(f"{eff[i]:.0%} scaling")
        if ck[i]:
            parts.append("recomputes activations")
        return "; ".join(parts)

    candidates = [
        Candidate(
            gpu=table.ids[gi[i]],
            gpus_per_node=int(gp[i]),
            nodes=int(nd[i]),
            sharding=shardings[sh[i]],
            method=request.training.method,
            gradient_checkpointing=bool(ck[i]),
            micro_batch_size=int(m[i]),
            fits=True,
            memory_per_gpu=int(mem[i]),
            hours=float(hours[i]),
            cost_usd=float(cost[i]) if priced[i] else None,
            provider=table.provider[gi[i]],
            pareto=bool(front[i]),
            why=why(i),
        )
        for i in chosen
    ]
    return SearchOutcome(
        candidates=candidates,
        best=candidates[0] if np.isfinite(key[best_i]) else None,
        evaluated=evaluated,
        reason=None
        if np.isfinite(key[best_i])
        else "no configuration that fits has a price; set pricing.usd_per_gpu_hour",
    )


def scaling_curve(
    arch: Architecture, request: PlanRequest, hw: Hardware, nodes: tuple[int, ...] = NODES
) -> dict[str, list[float]]:
    """Throughput and efficiency vs node count for one GPU and interconnect: where more GPUs stop paying."""
    n = np.array(nodes, float)
    scaled = replace(hw, nodes=n)
    est = evaluate(arch, request.training, request.data, scaled, request.assumptions)
    tps = np.broadcast_to(est.tokens_per_s, n.shape)
    single = tps[0] / (hw.gpus_per_node * n[0])
    efficiency = tps / (single * hw.gpus_per_node * n)
    return {
        "nodes": n.tolist(),
        "tokens_per_s": tps.tolist(),
        "efficiency": efficiency.tolist(),
        "hours": np.broadcast_to(est.hours, n.shape).tolist(),
        "fits": np.broadcast_to(est.fits, n.shape).tolist(),
    }


__all__ = ["Method", "SearchOutcome", "pareto_mask", "scaling_curve", "search"]
