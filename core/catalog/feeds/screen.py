"""What a feed may not put in the catalog: a price no GPU is rented at, an instance of a billion
GPUs.

A public catalog is downloaded from someone else's server: one row priced 0 or 1e-9 would make the
search recommend 128 H100s "at $0.00", one at 1e308 would overflow the cost arithmetic. Each offer's
per-GPU price must lie inside its GPU's band: from the catalog's other prices for that GPU (the
median ÷ BELOW to the median × ABOVE, wide enough for auction floors 30× under list price) and never
outside the absolute FLOOR_USD to CEILING_USD (the range a plan request's own price override
allows). An instance holds 1 to MOST_GPUS GPUs. An offer outside is skipped and named (instance,
region, GPU, the figure and the band) in the refresh report; resources/catalog/SOURCES.md states the
same rule.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable

from core.catalog.feeds.offer import Offer
from core.catalog.lookup import Catalog
from core.catalog.records import Price

FLOOR_USD = 0.01
CEILING_USD = 1000.0
BELOW = 50.0
ABOVE = 10.0
MOST_GPUS = 64


def band(catalog: Catalog, gpu: str) -> tuple[float, float]:
    """The per-GPU-hour prices (low, high) an offer of `gpu` may have."""
    return price_band(catalog.prices, gpu)


def price_band(prices: Iterable[Price], gpu: str) -> tuple[float, float]:
    """The band of `band` from a list of price records (the user's override files are held to the
    same)."""
    known = [p.usd_per_gpu_hour for p in prices if p.gpu == gpu and p.usd_per_gpu_hour > 0]
    if not known:
        return FLOOR_USD, CEILING_USD
    middle = statistics.median(known)
    return max(FLOOR_USD, middle / BELOW), min(CEILING_USD, middle * ABOVE)


def screen(offers: list[Offer], catalog: Catalog, skipped: Counter[str]) -> list[Offer]:
    """The offers that may enter the catalog; each other one counted in `skipped` under a reason
    naming it."""
    bands: dict[str, tuple[float, float]] = {}
    kept = []
    for o in offers:
        where = f"{o.instance} in {o.region}, {o.gpu}"
        if not 1 <= o.gpus_per_instance <= MOST_GPUS:
            skipped[f"GPU count {o.gpus_per_instance:g} outside 1 to {MOST_GPUS} ({where})"] += 1
            continue
        low, high = bands.setdefault(o.gpu, band(catalog, o.gpu))
        if not low <= o.usd_per_gpu_hour <= high:
            skipped[
                f"{o.pricing_model} price ${o.usd_per_gpu_hour:.3g} per GPU-hour outside the sane "
                f"band ${low:.2f} to ${high:,.2f} ({where})"
            ] += 1
            continue
        kept.append(o)
    return kept
