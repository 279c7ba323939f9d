"""Where the user's files go: the platform's folders (platformdirs), and the earlier releases'
folders kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import paths


def test_linux_folders_are_the_xdg_ones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # XDG Base Directory Specification: $XDG_DATA_HOME and $XDG_CONFIG_HOME, else ~/.local/share and
    # ~/.config.
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    assert paths.data_dir() == tmp_path / "d" / "tuneplan"
    assert paths.config_dir() == tmp_path / "c" / "tuneplan"
    monkeypatch.delenv("XDG_DATA_HOME")
    # the specification: relative paths are invalid
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.data_dir() == tmp_path / "home" / ".local" / "share" / "tuneplan"
    assert paths.config_dir() == tmp_path / "home" / ".config" / "tuneplan"


def test_a_folder_of_earlier_releases_is_used_until_the_platform_one_exists(tmp_path: Path) -> None:
    native, earlier = tmp_path / "Library" / "tuneplan", tmp_path / ".local" / "share" / "tuneplan"
    assert paths._chosen(native, earlier) == native  # a new user: the platform's folder
    earlier.mkdir(parents=True)
    assert paths._chosen(native, earlier) == earlier  # plans and runs made before stay in use
    native.mkdir(parents=True)
    assert paths._chosen(native, earlier) == native
