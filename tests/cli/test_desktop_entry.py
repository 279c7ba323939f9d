"""`tuneplan --install-desktop-entry` as a pipx user runs it: the files land in the user's folders,
the entry starts this installation, and the AppStream metainfo passes its own validator (Debian's
`appstream` package)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.desktop_entry import exec_line

ROOT = Path(__file__).resolve().parents[2]


def _install(data_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(data_home)}
    return subprocess.run(
        [sys.executable, "-m", "tuneplan", "--install-desktop-entry"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def _exec(entry: Path) -> list[str]:
    line = next(x for x in entry.read_text(encoding="utf-8").splitlines() if x.startswith("Exec="))
    return shlex.split(line.removeprefix("Exec=").replace("%%", "%"))


def test_install_writes_entry_icons_and_metainfo_that_start_this_installation(
    tmp_path: Path,
) -> None:
    done = _install(tmp_path)
    assert done.returncode == 0, done.stderr
    entry = tmp_path / "applications" / "tuneplan.desktop"
    for path in (
        entry,
        tmp_path / "metainfo/io.github.tuneplan.metainfo.xml",
        tmp_path / "icons/hicolor/scalable/apps/tuneplan.svg",
        tmp_path / "icons/hicolor/48x48/apps/tuneplan.png",
    ):
        assert path.is_file() and str(path) in done.stdout
    assert "Icon=tuneplan" in entry.read_text(encoding="utf-8")
    command = _exec(entry)
    started = subprocess.run(
        [*command, "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )
    assert started.returncode == 0 and started.stdout.startswith("tuneplan "), started.stderr


def test_metainfo_and_entry_validate_with_the_freedesktop_tools(tmp_path: Path) -> None:
    tool = shutil.which("appstreamcli")
    if tool is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "appstreamcli is missing in CI: packaging/test.sh installs Debian's appstream "
                "package"
            )
        pytest.skip(
            "appstreamcli is not installed (Debian: apt-get install appstream); CI installs it"
        )
    assert _install(tmp_path).returncode == 0
    checked = subprocess.run(
        [tool, "validate", "--no-net", str(tmp_path / "metainfo/io.github.tuneplan.metainfo.xml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    desktop = shutil.which("desktop-file-validate")
    if desktop is not None:  # desktop-file-utils: not required, checked where present
        checked = subprocess.run(
            [desktop, str(tmp_path / "applications/tuneplan.desktop")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/usr/bin/tuneplan"], "/usr/bin/tuneplan"),
        (["/opt/my apps/python3", "-m", "tuneplan"], '"/opt/my apps/python3" -m tuneplan'),
        (["/home/a$b/bin/tuneplan"], '"/home/a\\$b/bin/tuneplan"'),
        (["/srv/100%/tuneplan"], "/srv/100%%/tuneplan"),
    ],
)
def test_exec_line_quotes_as_the_desktop_entry_specification_says(
    argv: list[str], expected: str
) -> None:
    # Expected values written from the Desktop Entry Specification 1.5, "The Exec key".
    assert exec_line(argv) == expected
