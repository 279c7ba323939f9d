"""dstack's gpuhunt catalog (github.com/dstackai/gpuhunt) -> offers.

gpuhunt publishes one catalog per provider (src/gpuhunt/_internal/catalog.py, CATALOG_URL and
_get_latest_version): ``{base}/{provider}/version`` holds the latest version, ``YYYYMMDD-<run>``
(the date the catalog was collected, .github/scripts/publish_catalog.sh), and
``{base}/{provider}/{version}/catalog.zip`` holds ``{provider}.csv`` with the columns of
storage.CATALOG_V2_FIELDS: instance_name, location, price (USD per instance-hour), cpu, memory,
gpu_count, gpu_name, gpu_memory (GB per GPU), spot, disk_size, gpu_vendor, flags, cpu_arch,
provider_data.

Pricing model: ``spot`` True -> spot; Vast.ai offers, and RunPod Community Cloud offers (gpuhunt's
RunPod provider queries Community Cloud by country code and Secure Cloud by data-centre id, so a
two-letter location is a community host; providers/runpod.py ``_make_offers``) -> marketplace; the
rest -> on_demand. Per (instance, pricing model) the cheapest location is kept.
"""

from __future__ import annotations

import re

from core.catalog.feeds.csv_rows import number, rows
from core.catalog.feeds.gpu_names import resolve_gpu
from core.catalog.feeds.offer import (
    MARKETPLACE,
    ON_DEMAND,
    SPOT,
    Offer,
    ParseResult,
    cheapest_per_region,
)
from core.catalog.feeds.screen import screen
from core.catalog.feeds.zip_member import read_member
from core.catalog.lookup import Catalog
from core.catalog.records import CatalogError

DEFAULT_BASE_URL = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3"
REQUIRED = ("instance_name", "location", "price", "gpu_count", "gpu_name", "spot")
# OFFLINE_PROVIDERS
PROVIDERS = ("aws", "azure", "gcp", "lambdalabs", "nebius", "oci", "runpod", "verda", "cloudrift")
MARKETPLACE_PROVIDERS = ("vastai",)
_SLUGS = {"lambdalabs": "lambda"}  # gpuhunt's provider names that differ from the catalog's slugs
_VERSION = re.compile(r"^(\d{4})(\d{2})(\d{2})-\d+$")


def version_date(version: str) -> str | None:
    """YYYY-MM-DD of a gpuhunt catalog version (``20260818-42``), None when it has no date in it."""
    m = _VERSION.match(version.strip())
    return f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else None


def csv_from_zip(data: bytes, provider: str, where: str) -> str:
    """The ``{provider}.csv`` inside a published catalog.zip, inflated within bounds
    (zip_member.read_member); CatalogError when the archive is damaged, holds no CSV or inflates
    past them."""

    def pick(names: list[str]) -> str:
        name = (
            f"{provider}.csv"
            if f"{provider}.csv" in names
            else next((n for n in names if n.endswith(".csv")), None)
        )
        if name is None:
            raise CatalogError(
                f"{where} holds no CSV file (it has {', '.join(names[:5]) or 'nothing'})"
            )
        return name

    try:
        return read_member(data, pick, where).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{where} is not a readable catalog.zip: {exc}") from None


def _bool(value: str, where: str, line: int) -> bool:
    low = value.lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0", ""):
        return False
    raise CatalogError(f"{where} line {line}: spot '{value[:20]}' is not True or False")


def _is_marketplace(provider: str, location: str) -> bool:
    if provider in MARKETPLACE_PROVIDERS:
        return True
    return provider == "runpod" and len(location) == 2 and location.isalpha() and location.isupper()


def parse_catalog_csv(
    text: str,
    *,
    provider: str,
    catalog: Catalog,
    source: str,
    fetched: str | None,
    date: str | None,
) -> ParseResult:
    """Offers of one gpuhunt provider CSV (`provider` as gpuhunt names it: the file name, e.g.
    lambdalabs)."""
    try:
        slug = catalog.provider_id(_SLUGS.get(provider, provider))
        provider_name = catalog.provider(slug).name
    except CatalogError:
        slug, provider_name = _SLUGS.get(provider, provider), provider
    result = ParseResult(providers={slug})
    offers: list[Offer] = []
    for line, row in rows(text, source, REQUIRED):
        result.rows_read += 1
        price = number(row["price"], source, line, "price")
        count = number(row["gpu_count"], source, line, "gpu_count")
        memory = number(row.get("gpu_memory", ""), source, line, "gpu_memory")
        spot = _bool(row["spot"], source, line)
        name = row["gpu_name"]
        if not name or not count:
            result.skipped["no GPU"] += 1
            continue
        if count != int(count):
            result.skipped["fractional GPU"] += 1
            continue
        if price is None:
            result.skipped["no price"] += 1
            continue
        vendor = row.get("gpu_vendor", "").lower()
        if vendor in ("google", "tpu") or name.lower().startswith("tpu"):
            result.unknown_gpus[name] += 1
            continue
        instance, location = row["instance_name"], row["location"] or "any"
        gpu = resolve_gpu(catalog, name, memory, hints=(instance,))
        if gpu is None:
            result.unknown_gpus[name] += 1
            continue
        n = int(count)
        model = (
            SPOT if spot else (MARKETPLACE if _is_marketplace(provider, location) else ON_DEMAND)
        )
        offers.append(
            Offer(
                provider=slug,
                provider_name=provider_name,
                instance=instance,
                gpu=gpu,
                gpus_per_instance=n,
                pricing_model=model,
                usd_per_gpu_hour=price / n,
                region=location,
                source=source,
                origin="refresh:gpuhunt",
                date=date,
                fetched=fetched,
                notes=f"gpuhunt {provider}.csv: {name} x{n}, instance ${price:g}/h, cheapest "
                "location of the file",
            )
        )
    result.offers = cheapest_per_region(screen(offers, catalog, result.skipped))
    return result
