"""Which catalog offer prices a plan, and what a node of it costs: whole instances, allowances,
confidence.

A plan rents nodes, and a node is one instance: a 2-GPU node on an offer sold only as 8-GPU
instances pays for 8 GPUs (``Price.billed_gpus``), and a node bigger than every instance of an offer
cannot run on it (GPUs of two instances share no NVLink). Offers are therefore compared by what a
node costs, not by their per-GPU rate.

Marketplace and auction offers price a plan only when ``pricing.allow`` names them; serverless never
does (``Price.serves``). A ``confidence: "low"`` record is used only when the user named its GPU or
provider: the search's own recommendation must rest on prices the catalog trusts. The search, the
plan's cost and the analysis all ask here, so a figure in the candidate table, the headline and the
provider table agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.catalog import CatalogError, Price, PricingModel

if TYPE_CHECKING:
    from core.catalog import Catalog
    from core.planner.request import PlanRequest


@dataclass(frozen=True)
class NodeOffer:
    """The offer a node of `gpus_per_node` GPUs is priced from, and how many GPUs it pays for."""

    row: Price
    gpus_per_node: int
    billed_gpus: int

    @property
    def usd_per_node_hour(self) -> float:
        return self.row.usd_per_gpu_hour * self.billed_gpus

    @property
    def usd_per_used_gpu_hour(self) -> float:
        """The node's price spread over the GPUs the plan uses: above the offer's rate when it pays
        for more. The rate itself when the node is the whole instance (no rounding: the search and
        the plan agree)."""
        if self.billed_gpus == self.gpus_per_node:
            return self.row.usd_per_gpu_hour
        return self.usd_per_node_hour / self.gpus_per_node

    @property
    def pays_for_more(self) -> bool:
        return self.billed_gpus > self.gpus_per_node


def low_confidence_ok(request: PlanRequest, gpu_id: str, *, searched: bool) -> bool:
    """True when the user named this GPU (its hardware, or ``search.gpus``) or a provider: only then
    may a low-confidence record price the plan. A search over the whole catalog uses trusted records
    only."""
    if request.pricing.provider is not None or not searched:
        return True
    wanted = request.search.gpus or []
    return any(str(g).lower() == gpu_id.lower() for g in wanted)


def _rows(
    catalog: Catalog,
    gpu_id: str,
    mode: str,
    provider: str | None,
    allow: Iterable[str],
    trusted_only: bool,
) -> list[Price]:
    rows = [p for p in catalog.prices_for(gpu_id, provider) if p.serves(mode, tuple(allow))]
    return [p for p in rows if p.confidence != "low"] if trusted_only else rows


def node_offer(
    catalog: Catalog,
    gpu_id: str,
    mode: str,
    gpus_per_node: int,
    *,
    provider: str | None = None,
    allow: Iterable[str] = (),
    trusted_only: bool = False,
) -> NodeOffer | None:
    """The cheapest offer per node (whole instances) that prices `mode`; None when no offer holds
    the node.

    Ties go to the offer that pays for fewer GPUs, then to the catalog's order
    (Catalog.best_price's).
    """
    best: NodeOffer | None = None
    domain = nvlink_domain(catalog, gpu_id)
    for p in _rows(catalog, gpu_id, mode, provider, allow, trusted_only):
        billed = p.billed_gpus(gpus_per_node, domain)
        if billed is None:
            continue
        offer = NodeOffer(p, gpus_per_node, billed)
        if best is None or (offer.usd_per_node_hour, billed) < (
            best.usd_per_node_hour,
            best.billed_gpus,
        ):
            best = offer
    return best


def any_offer(
    catalog: Catalog,
    gpu_id: str,
    mode: str,
    *,
    provider: str | None = None,
    allow: Iterable[str] = (),
    trusted_only: bool = False,
) -> Price | None:
    """The cheapest record per GPU-hour that prices `mode` at any instance size (does this GPU have
    a price)."""
    rows = _rows(catalog, gpu_id, mode, provider, allow, trusted_only)
    return min(rows, key=lambda p: p.usd_per_gpu_hour, default=None)


def billing_note(offer: NodeOffer) -> str:
    """'pays for 8 GPUs per node (p5.48xlarge holds 8)' when the node is smaller than the instance;
    else ''."""
    if not offer.pays_for_more:
        return ""
    sizes = offer.row.sizes
    listed = ", ".join(str(n) for n in sizes[:-1]) + f" or {sizes[-1]}"
    holds = f"holds {offer.billed_gpus}" if len(sizes) == 1 else f"comes in {listed} GPUs"
    return f"pays for {offer.billed_gpus} GPUs per node ({offer.row.instance} {holds})"


def nvlink_domain(catalog: Catalog, gpu_id: str) -> int | None:
    """The GPUs the GPU's NVLink fabric joins across instances (None for an unknown GPU or one
    whose node is one instance)."""
    try:
        return catalog.gpu(gpu_id).nvlink_domain_gpus
    except CatalogError:
        return None


def missing_price_reason(
    catalog: Catalog,
    gpu_id: str,
    mode: str,
    gpus_per_node: int,
    *,
    provider: str | None,
    allow: Iterable[str],
    trusted_only: bool,
) -> str:
    """Why no offer prices this node in this mode, as a clause: the records left out and what would
    admit them.

    A founder reading "no on-demand price" next to a $0.34 catalog row must learn that the row is a
    marketplace host (counted only with ``pricing.allow``), a serverless rate (never a training
    price), an offer whose largest instance is smaller than the node, or a low-confidence record the
    search does not rest on.
    """
    try:
        rows = catalog.prices_for(gpu_id, provider)
    except CatalogError:
        return ""
    allowed = tuple(allow)
    clauses: list[str] = []
    extra = {
        "on_demand": ("marketplace", PricingModel.marketplace),
        "spot": ("auction", PricingModel.auction),
    }
    if mode in extra and extra[mode][0] not in allowed:
        name, model = extra[mode]
        held = [p for p in rows if p.pricing_model == model]
        if held:
            cheapest = min(held, key=lambda p: p.usd_per_gpu_hour)
            clauses.append(
                f"{cheapest.provider_name}'s {name} price ${cheapest.usd_per_gpu_hour:.2f}/GPU-h "
                "counts "
                f'only with pricing.allow ["{name}"]'
            )
    if any(p.pricing_model == PricingModel.serverless for p in rows):
        clauses.append("serverless rates never price a training plan")
    serving = [p for p in rows if p.serves(mode, allowed)]
    domain = nvlink_domain(catalog, gpu_id)
    if serving and all(p.billed_gpus(gpus_per_node, domain) is None for p in serving):
        largest = max(max(p.sizes) for p in serving)
        clauses.append(
            f"no {mode.replace('_', '-')} instance holds {gpus_per_node} GPUs in one node "
            f"(the largest holds {largest})"
        )
    elif trusted_only and serving and all(p.confidence == "low" for p in serving):
        clauses.append(
            "its only prices are marked low-confidence: name the GPU in search.gpus or choose "
            "pricing.provider to use them"
        )
    return "; ".join(clauses)
