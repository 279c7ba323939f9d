"""The file a price refresh writes, ``<data dir>/refreshed_prices.json``: its place, shape, reading
and writing.

``{"format": 1, "sources": [{"name", "url", "fetched"}], "rows": [price records]}``. Written
atomically (a temporary file in the same folder, fsync, os.replace), so a crash or a failed refresh
leaves the previous file as it was, byte for byte. Reading never moves or rewrites a damaged file:
it is the user's to look at.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.catalog.records import CatalogError
from core.json_file import FileReadError, read_json_file, write_json_atomic
from core.paths import config_dir, data_dir

FILE_NAME = "refreshed_prices.json"
FORMAT = 1
MAX_BYTES = 64 * 2**20  # a refresh of every source and cloud writes a few MB


def refreshed_file(user_dir: Path | None = None, *, writing: bool = False) -> Path:
    """Where the refreshed prices are: in `user_dir` when one is named (with the override files),
    else in the data folder: downloaded prices are data, not the user's settings. Until a refresh
    writes there, the file earlier releases wrote to the config folder is the one read."""
    if user_dir is not None:
        return Path(user_dir) / FILE_NAME
    path = data_dir() / FILE_NAME
    earlier = config_dir() / FILE_NAME
    return earlier if not writing and not path.exists() and earlier.is_file() else path


def read_document(path: Path) -> dict[str, Any] | None:
    """The parsed file, None when there is none; CatalogError naming the path when it is damaged:
    not a regular file, larger than MAX_BYTES, not JSON, nested deeper than JSON files here are
    (core.json_file)."""
    if not os.path.lexists(path):
        return None
    try:
        data = read_json_file(path, MAX_BYTES)
    except FileReadError as exc:
        raise CatalogError(
            f"refreshed prices file {path} is damaged ({exc}); it was left as it is: run"
            " `tuneplan catalog refresh` to write a new one"
        ) from None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("rows"), list)
        or not isinstance(data.get("sources", []), list)
    ):
        raise CatalogError(
            f"refreshed prices file {path} is not a format-{FORMAT} refresh file (an object with "
            "'format': 1,"
            " 'sources' and 'rows'); it was left as it is"
        )
    return data


def write_document(path: Path, sources: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Replace the file at once: the old one stays whole until the new one is complete on disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"format": FORMAT, "sources": sources, "rows": rows}, indent=1)
