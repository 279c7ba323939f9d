"""`tuneplan plan REQUEST.json|--model ...`: build a plan request from a file or quick flags, plan
it, print it.

The request building (``cli.plan_request``) is shared with `tuneplan report`, `tuneplan launch` and
the step probe; the text rendering is the human summary of a ``PlanResult``, and ``--json`` prints
the result itself.
"""

from __future__ import annotations

import argparse
import math
import textwrap
from typing import Any

from cli.common import CliError, add_command
from cli.plan_request import build_request
from cli.table import table
from core.units import fmt_bytes, fmt_count, fmt_gpu_hours, fmt_hours, fmt_usd


def register(subparsers: Any) -> None:
    """Add the `plan` subcommand (called by cli.main)."""
    p = add_command(
        subparsers,
        "plan",
        help="plan a fine-tuning run from REQUEST.json or quick flags",
        examples=(
            "tuneplan plan --model llama-3.1-8b --tokens 200M --method qlora",
            "tuneplan plan --model config.json --tokens 1B --gpu H100-SXM --gpus 8 --method full",
            "tuneplan plan request.json --json > plan.json   # request.json: see `tuneplan schema`",
        ),
    )
    p.add_argument(
        "request",
        nargs="?",
        help="plan request JSON file (- for stdin); `tuneplan schema` describes it",
    )
    p.add_argument("--json", action="store_true", help="print the result JSON only")
    p.add_argument(
        "--model", help="preset id (llama-3.1-8b), a parameter count (7B) or a config.json path"
    )
    p.add_argument("--tokens", help="dataset tokens: 2e8, 200M, 1.5B")
    # The numbers go into the request as typed, as the window's fields put them: pydantic judges
    # both alike (a 0 is refused there in one sentence, never dropped here for being falsy).
    p.add_argument("--epochs", help="passes over the dataset (default 1)")
    p.add_argument("--seq-len", help="tokens per sample (default 2048)")
    p.add_argument("--method", help="full, lora or qlora (default lora)")
    p.add_argument("--lora-rank", help="LoRA rank (default 16)")
    p.add_argument("--gpu", help="GPU id, e.g. H100-SXM (omit to search)")
    p.add_argument("--gpus", help="GPUs per node (with --gpu; default 1)")
    p.add_argument("--nodes", help="nodes (with --gpu; default 1)")
    p.add_argument(
        "--provider",
        help="price at this provider only, e.g. lambda or runpod (`tuneplan catalog prices`)",
    )
    p.add_argument("--mode", help="on_demand, spot or reserved")
    p.add_argument(
        "--probe-run",
        metavar="RUN",
        help="apply a probe run's measurements (a run id from the probe "
        "history or a run JSON file): matmul TFLOP/s, bus bandwidth and the measured step",
    )
    p.add_argument("--db", help="probe history file for --probe-run (default: the app's probes.db)")
    p.set_defaults(func=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    from core.planner import PlanError, make_plan

    request = build_request(args)
    applied: list[str] = []
    if getattr(args, "probe_run", None):
        from cli.probe_step import applied_request

        request, applied = applied_request(request, args.probe_run, args.db)
    try:
        result = make_plan(request)
    except PlanError as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(
            "\n".join(
                [
                    *(f"Applied  {note}" for note in applied),
                    *([""] if applied else []),
                    render_plan(result),
                ]
            )
        )
    return 0


def price_offer(c: Any) -> str:
    """' p5.48xlarge in us-east-1 (on_demand)': the instance and region the price is for and what
    kind of price it is; '' with none."""
    from core.planner import offer_place

    if not c.instance:
        return ""
    low = ", low confidence" if c.confidence == "low" else ""
    return f" {offer_place(c)} ({c.pricing_model}{low})"


def time_lines(r: Any) -> list[str]:
    """The Time line; with the plan's bands, 'likely X (range A–B)' for the wall time, a Speed line
    for tokens/s and a Range line saying how often published runs of this kind fell inside (without
    bands, the Time line alone)."""
    from core.planner import (
        band_notes,
        likely_hours,
        likely_tokens_per_second,
        measured_step_text,
        wall_time_parts,
    )

    c = r.compute
    speed = likely_tokens_per_second(r)
    rate = "" if speed else f"{c.tokens_per_second:,.0f} tokens/s, "
    lines = [
        f"Time     {likely_hours(r) or fmt_hours(r.time.hours)} wall, "
        f"{fmt_gpu_hours(r.time.gpu_hours)} GPU-hours, {c.steps:,} steps of {c.step_time_s:.2f} s "
        f"({rate}scaling {c.scaling_efficiency:.0%})"
    ]
    lines.append(f"Parts    {wall_time_parts(r)}")
    lines += [f"Speed    {speed}"] if speed else []
    measured = measured_step_text(c)
    lines += [f"Step     {measured}"] if measured else []
    return lines + [f"Range    {note}" for note in band_notes(r)]


def cost_lines(r: Any) -> list[str]:
    """'Total    likely $54.06 (range $44.00–$70.00)' under the cost table when the plan has a cost
    band."""
    from core.planner import likely_cost

    total = likely_cost(r)
    return [f"Total    {total}"] if total else []


def cost_block(r: Any) -> list[str]:
    """The cost table, each mode beside the offer it is priced from (provider, instance, rate, seen
    date: the spot and reserved prices may be another provider's than the on-demand one), the total,
    and where the prices come from; a plan that does not fit has no cost, and says why instead."""
    c = r.cost
    if c.unpriced_reason:
        return [f"Cost     none: {c.unpriced_reason}"]
    from core.planner import seen_phrase

    offers = {a.name: f"{a.value}, {seen_phrase(a.date)}" for a in r.assumptions}
    modes = [
        (mode.replace("_", "-"), getattr(c.compute_usd, mode))
        for mode in ("on_demand", "spot", "reserved")
    ]
    rows = table(
        [
            *((name, fmt_usd(usd)) for name, usd in modes),
            ("storage", fmt_usd(c.storage_usd)),
            ("total", fmt_usd(c.total_usd)),
        ]
    ).splitlines()
    offered = [offers.get(f"{name} price", "") for name, _usd in modes]
    return [
        "Cost (USD)",
        *(
            f"{line}  {offer}".rstrip()
            for line, offer in zip(rows, [*offered, "", ""], strict=True)
        ),
        *cost_lines(r),
        f"Prices: {c.provider or 'none'}{price_offer(c)}, {seen_phrase(c.price_date)} "
        f"({c.price_source or '—'})",
    ]


def memory_block(r: Any) -> list[str]:
    """The memory table per GPU, whether it fits, the largest micro-batch and sequence, and what
    would fit."""
    m = r.memory
    out = [
        "Memory per GPU (reserved, as nvidia-smi shows)",
        table(
            [
                (name, fmt_bytes(getattr(m.per_gpu, name)))
                for name in (
                    "weights",
                    "gradients",
                    "optimizer",
                    "activations",
                    "logits",
                    "overhead",
                    "total",
                )
            ]
        ),
        f"GPU memory {fmt_bytes(m.gpu_memory)} → {'fits' if m.fits else 'DOES NOT FIT'}; "
        f"allocated peak {fmt_bytes(m.allocated_peak)}; largest micro-batch {m.max_micro_batch}, "
        f"longest sequence {m.max_seq_len}",
    ]
    if m.suggestions:
        out += ["To make it fit:", *[f"  - {s}" for s in m.suggestions]]
    return out


MARKERS = (
    "→ chosen (with checkpoints and restarts; the others failure-free), ⚡ fastest, $ cheapest "
    "(every row tied with it), * Pareto front (no other row both faster and cheaper)"
)


def tied(value: float, best: float) -> bool:
    """Equal to the best up to float noise: two rows 3e-13 dollars apart cost the same, so both are
    cheapest."""
    return math.isclose(value, best, rel_tol=1e-9, abs_tol=1e-9)


def candidates_block(r: Any) -> list[str]:
    """The search's table, its markers explained above it: → the chosen row, ⚡ the fastest, $ the
    cheapest,
    * the Pareto front; a tie marks every row tied."""
    if not r.candidates:
        return []
    # The planner loads only when a plan is printed
    from core.planner import (
        sharding_text,
        shown_candidates,
    )

    fastest = min(k.hours for k in r.candidates)
    priced = [k.cost_usd for k in r.candidates if k.cost_usd is not None]
    cheapest = min(priced) if priced else None

    def mark(k: Any) -> str:
        return (
            ("→" if k is r.candidates[0] else "")
            + ("⚡" if tied(k.hours, fastest) else "")
            + (
                "$"
                if cheapest is not None and k.cost_usd is not None and tied(k.cost_usd, cheapest)
                else ""
            )
            + ("*" if k.pareto else "")
        )

    rows = [
        (
            f"{k.nodes}×{k.gpus_per_node} {k.gpu}"
            if k.nodes > 1
            else f"{k.gpus_per_node}× {k.gpu}",
            sharding_text(k),
            f"{k.tensor_parallel}×{k.pipeline_parallel}",
            str(k.micro_batch_size),
            fmt_hours(k.hours),
            fmt_usd(k.cost_usd),
            mark(k) + k.why,
        )
        for k in shown_candidates(r.candidates, 12)
    ]
    return [
        "",
        "Candidates (search)",
        *textwrap.wrap(MARKERS, 100, initial_indent="  ", subsequent_indent="  "),
        table(rows, header=("config", "sharding", "tp×pp", "mb", "time", "cost", "why")),
    ]


def utilisation_short(c: Any) -> str:
    """'MFU 23% (model FLOPs), HFU 34% (hardware FLOPs, 336 TFLOP/s per GPU)': the TFLOP/s a GPU
    runs counts the recomputed forward too, so it is the hardware rate, and sits beside HFU, never
    beside MFU alone."""
    rate = f"{c.achieved_tflops_per_gpu:.0f} TFLOP/s per GPU"
    hardware = (
        f"HFU {c.hfu:.0%} (hardware FLOPs, {rate})" if c.hfu > 0 else f"hardware FLOPs {rate}"
    )
    return f"MFU {c.mfu:.0%} (model FLOPs), {hardware}"


def render_plan(result: Any) -> str:
    """The human summary: headline (that it does not fit, first), memory table, time, cost,
    candidates, warnings."""
    from core.planner import not_fit_text

    r = result
    hw, m, c, t = (
        r.hardware,
        r.memory,
        r.compute,
        r.training if hasattr(r, "training") else r.request.training,
    )
    split = t.tensor_parallel * t.pipeline_parallel > 1
    layout = f", tp {t.tensor_parallel} × pp {t.pipeline_parallel}" if split else ""
    out = [
        f"{r.model_name}  ·  {t.method.value}  ·  {hw.gpus_per_node * hw.nodes}× {hw.gpu} "
        f"({hw.nodes} node{'s' if hw.nodes > 1 else ''}, {t.sharding.value}{layout})",
        *([str(not_fit_text(r)).replace("Does not fit", "DOES NOT FIT", 1)] if not m.fits else []),
        "",
        *memory_block(r),
        "",
        f"Compute  {fmt_count(c.params_total)} params ({fmt_count(c.params_trainable)} trainable), "
        f"{c.total_flops:.3g} FLOPs, {utilisation_short(c)}",
        *time_lines(r),
        f"Checkpt  {fmt_bytes(r.checkpoint.size_bytes)} every {r.checkpoint.interval_minutes:.0f} "
        f"min (write {r.checkpoint.write_seconds:.0f} s; job MTBF "
        f"{fmt_hours(r.checkpoint.job_mtbf_hours)})",
        "",
        *cost_block(r),
    ]
    if r.cost.billing:
        out.append(
            f"Billing: {r.cost.billing}: {fmt_gpu_hours(r.cost.billed_gpu_hours or 0)} GPU-hours "
            f"billed for {fmt_gpu_hours(r.time.gpu_hours)} used"
        )
    out += candidates_block(r)
    if getattr(r, "sanity", None):
        out += ["", "Check:", *[f"  ? {w.message}" for w in r.sanity]]
    if r.warnings:
        out += ["", "Warnings", *[f"  ! {w}" for w in r.warnings]]
    return "\n".join(out)
