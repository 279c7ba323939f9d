"""What the user's own catalog files may hold: the limits a feed's offer and a plan request keep to.

prices.json, gpus.json and refreshed_prices.json are read on every plan, so a row priced 0 planned
"$0.00", one at 1e308 printed a 309-digit dollar figure, a ``gpus_per_instance`` of 1e9 billed a
billion GPUs, and a memory of 1e308 GB overflowed. Each price row is held to its GPU's sane band
(feeds/screen.py: from a fiftieth to ten times the median of the catalog's other prices for that
GPU, never outside $0.01 to $1,000 per GPU-hour, the range the request's own price override allows)
and an instance to 1 to 64 GPUs; each figure of a GPU to a positive finite number no GPU comes near
exceeding (the request's own bounds where it has one: 100,000 TFLOP/s). A row outside is one
sentence naming the file, the row, the field and what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.catalog.feeds.screen import MOST_GPUS, price_band
from core.catalog.records import CatalogError, Price
from core.validation import shown_number

# The largest figure of each kind a user's GPU may state (the largest real ones are far under: 288
# GB, ~5,000 dense TFLOP/s, 1,800 GB/s NVLink, 8 TB/s HBM, 1,400 W).
GPU_FIGURE_MOST = {
    "memory_gb": 10_000.0,
    "tflops": 100_000.0,
    "gbs": 100_000.0,
    "tdp_w": 100_000.0,
    "street_price_usd": 10_000_000.0,
}
_DEFAULT_MOST = 1e7


def _most(key: str) -> float:
    return GPU_FIGURE_MOST.get(key) or next(
        (most for suffix, most in GPU_FIGURE_MOST.items() if key.endswith(f"_{suffix}")),
        _DEFAULT_MOST,
    )


def _numbers(value: Any) -> list[Any]:
    """The numbers of a value: itself, or those of a list (street_price_usd is a (low, high)
    pair)."""
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
    return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []


def check_gpu_entry(entry: dict[str, Any], where: str) -> None:
    """CatalogError naming `where` and the field when a figure of a user's GPU is not a positive
    finite number within its bound (release_year and pcie_gen are checked by the GPU record
    itself)."""
    for key, value in entry.items():
        if key in ("release_year", "pcie_gen"):
            continue
        most = _most(key)
        for x in _numbers(value):
            # nan compares false with every bound; 10**400 is compared as an int
            if not 0 < x <= most:
                raise CatalogError(
                    f"{where}: {key} {shown_number(x)} is out of range: use more than 0 and at "
                    f"most {most:,g}"
                )


class PriceBands:
    """The sane band per GPU from a list of reference prices, computed once per GPU."""

    def __init__(self, reference: Iterable[Price]) -> None:
        self.reference = list(reference)
        self._bands: dict[str, tuple[float, float]] = {}

    def check(self, row: Price, where: str) -> Price:
        """`row` when it keeps to the band and the GPUs per instance; CatalogError naming `where`
        otherwise."""
        for count in (row.gpus_per_instance, *row.gpu_counts):
            if not 1 <= count <= MOST_GPUS:
                raise CatalogError(
                    f"{where}: gpus_per_instance {count} is out of range: use 1 to {MOST_GPUS}"
                )
        low, high = self._bands.setdefault(row.gpu, price_band(self.reference, row.gpu))
        price = row.usd_per_gpu_hour
        if not low <= price <= high:
            raise CatalogError(
                f"{where}: usd_per_gpu_hour {price:.3g} is outside the sane band for {row.gpu}, "
                f"${low:.2f} to ${high:,.2f} per GPU-hour (from a fiftieth to ten times the "
                "catalog's median for that GPU)"
            )
        return row
