"""Writing a JSON file so that a reader never sees half of it: the user's override files and the refreshed
prices are replaced whole or not at all (a temporary file in the same folder, fsync, then os.replace)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, data: Any, indent: int = 2) -> None:
    """Replace `path` with `data` as JSON; the old file stays whole until the new one is complete on disk."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
