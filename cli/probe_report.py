"""`tuneplan probe-report RUN -o report.pdf [--json]`: a probe run's readiness report, with no
window.

RUN is a run id from the probe history (``core.probes.history.store``) or the path of a run JSON
file (what `tuneplan probe --json` prints, or the GUI's JSON export). The content comes from
``core.probes.output.report``; the drawing function is the one `tuneplan report` uses
(``cli.report.require_renderer``), so both PDFs look the same and core never imports Qt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import CliError, add_command, read_json

if TYPE_CHECKING:  # the report modules load when this command runs, not with every command's parser
    from core.probes import ProbeRunRecord


def load_record(run: str, db: str | None = None) -> ProbeRunRecord:
    """The run named on the command line: an existing file is read as JSON, anything else is a run
    id."""
    path = Path(run)
    if path.is_file() or path.suffix.lower() == ".json":
        return _from_file(path)
    if not run.strip().isdigit():
        raise CliError(
            f"RUN '{run}' is neither a run JSON file nor a run id (a number from the probe history)"
        )
    return _from_store(int(run), db)


def _from_file(path: Path) -> ProbeRunRecord:
    from core.probes import record_from_json

    data = read_json(path)
    try:
        return record_from_json(data)
    except ValueError as exc:
        raise CliError(f"{path} is not a probe run: {exc}") from exc


def _from_store(run_id: int, db: str | None) -> ProbeRunRecord:
    from core.probes import ProbeStore, ProbeStoreError, default_probe_db_path, record_from_stored
    from core.sqlite_store import READ_ONLY, moved_aside

    path = Path(db).expanduser() if db else default_probe_db_path()
    try:
        try:
            store = ProbeStore(path)
        except ProbeStoreError as exc:
            if exc.kind != READ_ONLY:
                raise
            store = ProbeStore(path, read_only=True)  # a read-only folder: reading needs no write
    except (ProbeStoreError, OSError) as exc:
        raise CliError(str(exc)) from exc
    if store.notice:
        print(f"tuneplan: {store.notice}", file=sys.stderr)
    try:
        stored = store.load_run(run_id)
    except KeyError as exc:
        if store.fault:  # the file failed while the run was read, and was moved aside when damaged
            raise CliError(f"run {run_id} cannot be read: {store.fault}") from exc
        damaged = moved_aside(path)
        # the run may have been in a file found damaged and moved aside: say which, not just
        # "unknown"
        if damaged:
            raise CliError(
                f"run {run_id} cannot be read: it is not in the probe history {path}, and the "
                f"history found damaged earlier was moved to {damaged[-1]}, which cannot be read "
                "(`tuneplan probe --json` output files can be given instead)"
            ) from exc
        raise CliError(
            f"unknown run id {run_id}: the probe history has no such run "
            "(`tuneplan probe --json` output files can be given instead)"
        ) from exc
    finally:
        store.close()
    if store.fault:  # the file failed while the run was read: what came back may be partial
        raise CliError(f"run {run_id} cannot be read: {store.fault}")
    if stored.evidence is None:
        raise CliError(f"run {run_id} has no evidence recorded (status {stored.summary.status})")
    return record_from_stored(stored)


def cmd_probe_report(args: argparse.Namespace) -> int:
    from cli import report as report_cli
    from core.probes import build_probe_report

    if args.output is not None:
        # a suffix it cannot write is said before anything is read
        report_cli.output_format(args.output)
    record = load_record(args.run, args.db)
    report = build_probe_report(record)
    if args.json:
        print(report.model_dump_json(indent=2))
    if args.output is None:
        if not args.json:
            raise CliError("give -o report.pdf (or --json to print the report content)")
        return 0
    # 0600: the report names the host, like the history it comes from
    report_cli.write_report(
        report, Path(args.output), "report.pdf", alternative=", or use --json", mode=0o600
    )
    return 0


def register(subparsers: Any) -> None:
    """Add the `probe-report` subcommand (called by cli.main)."""
    p = add_command(
        subparsers,
        "probe-report",
        help="write the readiness report of a probe run (PDF or JSON)",
        examples=(
            "tuneplan probe-report 12 -o box.pdf   # run 12 of the probe history",
            "tuneplan probe-report run.json --json",
        ),
    )
    p.add_argument("run", metavar="RUN", help="run id from the probe history, or a run JSON file")
    p.add_argument(
        "-o",
        "--output",
        help="file to write: report.pdf (the PDF report) or report.json (its content)",
    )
    p.add_argument("--json", action="store_true", help="print the report content as JSON on stdout")
    p.add_argument("--db", help="probe history file (default: the app's probes.db)")
    p.set_defaults(func=cmd_probe_report)
