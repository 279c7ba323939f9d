"""What every `tuneplan` command shares: the user-error exception and reading a JSON file named on the line.

A command raises :class:`CliError` with one sentence; ``core.cli.main`` prints it on stderr and exits with 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_ERROR = 1  # a user error, said in one sentence on stderr
EXIT_USAGE = 2  # the command line itself is wrong (argparse's code too)


class CliError(Exception):
    """A user error: printed as one sentence, exit code 1."""


def add_command(subparsers: Any, name: str, help: str, examples: tuple[str, ...], epilog: str = "",
                **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with two or three examples (as `sky`, `accelerate` and `torchrun` end theirs):
    the first thing a reader copies, so every command has them, after any notes of its own (`epilog`)."""
    shown = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    return subparsers.add_parser(
        name, help=help, epilog=f"{epilog}\n\n{shown}" if epilog else shown,
        formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def read_json(path: str | Path) -> Any:
    """A JSON file named on the command line ("-" is standard input); unreadable or invalid is a CliError."""
    try:
        text = sys.stdin.read() if str(path) == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}") from exc
