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


def private_file(path: Path) -> bool:
    """Make ``path`` readable by its owner only (0600) before anything is written to it; True when it was created
    here (empty; the caller removes it if the write then fails). Why: a probe report or run export names hosts,
    addresses and users, like the probe history (0600) it comes from. An existing file the user owns is narrowed;
    a folder or another user's file is left as it is (writing to it then says why)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return True
    except FileExistsError:
        pass
    except OSError:
        return False  # a missing or read-only folder: the write itself says so in its own words
    try:
        info = path.stat()
        if path.is_file() and info.st_uid == getattr(os, "getuid", lambda: info.st_uid)() and info.st_mode & 0o077:
            path.chmod(0o600)
    except OSError:
        pass
    return False
