"""The catalog: GPUs, model presets, cloud prices, storage and egress prices, plus the user's overrides.

Facts come from ``resources/catalog/*.json`` (every figure carries its source and date, see SOURCES.md). The
user can add GPUs, replace price rows and apply negotiated discounts with JSON files in a config folder; the
merge happens here so the planner, the CLI and the GUI all see the same numbers.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from core.paths import config_dir
from core.resources import read_json
from core.validation import validation_message

__all__ = [
    "GPU",
    "PRECISIONS",
    "STORAGE_TIERS",
    "Catalog",
    "CatalogError",
    "EgressPrice",
    "EgressTier",
    "ModelPreset",
    "Price",
    "Provider",
    "StoragePrice",
    "default_user_dir",
    "load_catalog",
    "save_user_overrides",
    "shipped_catalog",
]

StorageTier = Literal["local_nvme", "parallel_fs", "block", "nfs", "object"]
STORAGE_TIERS: tuple[str, ...] = get_args(StorageTier)
IntraNodeLink = Literal["nvlink", "pcie", "infinity_fabric", "roce"]
PRICING_MODES = ("on_demand", "spot", "reserved")
PRECISIONS = ("amp_bf16", "pure_bf16", "amp_fp16", "fp32", "fp8", "bf16", "fp16", "tf32")
STALE_AFTER_DAYS = 365
USER_FILES = ("gpus.json", "prices.json", "discounts.json")

# Where a provider has no price for a storage tier the planner still needs a figure: these are the usual ones.
DEFAULT_STORAGE: dict[str, tuple[str, str]] = {
    "object": ("aws", "S3 Standard"),
    "block": ("aws", "EBS gp3"),
    "parallel_fs": ("aws", "FSx for Lustre PERSISTENT_2 SSD 125 MB/s/TiB"),
    "local_nvme": ("aws", "EC2 instance store (local NVMe)"),
    "nfs": ("runpod", "Network volume (under 1 TB)"),
}


class CatalogError(ValueError):
    """A name or file the catalog cannot use; the message is one sentence meant for the user."""


# --------------------------------------------------------------------------- records


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GPU(_Record):
    """One accelerator, figures per GPU: dense tensor-core TFLOP/s, memory in vendor GB (1e9 bytes)."""

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
    interconnect: str | None = None
    interconnect_bw_gbs: float | None = Field(None, gt=0)
    intra_node_link: IntraNodeLink
    intra_node_gbs: float = Field(gt=0, description="per-GPU unidirectional bandwidth NCCL can use in a node")
    nvlink_pair_gbs: float | None = Field(None, gt=0, description="NVLink bridge between two PCIe cards")
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
        """True when the catalog has a peak figure for this precision (after the documented fallbacks)."""
        return self._figure(precision)[0] is not None

    def peak_tflops(self, precision: str) -> float:
        """Dense peak TFLOP/s for a training precision: bf16 regimes use bf16, amp_fp16 fp16 (else bf16),
        fp32 TF32 tensor cores where present (else plain fp32), fp8 fp8 (else bf16)."""
        value, label = self._figure(precision)
        if value is None:
            raise CatalogError(
                f"GPU {self.id} has no published {label} figure for precision '{precision}'"
                f" (it supports: {', '.join(p for p in PRECISIONS[:5] if self.supports(p)) or 'none known'})"
            )
        return value

    def intra_node_bandwidth_gbs(self, gpus_per_node: int) -> float:
        """Per-direction GB/s for collectives over `gpus_per_node` GPUs; an NVLink bridge helps pairs only."""
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
    """One rentable configuration; money is USD per GPU-hour (instance price / GPUs in it)."""

    provider: str
    provider_name: str
    instance: str
    gpu: str
    gpus_per_instance: int = Field(1, ge=1)
    on_demand: float | None = Field(None, ge=0)
    spot: float | None = Field(None, ge=0)
    reserved: float | None = Field(None, ge=0)
    reserved_discount: float | None = Field(None, ge=0, lt=1)
    reserved_basis: str | None = None
    user_discount: float | None = Field(None, ge=0, lt=1)
    region: str | None = None
    date: IsoDate = None
    source: str
    confidence: str = "normal"
    notes: str = ""
    pricing_model: str | None = None
    snapshot: str | None = None
    tier: str | None = None

    def price(self, mode: str) -> float | None:
        """USD per GPU-hour for on_demand, spot or reserved (None when this row has no such price)."""
        mode = _check_mode(mode)
        value: float | None = getattr(self, mode)
        return value

    def age_days(self, today: dt.date) -> int | None:
        """Days since the price was seen; None when the source gives no date."""
        if self.date is None:
            return None
        return (today - dt.date.fromisoformat(self.date)).days

    @property
    def is_undated(self) -> bool:
        return self.date is None

    def is_stale(self, today: dt.date, max_age_days: int = STALE_AFTER_DAYS) -> bool:
        """Older than a year. Undated rows are not 'stale' but 'undated' (see freshness)."""
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
    up_to_tb: float | None = Field(None, gt=0, description="cumulative TB per month this rate applies to")
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
        """Monthly cost of `gb` (decimal GB) through the tiers, after the free allowance (1 TB = 1000 GB)."""
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


# --------------------------------------------------------------------------- name resolution

_VENDOR_WORDS = re.compile(r"nvidia|tesla|geforce|amd|instinct|intel|habana")

_GPU_ALIASES: dict[str, tuple[str, ...]] = {
    "H100-SXM": ("h100", "h100 sxm5", "h100 sxm 80gb", "h100 80gb", "h100 80gb hbm3", "h100 hbm3"),
    "H100-PCIE": ("h100 pcie 80gb", "h100 80gb pcie"),
    "H100-NVL": ("h100 nvl 94gb",),
    "H200-SXM": ("h200", "h200 141gb", "h200 sxm 141gb"),
    "B200": ("hgx b200", "b200 180gb"),
    "A100-80GB-SXM": ("a100", "a100-80g", "a100-80gb", "a100 sxm", "a100-sxm4-80gb", "a100 sxm 80gb"),
    "A100-40GB-SXM": ("a100-40g", "a100-40gb", "a100-sxm4-40gb", "a100 sxm 40gb"),
    "A100-80GB-PCIE": ("a100 pcie", "a100 80gb pcie", "a100-pcie-80gb"),
    "V100-16GB": ("v100", "v100-16g", "v100-sxm2-16gb", "v100 pcie 16gb"),
    "V100-32GB-SXM2": ("v100-32g", "v100-32gb", "v100-sxm2-32gb"),
    "RTX-4090": ("4090", "rtx 4090"),
    "RTX-6000-ADA": ("rtx 6000 ada", "rtx 6000 ada generation", "6000 ada"),
    "MI300X": ("mi300",),
    "MI250X": ("mi250",),
    "GAUDI2": ("gaudi 2", "hl-225"),
    "GAUDI3": ("gaudi 3", "hl-325l"),
}

_PROVIDER_ALIASES: dict[str, tuple[str, ...]] = {
    "aws": ("amazon", "amazon web services", "ec2"),
    "gcp": ("google", "google cloud", "gce"),
    "azure": ("microsoft", "microsoft azure"),
    "lambda": ("lambda labs", "lambda cloud"),
    "vastai": ("vast",),
    "cloudflare": ("cloudflare r2", "r2"),
    "alibaba": ("alibaba cloud", "aliyun"),
    "sfcompute": ("sf compute", "san francisco compute"),
}


def _gpu_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", _VENDOR_WORDS.sub("", name.lower()))


def _model_key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def _provider_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _suggest(query: str, index: Mapping[str, str], keyer: Callable[[str], str]) -> list[str]:
    """Close canonical names for a typo: difflib over the normalised keys, mapped back, de-duplicated."""
    matches = difflib.get_close_matches(keyer(query), list(index), n=6, cutoff=0.6)
    out: list[str] = []
    for key in matches:
        if index[key] not in out:
            out.append(index[key])
    return out[:3]


def _unknown(what: str, name: str, suggestions: list[str], listing: str) -> CatalogError:
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
    return CatalogError(f"unknown {what} '{name}'{hint} ({listing} lists all)")


def _check_mode(mode: str) -> str:
    m = str(mode)
    if m not in PRICING_MODES:
        raise CatalogError(f"pricing mode '{m}' is not one of {', '.join(PRICING_MODES)}")
    return m


# --------------------------------------------------------------------------- the catalog


class Catalog:
    """Everything the planner looks up by name. Treat it as read-only: the shipped one is shared (cached)."""

    def __init__(
        self,
        *,
        gpus: Iterable[GPU],
        models: Iterable[ModelPreset],
        prices: Iterable[Price],
        storage: Iterable[StoragePrice],
        egress: Iterable[EgressPrice],
        providers: Iterable[Provider],
        retrieved: str,
        model_aliases: Mapping[str, str] | None = None,
        user_dir: Path | None = None,
    ) -> None:
        self.gpus: dict[str, GPU] = {g.id: g for g in gpus}
        self.models: dict[str, ModelPreset] = {m.id: m for m in models}
        self.prices: list[Price] = list(prices)
        self.storage: list[StoragePrice] = list(storage)
        self.egress: list[EgressPrice] = list(egress)
        self.provider_info: dict[str, Provider] = {p.id: p for p in providers}
        self.retrieved = retrieved
        self.user_dir = user_dir
        self.model_aliases: dict[str, str] = dict(model_aliases or {})
        self._gpu_index = self._build_gpu_index()
        self._model_index: dict[str, str] = {}
        for m in self.models.values():
            self._model_index[_model_key(m.id)] = m.id
            self._model_index.setdefault(_model_key(m.hf_repo), m.id)
        for alias, target in self.model_aliases.items():
            if target in self.models:
                self._model_index.setdefault(_model_key(alias), target)
        self._provider_index: dict[str, str] = {}
        for p in self.provider_info.values():
            self._provider_index[_provider_key(p.id)] = p.id
            self._provider_index.setdefault(_provider_key(p.name), p.id)
        for slug, aliases in _PROVIDER_ALIASES.items():
            if slug in self.provider_info:
                for alias in aliases:
                    self._provider_index.setdefault(_provider_key(alias), slug)

    def _build_gpu_index(self) -> dict[str, str]:
        index: dict[str, str] = {}
        for g in self.gpus.values():
            index[_gpu_key(g.id)] = g.id
        for gid, aliases in _GPU_ALIASES.items():
            if gid in self.gpus:
                for alias in aliases:
                    index.setdefault(_gpu_key(alias), gid)
        for g in self.gpus.values():
            index.setdefault(_gpu_key(g.name), g.id)
        return index

    # ---- GPUs

    def gpu_id(self, name: str) -> str:
        """Canonical id for a GPU name (case, spaces, -, _, vendor words ignored; aliases like h100, a100)."""
        found = self._gpu_index.get(_gpu_key(str(name)))
        if found is None:
            raise _unknown("GPU", name, _suggest(name, self._gpu_index, _gpu_key), "tuneplan catalog gpus")
        return found

    def gpu(self, name: str) -> GPU:
        return self.gpus[self.gpu_id(name)]

    # ---- models

    def model(self, preset_id: str) -> ModelPreset:
        """A model preset by id, alias (mistral-7b) or Hugging Face repo (meta-llama/Llama-3.1-8B)."""
        found = self._model_index.get(_model_key(str(preset_id)))
        if found is None:
            suggestions = _suggest(preset_id, {m: m for m in self.models}, _model_key)
            raise _unknown("model preset", preset_id, suggestions, "tuneplan catalog models")
        return self.models[found]

    # ---- providers and prices

    def provider_id(self, name: str) -> str:
        found = self._provider_index.get(_provider_key(str(name)))
        if found is None:
            suggestions = _suggest(name, self._provider_index, _provider_key)
            raise _unknown("provider", name, suggestions, "tuneplan catalog prices")
        return found

    def provider(self, name: str) -> Provider:
        return self.provider_info[self.provider_id(name)]

    def providers(self) -> list[str]:
        """Provider slugs, in catalog order."""
        return list(self.provider_info)

    def _price_gpu_id(self, name: str) -> str:
        """Catalog GPU id, or a GPU that only appears in price rows (e.g. B300) matched case-insensitively."""
        try:
            return self.gpu_id(name)
        except CatalogError:
            for p in self.prices:
                if p.gpu.lower() == str(name).lower():
                    return p.gpu
            raise

    def prices_for(self, gpu_id: str, provider: str | None = None) -> list[Price]:
        gid = self._price_gpu_id(gpu_id)
        slug = self.provider_id(provider) if provider is not None else None
        return [p for p in self.prices if p.gpu == gid and (slug is None or p.provider == slug)]

    def best_price(self, gpu_id: str, mode: str, provider: str | None = None) -> Price | None:
        """The cheapest row that has a price for `mode` (on_demand, spot, reserved); None when none has."""
        m = _check_mode(mode)
        rows = [p for p in self.prices_for(gpu_id, provider) if p.price(m) is not None]
        if not rows:
            return None
        return min(rows, key=lambda p: p.price(m) or 0.0)

    def priced_gpus(self) -> list[str]:
        """Catalog GPU ids that have at least one price row."""
        have = {p.gpu for p in self.prices}
        return [gid for gid in self.gpus if gid in have]

    # ---- storage and egress

    def storage_price(self, provider: str | None, tier: str) -> StoragePrice | None:
        """The provider's main price for a tier; where it has none, the default provider's (AWS for most)."""
        if tier not in STORAGE_TIERS:
            raise CatalogError(f"storage tier '{tier}' is not one of {', '.join(STORAGE_TIERS)}")
        if provider is not None:
            slug = self.provider_id(provider)
            for s in self.storage:
                if s.provider == slug and s.tier == tier:
                    return s
        default_provider, service = DEFAULT_STORAGE[tier]
        for s in self.storage:
            if s.provider == default_provider and s.service == service:
                return s
        return None

    def egress_price(self, provider: str) -> EgressPrice | None:
        slug = self.provider_id(provider)
        return next((e for e in self.egress if e.provider == slug), None)


# --------------------------------------------------------------------------- shipped data → records

_GPU_FIGURES = {
    "release_year": "release_year",
    "memory_bandwidth_gbs": "memory_bandwidth_gbs",
    "bf16_dense_tflops": "bf16_tflops",
    "fp16_dense_tflops": "fp16_tflops",
    "fp8_dense_tflops": "fp8_tflops",
    "tf32_dense_tflops": "tf32_tflops",
    "fp32_tflops": "fp32_tflops",
    "interconnect_bw_gbs": "interconnect_bw_gbs",
    "intra_node_gbs": "intra_node_gbs",
    "nvlink_pair_gbs": "nvlink_pair_gbs",
    "pcie_gen": "pcie_gen",
    "tdp_w": "tdp_w",
}


def _gpu_from_sheet(g: Mapping[str, Any]) -> GPU:
    """A gpus.json entry ({value, source_url, note} per figure) → GPU with a field → source map."""
    fields: dict[str, Any] = {}
    sources: dict[str, str] = {}
    notes: dict[str, str] = {}

    def take(sheet_key: str, field: str) -> Any:
        fig = g.get(sheet_key)
        if not isinstance(fig, Mapping):
            return None
        if fig.get("source_url"):
            sources[field] = fig["source_url"]
        if fig.get("note"):
            notes[field] = fig["note"]
        return fig.get("value")

    for sheet_key, field in _GPU_FIGURES.items():
        fields[field] = take(sheet_key, field)
    memory_gb = take("memory_gb", "memory_bytes")
    low = take("street_price_usd_low", "street_price_usd")
    high = g.get("street_price_usd_high", {}).get("value")
    return GPU(
        id=g["id"], name=g["name"], vendor=g.get("vendor", ""), architecture=g.get("architecture", ""),
        form_factor=g.get("form_factor"), memory_type=g.get("memory_type"),
        memory_bytes=round(memory_gb * 1e9), interconnect=g.get("interconnect"),
        intra_node_link=g["intra_node_link"],
        street_price_usd=None if low is None else (float(low), float(high if high is not None else low)),
        sources=sources, notes=notes, caveat=g.get("caveat"), **fields,
    )


def _price_from_sheet(r: Mapping[str, Any]) -> Price:
    return Price(
        provider=r["provider"], provider_name=r["provider_name"], instance=r["instance"], gpu=r["gpu"],
        gpus_per_instance=r["gpus_per_instance"], on_demand=r["on_demand"], spot=r["spot"],
        reserved=r.get("reserved"), region=r.get("region"), date=r.get("date_seen"), source=r["source_url"],
        confidence=r.get("confidence") or "normal", notes=r.get("notes") or "",
        pricing_model=r.get("pricing_model"), snapshot=r.get("snapshot"), tier=r.get("tier"),
    )


def _provider_from_sheet(p: Mapping[str, Any]) -> Provider:
    c = p.get("commitment_discount") or {}
    return Provider(
        id=p["id"], name=p["name"], commitment_discount=c.get("value"), commitment_term=c.get("term"),
        commitment_source=c.get("source_url"), commitment_date=c.get("date_seen"),
        commitment_note=c.get("note"),
    )


def _storage_from_sheet(s: Mapping[str, Any]) -> StoragePrice:
    return StoragePrice(
        provider=s["provider"], provider_name=s["provider_name"], service=s["service"], tier=s["tier"],
        region=s.get("region"), usd_per_gb_month=s["usd_per_gb_month"], put_per_1000=s.get("put_per_1000"),
        get_per_1000=s.get("get_per_1000"), mb_s_per_tib=s.get("mb_s_per_tib"), date=s.get("date_seen"),
        source=s["source_url"], confidence=s.get("confidence") or "normal", note=s.get("note"),
    )


def _egress_from_sheet(e: Mapping[str, Any]) -> EgressPrice:
    return EgressPrice(
        provider=e["provider"], provider_name=e["provider_name"], service=e["service"],
        usd_per_gb=e["usd_per_gb"], tiers=tuple(EgressTier(**t) for t in e["tiers"]),
        free_gb_per_month=e.get("free_gb_per_month") or 0.0, date=e.get("date_seen"), source=e["source_url"],
        note=e.get("note"),
    )


def _model_from_sheet(m: Mapping[str, Any]) -> ModelPreset:
    params_src = m.get("published_params_source") or {}
    return ModelPreset(
        id=m["id"], hf_repo=m["hf_repo"], config=dict(m["config"]),
        published_params=m.get("published_params"), published_active_params=m.get("published_active_params"),
        published_non_embedding_params=m.get("published_non_embedding_params"),
        published_params_breakdown=m.get("published_params_breakdown"), source_url=m["source_url"],
        params_source_url=params_src.get("url"), params_quote=params_src.get("quote"),
        config_provenance=m.get("config_provenance") or "", uncertain=tuple(m.get("uncertain") or ()),
        attention_layer_pattern=m.get("attention_layer_pattern"), notes=m.get("notes") or "",
    )


def _with_reserved(prices: Iterable[Price], providers: Mapping[str, Provider]) -> list[Price]:
    """reserved = on_demand × (1 − provider commitment discount), for plain on-demand rows without one."""
    out = []
    for p in prices:
        prov = providers.get(p.provider)
        if (prov is not None and prov.commitment_discount is not None and p.reserved is None
                and p.on_demand is not None and p.pricing_model is None):
            d = prov.commitment_discount
            basis = (f"reserved = on_demand x (1 - {d:g}), {prov.name} {prov.commitment_term or 'commitment'}"
                     f" discount ({prov.commitment_source})")
            p = p.model_copy(update={"reserved": round(p.on_demand * (1 - d), 6), "reserved_discount": d,
                                     "reserved_basis": basis})
        out.append(p)
    return out


@functools.lru_cache(maxsize=1)
def shipped_catalog() -> Catalog:
    """The catalog as shipped in resources/catalog (parsed once per process)."""
    gpus_doc = read_json("catalog", "gpus.json")
    prices_doc = read_json("catalog", "prices.json")
    models_doc = read_json("catalog", "models.json")
    providers = [_provider_from_sheet(p) for p in prices_doc["providers"]]
    by_id = {p.id: p for p in providers}
    return Catalog(
        gpus=[_gpu_from_sheet(g) for g in gpus_doc["gpus"]],
        models=[_model_from_sheet(m) for m in models_doc["models"]],
        prices=_with_reserved((_price_from_sheet(r) for r in prices_doc["rows"]), by_id),
        storage=[_storage_from_sheet(s) for s in prices_doc["storage"]],
        egress=[_egress_from_sheet(e) for e in prices_doc["egress"]],
        providers=providers,
        retrieved=gpus_doc["retrieved"],
        model_aliases=models_doc.get("aliases", {}),
    )


# --------------------------------------------------------------------------- user overrides


def default_user_dir() -> Path:
    """Where the user's override files live (core.paths.config_dir)."""
    return config_dir()


def _read_user_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CatalogError(f"user override file {path} is not UTF-8 text") from None
    except OSError as exc:
        raise CatalogError(f"user override file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(
            f"user override file {path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def _entries(data: Any, path: Path, what: str) -> list[dict[str, Any]]:
    if not isinstance(data, list):
        raise CatalogError(f"user override file {path} must be a JSON list of {what} objects")
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise CatalogError(f"user override file {path}: entry {i} is not a JSON object")
    return data


_GPU_USER_KEYS = set(GPU.model_fields) | {"memory_gb", "source"}


def _existing_gpu(merged: Mapping[str, GPU], index_of: Catalog, name: str) -> str | None:
    """The id a user entry refers to: a catalog name or alias, or a GPU added earlier in the same file."""
    try:
        gid = index_of.gpu_id(name)
    except CatalogError:
        gid = None
    if gid is not None and gid in merged:
        return gid
    key = _gpu_key(name)
    return next((g for g in merged if _gpu_key(g) == key), None)


def _merge_gpus(gpus: dict[str, GPU], index_of: Catalog, data: Any, path: Path) -> dict[str, GPU]:
    """Add new GPUs or override fields of existing ones; every overridden figure gets the user's source."""
    merged = dict(gpus)
    for i, entry in enumerate(_entries(data, path, "GPU")):
        unknown = sorted(set(entry) - _GPU_USER_KEYS)
        if unknown:
            raise CatalogError(
                f"user override file {path}: entry {i} has unknown keys {', '.join(unknown)}"
                " (use GPU field names such as memory_gb, bf16_tflops, intra_node_gbs, source)"
            )
        if not isinstance(entry.get("id"), str) or not entry["id"].strip():
            raise CatalogError(f"user override file {path}: entry {i} needs an 'id' (a GPU name)")
        values = dict(entry)
        source = str(values.pop("source", f"user override ({path})"))
        if "memory_gb" in values:
            mem = values.pop("memory_gb")
            if not isinstance(mem, int | float) or isinstance(mem, bool):
                raise CatalogError(f"user override file {path}: entry {i} memory_gb must be a number")
            values["memory_bytes"] = round(mem * 1e9)
        gid = _existing_gpu(merged, index_of, values["id"])
        if gid is not None:
            base: dict[str, Any] = merged[gid].model_dump()
            values["id"] = gid
        else:
            gid = str(values["id"]).strip()
            values["id"] = gid
            if "memory_bytes" not in values:
                raise CatalogError(
                    f"user override file {path}: entry {i} ({gid}) is a new GPU and needs memory_gb"
                )
            gen = values.get("pcie_gen", 4)
            from core.catalog.network import PCIE_ACHIEVED_GBS

            gbs = PCIE_ACHIEVED_GBS.get(gen, 25.0) if isinstance(gen, int) else 25.0
            base = {"name": gid, "intra_node_link": "pcie", "intra_node_gbs": gbs}
            if "intra_node_gbs" not in values:
                base["notes"] = {"intra_node_gbs": f"assumed PCIe Gen{gen} x16 (user GPU without a figure)"}
        sources = dict(base.get("sources") or {})
        for key in values:
            if key not in ("id", "name", "sources", "notes"):
                sources[key] = source
        base.update(values)
        base["sources"] = {**sources, **(values.get("sources") or {})}
        try:
            merged[str(gid)] = GPU.model_validate(base)
        except ValidationError as exc:
            raise CatalogError(f"user override file {path}: entry {i} ({gid}) {validation_message(exc)}") from None
    return merged


_PRICE_SYNONYMS = {"date_seen": "date", "source_url": "source"}


def _merge_prices(cat: Catalog, data: Any, path: Path) -> tuple[list[Price], dict[str, Provider]]:
    """Add user rows, or replace shipped rows with the same provider + instance + GPU."""
    prices = list(cat.prices)
    providers = dict(cat.provider_info)
    for i, entry in enumerate(_entries(data, path, "price")):
        values = {_PRICE_SYNONYMS.get(k, k): v for k, v in entry.items()}
        for key in ("provider", "instance", "gpu"):
            if not isinstance(values.get(key), str) or not values[key].strip():
                raise CatalogError(f"user override file {path}: entry {i} needs '{key}' (text)")
        if all(values.get(k) is None for k in PRICING_MODES):
            raise CatalogError(
                f"user override file {path}: entry {i} needs at least one of on_demand, spot, reserved"
            )
        try:
            slug = cat.provider_id(values["provider"])
        except CatalogError:
            slug = re.sub(r"[^a-z0-9]+", "-", values["provider"].lower()).strip("-") or "user"
        if slug not in providers:
            providers[slug] = Provider(id=slug, name=str(values.get("provider_name") or values["provider"]))
        try:
            gid = cat.gpu_id(values["gpu"])
        except CatalogError as exc:
            raise CatalogError(f"user override file {path}: entry {i} gpu: {exc}") from None
        values.update(provider=slug, gpu=gid)
        values.setdefault("provider_name", providers[slug].name)
        values.setdefault("source", f"user override ({path})")
        try:
            row = Price.model_validate(values)
        except ValidationError as exc:
            raise CatalogError(f"user override file {path}: entry {i} {validation_message(exc)}") from None
        same = (row.provider, row.instance.lower(), row.gpu)
        prices = [p for p in prices if (p.provider, p.instance.lower(), p.gpu) != same]
        prices.append(row)
    return prices, providers


def _apply_discounts(cat: Catalog, prices: list[Price], data: Any, path: Path) -> list[Price]:
    """{provider: fraction}: every price of that provider × (1 − fraction), noted on the row."""
    if not isinstance(data, dict):
        raise CatalogError(f"user override file {path} must be a JSON object like {{\"aws\": 0.15}}")
    factors: dict[str, float] = {}
    for name, frac in data.items():
        try:
            slug = cat.provider_id(name)
        except CatalogError as exc:
            raise CatalogError(f"user override file {path}: {exc}") from None
        if not isinstance(frac, int | float) or isinstance(frac, bool) or not 0 <= frac < 1:
            raise CatalogError(
                f"user override file {path}: discount for '{name}' must be a fraction from 0 to below 1"
                f" (0.15 = 15% off), got {frac!r}"
            )
        factors[slug] = float(frac)
    out = []
    for p in prices:
        d = factors.get(p.provider)
        if d:
            update: dict[str, Any] = {k: (v * (1 - d) if (v := getattr(p, k)) is not None else None)
                                      for k in PRICING_MODES}
            update["user_discount"] = d
            update["notes"] = f"{p.notes} [user discount {d:.0%} applied from {path}]".strip()
            p = p.model_copy(update=update)
        out.append(p)
    return out


def _merge(base: Catalog, user_dir: Path, files: Mapping[str, Any]) -> Catalog:
    """Apply parsed override documents (keyed by file name) to `base`."""
    gpus = base.gpus
    if "gpus.json" in files:
        gpus = _merge_gpus(base.gpus, base, files["gpus.json"], user_dir / "gpus.json")
    staged = Catalog(gpus=gpus.values(), models=(), prices=base.prices, storage=(), egress=(),
                     providers=base.provider_info.values(), retrieved=base.retrieved)
    prices, providers = list(base.prices), dict(base.provider_info)
    if "prices.json" in files:
        prices, providers = _merge_prices(staged, files["prices.json"], user_dir / "prices.json")
        prices = _with_reserved(prices, providers)
    if "discounts.json" in files:
        staged = Catalog(gpus=(), models=(), prices=(), storage=(), egress=(), providers=providers.values(),
                         retrieved=base.retrieved)
        prices = _apply_discounts(staged, prices, files["discounts.json"], user_dir / "discounts.json")
    return Catalog(
        gpus=gpus.values(), models=base.models.values(), prices=prices, storage=base.storage,
        egress=base.egress, providers=providers.values(), retrieved=base.retrieved,
        model_aliases=base.model_aliases,
        user_dir=user_dir,
    )


@functools.lru_cache(maxsize=8)
def _merged_cached(user_dir: str, signature: tuple[tuple[str, int, int, int], ...]) -> Catalog:
    del signature  # only part of the cache key: any change to the files reloads them
    folder = Path(user_dir)
    files = {name: _read_user_file(folder / name) for name in USER_FILES if (folder / name).is_file()}
    return _merge(shipped_catalog(), folder, files)


def load_catalog(user_dir: Path | None = None) -> Catalog:
    """The shipped catalog merged with the override files in `user_dir` (default: default_user_dir())."""
    folder = Path(user_dir) if user_dir is not None else default_user_dir()
    if folder.exists() and not folder.is_dir():
        raise CatalogError(f"user override folder {folder} is a file, not a folder")
    signature = []
    for name in USER_FILES:
        path = folder / name
        if path.is_file():
            st = path.stat()
            signature.append((name, st.st_mtime_ns, st.st_size, st.st_ino))
    if not signature:
        return shipped_catalog()
    return _merged_cached(str(folder.resolve()), tuple(signature))


def _write_atomic(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_user_overrides(
    user_dir: Path | None,
    *,
    gpus: list[dict[str, Any]] | None = None,
    prices: list[dict[str, Any]] | None = None,
    discounts: dict[str, float] | None = None,
) -> None:
    """Write the given override files atomically (None leaves a file as it is). The result is validated
    against the shipped catalog first, so a bad override raises CatalogError and nothing is written."""
    folder = Path(user_dir) if user_dir is not None else default_user_dir()
    new = {"gpus.json": gpus, "prices.json": prices, "discounts.json": discounts}
    files: dict[str, Any] = {}
    for name in USER_FILES:
        if new[name] is not None:
            try:
                files[name] = json.loads(json.dumps(new[name]))
            except (TypeError, ValueError) as exc:
                raise CatalogError(f"overrides for {name} cannot be written as JSON: {exc}") from None
        elif (folder / name).is_file():
            files[name] = _read_user_file(folder / name)
    _merge(shipped_catalog(), folder, files)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in new.items():
        if data is not None:
            _write_atomic(folder / name, files[name])
