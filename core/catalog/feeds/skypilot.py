"""SkyPilot's catalog (github.com/skypilot-org/skypilot-catalog, ``catalogs/v8/<cloud>/vms.csv``) ->
offers.

One vms.csv row is one instance type in one region (AWS: one availability zone) with its on-demand
``Price`` and, where the cloud sells it, its ``SpotPrice``. Each becomes one offer per pricing
model; the per-GPU price is the instance price / ``AcceleratorCount``; per (instance, pricing model)
the cheapest region is kept.

Columns differ by cloud and so are read by name (AWS has AvailabilityZone and Arch; Lambda has no
zone and an empty SpotPrice; RunPod has SpotPrice for interruptible pods). Rows skipped, each
counted by reason:

- no accelerator (CPU instances), or a fractional ``AcceleratorCount`` (Azure's GPU slices): a plan
  rents whole GPUs;
- an empty ``InstanceType``: GCP's vms.csv prices accelerators apart from the host VM they attach
  to, and SkyPilot's own reader (sky/catalog/gcp_catalog.py) adds the host's price to the
  accelerator's; tuneplan does not re-create that pairing, so GCP accelerator rows are skipped
  (gpuhunt's GCP catalog prices whole instances instead);
- an accelerator the catalog does not know (counted by name, never guessed).

RunPod's instance names end in ``_SECURE`` (Secure Cloud: the provider's own list price, on_demand);
a name ending in ``_COMMUNITY`` would be Community Cloud, a marketplace of peer hosts.
"""

from __future__ import annotations

import ast
from typing import Any

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
from core.catalog.lookup import Catalog
from core.catalog.records import CatalogError

REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
CLOUDS = ("aws", "azure", "lambda", "runpod")  # read and checked; gcp: see the module docstring
UNSUPPORTED_CLOUDS = {
    "gcp": "GCP's vms.csv prices accelerators apart from their host VMs, and tuneplan does not "
    "pair them (use the gpuhunt source for GCP)",
}


def _gpu_info(cell: str) -> tuple[str, float | None]:
    """(GPU name, per-GPU memory in GiB) from GpuInfo, a Python-literal dict; ('', None) when
    absent.

    SkyPilot's RunPod rows state SizeInMiB as the GB figure (80 for an 80 GB card), so a figure
    under 1024 MiB is no GPU's memory and is ignored rather than read in another unit."""
    if not cell:
        return "", None
    try:
        info: Any = ast.literal_eval(cell)
        gpu = info["Gpus"][0]
        name = str(gpu.get("Name") or "")
        mib = float(gpu.get("MemoryInfo", {}).get("SizeInMiB") or 0)
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError, AttributeError):
        return "", None
    return name, (mib / 1024 if mib >= 1024 else None)


def parse_vms_csv(
    text: str, *, cloud: str, catalog: Catalog, source: str, fetched: str | None, date: str | None
) -> ParseResult:
    """Offers of one vms.csv. `source` (the URL or file) names the file in errors and on each
    offer."""
    if cloud in UNSUPPORTED_CLOUDS:
        raise CatalogError(
            f"{source}: SkyPilot cloud '{cloud}' is not read: {UNSUPPORTED_CLOUDS[cloud]}"
        )
    try:
        provider_name = catalog.provider(cloud).name
    except CatalogError:
        provider_name = cloud
    result = ParseResult(providers={cloud})
    offers: list[Offer] = []
    for line, row in rows(text, source, REQUIRED):
        result.rows_read += 1
        accel = row["AcceleratorName"]
        count = number(row["AcceleratorCount"], source, line, "AcceleratorCount")
        price = number(row["Price"], source, line, "Price")
        spot = number(row.get("SpotPrice", ""), source, line, "SpotPrice")
        if not accel or not count:
            result.skipped["no GPU"] += 1
            continue
        if not row["InstanceType"]:
            result.skipped["accelerator priced apart from its host VM"] += 1
            continue
        if count != int(count):
            result.skipped["fractional GPU"] += 1
            continue
        info_name, info_gib = _gpu_info(row.get("GpuInfo", ""))
        instance = row["InstanceType"]
        gpu = resolve_gpu(catalog, accel, info_gib, hints=(info_name, instance))
        if gpu is None:
            result.unknown_gpus[accel] += 1
            continue
        n = int(count)
        region = row["Region"] or "any"
        listed = MARKETPLACE if instance.upper().endswith("_COMMUNITY") else ON_DEMAND
        for model, usd in ((listed, price), (SPOT, spot)):
            if usd is None:
                continue
            offers.append(
                Offer(
                    provider=cloud,
                    provider_name=provider_name,
                    instance=instance,
                    gpu=gpu,
                    gpus_per_instance=n,
                    pricing_model=model,
                    usd_per_gpu_hour=usd / n,
                    region=region,
                    source=source,
                    origin="refresh:skypilot",
                    date=date,
                    fetched=fetched,
                    notes=f"SkyPilot vms.csv: {accel} x{n}, instance ${usd:g}/h, cheapest region "
                    "of the file",
                )
            )
        if price is None and spot is None:
            result.skipped["no price"] += 1
    result.offers = cheapest_per_region(screen(offers, catalog, result.skipped))
    return result
