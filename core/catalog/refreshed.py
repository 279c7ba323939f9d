"""The refreshed prices as catalog records, and how they merge over the shipped ones.

``refreshed_prices`` reads ``<config dir>/refreshed_prices.json`` (written by :mod:`core.catalog.refresh`);
``merge_refreshed`` puts its records over the shipped price list: a refreshed record replaces the shipped
record of the same provider, instance and pricing model in the same region (a record priced for region "any"
matches every region), and the rest are added. The user's own prices.json is merged after this and so wins
over both (core.catalog.overrides).

The rows are written in the one-price-per-record shape (``pricing_model`` + ``usd_per_gpu_hour``). While
``Price`` still has one column per pricing mode (on_demand / spot / reserved in one row), a row becomes that
shape's record, its origin and fetch date kept in the notes; both shapes merge by the same rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.catalog.feeds.offer import MARKETPLACE
from core.catalog.records import CatalogError, Price, Provider
from core.catalog.refreshed_file import FILE_NAME, read_document
from core.paths import config_dir
from core.validation import validation_message

_USD = "usd_per_gpu_hour"  # the one-price field, read by name while the older shape has none
ONE_PRICE_PER_RECORD = _USD in Price.model_fields
_COLUMNS = ("on_demand", "spot", "reserved")  # the per-mode columns of the older Price shape


def _as_column_record(row: dict[str, Any]) -> dict[str, Any]:
    """A one-price row in the older shape: its price in the column of its mode (marketplace: on_demand,
    marked by pricing_model), origin and fetched date kept in the notes."""
    model = str(row.get("pricing_model"))
    value = row.get("usd_per_gpu_hour")
    keys = ("provider", "provider_name", "instance", "gpu", "gpus_per_instance", "region", "date", "source")
    out: dict[str, Any] = {k: row[k] for k in keys if k in row}
    out["spot" if model == "spot" else "reserved" if model == "reserved" else "on_demand"] = value
    if model not in _COLUMNS:
        out["pricing_model"] = model
    out["notes"] = f"{row.get('notes', '')} [{row.get('origin', 'refresh')}, fetched {row.get('fetched')}]".strip()
    return out


def price_from_row(row: Any, where: str) -> Price:
    """One written row as a Price; CatalogError naming `where` (the file and row) when it is not one."""
    if not isinstance(row, dict):
        raise CatalogError(f"{where} is not an object")
    try:
        return Price.model_validate(row if ONE_PRICE_PER_RECORD else _as_column_record(row))
    except ValidationError as exc:
        raise CatalogError(f"{where}: {validation_message(exc)}") from None


def refreshed_prices(user_dir: Path | None = None) -> list[Price]:
    """The refreshed price records; [] when no refresh was made. A damaged file raises CatalogError naming
    it and is left where and as it is."""
    path = (Path(user_dir) if user_dir is not None else config_dir()) / FILE_NAME
    document = read_document(path)
    if document is None:
        return []
    return [price_from_row(row, f"refreshed prices file {path} row {i}") for i, row in enumerate(document["rows"])]


def pricing_models(p: Price) -> dict[str, float]:
    """{pricing model: USD per GPU-hour} a record holds: one entry, or one per filled column (older shape)."""
    if ONE_PRICE_PER_RECORD:
        return {str(p.pricing_model): float(getattr(p, _USD))}
    out = {m: float(v) for m in _COLUMNS if (v := getattr(p, m, None)) is not None}
    if p.pricing_model == MARKETPLACE and "on_demand" in out:
        out[MARKETPLACE] = out.pop("on_demand")
    return out


def _without(p: Price, models: set[str]) -> Price | None:
    """`p` less the prices of `models`; None when nothing is left of it."""
    if not models:
        return p
    if ONE_PRICE_PER_RECORD:
        return None if str(p.pricing_model) in models else p
    columns = {"on_demand" if m == MARKETPLACE else m for m in models} & set(_COLUMNS)
    left = {m for m in _COLUMNS if getattr(p, m, None) is not None} - columns
    return p.model_copy(update={c: None for c in columns}) if left else None


def _region(p: Price) -> str:
    return (p.region or "any").strip().lower()


def merge_refreshed(shipped: list[Price], refreshed: list[Price]) -> list[Price]:
    """Shipped records less those a refreshed record replaces, then every refreshed record."""
    replaced: dict[tuple[str, str, str], set[str]] = {}
    for r in refreshed:
        for model in pricing_models(r):
            replaced.setdefault((r.provider, r.instance.strip().lower(), model), set()).add(_region(r))
    out: list[Price] = []
    for p in shipped:
        region = _region(p)
        gone = set()
        for model in pricing_models(p):
            regions = replaced.get((p.provider, p.instance.strip().lower(), model), set())
            if region in regions or "any" in regions or (regions and region == "any"):
                gone.add(model)
        kept = _without(p, gone)
        if kept is not None:
            out.append(kept)
    return out + list(refreshed)


def with_refreshed(prices: list[Price], providers: dict[str, Provider],
                   user_dir: Path) -> tuple[list[Price], dict[str, Provider]]:
    """The hook core.catalog.overrides calls before the user's prices.json: shipped prices merged with the
    refreshed ones, and a provider record for each provider only a refresh knows (gpuhunt's verda, oci...)."""
    refreshed = refreshed_prices(user_dir)
    if not refreshed:
        return prices, providers
    known = dict(providers)
    for r in refreshed:
        known.setdefault(r.provider, Provider(id=r.provider, name=r.provider_name))
    return merge_refreshed(prices, refreshed), known
