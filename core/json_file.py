"""JSON files whole: written so that a reader never sees half of one (the user's override files and
the refreshed prices are replaced whole or not at all: a temporary file in the same folder, fsync,
then os.replace), and a file the user names read only if it is a regular file of bounded size, as
JSON of bounded depth."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from core.output_file import write_file
from core.validation import printable


def write_json_atomic(path: Path, data: Any, indent: int = 2) -> None:
    """Replace `path` with `data` as JSON, readable by its owner only; the old file stays whole
    until the new one is complete on disk (core.output_file: never through a symlink planted at the
    name)."""
    write_file(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n", mode=0o600)


# a plan request or a config.json is a few KB; a catalog override file a few hundred
MAX_JSON_BYTES = 16 * 2**20
# the deepest a request nests is 4 (assumptions.buy.kw_per_gpu); a config.json, 4 or 5
MAX_DEPTH = 64


class FileReadError(ValueError):
    """A file that cannot be read as asked: one sentence naming it (a folder, a pipe, too large, not
    JSON)."""


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path: str | Path, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; FileReadError otherwise, never a hang.

    The file is opened without blocking (a named pipe with no writer would block open() forever) and
    checked on the opened descriptor, so what is read is what was checked: a folder, a pipe or a
    device (/dev/zero, an endless read) is refused before any byte is read, and a file that grows
    while read is cut at limit + 1 and refused."""
    shown = short_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except ValueError:  # os.open refuses a NUL in a name before the system sees it
        raise FileReadError(
            f"cannot read {shown}: a file name cannot hold a NUL character"
        ) from None
    except OSError as exc:
        raise FileReadError(f"cannot read {shown}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FileReadError(f"{shown} is {_kind(mode)}, not a file")
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise FileReadError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise FileReadError(
            f"{shown} is larger than {limit / 2**20:g} MiB, more than such a file can hold"
        )
    return data


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str | bytes, where: str) -> Any:
    """JSON as RFC 8259 writes it (no NaN or Infinity) nesting at most MAX_DEPTH deep; FileReadError
    naming `where` otherwise. Python's json reads NaN and recurses once per level: a 100,000-deep
    list would be a RecursionError, and NaN a number that compares false with every bound."""
    try:
        data = json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise FileReadError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except UnicodeDecodeError:
        raise FileReadError(f"{where} is not a text file (it is not UTF-8)") from None
    except RecursionError:
        raise FileReadError(
            f"{where} nests deeper than JSON can be read here (at most {MAX_DEPTH} levels)"
        ) from None
    except ValueError as exc:
        raise FileReadError(f"{where} is not valid JSON: {exc}") from None
    if _depth(data) > MAX_DEPTH:
        raise FileReadError(
            f"{where} nests deeper than {MAX_DEPTH} levels; a plan request or config.json nests "
            "a few"
        )
    return data


def _depth(data: Any) -> int:
    """How deep lists and objects nest (a scalar is 0), walked without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def read_json_file(path: str | Path, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file the user named, read as ``read_bounded`` and ``parse_json`` allow; FileReadError
    otherwise."""
    return parse_json(read_bounded(path, limit), short_path(path))


def short_path(path: str | Path, most: int = 120) -> str:
    """A path as a sentence can show it: control characters escaped, a path longer than `most` cut
    in the middle (an error about a 5,000-character name must still read as one line)."""
    text = printable(str(path))
    return text if len(text) <= most else f"{text[: most // 2]}…{text[-most // 2 :]}"
