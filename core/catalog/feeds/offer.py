"""One price of one rentable offer, as a refresh writes it: the new price-record shape, as plain
data.

The parsers produce these rather than :class:`core.catalog.records.Price` so that parsing never
depends on which shape of ``Price`` the catalog currently has; :mod:`core.catalog.refreshed` turns
the written rows into ``Price`` records. ``ParseResult`` carries what a parse kept and what it
skipped, counted by reason, so the user sees the unknown GPU names instead of having them guessed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

ON_DEMAND = "on_demand"
SPOT = "spot"
MARKETPLACE = "marketplace"
REFRESH_MODELS = (ON_DEMAND, SPOT, MARKETPLACE)  # the pricing models a refresh can produce


@dataclass(frozen=True)
class Offer:
    """A price row in the record shape of the catalog issue (``docs/architecture.md``,
    records.py)."""

    provider: str
    provider_name: str
    instance: str
    gpu: str
    gpus_per_instance: int
    pricing_model: str
    usd_per_gpu_hour: float
    region: str
    source: str
    origin: str
    date: str | None = None
    fetched: str | None = None
    notes: str = ""
    # other instance sizes sold at the same per-GPU rate; () = only this one
    gpu_counts: tuple[int, ...] = ()

    def as_row(self) -> dict[str, Any]:
        """The JSON row written to refreshed_prices.json (the record's own keys, nothing else)."""
        row = asdict(self)
        row["gpu_counts"] = list(self.gpu_counts)
        return row


@dataclass
class ParseResult:
    """What one catalog file gave: the offers kept, and the rows skipped counted by reason."""

    offers: list[Offer] = field(default_factory=list)
    unknown_gpus: Counter[str] = field(default_factory=Counter)  # accelerator name -> rows skipped
    skipped: Counter[str] = field(default_factory=Counter)  # other reason -> rows skipped
    rows_read: int = 0
    # the catalog slugs of the files read, offers or not
    providers: set[str] = field(default_factory=set)

    def extend(self, other: ParseResult) -> None:
        self.offers.extend(other.offers)
        self.providers |= other.providers
        self.unknown_gpus.update(other.unknown_gpus)
        self.skipped.update(other.skipped)
        self.rows_read += other.rows_read


def cheapest_per_region(offers: list[Offer]) -> list[Offer]:
    """Keep, per (provider, instance, pricing model), the cheapest offer; its region stays named on
    it.

    A catalog lists the same instance in every region and zone; a plan needs one price per offer,
    and the cheapest region is the one a user would rent in (the region is kept so they can see
    where that is). Ties keep the first row of the file, so the result does not depend on set or
    dict ordering. Where one instance name is sold in several sizes (gpuhunt's RunPod rows: one
    name, 1 to 8 GPUs), the sizes sold at the cheapest per-GPU rate are kept in ``gpu_counts``.
    """
    groups: dict[tuple[str, str, str], list[Offer]] = {}
    for o in offers:
        groups.setdefault((o.provider, o.instance, o.pricing_model), []).append(o)
    out = []
    for group in groups.values():
        best = group[0]
        for o in group[1:]:
            if o.usd_per_gpu_hour < best.usd_per_gpu_hour:
                best = o
        sizes = sorted(
            {
                o.gpus_per_instance
                for o in group
                if abs(o.usd_per_gpu_hour - best.usd_per_gpu_hour)
                <= 1e-9 * max(1.0, best.usd_per_gpu_hour)
            }
        )
        if len(sizes) > 1:
            best = replace(best, gpu_counts=tuple(sizes))
        out.append(best)
    return out
