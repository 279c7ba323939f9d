"""`tuneplan report REQUEST.json -o plan.pdf`: plan a request and write its PDF report, with no
window.

The content comes from ``core.planner``'s face; only the drawing needs Qt. The command line sits
beside the window, so it draws with the window's own PDF writer (``gui.pdf.render_headless``),
imported inside the function that needs it: every other command starts without Qt, and a headless
install without PySide6 still has every other command and gets one clear sentence here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import CliError, add_command
from cli.plan_request import build_request
from core.output_file import OutputError, format_of, write_file

# the document model loads with the report it draws, not with every command's parser
if TYPE_CHECKING:
    from core.document import Report

Renderer = Callable[["Report"], tuple[bytes, int]]  # the PDF's bytes and its page count
FORMATS = {".pdf": "pdf", ".json": "json"}  # -o's suffix chooses what is written


def require_renderer(alternative: str = "") -> Renderer:
    """The window's PDF drawing function, imported only now (Qt loads with it); a headless install
    without PySide6 (or without Qt's libraries) gets one sentence saying what to do instead."""
    try:
        from gui.pdf import render_headless
    except ImportError:
        raise CliError(
            "the PDF renderer is not available (it needs PySide6); run the `tuneplan` command of a "
            "full install" + alternative
        ) from None
    return render_headless


def output_format(output: str) -> str:
    """'pdf' or 'json', from the suffix of -o; CliError in one sentence for any other (checked
    before any work)."""
    try:
        return format_of(output, FORMATS)
    except OutputError as exc:
        raise CliError(f"-o {exc}") from None


def write_report(
    report: Report, output: Path, example: str, alternative: str = "", mode: int | None = None
) -> int:
    """Write `report` to `output` as its suffix says (a PDF, or the report's content as JSON)
    through core.output_file, and say so on stderr (every report command); the page count, 0 for
    JSON."""
    if output.is_dir():
        raise CliError(f"-o {output} is a folder; give a file name such as {example}")
    pages = 0
    content: str | bytes
    if output_format(str(output)) == "json":
        content = report.model_dump_json(indent=2) + "\n"
    else:
        content, pages = require_renderer(alternative)(report)
        if not content.startswith(b"%PDF"):
            raise CliError(f"cannot write {output}: the PDF writer produced no PDF")
    try:
        write_file(output, content, mode=mode)
    except OutputError as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {output}" + (f" ({pages} pages)" if pages else ""), file=sys.stderr)
    return pages


def cmd_report(args: argparse.Namespace) -> int:
    from core.planner import PlanError, analyse, build_report

    if output_format(args.output) == "pdf":
        require_renderer()  # before planning: a headless install learns at once
    request = build_request(args)
    try:
        analysis = analyse(request)
    except PlanError as exc:
        raise CliError(str(exc)) from exc
    write_report(build_report(analysis, dt.date.today()), Path(args.output), "plan.pdf")
    return 0


def register(subparsers: Any) -> None:
    """Add the `report` subcommand (called by cli.main)."""
    p = add_command(
        subparsers,
        "report",
        help="plan REQUEST.json and write a PDF report",
        examples=(
            "tuneplan report request.json -o plan.pdf",
            "tuneplan report - -o plan.pdf < request.json",
        ),
    )
    p.add_argument("request", help="plan request JSON file (- for stdin)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="file to write: plan.pdf (the PDF report) or plan.json (its content as JSON)",
    )
    p.set_defaults(func=cmd_report)
