"""The one writer of every file tuneplan makes for the user: reports, exports, launch files, the
menu entry, the catalog files.

A name the user gives (``-o report.pdf``) or a folder the program writes into may already hold
something. A symlink planted there must not be followed (writing through it overwrote its target,
wherever it pointed), a named pipe must not be opened (the write waited forever for a reader), and a
folder or device is no file. So the content is written to a new file beside the name (``O_CREAT |
O_EXCL | O_NOFOLLOW``: never an existing file or link), synced, and renamed over the name: the
rename replaces a symlink itself, not its target, and a reader never sees half a file. What is at
the name is looked at first (without following it): a folder, a pipe, a socket or a device is
refused in one sentence. The format of a file the user names comes from the suffix they gave
(:func:`format_of`), never from the command alone, so ``-o x.json`` never holds a PDF.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


class OutputError(OSError):
    """A file that cannot be written as asked: one sentence naming it and why (an OSError, as every
    failed write is, so a caller that catches those catches this too)."""


def shown(path: str | Path) -> str:
    """A path as a sentence shows it: control characters escaped (a name holding a line break stays
    on its line)."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(path)
    )


def format_of(path: str | Path, formats: Mapping[str, str]) -> str:
    """The format `formats` ({suffix: format}, e.g. {".pdf": "pdf", ".json": "json"}) names for
    `path`'s suffix; OutputError in one sentence for any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix in formats:
        return formats[suffix]
    endings = " or ".join(formats)
    raise OutputError(
        f"{shown(path)}: the file's format is chosen by its name, which must end in {endings} "
        f"(it ends in {suffix or 'no suffix'})"
    )


def _refuse_what_is_there(path: Path) -> None:
    """OutputError when something other than a regular file or a symlink is at `path` (looked at,
    not followed or opened)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot write {shown(path)}: {exc.strerror or exc}") from None
    for test, kind in _KINDS:
        if test(mode):
            raise OutputError(
                f"{shown(path)} is {kind}, not a file: give the name of a file to write"
            )


def write_file(path: str | Path, content: bytes | str, *, mode: int | None = None) -> Path:
    """Write `content` (text is written as UTF-8 with \\n line ends) to `path`, replacing a regular
    file or a symlink there (the link itself, never its target); OutputError in one sentence when it
    cannot be.

    `mode` sets the file's permissions exactly (0o600 for a report naming hosts, 0o755 for a
    script); without it the new file gets what the user's umask allows."""
    path = Path(path)
    _refuse_what_is_there(path)
    if not path.parent.is_dir():
        raise OutputError(
            f"cannot write {shown(path)}: the folder {shown(path.parent)} does not exist"
        )
    data = content.encode("utf-8") if isinstance(content, str) else content
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | os.O_EXCL
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(tmp, flags, 0o666 if mode is None else 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise OutputError(f"cannot write {shown(path)}: {exc.strerror or exc}") from None
    return path
