"""The `tuneplan` command: the window without arguments, the CLI (core.cli.main) with them.

It lives in gui/ because core must never import Qt or gui; a headless install still gets the CLI.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    """The command line is imported only when there are arguments: the window should not pay for it."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        from core.cli import main as cli
        from core.cli import report as report_cli

        report_cli.set_renderer(_render_pdf)
        return cli.main(args)
    try:
        from gui.app import run
    except ImportError as exc:  # no Qt libraries on this machine
        print(f"tuneplan: the window needs PySide6 and its libraries ({exc}); try `tuneplan plan --help`",
              file=sys.stderr)
        return 1  # core.cli.main.EXIT_ERROR
    return run()


def _render_pdf(report: Any, path: Path) -> int:
    """`tuneplan report`: Qt is imported only when a PDF is drawn, so other commands start fast."""
    from gui.pdf import render_headless

    return render_headless(report, path)


if __name__ == "__main__":
    raise SystemExit(main())
