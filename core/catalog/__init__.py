"""The catalog: GPUs, model presets, cloud prices, storage and egress prices, plus the user's
overrides.

Facts come from ``resources/catalog/*.json`` (every figure carries its source and date, see
SOURCES.md). The user can add GPUs, replace price rows and apply negotiated discounts with JSON
files in a config folder; the merge happens here so the planner, the CLI and the GUI all see the
same numbers.

This package's front door re-exports what callers use; the work is split by job:

- :mod:`core.catalog.records`: the records (GPU, Price, storage and egress prices) and the catalog's
  names
- :mod:`core.catalog.lookup`: the ``Catalog`` class, name aliases and suggestions, best prices
- :mod:`core.catalog.shipped`: reading the shipped catalog from resources/catalog
- :mod:`core.catalog.overrides`: the user's override files, how they merge, ``load_catalog``
- :mod:`core.catalog.network`: typical networks per GPU class and the PCIe table
- :mod:`core.catalog.refresh` / :mod:`core.catalog.refreshed`: prices from public catalogs
  (SkyPilot, gpuhunt), on the user's request, and how they merge over the shipped ones
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import lazy_names
from core.catalog.lookup import Catalog
from core.catalog.overrides import default_user_dir, load_catalog, save_user_overrides
from core.catalog.records import (
    GPU,
    PRECISIONS,
    PRICING_MODELS,
    PRICING_MODES,
    STALE_AFTER_DAYS,
    STORAGE_TIERS,
    Allowance,
    CatalogError,
    EgressPrice,
    EgressTier,
    Interconnect,
    ModelPreset,
    Price,
    PricingMode,
    PricingModel,
    Provider,
    StoragePrice,
    StorageTier,
)
from core.catalog.shipped import shipped_catalog

if TYPE_CHECKING:
    from core.catalog.network import network_node_gbps, network_text
    from core.catalog.refresh import SOURCES as REFRESH_SOURCES
    from core.catalog.refresh import RefreshReport, import_file
    from core.catalog.refresh import refresh as refresh_prices

# Read on first use (core/__init__.py): the refresh brings the downloader and the feeds' parsers,
# which neither `tuneplan plan` nor the window's start-up needs. ``refresh_prices`` is
# ``core.catalog.refresh.refresh`` under a name of its own, because ``refresh`` is the module's name
# in this package.
_LAZY: dict[str, str | tuple[str, str]] = {
    "network_node_gbps": "core.catalog.network",
    "network_text": "core.catalog.network",
    "REFRESH_SOURCES": ("core.catalog.refresh", "SOURCES"),
    "RefreshReport": "core.catalog.refresh",
    "import_file": "core.catalog.refresh",
    "refresh_prices": ("core.catalog.refresh", "refresh"),
}

__all__ = [
    "GPU",
    "PRECISIONS",
    "PRICING_MODELS",
    "PRICING_MODES",
    "REFRESH_SOURCES",
    "STALE_AFTER_DAYS",
    "STORAGE_TIERS",
    "Allowance",
    "Catalog",
    "CatalogError",
    "EgressPrice",
    "EgressTier",
    "Interconnect",
    "ModelPreset",
    "Price",
    "PricingMode",
    "PricingModel",
    "Provider",
    "RefreshReport",
    "StoragePrice",
    "StorageTier",
    "default_user_dir",
    "import_file",
    "load_catalog",
    "network_node_gbps",
    "network_text",
    "refresh_prices",
    "save_user_overrides",
    "shipped_catalog",
]
__getattr__ = lazy_names(__name__, _LAZY)
