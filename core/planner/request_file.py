"""A plan request file as the window opens or imports it, refused with one sentence when it cannot
be one.

The CLI reads a file and lets the planner's errors speak; the window must decide before it replaces
what is on screen or adds a plan to the library, so it asks here first: is the file readable, JSON,
an object, and does it name a preset and GPU the catalog knows? Field rules are left to
``PlanRequest`` (the wizard shows them under each field).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.catalog import Catalog, CatalogError, load_catalog
from core.json_file import FileReadError, parse_json, read_bounded, short_path


class RequestFileError(ValueError):
    """The file cannot be a plan request; the message names the file and the problem in one
    sentence."""


def request_of(raw: Any) -> Any:
    """The request to plan from a file's JSON: a plan request as it is, or the request inside a
    saved plan (what `tuneplan plan --json`, `tuneplan library show --json` and the window's Export
    JSON write), the settings it ran with, which plan into its figures again."""
    if (
        isinstance(raw, dict)
        and isinstance(raw.get("request"), dict)
        and "memory" in raw
        and "model" not in raw
    ):
        return raw["request"]
    return raw


def read_request_file(path: Path, catalog: Catalog | None = None) -> dict[str, Any]:
    """The request as written in the file, or a RequestFileError naming what is wrong with it."""
    try:
        raw = parse_json(read_bounded(path), short_path(path.name))
    except FileReadError as exc:
        raise RequestFileError(str(exc)) from None
    raw = request_of(raw)
    if not isinstance(raw, dict):
        raise RequestFileError(
            f"{path.name} holds a JSON {type(raw).__name__}, not a plan request: it must be an "
            "object with model and data"
        )
    catalog = catalog or load_catalog()
    model, hardware = raw.get("model"), raw.get("hardware")
    try:
        if isinstance(model, dict) and isinstance(model.get("preset"), str):
            catalog.model(model["preset"])
        if isinstance(hardware, dict) and isinstance(hardware.get("gpu"), str):
            catalog.gpu(hardware["gpu"])
    except CatalogError as exc:
        raise RequestFileError(f"{path.name} names an {exc}") from exc
    return raw
