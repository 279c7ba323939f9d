"""The storage tiers' figures (resources/catalog/storage_tiers.json): what each tier delivers, each
figure with its source and date.

Apart from core.planner.money.storage, whose arithmetic needs NumPy, so the window lists the tiers
by name (the Cost page's choices) before the planner is loaded.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.catalog.records import StorageTier
from core.resources import read_json

GB = 1e9


class Figure(BaseModel):
    """One catalog number with where it came from."""

    model_config = ConfigDict(extra="forbid")

    value: float
    source: str
    date: str | None = None
    source_date: str | None = None
    note: str = ""


class TierSpec(BaseModel):
    """What one storage tier typically delivers. Throughput figures are GB/s (1e9 bytes)."""

    model_config = ConfigDict(extra="forbid")

    title: str
    billing: str
    read_gb_s_per_node: Figure
    write_gb_s_per_node: Figure
    small_file_read_gb_s_per_node: Figure | None = None
    per_file_latency_s: Figure
    aggregate_read_gb_s: Figure | None = None
    aggregate_write_gb_s: Figure | None = None
    get_per_s_per_prefix: Figure | None = None

    @property
    def read_bytes_per_s(self) -> float:
        return self.read_gb_s_per_node.value * GB

    @property
    def write_bytes_per_s(self) -> float:
        return self.write_gb_s_per_node.value * GB


class StorageCatalog(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_version: int = Field(1, alias="schema")
    about: str = ""
    tiers: dict[StorageTier, TierSpec]
    defaults: dict[str, Figure]

    @model_validator(mode="after")
    def _complete(self) -> StorageCatalog:
        missing = [t.value for t in StorageTier if t not in self.tiers]
        needed = ("typical_file_bytes", "ranged_get_bytes", "readers_per_node")
        absent = [n for n in needed if n not in self.defaults]
        if missing or absent:
            raise ValueError(f"storage_tiers.json lacks tiers {missing} or defaults {absent}")
        return self


@lru_cache(maxsize=1)
def storage_catalog() -> StorageCatalog:
    return StorageCatalog.model_validate(read_json("catalog", "storage_tiers.json"))


def tier_name(tier: StorageTier | str) -> StorageTier:
    """The tier named `tier`; an unknown name raises an error that lists the allowed ones."""
    try:
        return StorageTier(tier)
    except ValueError:
        allowed = ", ".join(t.value for t in StorageTier)
        raise ValueError(f"storage tier '{tier}' is unknown; use one of {allowed}") from None


def tier_figures(tier: StorageTier | str) -> TierSpec:
    """The catalog figures for a tier; unknown names raise an error that lists the allowed ones."""
    return storage_catalog().tiers[tier_name(tier)]


def default_figure(name: str) -> Figure:
    """A default from the catalog ('typical_file_bytes', 'ranged_get_bytes', 'readers_per_node')."""
    return storage_catalog().defaults[name]
