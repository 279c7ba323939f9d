"""The one place that finds and reads shipped resource files (catalog JSON, probe scripts, icons).

Every other module goes through here so that a source checkout, an installed wheel and a frozen
bundle all work: the location is looked up once per call in a fixed order instead of being guessed
in many places.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from importlib import resources as importlib_resources
from importlib.util import find_spec
from pathlib import Path
from typing import Any

ENV_VAR = "TUNEPLAN_RESOURCES"


def _candidates() -> Iterator[Path]:
    """Where resources/ may live, most specific first (lazily: the first hit usually ends the
    search)."""
    override = os.environ.get(ENV_VAR)
    if override:
        yield Path(override).expanduser()
        return
    # Source checkout (and PyInstaller, whose __file__ points inside the bundle): resources/ next to
    # core/.
    yield Path(__file__).resolve().parent.parent / "resources"
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        yield Path(bundle) / "resources"
    # A wheel that ships resources/ as an importable top-level package.
    packaged = _packaged_root()
    if packaged is not None:
        yield packaged
    # A wheel that ships it as data files.
    yield Path(sys.prefix) / "share" / "tuneplan" / "resources"


def _packaged_root() -> Path | None:
    """resources/ as an importable package (how a wheel may ship it); None when there is none."""
    try:
        if find_spec("resources") is None:
            return None
        return Path(str(importlib_resources.files("resources")))
    except (ImportError, TypeError, ValueError):
        return None


def resources_root() -> Path:
    """The resources directory in use; FileNotFoundError names where it looked and the override
    variable."""
    looked: list[str] = []
    for path in _candidates():
        if path.is_dir():
            return path
        # in a bundle the module's folder and _MEIPASS are the same place
        if str(path) not in looked:
            looked.append(str(path))
    raise FileNotFoundError(
        f"tuneplan resources not found (looked in {', '.join(looked)}); set {ENV_VAR} to the folder"
    )


def resource_path(*parts: str) -> Path:
    """Path of a shipped resource, e.g. resource_path('catalog', 'gpus.json'); it may not exist."""
    return resources_root().joinpath(*parts)


def guide_path() -> Path | None:
    """The user guide: resources/guide.md where the app is installed or bundled (pyproject's
    data-files and packaging/tuneplan.spec copy docs/guide.md there), docs/guide.md in a source
    checkout; None where neither is."""
    try:
        shipped: Path | None = resource_path("guide.md")
    except FileNotFoundError:
        shipped = None
    source = Path(__file__).resolve().parent.parent / "docs" / "guide.md"
    return next((path for path in (shipped, source) if path is not None and path.is_file()), None)


def read_json(*parts: str) -> Any:
    """Parse a shipped JSON resource; a missing or broken file raises with its path in the
    message."""
    path = resource_path(*parts)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"resource file {path} is missing") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"resource file {path} is not valid JSON: {exc}") from None
