"""Looking things up in the catalog: the ``Catalog`` class, name normalisation and aliases, best
prices.

Users type GPU, model and provider names loosely (``h100``, ``A100 80GB``, ``Lambda Labs``); the
catalog maps them to canonical ids, suggests close names for typos, and answers price and storage
questions by name.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from core.catalog.records import (
    GPU,
    STORAGE_TIERS,
    CatalogError,
    EgressPrice,
    ModelPreset,
    Price,
    Provider,
    StoragePrice,
    StorageTier,
    check_pricing_mode,
)
from core.validation import printable

# Where a provider has no price for a storage tier the planner still needs a figure: these are the
# usual ones.
DEFAULT_STORAGE: dict[StorageTier, tuple[str, str]] = {
    StorageTier.object: ("aws", "S3 Standard"),
    StorageTier.block: ("aws", "EBS gp3"),
    StorageTier.parallel_fs: ("aws", "FSx for Lustre PERSISTENT_2 SSD 125 MB/s/TiB"),
    StorageTier.local_nvme: ("aws", "EC2 instance store (local NVMe)"),
    StorageTier.nfs: ("runpod", "Network volume (under 1 TB)"),
}


# --------------------------------------------------------------------------- name resolution

_VENDOR_WORDS = re.compile(r"nvidia|tesla|geforce|amd|instinct|intel|habana")

_GPU_ALIASES: dict[str, tuple[str, ...]] = {
    "H100-SXM": ("h100", "h100 sxm5", "h100 sxm 80gb", "h100 80gb", "h100 80gb hbm3", "h100 hbm3"),
    "H100-PCIE": ("h100 pcie 80gb", "h100 80gb pcie"),
    "H100-NVL": ("h100 nvl 94gb",),
    "H200-SXM": ("h200", "h200 141gb", "h200 sxm 141gb"),
    "B200": ("hgx b200", "b200 180gb"),
    "A100-80GB-SXM": (
        "a100",
        "a100-80g",
        "a100-80gb",
        "a100 sxm",
        "a100-sxm4-80gb",
        "a100 sxm 80gb",
    ),
    "A100-40GB-SXM": ("a100-40g", "a100-40gb", "a100-sxm4-40gb", "a100 sxm 40gb"),
    "A100-80GB-PCIE": ("a100 pcie", "a100 80gb pcie", "a100-pcie-80gb"),
    "V100-16GB": ("v100", "v100-16g", "v100-sxm2-16gb", "v100 pcie 16gb"),
    "V100-32GB-SXM2": ("v100-32g", "v100-32gb", "v100-sxm2-32gb"),
    "RTX-4090": ("4090", "rtx 4090"),
    "RTX-6000-ADA": ("rtx 6000 ada", "rtx 6000 ada generation", "6000 ada"),
    "RTX-3090": ("3090", "rtx 3090", "rtx 3090 24gb"),
    "RTX-5090": ("5090", "rtx 5090", "rtx 5090 32gb"),
    "RTX-A4000": ("a4000", "rtx a4000"),
    "RTX-A5000": ("a5000", "rtx a5000"),
    "RTX-A6000": ("a6000", "rtx a6000", "rtx a6000 48gb"),
    "A40": ("a40 48gb",),
    "RTX-PRO-6000": (
        "rtx pro 6000",
        "pro 6000",
        "rtx pro 6000 blackwell",
        "rtx pro 6000 96gb",
        "rtx pro 6000 server edition",
        "rtx pro 6000 blackwell server edition",
        "rtx pro 6000 workstation edition",
        "rtx pro 6000 blackwell workstation edition",
    ),
    "H200-NVL": ("h200 nvl", "h200 nvl 141gb"),
    "GH200": ("gh200 96gb", "gh200 superchip", "grace hopper", "grace hopper superchip"),
    "B300": ("hgx b300", "b300 288gb", "blackwell ultra"),
    "GB200": ("gb200 nvl72", "gb200 superchip", "grace blackwell"),
    "MI300X": ("mi300",),
    "MI325X": ("mi325",),
    "MI355X": ("mi355",),
    "MI250X": ("mi250", "mi250x gcd"),
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


def gpu_key(name: str) -> str:
    """A GPU name without case, punctuation or vendor words, as the GPU index keys it."""
    return re.sub(r"[^a-z0-9]", "", _VENDOR_WORDS.sub("", name.lower()))


def _model_key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def _provider_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _suggest(query: str, index: Mapping[str, str], keyer: Callable[[str], str]) -> list[str]:
    """Close canonical names for a typo: difflib over the normalised keys, mapped back,
    de-duplicated."""
    matches = difflib.get_close_matches(keyer(query), list(index), n=6, cutoff=0.6)
    out: list[str] = []
    for key in matches:
        if index[key] not in out:
            out.append(index[key])
    return out[:3]


def _unknown(what: str, name: str, suggestions: list[str], listing: str) -> CatalogError:
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
    # a name read from a file or typed may hold a line break: echoed escaped, the sentence stays one
    return CatalogError(f"unknown {what} '{printable(name)}'{hint} ({listing} lists all)")


# --------------------------------------------------------------------------- the catalog


class Catalog:
    """Everything the planner looks up by name. Treat it as read-only: the shipped one is shared
    (cached)."""

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
            index[gpu_key(g.id)] = g.id
        for gid, aliases in _GPU_ALIASES.items():
            if gid in self.gpus:
                for alias in aliases:
                    index.setdefault(gpu_key(alias), gid)
        for g in self.gpus.values():
            index.setdefault(gpu_key(g.name), g.id)
        return index

    # ---- GPUs

    def gpu_id(self, name: str) -> str:
        """Canonical id for a GPU name (case, spaces, -, _, vendor words ignored; aliases like h100,
        a100)."""
        found = self._gpu_index.get(gpu_key(str(name)))
        if found is None:
            raise _unknown(
                "GPU", name, _suggest(name, self._gpu_index, gpu_key), "tuneplan catalog gpus"
            )
        return found

    def gpu(self, name: str) -> GPU:
        return self.gpus[self.gpu_id(name)]

    # ---- models

    def model(self, preset_id: str) -> ModelPreset:
        """A model preset by id, alias (mistral-7b) or Hugging Face repo
        (meta-llama/Llama-3.1-8B)."""
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
        """Catalog GPU id, or a GPU that only appears in price rows (e.g. B300) matched
        case-insensitively."""
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

    def best_price(
        self, gpu_id: str, mode: str, provider: str | None = None, *, allow: Iterable[str] = ()
    ) -> Price | None:
        """The cheapest record that prices a plan in `mode` (on_demand, spot, reserved); None when
        none does.

        Serverless records never serve; marketplace and auction ones only when named in `allow`. Per
        GPU-hour: what a node of some size costs (whole instances) is
        core.planner.money.pricing.node_offer's question.
        """
        m = check_pricing_mode(mode)
        allowed = tuple(allow)
        rows = [p for p in self.prices_for(gpu_id, provider) if p.serves(m, allowed)]
        return min(rows, key=lambda p: p.usd_per_gpu_hour, default=None)

    def priced_gpus(self) -> list[str]:
        """Catalog GPU ids that have at least one price row."""
        have = {p.gpu for p in self.prices}
        return [gid for gid in self.gpus if gid in have]

    # ---- storage and egress

    def storage_price(self, provider: str | None, tier: StorageTier | str) -> StoragePrice | None:
        """The provider's main price for a tier; where it has none, the default provider's (AWS for
        most)."""
        if tier not in STORAGE_TIERS:
            raise CatalogError(f"storage tier '{tier}' is not one of {', '.join(STORAGE_TIERS)}")
        if provider is not None:
            slug = self.provider_id(provider)
            for s in self.storage:
                if s.provider == slug and s.tier == tier:
                    return s
        default_provider, service = DEFAULT_STORAGE[StorageTier(tier)]
        for s in self.storage:
            if s.provider == default_provider and s.service == service:
                return s
        return None

    def egress_price(self, provider: str) -> EgressPrice | None:
        slug = self.provider_id(provider)
        return next((e for e in self.egress if e.provider == slug), None)
