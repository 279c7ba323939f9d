"""`tuneplan report REQUEST.json -o plan.pdf`: plan a request and write its PDF report, with no window.

The content comes from ``core.planner.report``; only the drawing needs Qt, and core never imports Qt or gui. So the
drawing function is handed in by the `tuneplan` entry point (``gui.launch`` calls :func:`set_renderer`); a
headless install without PySide6 still has every other command and gets a clear message here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.common import CliError, add_command
from core.cli.plan import build_request

if TYPE_CHECKING:  # the document model loads with the report it draws, not with every command's parser
    from core.document import Report

Renderer = Callable[["Report", Path], int]
_renderer: Renderer | None = None


def set_renderer(renderer: Renderer | None) -> None:
    """Install the function that draws a Report to a PDF file and returns its page count."""
    global _renderer
    _renderer = renderer


def require_renderer(alternative: str = "") -> Renderer:
    """The installed PDF drawing function; a headless install gets one sentence saying what to do instead."""
    if _renderer is None:
        raise CliError("the PDF renderer is not available (it needs PySide6); run the `tuneplan` command of a "
                       "full install" + alternative)
    return _renderer


def write_pdf(report: Report, output: Path, example: str, alternative: str = "") -> int:
    """Draw `report` to `output`, check that a PDF really came out, and say so on stderr (every report command)."""
    renderer = require_renderer(alternative)
    if output.is_dir():
        raise CliError(f"-o {output} is a folder; give a file name such as {example}")
    try:
        pages = renderer(report, output)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc.args[0]}") from exc
    if not output.is_file() or output.stat().st_size == 0:
        raise CliError(f"cannot write {output}: the PDF writer produced nothing (is the folder writable?)")
    print(f"wrote {output} ({pages} pages)", file=sys.stderr)
    return pages


def cmd_report(args: argparse.Namespace) -> int:
    from core.planner.analysis import analyse
    from core.planner.plan import PlanError
    from core.planner.report import build_report

    require_renderer()  # before planning: a headless install learns at once
    request = build_request(args)
    try:
        analysis = analyse(request)
    except PlanError as exc:
        raise CliError(str(exc)) from exc
    write_pdf(build_report(analysis, dt.date.today()), Path(args.output), "plan.pdf")
    return 0


def register(subparsers: Any) -> None:
    """Add the `report` subcommand (called by core.cli.main)."""
    p = add_command(subparsers, "report", help="plan REQUEST.json and write a PDF report",
                    examples=("tuneplan report request.json -o plan.pdf",
                              "tuneplan report - -o plan.pdf < request.json"))
    p.add_argument("request", help="plan request JSON file (- for stdin)")
    p.add_argument("-o", "--output", required=True, help="PDF file to write, e.g. plan.pdf")
    p.set_defaults(func=cmd_report)
