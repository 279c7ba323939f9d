"""The `tuneplan` command: the window without arguments, the CLI (core.cli) with them.

It lives in gui/ because core must never import Qt or gui; a headless install still gets the CLI.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from core import cli


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        return cli.main(args)
    try:
        from gui.app import run
    except ImportError as exc:  # no Qt libraries on this machine
        print(f"tuneplan: the window needs PySide6 and its libraries ({exc}); try `tuneplan plan --help`",
              file=sys.stderr)
        return cli.EXIT_ERROR
    return run()


if __name__ == "__main__":
    raise SystemExit(main())
