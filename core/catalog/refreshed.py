"""The refreshed prices as catalog records, and how they merge over the shipped ones.

``refreshed_prices`` reads ``<data dir>/refreshed_prices.json`` (written by
:mod:`core.catalog.refresh`); ``merge_refreshed`` puts its records over the shipped price list: a
refreshed record replaces the shipped record of the same provider, instance and pricing model in the
same region (a record priced for region "any" matches every region), and the rest are added. The
user's own prices.json is merged after this and so wins over both (core.catalog.overrides).

The rows are catalog price records as they are (one price each: ``pricing_model`` +
``usd_per_gpu_hour``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.catalog.records import CatalogError, Price, Provider
from core.catalog.refreshed_file import read_document, refreshed_file
from core.catalog.user_limits import PriceBands
from core.validation import validation_message


def price_from_row(row: Any, where: str) -> Price:
    """One written row as a Price; CatalogError naming `where` (the file and row) when it is not
    one."""
    if not isinstance(row, dict):
        raise CatalogError(f"{where} is not an object")
    try:
        return Price.model_validate(row)
    except ValidationError as exc:
        raise CatalogError(f"{where}: {validation_message(exc)}") from None


def refreshed_prices(user_dir: Path | None = None) -> list[Price]:
    """The refreshed price records; [] when no refresh was made. A damaged file raises CatalogError
    naming it and is left where and as it is."""
    return prices_in(refreshed_file(user_dir))


def prices_in(path: Path, bands: PriceBands | None = None) -> list[Price]:
    """The price records of the refreshed prices file at `path`; [] when there is none. With
    `bands`, each row must also keep to its GPU's sane band (core.catalog.user_limits), as a feed's
    offer did."""
    document = read_document(path)
    if document is None:
        return []
    out = []
    for i, row in enumerate(document["rows"]):
        where = f"refreshed prices file {path} row {i}"
        price = price_from_row(row, where)
        out.append(bands.check(price, where) if bands is not None else price)
    return out


def _key(p: Price) -> tuple[str, str, str]:
    return p.provider, p.instance.strip().lower(), str(p.pricing_model)


def _region(p: Price) -> str:
    return (p.region or "any").strip().lower()


def merge_refreshed(shipped: list[Price], refreshed: list[Price]) -> list[Price]:
    """Shipped records less those a refreshed record replaces, then every refreshed record."""
    replaced: dict[tuple[str, str, str], set[str]] = {}
    for r in refreshed:
        replaced.setdefault(_key(r), set()).add(_region(r))
    out: list[Price] = []
    for p in shipped:
        regions = replaced.get(_key(p), set())
        region = _region(p)
        if not (region in regions or "any" in regions or (regions and region == "any")):
            out.append(p)
    return out + list(refreshed)


def with_refreshed(
    prices: list[Price], providers: dict[str, Provider], path: Path
) -> tuple[list[Price], dict[str, Provider]]:
    """The hook core.catalog.overrides calls before the user's prices.json: shipped prices merged
    with the refreshed ones, and a provider record for each provider only a refresh knows (gpuhunt's
    verda, oci...)."""
    refreshed = prices_in(path, PriceBands(prices))
    if not refreshed:
        return prices, providers
    known = dict(providers)
    for r in refreshed:
        known.setdefault(r.provider, Provider(id=r.provider, name=r.provider_name))
    return merge_refreshed(prices, refreshed), known
