"""Reading the shipped catalog: ``resources/catalog/*.json`` (through core.resources) into catalog
records.

The sheets carry every figure with its source and date (``{value, source_url, note}``); this module
turns them into records with a field → source map, derives reserved prices from providers'
commitment discounts, and parses the whole catalog once per process.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from core.catalog.lookup import Catalog
from core.catalog.records import (
    GPU,
    EgressPrice,
    EgressTier,
    ModelPreset,
    Price,
    PricingModel,
    Provider,
    StoragePrice,
)
from core.resources import read_json

# --------------------------------------------------------------------------- shipped data → records

_GPU_FIGURES = {
    "release_year": "release_year",
    "memory_bandwidth_gbs": "memory_bandwidth_gbs",
    "bf16_dense_tflops": "bf16_tflops",
    "fp16_dense_tflops": "fp16_tflops",
    "fp8_dense_tflops": "fp8_tflops",
    "tf32_dense_tflops": "tf32_tflops",
    "fp32_tflops": "fp32_tflops",
    "matmul_efficiency_bf16": "matmul_efficiency_bf16",
    "matmul_efficiency_fp8": "matmul_efficiency_fp8",
    "interconnect_bw_gbs": "interconnect_bw_gbs",
    "intra_node_gbs": "intra_node_gbs",
    "nvlink_pair_gbs": "nvlink_pair_gbs",
    "nvlink_domain_gpus": "nvlink_domain_gpus",
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
        id=g["id"],
        name=g["name"],
        vendor=g.get("vendor", ""),
        architecture=g.get("architecture", ""),
        form_factor=g.get("form_factor"),
        memory_type=g.get("memory_type"),
        memory_bytes=round(memory_gb * 1e9),
        interconnect=g.get("interconnect"),
        intra_node_link=g["intra_node_link"],
        street_price_usd=None
        if low is None
        else (float(low), float(high if high is not None else low)),
        sources=sources,
        notes=notes,
        caveat=g.get("caveat"),
        **fields,
    )


def _price_from_sheet(r: Mapping[str, Any], read: str | None) -> Price:
    """One sheet row; `read` is the date the sheet was compiled from its sources (its `retrieved`):
    every row has that reading date as `fetched`, beside the date its source gives (`date`, None
    where the source gives none)."""
    return Price(
        provider=r["provider"],
        provider_name=r["provider_name"],
        instance=r["instance"],
        gpu=r["gpu"],
        gpus_per_instance=r["gpus_per_instance"],
        gpu_counts=tuple(r.get("gpu_counts") or ()),
        pricing_model=r["pricing_model"],
        usd_per_gpu_hour=r["usd_per_gpu_hour"],
        region=r.get("region") or "any",
        term=r.get("term"),
        upfront=r.get("upfront"),
        date=r.get("date_seen"),
        fetched=r.get("fetched") or read,
        source=r["source_url"],
        confidence=r.get("confidence") or "normal",
        notes=r.get("notes") or "",
        snapshot=r.get("snapshot"),
        tier=r.get("tier"),
    )


def _provider_from_sheet(p: Mapping[str, Any]) -> Provider:
    c = p.get("commitment_discount") or {}
    return Provider(
        id=p["id"],
        name=p["name"],
        commitment_discount=c.get("value"),
        commitment_term=c.get("term"),
        commitment_source=c.get("source_url"),
        commitment_date=c.get("date_seen"),
        commitment_note=c.get("note"),
    )


def _storage_from_sheet(s: Mapping[str, Any]) -> StoragePrice:
    return StoragePrice(
        provider=s["provider"],
        provider_name=s["provider_name"],
        service=s["service"],
        tier=s["tier"],
        region=s.get("region"),
        usd_per_gb_month=s["usd_per_gb_month"],
        put_per_1000=s.get("put_per_1000"),
        get_per_1000=s.get("get_per_1000"),
        mb_s_per_tib=s.get("mb_s_per_tib"),
        date=s.get("date_seen"),
        source=s["source_url"],
        confidence=s.get("confidence") or "normal",
        note=s.get("note"),
    )


def _egress_from_sheet(e: Mapping[str, Any]) -> EgressPrice:
    return EgressPrice(
        provider=e["provider"],
        provider_name=e["provider_name"],
        service=e["service"],
        usd_per_gb=e["usd_per_gb"],
        tiers=tuple(EgressTier(**t) for t in e["tiers"]),
        free_gb_per_month=e.get("free_gb_per_month") or 0.0,
        date=e.get("date_seen"),
        source=e["source_url"],
        note=e.get("note"),
    )


def _model_from_sheet(m: Mapping[str, Any]) -> ModelPreset:
    params_src = m.get("published_params_source") or {}
    return ModelPreset(
        id=m["id"],
        hf_repo=m["hf_repo"],
        config=dict(m["config"]),
        published_params=m.get("published_params"),
        published_active_params=m.get("published_active_params"),
        published_non_embedding_params=m.get("published_non_embedding_params"),
        published_params_breakdown=m.get("published_params_breakdown"),
        source_url=m["source_url"],
        params_source_url=params_src.get("url"),
        params_quote=params_src.get("quote"),
        config_provenance=m.get("config_provenance") or "",
        uncertain=tuple(m.get("uncertain") or ()),
        attention_layer_pattern=m.get("attention_layer_pattern"),
        notes=m.get("notes") or "",
    )


def with_reserved_prices(prices: Iterable[Price], providers: Mapping[str, Provider]) -> list[Price]:
    """Add reserved = on_demand × (1 − the provider's own published commitment discount) for each
    on-demand record of a provider that publishes one and lists no reservation price for that
    instance.

    Per provider, never across providers: a discount one provider publishes says nothing about
    another's prices, so a provider without its own terms gets no derived reserved price (and
    reserved can never exceed that provider's on-demand price).
    """
    rows = list(prices)
    listed = {
        (p.provider, p.instance, p.gpu) for p in rows if p.pricing_model == PricingModel.reserved
    }
    out: list[Price] = []
    for p in rows:
        out.append(p)
        prov = providers.get(p.provider)
        if (
            prov is None
            or prov.commitment_discount is None
            or p.pricing_model != PricingModel.on_demand
            or (p.provider, p.instance, p.gpu) in listed
        ):
            continue
        d = prov.commitment_discount
        basis = (
            f"reserved = on_demand x (1 - {d:g}), {prov.name} "
            f"{prov.commitment_term or 'commitment'} discount ({prov.commitment_source})"
        )
        out.append(
            p.model_copy(
                update={
                    "pricing_model": PricingModel.reserved,
                    "usd_per_gpu_hour": round(p.usd_per_gpu_hour * (1 - d), 6),
                    "term": prov.commitment_term,
                    "reserved_basis": basis,
                }
            )
        )
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
        prices=with_reserved_prices(
            (_price_from_sheet(r, prices_doc.get("retrieved")) for r in prices_doc["rows"]), by_id
        ),
        storage=[_storage_from_sheet(s) for s in prices_doc["storage"]],
        egress=[_egress_from_sheet(e) for e in prices_doc["egress"]],
        providers=providers,
        retrieved=gpus_doc["retrieved"],
        model_aliases=models_doc.get("aliases", {}),
    )
