"""`tuneplan catalog gpus|models|prices [--json]`: list the shipped catalog as a table or as JSON.

`catalog refresh` and `catalog import FILE` (prices from public catalogs) live in
cli.catalog_refresh.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from cli.common import add_command
from cli.table import table
from core.units import fmt_count, fmt_usd

if TYPE_CHECKING:
    from core.catalog import GPU

# The figures `catalog gpus` shows, whose sources its last column names (GPU.sources keys).
SHOWN_FIGURES = ("memory_bytes", "memory_bandwidth_gbs", "bf16_tflops", "fp16_tflops")


def register(subparsers: Any) -> None:
    """Add the `catalog` subcommand (called by cli.main)."""
    c = add_command(
        subparsers,
        "catalog",
        help="list the catalog; refresh or import prices from public catalogs",
        examples=(
            "tuneplan catalog prices",
            "tuneplan catalog refresh --source skypilot --cloud runpod,lambda",
            "tuneplan catalog import vms.csv --provider aws",
        ),
    )
    c.add_argument(
        "what",
        choices=["gpus", "models", "prices", "refresh", "import"],
        help="list gpus, models or prices; refresh prices from public catalogs; import a catalog "
        "file",
    )
    c.add_argument(
        "file", nargs="?", help="import: a SkyPilot vms.csv or a gpuhunt CSV / catalog.zip"
    )
    c.add_argument("--json", action="store_true", help="print the rows as JSON")
    c.add_argument(
        "--source", choices=["skypilot", "gpuhunt", "all"], help="refresh: which catalog (all)"
    )
    c.add_argument(
        "--cloud", help="refresh: clouds to read, comma-separated (aws,azure,lambda,runpod,...)"
    )
    c.add_argument(
        "--accept-fewer",
        action="store_true",
        help="refresh: accept a cloud's feed with under half the prices of its last refresh",
    )
    c.add_argument(
        "--format", choices=["skypilot", "gpuhunt"], help="import: the file's format (guessed)"
    )
    c.add_argument("--provider", help="import: the provider slug the file prices (from its place)")
    c.set_defaults(func=cmd_catalog)


def cmd_catalog(args: argparse.Namespace) -> int:
    from cli import catalog_refresh
    from cli.common import CliError
    from core.catalog import load_catalog

    if args.what == "refresh":
        return catalog_refresh.cmd_refresh(args)
    if args.what == "import":
        return catalog_refresh.cmd_import(args)
    if args.file is not None:
        raise CliError(f"`tuneplan catalog {args.what}` takes no file (got '{args.file}')")

    rows: list[tuple[str, ...]]
    header: tuple[str, ...]

    cat = load_catalog()
    if args.what == "gpus":
        rows = [
            (
                g.id,
                g.name,
                f"{g.memory_bytes / 1e9:.0f} GB",
                _figure(g.memory_bandwidth_gbs, " GB/s"),
                _figure(g.bf16_tflops),
                _figure(g.fp16_tflops),
                ", ".join(source_hosts(g)),
            )
            for g in cat.gpus.values()
        ]
        data: list[Any] = [g.model_dump() for g in cat.gpus.values()]
        header = ("id", "name", "memory", "bandwidth", "bf16 TFLOP/s", "fp16 TFLOP/s", "source")
    elif args.what == "models":
        from core.planner import Architecture

        rows, data = [], []
        for p in cat.models.values():
            arch = Architecture.from_hf_config(p.config, p.id)
            rows.append(
                (
                    p.id,
                    p.hf_repo,
                    fmt_count(arch.total_params),
                    fmt_count(arch.active_params) if arch.is_moe else "",
                    str(arch.max_position or ""),
                )
            )
            data.append(p.model_dump())
        header = ("id", "hf repo", "params", "active", "context")
    else:
        rows = [
            (
                p.provider_name,
                p.instance,
                p.gpu,
                str(p.gpus_per_instance),
                p.pricing_model.value,
                fmt_usd(p.usd_per_gpu_hour),
                p.date or "undated",
            )
            for p in cat.prices
        ]
        data = [
            {**p.model_dump(mode="json"), **({"undated": True} if p.is_undated else {})}
            for p in cat.prices
        ]
        header = ("provider", "instance", "gpu", "GPUs", "pricing", "USD/GPU-h", "seen")
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    # prices fit a 100-column terminal: long names cut (…), a reserved term and a read date in
    # --json
    else:
        print(table(rows, header=header, max_cell=PRICE_CELL if args.what == "prices" else None))
        read = sorted({p.fetched or "on no recorded date" for p in cat.prices if p.date is None})
        # how old an undated row is: when it was read, never an invented date
        if args.what == "prices" and read:
            print(f"\nundated: the source gives no date; those rows were read {', '.join(read)}")
    return 0


# the widest cell of `catalog prices`: names cut there keep the table within 100 columns
PRICE_CELL = 19


def _figure(value: float | None, unit: str = "") -> str:
    """A catalog figure as printed (989.5, 2500, 1307.4: no rounding that hides the vendor's
    number), or a dash."""
    return "—" if value is None else f"{value:g}{unit}"


def source_hosts(gpu: GPU) -> list[str]:
    """The web hosts the shown figures come from (nvidia.com, amd.com, ...), first use first: the
    table names them so a reader sees at a glance which figures are the vendor's; `--json` keeps the
    full URLs in `sources`."""
    hosts: list[str] = []
    for field in SHOWN_FIGURES:
        url = gpu.sources.get(field)
        if not url:
            continue
        host = urlsplit(url).hostname or url
        host = host.removeprefix("www.")
        if host not in hosts:
            hosts.append(host)
    return hosts
