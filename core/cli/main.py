"""The `tuneplan` command line: everything the window shows, computable headless.

Errors are one sentence on stderr with a non-zero exit code; `--json` prints only JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.units import fmt_bytes, fmt_count, fmt_hours, fmt_usd, parse_count
from core.validation import validation_message

EXIT_USAGE = 2
EXIT_ERROR = 1


class CliError(Exception):
    """A user error: printed as one sentence, exit code 1."""


# ----------------------------------------------------------------------------- plan


def _quick_request(args: argparse.Namespace) -> dict[str, Any]:
    if not args.model:
        raise CliError("plan needs REQUEST.json or --model PRESET (with --tokens)")
    if args.tokens is None:
        raise CliError("--tokens is required with --model (e.g. --tokens 2e8 or 200M)")
    model: dict[str, Any]
    if Path(args.model).suffix == ".json":
        model = {"hf_config": args.model}
    else:
        try:
            model = {"params": parse_count(args.model)} if args.model[0].isdigit() else {"preset": args.model}
        except ValueError:
            model = {"preset": args.model}
    req: dict[str, Any] = {"model": model, "data": {"tokens": args.tokens}, "training": {"method": args.method}}
    if args.seq_len:
        req["data"]["seq_len"] = args.seq_len
    if args.epochs:
        req["data"]["epochs"] = args.epochs
    if args.lora_rank is not None:
        req["training"]["lora_rank"] = args.lora_rank
    if args.gpu:
        req["hardware"] = {"gpu": args.gpu, "gpus_per_node": args.gpus, "nodes": args.nodes}
    if args.provider or args.mode:
        req["pricing"] = {k: v for k, v in (("provider", args.provider), ("mode", args.mode)) if v}
    return req


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


def load_request(path: str) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise CliError(f"{path} must hold a JSON object with model and data")
    return data


def build_request(args: argparse.Namespace) -> Any:
    from core.planner.models import PlanRequest

    raw = load_request(args.request) if args.request else _quick_request(args)
    try:
        return PlanRequest.model_validate(raw)
    except ValidationError as exc:
        raise CliError(validation_message(exc)) from exc


def cmd_plan(args: argparse.Namespace) -> int:
    from core.planner.plan import PlanError, plan

    request = build_request(args)
    try:
        result = plan(request)
    except PlanError as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(render_plan(result))
    return 0


def _table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    allrows = [list(header)] + [list(r) for r in rows] if header else [list(r) for r in rows]
    widths = [max(len(r[i]) for r in allrows) for i in range(len(allrows[0]))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in allrows
    ]
    if header:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_plan(result: Any) -> str:
    """The human summary: headline, memory table, time, cost, candidates, warnings."""
    r = result
    hw, m, c, t = r.hardware, r.memory, r.compute, r.training if hasattr(r, "training") else r.request.training
    out = [
        f"{r.model_name}  ·  {t.method.value}  ·  {hw.gpus_per_node * hw.nodes}× {hw.gpu} "
        f"({hw.nodes} node{'s' if hw.nodes > 1 else ''}, {t.sharding.value})",
        "",
        "Memory per GPU (reserved, as nvidia-smi shows)",
        _table(
            [
                (name, fmt_bytes(getattr(m.per_gpu, name)))
                for name in ("weights", "gradients", "optimizer", "activations", "logits", "overhead", "total")
            ]
        ),
        f"GPU memory {fmt_bytes(m.gpu_memory)} → {'fits' if m.fits else 'DOES NOT FIT'}; "
        f"allocated peak {fmt_bytes(m.allocated_peak)}; largest micro-batch {m.max_micro_batch}, "
        f"longest sequence {m.max_seq_len}",
    ]
    if m.suggestions:
        out += ["To make it fit:", *[f"  - {s}" for s in m.suggestions]]
    out += [
        "",
        f"Compute  {fmt_count(c.params_total)} params ({fmt_count(c.params_trainable)} trainable), "
        f"{c.total_flops:.3g} FLOPs, MFU {c.mfu:.0%} ({c.achieved_tflops_per_gpu:.0f} TFLOP/s per GPU)",
        f"Time     {fmt_hours(r.time.hours)} wall, {r.time.gpu_hours:,.0f} GPU-hours, {c.steps:,} steps of "
        f"{c.step_time_s:.2f} s ({c.tokens_per_second:,.0f} tokens/s, scaling {c.scaling_efficiency:.0%})",
        f"Checkpt  {fmt_bytes(r.checkpoint.size_bytes)} every {r.checkpoint.interval_minutes:.0f} min "
        f"(write {r.checkpoint.write_seconds:.0f} s; job MTBF {fmt_hours(r.checkpoint.job_mtbf_hours)})",
        "",
        "Cost (USD)",
        _table(
            [
                ("on-demand", fmt_usd(r.cost.compute_usd.on_demand)),
                ("spot", fmt_usd(r.cost.compute_usd.spot)),
                ("reserved", fmt_usd(r.cost.compute_usd.reserved)),
                ("storage", fmt_usd(r.cost.storage_usd)),
                ("total", fmt_usd(r.cost.total_usd)),
            ]
        ),
        f"Prices: {r.cost.provider or 'none'}, seen {r.cost.price_date or 'undated'} ({r.cost.price_source or '—'})",
    ]
    if r.candidates:
        out += [
            "",
            "Candidates (search)",
            _table(
                [
                    (
                        f"{k.nodes}×{k.gpus_per_node} {k.gpu}" if k.nodes > 1 else f"{k.gpus_per_node}× {k.gpu}",
                        k.sharding.value,
                        str(k.micro_batch_size),
                        fmt_hours(k.hours),
                        fmt_usd(k.cost_usd),
                        ("*" if k.pareto else "") + k.why,
                    )
                    for k in r.candidates[:12]
                ],
                header=("config", "sharding", "mb", "time", "cost", "why"),
            ),
        ]
    if r.warnings:
        out += ["", "Warnings", *[f"  ! {w}" for w in r.warnings]]
    return "\n".join(out)


# ----------------------------------------------------------------------------- catalog


def cmd_catalog(args: argparse.Namespace) -> int:
    from core.catalog import load_catalog

    rows: list[tuple[str, ...]]
    header: tuple[str, ...]

    cat = load_catalog()
    if args.what == "gpus":
        rows = [
            (
                g.id,
                g.name,
                f"{g.memory_bytes / 1e9:.0f} GB",
                f"{g.peak_tflops('amp_bf16'):.0f}" if g.supports("amp_bf16") else "—",
                f"{g.intra_node_gbs:.0f} GB/s",
            )
            for g in cat.gpus.values()
        ]
        data: list[Any] = [g.model_dump() for g in cat.gpus.values()]
        header = ("id", "name", "memory", "bf16 TFLOP/s", "intra-node")
    elif args.what == "models":
        from core.planner.params import Architecture

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
                fmt_usd(p.on_demand),
                fmt_usd(p.spot),
                fmt_usd(p.reserved),
                p.date or "undated",
            )
            for p in cat.prices
        ]
        data = [p.model_dump() for p in cat.prices]
        header = ("provider", "instance", "gpu", "on-demand/GPU-h", "spot", "reserved", "seen")
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        print(_table(rows, header=header))
    return 0


# ----------------------------------------------------------------------------- entry


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuneplan",
        description=(
            "Plan what an LLM fine-tune needs and costs; probe a rented GPU box. Without arguments, opens the window."
        ),
    )
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("plan", help="plan a fine-tuning run from REQUEST.json or quick flags")
    p.add_argument("request", nargs="?", help="plan request JSON file (- for stdin)")
    p.add_argument("--json", action="store_true", help="print the result JSON only")
    p.add_argument("--model", help="preset id (llama-3.1-8b), a parameter count (7B) or a config.json path")
    p.add_argument("--tokens", help="dataset tokens: 2e8, 200M, 1.5B")
    p.add_argument("--epochs", type=float)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--method", default="lora", help="full, lora or qlora")
    p.add_argument("--lora-rank", type=int)
    p.add_argument("--gpu", help="GPU id, e.g. H100-SXM (omit to search)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs per node")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--provider")
    p.add_argument("--mode", help="on_demand, spot or reserved")
    p.set_defaults(func=cmd_plan)

    c = sub.add_parser("catalog", help="list the shipped catalog")
    c.add_argument("what", choices=["gpus", "models", "prices"])
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_catalog)

    _register_extensions(sub)
    return parser


def _register_extensions(sub: Any) -> None:
    """Commands whose modules arrive with their own features (reports, probes)."""
    for module, name in (
        ("core.cli.report", "register"),
        ("core.cli.probe", "register"),
        ("core.cli.probe_report", "register"),
    ):
        try:
            mod = __import__(module, fromlist=[name])
        except ImportError:
            continue
        register: Callable[[Any], None] = getattr(mod, name)
        register(sub)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except CliError as exc:
        print(f"tuneplan: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ValueError as exc:  # catalog and planner errors are written as sentences
        print(f"tuneplan: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `tuneplan catalog gpus | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    # Run the importable module, not __main__: errors raised elsewhere are core.cli.main's classes.
    from core.cli.main import main as _main

    raise SystemExit(_main())
