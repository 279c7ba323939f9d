"""`tuneplan --install-desktop-entry`: the menu entry for an install that has none (pip, pipx, the
bundle).

A Debian package or the wheel's data files put tuneplan.desktop under <prefix>/share, which a pipx
or user install's desktop never reads. This writes the shipped entry (resources/desktop/), its icons
and the AppStream metainfo into the user's own folders (freedesktop.org:
$XDG_DATA_HOME/applications, icons/hicolor, metainfo), with Exec naming this very installation, so
the menu starts the tuneplan that wrote it.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path

import platformdirs

from cli.common import CliError
from core.output_file import OutputError, write_file
from core.resources import resource_path
from core.validation import printable

DESKTOP_FILE = "tuneplan.desktop"
METAINFO_FILE = "io.github.tuneplan.metainfo.xml"
# characters that need quoting in an Exec argument
_RESERVED = re.compile(r'[\s"\'\\><~|&;$*?#()`]')


def add_argument(parser: argparse.ArgumentParser) -> None:
    """The top-level flag (called by cli.main.build_parser)."""
    parser.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="add tuneplan to this user's application menu (Linux desktops: the .desktop file, "
        "icons and AppStream metainfo under ~/.local/share) and exit",
    )


def launcher() -> list[str]:
    """The command that starts this installation: the frozen bundle's program, the `tuneplan` script
    beside this Python (a pip or pipx install), else this Python with `-m tuneplan` (a source
    checkout)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    script = Path(sys.executable).parent / "tuneplan"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "tuneplan"]


def exec_line(argv: list[str]) -> str:
    """argv as a desktop entry's Exec value (Desktop Entry Specification, "The Exec key": quoted
    arguments escape ", `, $ and \\ with a backslash, and a literal % is written %%). A control
    character (a line break, a tab) has no place in an Exec value: a line break would end the line
    and start another key (a second Exec=), so such a path is refused in one sentence."""
    for arg in argv:
        if any(unicodedata.category(c) == "Cc" for c in arg):
            raise CliError(
                f"this installation's path {printable(arg)} holds a control character (a line "
                "break or "
                "tab), which a menu entry cannot hold: install tuneplan in a folder without one"
            )

    def quote(arg: str) -> str:
        arg = arg.replace("%", "%%")
        if not _RESERVED.search(arg):
            return arg
        return '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'

    return " ".join(quote(a) for a in argv)


def install(data_home: Path | None = None) -> list[Path]:
    """Write the entry, icons and metainfo under `data_home` (default: the user's data folder,
    ~/.local/share) and return the files written."""
    if not sys.platform.startswith("linux"):
        raise CliError(
            "--install-desktop-entry writes a freedesktop.org menu entry, which only Linux "
            "desktops "
            f"read (this is {sys.platform})"
        )
    home = data_home or Path(platformdirs.user_data_dir())
    entry = resource_path("desktop", DESKTOP_FILE).read_text(encoding="utf-8")
    entry = re.sub(r"(?m)^Exec=.*$", lambda _m: f"Exec={exec_line(launcher())}", entry)
    written = [
        _write(home / "applications" / DESKTOP_FILE, entry.encode("utf-8")),
        _copy(resource_path("desktop", METAINFO_FILE), home / "metainfo" / METAINFO_FILE),
        _copy(
            resource_path("icons", "tuneplan.svg"),
            home / "icons/hicolor/scalable/apps/tuneplan.svg",
        ),
    ]
    for png in sorted(resource_path("icons").glob("tuneplan-*.png")):
        size = png.stem.removeprefix("tuneplan-")
        written.append(_copy(png, home / f"icons/hicolor/{size}x{size}/apps/tuneplan.png"))
    return written


def _write(path: Path, content: bytes) -> Path:
    """One file through core.output_file: a symlink planted at the name is replaced, not written
    through, and a pipe there is refused rather than waited on."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_file(path, content)
    except OutputError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _copy(source: Path, path: Path) -> Path:
    try:
        content = source.read_bytes()
    except OSError as exc:
        raise CliError(
            f"this installation is incomplete: cannot read {source} ({exc.strerror or exc})"
        ) from exc
    return _write(path, content)


def cmd_install(args: argparse.Namespace) -> int:
    del args  # the flag has no value
    written = install()
    print(f"menu entry written ({len(written)} files):")
    for path in written:
        print(f"  {path}")
    return 0
