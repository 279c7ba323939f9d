"""The catalog's GPUs as columns for the search's grid: each GPU's rates and, per node size, its
price, offer and whether that offer is an outlier.

The search (core/planner/choose/search.py) evaluates every GPU at once along the grid's first axis;
this table is what it reads there. Building it is a question of the catalog and its prices (which
offers a node of each size can be rented as, at what price per used GPU-hour), apart from the
search's question of which configuration fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core.catalog import network
from core.planner.money import pricing, sanity
from core.planner.request import PlanRequest
from core.planner.speed import gpu_rates

if TYPE_CHECKING:
    from core.catalog import Catalog


@dataclass(frozen=True)
class GpuTable:
    ids: list[str]
    memory: np.ndarray
    peak: np.ndarray
    intra: np.ndarray
    hbm: np.ndarray
    matmul: np.ndarray  # E_mm per GPU (MAMF table or heuristic)
    attention: np.ndarray
    pcie: np.ndarray
    # (GPU, GPUs per node): USD per GPU-hour used = a whole node's price / its GPUs; NaN: none
    price: np.ndarray
    # (GPU, GPUs per node): False where the GPU has prices but no offer holds such a node
    offered: np.ndarray
    provider: list[list[str | None]]  # [GPU][GPUs per node]
    instance: list[list[str | None]]
    billed: list[list[int | None]]  # GPUs paid for per node
    # (GPU, GPUs per node): the offer's price is one the plan would flag as an outlier
    outlier: np.ndarray
    links: list[str]
    architectures: list[str]
    fp8_gain: list[float]


def _node_prices(
    request: PlanRequest, catalog: Catalog, gpu_id: str, per_node: tuple[int, ...]
) -> (
    tuple[list[float], list[bool], list[str | None], list[str | None], list[int | None], list[bool]]
    | None
):
    """Per GPUs-per-node choice: the price per used GPU-hour (whole instances), whether a node of
    that size can be rented, from which offer, and whether that offer's list price is one the plan's
    sanity checks flag as an outlier (sanity.is_outlier: under a quarter of the providers' median;
    an offer of a pricing model the user allowed, auction or marketplace, is not); None when the GPU
    has no price in the mode at all."""
    p, mode = request.pricing, request.pricing.mode.value
    allow = [a.value for a in p.allow]
    trusted = not pricing.low_confidence_ok(request, gpu_id, searched=True)
    factor = 1 - p.discount
    if p.usd_per_gpu_hour is not None:  # the user's own price: per GPU used, any node size
        row = pricing.any_offer(
            catalog, gpu_id, mode, provider=p.provider, allow=allow, trusted_only=trusted
        )
        name = row.provider_name if row else None
        n = len(per_node)
        return (
            [p.usd_per_gpu_hour * factor] * n,
            [True] * n,
            [name] * n,
            [None] * n,
            list(per_node),
            [False] * n,
        )
    if (
        pricing.any_offer(
            catalog, gpu_id, mode, provider=p.provider, allow=allow, trusted_only=trusted
        )
        is None
    ):
        return None
    price, offered, provider, instance, billed, outlier = [], [], [], [], [], []
    for gpn in per_node:
        offer = pricing.node_offer(
            catalog, gpu_id, mode, gpn, provider=p.provider, allow=allow, trusted_only=trusted
        )
        price.append(np.nan if offer is None else offer.usd_per_used_gpu_hour * factor)
        offered.append(offer is not None)
        provider.append(offer.row.provider_name if offer else None)
        instance.append(offer.row.instance if offer else None)
        billed.append(offer.billed_gpus if offer else None)
        # an auction floor or marketplace host the user allowed is expected far under list; a list
        # price is not
        outlier.append(
            offer is not None
            and str(offer.row.pricing_model) not in allow
            and sanity.is_outlier(catalog, gpu_id, mode, offer.row.usd_per_gpu_hour)
        )
    return price, offered, provider, instance, billed, outlier


def gpu_table(request: PlanRequest, catalog: Catalog, per_node: tuple[int, ...]) -> GpuTable:
    wanted = request.search.gpus
    gpus = [catalog.gpu(g) for g in wanted] if wanted else list(catalog.gpus.values())
    ids, mem, peak, intra, price, offered, prov, inst, billed, links, archs = (
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
    )
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
        # one figure for every node width; no bridged pairs
        intra.append(network.intra_node_gbs(gpu, 8))
        r = gpu_rates.rates(gpu, request.training.precision)
        hbm.append(r.hbm_gbs)
        matmul.append(r.matmul_efficiency)
        attention.append(r.attention_efficiency)
        pcie.append(r.pcie_gbs)
        gains.append(r.fp8_gain)
        # A GPU with no price at all stays in a time-ranked search at every node size (unpriced).
        usd, ok, names, instances, pays, flagged = node or (
            [np.nan] * n,
            [True] * n,
            [None] * n,
            [None] * n,
            [None] * n,
            [False] * n,
        )
        price.append(usd)
        outlier.append(flagged)
        offered.append(ok)
        prov.append(names)
        inst.append(instances)
        billed.append(pays)
        links.append(str(gpu.intra_node_link))
        archs.append(gpu.architecture)
    return GpuTable(
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


def allow_hint(request: PlanRequest, catalog: Catalog) -> str:
    """'; its marketplace prices count only with pricing.allow ["marketplace"]' when such offers
    would serve."""
    mode = request.pricing.mode.value
    name = {"on_demand": "marketplace", "spot": "auction"}.get(mode)
    if name is None or name in [a.value for a in request.pricing.allow]:
        return ""
    slug = catalog.provider_id(request.pricing.provider) if request.pricing.provider else None
    if any(
        p.pricing_model.value == name and (slug is None or p.provider == slug)
        for p in catalog.prices
    ):
        return f'; {name} prices count only with pricing.allow ["{name}"]'
    return ""
