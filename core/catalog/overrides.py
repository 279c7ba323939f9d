"""The user's override files in the config folder and how they merge into the shipped catalog.

The user can add GPUs (``gpus.json``), add or replace price rows (``prices.json``) and apply
negotiated discounts (``discounts.json``); the merge happens here so the planner, the CLI and the
GUI all see the same numbers. ``load_catalog`` is the one entry point: the shipped catalog, merged
with whatever override files exist.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.catalog.lookup import Catalog, gpu_key
from core.catalog.network import PCIE_ACHIEVED_GBS
from core.catalog.records import GPU, PRICING_MODELS, PRICING_MODES, CatalogError, Price, Provider
from core.catalog.refreshed import with_refreshed
from core.catalog.refreshed_file import refreshed_file
from core.catalog.shipped import shipped_catalog, with_reserved_prices
from core.catalog.user_limits import PriceBands, check_gpu_entry
from core.json_file import FileReadError, read_json_file, write_json_atomic
from core.paths import config_dir
from core.validation import shown_number, validation_message

USER_FILES = ("gpus.json", "prices.json", "discounts.json")


# --------------------------------------------------------------------------- user overrides


def default_user_dir() -> Path:
    """Where the user's override files live (core.paths.config_dir)."""
    return config_dir()


def _read_user_file(path: Path) -> Any:
    """The parsed file: a regular file of at most 16 MiB, JSON without NaN, nested at most 64 deep
    (core.json_file); CatalogError naming it otherwise (a 100,000-deep list was a
    RecursionError)."""
    try:
        return read_json_file(path)
    except FileReadError as exc:
        said = str(exc)
        raise CatalogError(
            said if said.startswith("cannot") else f"user override file {said}"
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
    """The id a user entry refers to: a catalog name or alias, or a GPU added earlier in the same
    file."""
    try:
        gid = index_of.gpu_id(name)
    except CatalogError:
        gid = None
    if gid is not None and gid in merged:
        return gid
    key = gpu_key(name)
    return next((g for g in merged if gpu_key(g) == key), None)


def _merge_gpus(gpus: dict[str, GPU], index_of: Catalog, data: Any, path: Path) -> dict[str, GPU]:
    """Add new GPUs or override fields of existing ones; every overridden figure gets the user's
    source."""
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
        check_gpu_entry(entry, f"user override file {path}: entry {i}")
        values = dict(entry)
        source = str(values.pop("source", f"user override ({path})"))
        if "memory_gb" in values:
            mem = values.pop("memory_gb")
            if not isinstance(mem, int | float) or isinstance(mem, bool):
                raise CatalogError(
                    f"user override file {path}: entry {i} memory_gb must be a number"
                )
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
            gbs = PCIE_ACHIEVED_GBS.get(gen, 25.0) if isinstance(gen, int) else 25.0
            base = {"name": gid, "intra_node_link": "pcie", "intra_node_gbs": gbs}
            if "intra_node_gbs" not in values:
                base["notes"] = {
                    "intra_node_gbs": f"assumed PCIe Gen{gen} x16 (user GPU without a figure)"
                }
        sources = dict(base.get("sources") or {})
        for key in values:
            if key not in ("id", "name", "sources", "notes"):
                sources[key] = source
        base.update(values)
        base["sources"] = {**sources, **(values.get("sources") or {})}
        try:
            merged[str(gid)] = GPU.model_validate(base)
        except ValidationError as exc:
            raise CatalogError(
                f"user override file {path}: entry {i} ({gid}) {validation_message(exc)}"
            ) from None
    return merged


_PRICE_SYNONYMS = {"date_seen": "date", "source_url": "source"}


def _price_records(values: dict[str, Any], path: Path, i: int) -> list[dict[str, Any]]:
    """One user entry → price records. The older shape (on_demand / spot / reserved columns in one
    entry) still loads, split into one record per price, so files written by earlier versions keep
    working."""
    if "pricing_model" in values or "usd_per_gpu_hour" in values:
        if values.get("usd_per_gpu_hour") is None or values.get("pricing_model") is None:
            raise CatalogError(
                f"user override file {path}: entry {i} needs both 'pricing_model' (one of"
                f" {', '.join(PRICING_MODELS)}) and 'usd_per_gpu_hour'"
            )
        return [values]
    columns = {k: values.pop(k) for k in PRICING_MODES if k in values}
    priced = {k: v for k, v in columns.items() if v is not None}
    if not priced:
        raise CatalogError(
            f"user override file {path}: entry {i} needs 'pricing_model' and 'usd_per_gpu_hour'"
            f" (or at least one of {', '.join(PRICING_MODES)})"
        )
    return [{**values, "pricing_model": k, "usd_per_gpu_hour": v} for k, v in priced.items()]


def _merge_prices(cat: Catalog, data: Any, path: Path) -> tuple[list[Price], dict[str, Provider]]:
    """Add user records, or replace shipped records with the same provider + instance + GPU +
    pricing model."""
    prices = list(cat.prices)
    providers = dict(cat.provider_info)
    bands = PriceBands(cat.prices)
    for i, entry in enumerate(_entries(data, path, "price")):
        values = {_PRICE_SYNONYMS.get(k, k): v for k, v in entry.items()}
        for key in ("provider", "instance", "gpu"):
            if not isinstance(values.get(key), str) or not values[key].strip():
                raise CatalogError(f"user override file {path}: entry {i} needs '{key}' (text)")
        try:
            slug = cat.provider_id(values["provider"])
        except CatalogError:
            slug = re.sub(r"[^a-z0-9]+", "-", values["provider"].lower()).strip("-") or "user"
        if slug not in providers:
            providers[slug] = Provider(
                id=slug, name=str(values.get("provider_name") or values["provider"])
            )
        try:
            gid = cat.gpu_id(values["gpu"])
        except CatalogError as exc:
            raise CatalogError(f"user override file {path}: entry {i} gpu: {exc}") from None
        values.update(provider=slug, gpu=gid)
        values.setdefault("provider_name", providers[slug].name)
        values.setdefault("source", f"user override ({path})")
        values.setdefault("origin", "user")
        for record in _price_records(values, path, i):
            try:
                row = Price.model_validate(record)
            except ValidationError as exc:
                raise CatalogError(
                    f"user override file {path}: entry {i} {validation_message(exc)}"
                ) from None
            bands.check(row, f"user override file {path}: entry {i} ({row.pricing_model})")
            same = (row.provider, row.instance.lower(), row.gpu, row.pricing_model)
            prices = [
                p
                for p in prices
                if (p.provider, p.instance.lower(), p.gpu, p.pricing_model) != same
            ]
            prices.append(row)
    return prices, providers


def _apply_discounts(cat: Catalog, prices: list[Price], data: Any, path: Path) -> list[Price]:
    """{provider: fraction}: every price of that provider × (1 − fraction), noted on the row."""
    if not isinstance(data, dict):
        raise CatalogError(f'user override file {path} must be a JSON object like {{"aws": 0.15}}')
    factors: dict[str, float] = {}
    for name, frac in data.items():
        try:
            slug = cat.provider_id(name)
        except CatalogError as exc:
            raise CatalogError(f"user override file {path}: {exc}") from None
        if not isinstance(frac, int | float) or isinstance(frac, bool) or not 0 <= frac < 1:
            raise CatalogError(
                f"user override file {path}: discount for '{name}' must be a fraction from 0 to "
                f"below 1 (0.15 = 15% off), got {shown_number(frac)}"
            )
        factors[slug] = float(frac)
    out = []
    for p in prices:
        d = factors.get(p.provider)
        if d:
            update: dict[str, Any] = {
                "usd_per_gpu_hour": p.usd_per_gpu_hour * (1 - d),
                "user_discount": d,
            }
            update["notes"] = f"{p.notes} [user discount {d:.0%} applied from {path}]".strip()
            p = p.model_copy(update=update)
        out.append(p)
    return out


def _merge(base: Catalog, user_dir: Path, files: Mapping[str, Any], refreshed: Path) -> Catalog:
    """Apply parsed override documents (keyed by file name) to `base`."""
    gpus = base.gpus
    if "gpus.json" in files:
        gpus = _merge_gpus(base.gpus, base, files["gpus.json"], user_dir / "gpus.json")
    prices, providers = with_refreshed(list(base.prices), dict(base.provider_info), refreshed)
    staged = Catalog(
        gpus=gpus.values(),
        models=(),
        prices=prices,
        storage=(),
        egress=(),
        providers=providers.values(),
        retrieved=base.retrieved,
    )
    if "prices.json" in files:
        prices, providers = _merge_prices(staged, files["prices.json"], user_dir / "prices.json")
        # re-derive reserved prices from the merged on-demand ones (a replaced on-demand price moves
        # its reserved)
        prices = with_reserved_prices([p for p in prices if p.reserved_basis is None], providers)
    if "discounts.json" in files:
        staged = Catalog(
            gpus=(),
            models=(),
            prices=(),
            storage=(),
            egress=(),
            providers=providers.values(),
            retrieved=base.retrieved,
        )
        prices = _apply_discounts(
            staged, prices, files["discounts.json"], user_dir / "discounts.json"
        )
    return Catalog(
        gpus=gpus.values(),
        models=base.models.values(),
        prices=prices,
        storage=base.storage,
        egress=base.egress,
        providers=providers.values(),
        retrieved=base.retrieved,
        model_aliases=base.model_aliases,
        user_dir=user_dir,
    )


@functools.lru_cache(maxsize=8)
def _merged_cached(
    user_dir: str, refreshed: str, signature: tuple[tuple[str, int, int, int], ...]
) -> Catalog:
    del signature  # only part of the cache key: any change to the files reloads them
    folder = Path(user_dir)
    files = {
        name: _read_user_file(folder / name)
        for name in USER_FILES
        if os.path.lexists(folder / name)
    }
    return _merge(shipped_catalog(), folder, files, Path(refreshed))


def load_catalog(user_dir: Path | None = None) -> Catalog:
    """The shipped catalog merged with the override files in `user_dir` (default:
    default_user_dir())."""
    folder = Path(user_dir) if user_dir is not None else default_user_dir()
    if folder.exists() and not folder.is_dir():
        raise CatalogError(f"user override folder {folder} is a file, not a folder")
    refreshed = refreshed_file(user_dir)  # the data folder's unless user_dir is named
    signature = []
    for path in (*(folder / name for name in USER_FILES), refreshed):
        # a folder, pipe or dangling link there is read, and refused in one sentence
        if os.path.lexists(path):
            try:
                st = path.stat()
            except OSError:
                st = path.lstat()
            signature.append((str(path), st.st_mtime_ns, st.st_size, st.st_ino))
    if not signature:
        return shipped_catalog()
    return _merged_cached(str(folder.resolve()), str(refreshed), tuple(signature))


def save_user_overrides(
    user_dir: Path | None,
    *,
    gpus: list[dict[str, Any]] | None = None,
    prices: list[dict[str, Any]] | None = None,
    discounts: dict[str, float] | None = None,
) -> None:
    """Write the given override files atomically (None leaves a file as it is). The result is
    validated against the shipped catalog first, so a bad override raises CatalogError and nothing
    is written."""
    folder = Path(user_dir) if user_dir is not None else default_user_dir()
    new = {"gpus.json": gpus, "prices.json": prices, "discounts.json": discounts}
    files: dict[str, Any] = {}
    for name in USER_FILES:
        if new[name] is not None:
            try:
                files[name] = json.loads(json.dumps(new[name]))
            except (TypeError, ValueError) as exc:
                raise CatalogError(
                    f"overrides for {name} cannot be written as JSON: {exc}"
                ) from None
        elif (folder / name).is_file():
            files[name] = _read_user_file(folder / name)
    _merge(shipped_catalog(), folder, files, refreshed_file(user_dir))
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in new.items():
        if data is not None:
            write_json_atomic(folder / name, files[name])
