"""Where tuneplan keeps the user's files: one place, so the library, probe history and keys agree."""

from __future__ import annotations

import os
from pathlib import Path


def _base(variable: str, fallback: tuple[str, ...]) -> Path:
    value = os.environ.get(variable)
    if value and Path(value).is_absolute():
        return Path(value) / "tuneplan"
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "tuneplan"
    return Path.home().joinpath(*fallback, "tuneplan")


def data_dir() -> Path:
    """$XDG_DATA_HOME/tuneplan, else ~/.local/share/tuneplan (%APPDATA%\\tuneplan on Windows): plans, runs, keys."""
    return _base("XDG_DATA_HOME", (".local", "share"))


def config_dir() -> Path:
    """$XDG_CONFIG_HOME/tuneplan, else ~/.config/tuneplan: the user's catalog overrides."""
    return _base("XDG_CONFIG_HOME", (".config",))
