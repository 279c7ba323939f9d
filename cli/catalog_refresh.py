"""`tuneplan catalog refresh` and `tuneplan catalog import FILE`: prices from the field's public
catalogs.

The only commands that reach the network, and only when typed. Both print a short summary (rows kept
per source, the GPU names skipped because the catalog does not know them, where the prices were
written) or, with ``--json``, the same as JSON. A source that cannot be had whole, or a file that
does not parse, is one sentence on stderr (exit 1) and leaves the previous refreshed prices as they
were.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from cli.common import CliError
from core.catalog import REFRESH_SOURCES, CatalogError, RefreshReport, import_file, refresh_prices


def _clouds(text: str | None) -> list[str] | None:
    if text is None:
        return None
    clouds = [c.strip().lower() for c in text.split(",") if c.strip()]
    if not clouds:
        raise CliError(
            "--cloud needs one or more cloud names separated by commas, e.g. aws,lambda,runpod"
        )
    return clouds


def _print(report: RefreshReport, as_json: bool) -> None:
    if as_json:
        data = {
            "sources": [dataclasses.asdict(s) for s in report.sources],
            "path": str(report.path),
            "rows_written": report.rows_written,
        }
        print(json.dumps(data, indent=2))
    else:
        print(report.summary())


def cmd_refresh(args: argparse.Namespace) -> int:
    if args.file is not None:
        raise CliError(
            f"`tuneplan catalog refresh` takes no file (got '{args.file}'); to read a file use"
            " `tuneplan catalog import FILE`"
        )
    sources = REFRESH_SOURCES if args.source in (None, "all") else (args.source,)
    try:
        report = refresh_prices(sources, clouds=_clouds(args.cloud), accept_fewer=args.accept_fewer)
    except CatalogError as exc:
        raise CliError(str(exc)) from None
    _print(report, args.json)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    if args.file is None:
        raise CliError(
            "`tuneplan catalog import` needs the catalog FILE to read (a SkyPilot vms.csv or a"
            " gpuhunt CSV or catalog.zip)"
        )
    try:
        report = import_file(args.file, fmt=args.format, provider=args.provider)
    except CatalogError as exc:
        raise CliError(str(exc)) from None
    _print(report, args.json)
    return 0
