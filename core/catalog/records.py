"""The catalog's records: GPUs, model presets, providers, GPU prices, storage and egress prices.

These are the validated shapes every figure of ``resources/catalog/*.json`` and of the user's
override files ends up in, with the catalog's enums and literal names (precisions, pricing modes,
storage tiers) and its error type. Nothing here reads files or looks names up, so every other module
of the catalog can build on it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# The names of pricing modes, inter-node networks and storage tiers, for the catalog and the plan
# request alike (core.planner.request uses these enums in the request contract).


class PricingMode(StrEnum):
    """How a plan pays (the request's ``pricing.mode``): each mode is served by some pricing
    models."""

    on_demand = "on_demand"
    spot = "spot"
    reserved = "reserved"


class PricingModel(StrEnum):
    """What kind of price one catalog record is (the shape gpuhunt's offers have: one price per
    record).

    A SkyPilot ``vms.csv`` row with ``Price`` and ``SpotPrice`` is two records. Community/peer hosts
    and bid floors are kept apart from a provider's own list prices because a founder must choose
    them knowingly, and serverless per-second workers are never a training plan's price.
    """

    on_demand = "on_demand"
    spot = "spot"
    reserved = "reserved"
    marketplace = "marketplace"
    auction = "auction"
    serverless = "serverless"


class Allowance(StrEnum):
    """Pricing models a plan uses only when the user allows them (``pricing.allow``)."""

    marketplace = "marketplace"
    auction = "auction"


# Which records serve which plan mode: marketplace offers are pay-as-you-go (on-demand like),
# auction floors are interruptible (spot like). Serverless serves none.
MODE_MODELS: dict[str, tuple[PricingModel, ...]] = {
    "on_demand": (PricingModel.on_demand,),
    "spot": (PricingModel.spot,),
    "reserved": (PricingModel.reserved,),
}
ALLOWED_MODELS: dict[str, dict[str, PricingModel]] = {
    "on_demand": {"marketplace": PricingModel.marketplace},
    "spot": {"auction": PricingModel.auction},
    "reserved": {},
}


class Interconnect(StrEnum):
    """The link between nodes; inside a node the GPU's own NVLink/PCIe figure applies."""

    infiniband = "infiniband"
    roce = "roce"
    efa = "efa"
    ethernet = "ethernet"


class StorageTier(StrEnum):
    local_nvme = "local_nvme"
    parallel_fs = "parallel_fs"
    block = "block"
    nfs = "nfs"
    object = "object"


STORAGE_TIERS: tuple[str, ...] = tuple(t.value for t in StorageTier)
IntraNodeLink = Literal["nvlink", "pcie", "infinity_fabric", "roce"]
PRICING_MODES: tuple[str, ...] = tuple(m.value for m in PricingMode)
PRICING_MODELS: tuple[str, ...] = tuple(m.value for m in PricingModel)
PRECISIONS = ("amp_bf16", "pure_bf16", "amp_fp16", "fp32", "fp8", "bf16", "fp16", "tf32")
# a price older than a quarter is flagged: GPU rental prices move that fast (issue 11)
STALE_AFTER_DAYS = 90


class CatalogError(ValueError):
    """A name or file the catalog cannot use; the message is one sentence meant for the user."""


def check_pricing_mode(mode: str) -> str:
    """The pricing mode as text, or CatalogError when it is not on_demand, spot or reserved."""
    m = str(mode)
    if m not in PRICING_MODES:
        raise CatalogError(f"pricing mode '{m}' is not one of {', '.join(PRICING_MODES)}")
    return m


# --------------------------------------------------------------------------- records


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GPU(_Record):
    """One accelerator, figures per GPU: dense tensor-core TFLOP/s, memory in vendor GB (1e9
    bytes)."""

    id: str
    name: str
    vendor: str = ""
    architecture: str = ""
    form_factor: str | None = None
    memory_type: str | None = None
    memory_bytes: int = Field(gt=0)
    memory_bandwidth_gbs: float | None = Field(None, gt=0)
    bf16_tflops: float | None = Field(None, gt=0)
    fp16_tflops: float | None = Field(None, gt=0)
    fp8_tflops: float | None = Field(None, gt=0)
    tf32_tflops: float | None = Field(None, gt=0)
    fp32_tflops: float | None = Field(None, gt=0)
    matmul_efficiency_bf16: float | None = Field(
        None,
        gt=0,
        le=1,
        description="maximum achievable matmul TFLOP/s (MAMF) / dense bf16 peak, measured",
    )
    matmul_efficiency_fp8: float | None = Field(
        None, gt=0, le=1, description="MAMF / dense fp8 peak, measured"
    )
    interconnect: str | None = None
    interconnect_bw_gbs: float | None = Field(None, gt=0)
    intra_node_link: IntraNodeLink
    intra_node_gbs: float = Field(
        gt=0, description="per-GPU unidirectional bandwidth NCCL can use in a node"
    )
    nvlink_pair_gbs: float | None = Field(
        None, gt=0, description="NVLink bridge between two PCIe cards"
    )
    nvlink_domain_gpus: int | None = Field(
        None,
        ge=1,
        description="GPUs one NVLink switch fabric joins across instances (GB200 NVL72: 72); "
        "None: a node is one instance",
    )
    pcie_gen: int | None = Field(None, ge=1, le=7)
    tdp_w: float | None = Field(None, gt=0)
    release_year: int | None = None
    street_price_usd: tuple[float, float] | None = Field(None, description="(low, high)")
    sources: dict[str, str] = Field(default_factory=dict)
    notes: dict[str, str] = Field(default_factory=dict)
    caveat: str | None = None

    @property
    def memory_gb(self) -> float:
        return self.memory_bytes / 1e9

    def _figure(self, precision: str) -> tuple[float | None, str]:
        p = str(precision)
        if p in ("amp_bf16", "pure_bf16", "bf16"):
            return self.bf16_tflops, "bf16"
        if p in ("amp_fp16", "fp16"):
            return (self.fp16_tflops or self.bf16_tflops), "fp16"
        if p in ("fp32", "tf32"):
            return (self.tf32_tflops or self.fp32_tflops), "tf32/fp32"
        if p == "fp8":
            return (self.fp8_tflops or self.bf16_tflops), "fp8 (or bf16)"
        raise CatalogError(f"precision '{p}' is not one of {', '.join(PRECISIONS)}")

    def supports(self, precision: str) -> bool:
        """True when the catalog has a peak figure for this precision (after the documented
        fallbacks)."""
        return self._figure(precision)[0] is not None

    def peak_tflops(self, precision: str) -> float:
        """Dense peak TFLOP/s for a training precision: bf16 regimes use bf16, amp_fp16 fp16 (else
        bf16), fp32 TF32 tensor cores where present (else plain fp32), fp8 fp8 (else bf16)."""
        value, label = self._figure(precision)
        if value is None:
            raise CatalogError(
                f"GPU {self.id} has no published {label} figure for precision '{precision}'"
                " (it supports: "
                f"{', '.join(p for p in PRECISIONS[:5] if self.supports(p)) or 'none known'})"
            )
        return value

    def intra_node_bandwidth_gbs(self, gpus_per_node: int) -> float:
        """Per-direction GB/s for collectives over `gpus_per_node` GPUs; an NVLink bridge helps
        pairs only."""
        if gpus_per_node == 2 and self.nvlink_pair_gbs:
            return self.nvlink_pair_gbs
        return self.intra_node_gbs


class Provider(_Record):
    id: str
    name: str
    commitment_discount: float | None = Field(None, ge=0, lt=1)
    commitment_term: str | None = None
    commitment_source: str | None = None
    commitment_date: str | None = None
    commitment_note: str | None = None


def _check_date(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        dt.date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"date '{value}' is not YYYY-MM-DD") from None
    return value


IsoDate = Annotated[str | None, AfterValidator(_check_date)]


class Price(_Record):
    """One price of one rentable offer: USD per GPU-hour (instance price / GPUs in the instance).

    ``gpus_per_instance`` is what one instance holds; ``gpu_counts`` lists other sizes sold at the
    same per-GPU rate (RunPod pods of 1–8 GPUs), so a plan always pays for whole instances.
    """

    provider: str
    provider_name: str
    instance: str
    gpu: str
    gpus_per_instance: int = Field(1, ge=1)
    gpu_counts: tuple[int, ...] = ()
    pricing_model: PricingModel
    usd_per_gpu_hour: float = Field(ge=0)
    region: str = "any"
    term: str | None = None
    upfront: Literal["none", "partial", "all"] | None = None
    reserved_basis: str | None = None
    date: IsoDate = None
    fetched: IsoDate = None
    origin: str = "shipped"
    source: str
    confidence: Literal["normal", "low"] = "normal"
    notes: str = ""
    snapshot: str | None = None
    tier: str | None = None
    user_discount: float | None = Field(None, ge=0, lt=1)

    @property
    def usd_per_instance_hour(self) -> float:
        return self.usd_per_gpu_hour * self.gpus_per_instance

    @property
    def sizes(self) -> tuple[int, ...]:
        """GPU counts one instance of this offer can have, smallest first."""
        return tuple(sorted({self.gpus_per_instance, *self.gpu_counts}))

    def billed_gpus(self, gpus_per_node: int, nvlink_domain: int | None = None) -> int | None:
        """GPUs paid per node when a node of `gpus_per_node` GPUs runs on this offer: the smallest
        instance size that holds the node (a 2-GPU node on an 8-GPU-only offer pays for 8). A node
        is one instance, since GPUs of several instances do not share NVLink, except where the
        GPU's NVLink fabric spans instances (`nvlink_domain`, a GB200 NVL72 rack of 4-GPU trays):
        then whole instances of the largest size up to that domain. None when nothing holds it."""
        held = next((n for n in self.sizes if n >= gpus_per_node), None)
        if held is not None or not nvlink_domain or gpus_per_node > nvlink_domain:
            return held
        largest = max(self.sizes)
        return -(-gpus_per_node // largest) * largest

    def serves(self, mode: str, allow: Iterable[str] = ()) -> bool:
        """True when this record can price a plan in `mode` (on_demand, spot, reserved) given
        `allow`."""
        mode = check_pricing_mode(mode)
        if self.pricing_model in MODE_MODELS[mode]:
            return True
        extra = ALLOWED_MODELS[mode]
        return any(extra.get(a) == self.pricing_model for a in allow)

    def age_days(self, today: dt.date) -> int | None:
        """Days since the price was seen; None when the source gives no date."""
        if self.date is None:
            return None
        return (today - dt.date.fromisoformat(self.date)).days

    @property
    def is_undated(self) -> bool:
        return self.date is None

    @property
    def seen(self) -> str:
        """The date a table shows: the source's, else when it was read ('undated, read 2026-11-29'),
        else 'undated'. The reading date is no age: an undated price stays undated for freshness."""
        if self.date:
            return self.date
        return f"undated, read {self.fetched}" if self.fetched else "undated"

    def is_stale(self, today: dt.date, max_age_days: int = STALE_AFTER_DAYS) -> bool:
        """Older than STALE_AFTER_DAYS. Undated rows are not 'stale' but 'undated' (see
        freshness)."""
        age = self.age_days(today)
        return age is not None and age > max_age_days

    def freshness(self, today: dt.date) -> Literal["fresh", "stale", "undated"]:
        if self.date is None:
            return "undated"
        return "stale" if self.is_stale(today) else "fresh"


class StoragePrice(_Record):
    provider: str
    provider_name: str
    service: str
    tier: StorageTier
    region: str | None = None
    usd_per_gb_month: float = Field(ge=0)
    put_per_1000: float | None = Field(None, ge=0)
    get_per_1000: float | None = Field(None, ge=0)
    mb_s_per_tib: float | None = None
    date: IsoDate = None
    source: str
    confidence: str = "normal"
    note: str | None = None


class EgressTier(_Record):
    up_to_tb: float | None = Field(
        None, gt=0, description="cumulative TB per month this rate applies to"
    )
    usd_per_gb: float = Field(ge=0)


class EgressPrice(_Record):
    provider: str
    provider_name: str
    service: str
    usd_per_gb: float = Field(ge=0, description="rate of the first paid tier")
    tiers: tuple[EgressTier, ...]
    free_gb_per_month: float = Field(0.0, ge=0)
    date: IsoDate = None
    source: str
    note: str | None = None

    def cost_usd(self, gb: float) -> float:
        """Monthly cost of `gb` (decimal GB) through the tiers, after the free allowance (1 TB =
        1000 GB)."""
        billable = max(0.0, gb - self.free_gb_per_month)
        total, lower = 0.0, 0.0
        for tier in self.tiers:
            upper = float("inf") if tier.up_to_tb is None else tier.up_to_tb * 1000.0
            if billable > lower:
                total += (min(billable, upper) - lower) * tier.usd_per_gb
            lower = upper
        return total


class ModelPreset(_Record):
    """A published architecture: the Hugging Face config keys plus the owner's parameter counts."""

    id: str
    hf_repo: str
    config: dict[str, Any]
    published_params: int | None = None
    published_active_params: int | None = None
    published_non_embedding_params: int | None = None
    published_params_breakdown: dict[str, Any] | None = None
    source_url: str
    params_source_url: str | None = None
    params_quote: str | None = None
    config_provenance: str = ""
    uncertain: tuple[str, ...] = ()
    attention_layer_pattern: str | None = None
    notes: str = ""

    def hf_config(self) -> dict[str, Any]:
        """A copy of the config keys, safe to modify."""
        return json.loads(json.dumps(self.config))
