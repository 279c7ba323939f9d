"""Where tuneplan keeps the user's files: one place, so the library, probe history, keys and prices
agree.

The folders are the platform's own, from platformdirs (XDG on Linux, ~/Library/Application Support
on macOS, %LOCALAPPDATA% on Windows). Earlier releases used the XDG paths on every system (and
%APPDATA% on Windows): a folder they made is kept in use while the platform's folder does not exist
yet, so nothing a user made is lost. On Linux both are the same folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "tuneplan"


def _earlier(variable: str, fallback: tuple[str, ...]) -> Path:
    """The folder earlier releases used: $XDG_*_HOME/tuneplan, %APPDATA%\\tuneplan on Windows, else
    under ~."""
    value = os.environ.get(variable)
    if value and Path(value).is_absolute():
        return Path(value) / APP
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / APP
    return Path.home().joinpath(*fallback, APP)


def _chosen(native: Path, earlier: Path) -> Path:
    """The platform's folder, unless only the earlier releases' one exists (then that one, as it
    was)."""
    if native != earlier and not native.exists() and earlier.is_dir():
        return earlier
    return native


def data_dir() -> Path:
    """The user's data: plans, probe runs, host keys, refreshed prices (~/.local/share/tuneplan on
    Linux)."""
    return _chosen(
        platformdirs.user_data_path(APP, appauthor=False),
        _earlier("XDG_DATA_HOME", (".local", "share")),
    )


def config_dir() -> Path:
    """The user's settings: catalog overrides (prices.json, gpus.json, discounts.json;
    ~/.config/tuneplan)."""
    return _chosen(
        platformdirs.user_config_path(APP, appauthor=False),
        _earlier("XDG_CONFIG_HOME", (".config",)),
    )
