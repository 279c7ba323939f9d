"""What every `tuneplan` command shares: the user-error exception and reading a JSON file named on
the line.

A command raises :class:`CliError` with one sentence; ``cli.main`` prints it on stderr and exits
with 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from core.json_file import MAX_JSON_BYTES, FileReadError, parse_json, read_bounded

EXIT_ERROR = 1  # a user error, said in one sentence on stderr
EXIT_USAGE = 2  # the command line itself is wrong (argparse's code too)


class CliError(Exception):
    """A user error: printed as one sentence, exit code 1."""


def add_command(
    subparsers: Any,
    name: str,
    help: str,
    examples: tuple[str, ...],
    epilog: str = "",
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with two or three examples (as `sky`, `accelerate` and
    `torchrun` end theirs): the first thing a reader copies, so every command has them, after any
    notes of its own (`epilog`)."""
    shown = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    return subparsers.add_parser(
        name,
        help=help,
        epilog=f"{epilog}\n\n{shown}" if epilog else shown,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )


def read_json(path: str | Path) -> Any:
    """A JSON file named on the command line ("-" is standard input, read up to the same limit); a
    file that is not a regular file, too large, unreadable or not JSON is a CliError."""
    try:
        if str(path) != "-":
            return parse_json(read_bounded(path), str(path))
        data = sys.stdin.buffer.read(MAX_JSON_BYTES + 1)
        if len(data) > MAX_JSON_BYTES:
            raise FileReadError(
                f"standard input holds more than {MAX_JSON_BYTES // 2**20} MiB; not a request"
            )
        return parse_json(data, "standard input")
    except FileReadError as exc:
        raise CliError(str(exc)) from None
