"""`tuneplan plan REQUEST.json|--model ...`: build a plan request from a file or quick flags, plan it, print it.

The request building is shared with `tuneplan report` (``core.cli.report``); the text rendering is the human
summary of a ``PlanResult``, and ``--json`` prints the result itself.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.cli.common import CliError, read_json
from core.cli.table import table
from core.units import fmt_amount, fmt_bytes, fmt_count, fmt_hours, fmt_usd, parse_count
from core.validation import validation_message

_NUMBER_LIKE = re.compile(r"[0-9][0-9.,_eE+-]*\s*[A-Za-z]?")


def register(subparsers: Any) -> None:
    """Add the `plan` subcommand (called by core.cli.main)."""
    p = subparsers.add_parser("plan", help="plan a fine-tuning run from REQUEST.json or quick flags")
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
            model = {"params": parse_count(args.model)} if args.model[:1].isdigit() else {"preset": args.model}
        except ValueError:  # '1,5B' is a count mistyped (its sentence says so), '01-ai/Yi-34B' a preset
            model = {"params": args.model} if _NUMBER_LIKE.fullmatch(args.model) else {"preset": args.model}
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


def price_offer(c: Any) -> str:
    """' p5.48xlarge (on_demand)': the instance the price is for and what kind of price it is; '' with none."""
    if not c.instance:
        return ""
    low = ", low confidence" if c.confidence == "low" else ""
    return f" {c.instance} ({c.pricing_model}{low})"


def time_lines(r: Any) -> list[str]:
    """The Time line; with the plan's bands, 'likely X (range A–B)' for the wall time, a Speed line for tokens/s and
    a Range line saying how often published runs of this kind fell inside (without bands, the Time line alone)."""
    from core.planner.report import band_notes, likely_hours, likely_tokens_per_second

    c = r.compute
    speed = likely_tokens_per_second(r)
    rate = "" if speed else f"{c.tokens_per_second:,.0f} tokens/s, "
    lines = [f"Time     {likely_hours(r) or fmt_hours(r.time.hours)} wall, {r.time.gpu_hours:,.0f} GPU-hours, "
             f"{c.steps:,} steps of {c.step_time_s:.2f} s ({rate}scaling {c.scaling_efficiency:.0%})"]
    lines += [f"Speed    {speed}"] if speed else []
    return lines + [f"Range    {note}" for note in band_notes(r)]


def cost_lines(r: Any) -> list[str]:
    """'Total    likely $54.06 (range $44.00–$70.00)' under the cost table when the plan has a cost band."""
    from core.planner.report import likely_cost

    total = likely_cost(r)
    return [f"Total    {total}"] if total else []


def render_plan(result: Any) -> str:
    """The human summary: headline, memory table, time, cost, candidates, warnings."""
    r = result
    hw, m, c, t = r.hardware, r.memory, r.compute, r.training if hasattr(r, "training") else r.request.training
    split = t.tensor_parallel * t.pipeline_parallel > 1
    layout = f", tp {t.tensor_parallel} × pp {t.pipeline_parallel}" if split else ""
    out = [
        f"{r.model_name}  ·  {t.method.value}  ·  {hw.gpus_per_node * hw.nodes}× {hw.gpu} "
        f"({hw.nodes} node{'s' if hw.nodes > 1 else ''}, {t.sharding.value}{layout})",
        "",
        "Memory per GPU (reserved, as nvidia-smi shows)",
        table(
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
        *time_lines(r),
        f"Checkpt  {fmt_bytes(r.checkpoint.size_bytes)} every {r.checkpoint.interval_minutes:.0f} min "
        f"(write {r.checkpoint.write_seconds:.0f} s; job MTBF {fmt_hours(r.checkpoint.job_mtbf_hours)})",
        "",
        "Cost (USD)",
        table(
            [
                ("on-demand", fmt_usd(r.cost.compute_usd.on_demand)),
                ("spot", fmt_usd(r.cost.compute_usd.spot)),
                ("reserved", fmt_usd(r.cost.compute_usd.reserved)),
                ("storage", fmt_usd(r.cost.storage_usd)),
                ("total", fmt_usd(r.cost.total_usd)),
            ]
        ),
        *cost_lines(r),
        f"Prices: {r.cost.provider or 'none'}{price_offer(r.cost)}, seen {r.cost.price_date or 'undated'} "
        f"({r.cost.price_source or '—'})",
    ]
    if r.cost.billing:
        out.append(f"Billing: {r.cost.billing}: {fmt_amount(r.cost.billed_gpu_hours or 0)} GPU-hours billed for "
                   f"{fmt_amount(r.time.gpu_hours)} used")
    if r.candidates:
        from core.planner.choose.search import shown_candidates  # the planner loads only when a plan is printed

        fastest = min(k.hours for k in r.candidates)
        priced = [k.cost_usd for k in r.candidates if k.cost_usd is not None]
        cheapest = min(priced) if priced else None

        def mark(k: Any) -> str:
            """→ the chosen row; ⚡ the fastest, $ the cheapest, * the Pareto front."""
            return ("→" if k is r.candidates[0] else "") + ("⚡" if k.hours == fastest else "") + (
                "$" if cheapest is not None and k.cost_usd == cheapest else "") + ("*" if k.pareto else "")

        out += [
            "",
            "Candidates (search; → chosen, with checkpoints and restarts; the others failure-free)",
            table(
                [
                    (
                        f"{k.nodes}×{k.gpus_per_node} {k.gpu}" if k.nodes > 1 else f"{k.gpus_per_node}× {k.gpu}",
                        k.sharding.value,
                        f"{k.tensor_parallel}×{k.pipeline_parallel}",
                        str(k.micro_batch_size),
                        fmt_hours(k.hours),
                        fmt_usd(k.cost_usd),
                        mark(k) + k.why,
                    )
                    for k in shown_candidates(r.candidates, 12)
                ],
                header=("config", "sharding", "tp×pp", "mb", "time", "cost", "why"),
            ),
        ]
    if getattr(r, "sanity", None):
        out += ["", "Check:", *[f"  ? {w.message}" for w in r.sanity]]
    if r.warnings:
        out += ["", "Warnings", *[f"  ! {w}" for w in r.warnings]]
    return "\n".join(out)

