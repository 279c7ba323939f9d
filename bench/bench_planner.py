"""How fast the planner answers, against DESIGN §7: one plan < 5 ms, a full search < 100 ms.

    python -m bench.bench_planner [--repeat N] [--warmup N] [--profile]
                                  [--write docs/performance.md]

Each case runs `--warmup` times unmeasured (imports, caches, NumPy dispatch), then `--repeat` times
timed with time.perf_counter; the median and the 95th percentile are reported, with ratio = budget /
measured (above 1 is within budget). The garbage collector stays on, as in the app. The catalog is
the shipped one (an empty override folder), so figures do not depend on the user's ~/.config. A case
whose median misses its budget is profiled with cProfile and its hot spots printed (also with
--profile for every case).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import io
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import perf_doc
from core.catalog import Catalog, load_catalog, shipped_catalog
from core.planner.choose import search as planner_search
from core.planner.plan import plan, resolve_model
from core.planner.request import PlanRequest

SINGLE_PLAN_BUDGET_S = 5e-3
SEARCH_BUDGET_S = 100e-3
SECTION_TITLE = "## Planner"

# DESIGN §3.1: Llama 3.1 8B LoRA on one node of 8 × H100 SXM.
DESIGN_REQUEST: dict[str, Any] = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": 2.0e8, "epochs": 1, "seq_len": 4096},
    "training": {
        "method": "lora",
        "lora_rank": 16,
        "lora_targets": "all-linear",
        "precision": "amp_bf16",
        "optimizer": "adamw",
        "sharding": "none",
        "offload": "none",
        "gradient_checkpointing": True,
        "attention": "flash",
        "micro_batch_size": 1,
        "global_batch_size": 64,
        "optimizer_in_backward": False,
    },
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
    "pricing": {"provider": "aws", "mode": "on_demand"},
    "assumptions": {"mfu": None},
}

# A search where memory decides: a full fine-tune of a 70B model needs sharding over many GPUs, and
# it is the search in which tensor and pipeline parallelism are worth choosing (no hardware given,
# tp/pp left to it).
FULL_70B_REQUEST: dict[str, Any] = {
    "model": {"preset": "llama-3.1-70b"},
    "data": {"tokens": 2.0e8, "epochs": 1, "seq_len": 4096},
    "training": {
        "method": "full",
        "precision": "amp_bf16",
        "optimizer": "adamw",
        "gradient_checkpointing": True,
        "attention": "flash",
        "micro_batch_size": 1,
        "global_batch_size": 64,
    },
    "pricing": {"provider": "aws", "mode": "on_demand"},
}

# A search that must try tensor × pipeline layouts: a 405B model's unsharded states fit no GPU, so
# the search adds tp 1-8 and, since tp 8 alone is not enough either, pipelines of 2-16 stages
# (choose/layouts.py).
FULL_405B_REQUEST: dict[str, Any] = {**FULL_70B_REQUEST, "model": {"preset": "llama-3.1-405b"}}

# What a fresh interpreter pays before its first answer (imports, catalog parse, first plan).
_FRESH_PROCESS = """
import json, sys, time
t0 = time.perf_counter()
from core.catalog import load_catalog
from core.planner.request import PlanRequest
from core.planner.plan import plan
t1 = time.perf_counter()
catalog = load_catalog(sys.argv[2])
t2 = time.perf_counter()
plan(PlanRequest.model_validate(json.loads(sys.argv[1])), catalog)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


@dataclass(frozen=True)
class Timing:
    """Seconds per call over the measured repetitions."""

    median: float
    p95: float
    best: float
    runs: int

    @classmethod
    def of(cls, samples: list[float]) -> Timing:
        arr = np.asarray(samples, dtype=float)
        return cls(
            float(np.median(arr)), float(np.percentile(arr, 95)), float(arr.min()), len(samples)
        )


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    call: Callable[[], object]
    budget_s: float | None


@dataclass(frozen=True)
class Outcome:
    case: Case
    timing: Timing

    @property
    def ratio(self) -> float | None:
        return None if self.case.budget_s is None else self.case.budget_s / self.timing.median

    @property
    def ratio_p95(self) -> float | None:
        return None if self.case.budget_s is None else self.case.budget_s / self.timing.p95

    @property
    def verdict(self) -> str:
        budget = self.case.budget_s
        if budget is None:
            return "no budget"
        if self.timing.median > budget:
            return "MISSED"
        if self.timing.p95 > budget:
            return "median within, p95 over"
        return "within"


def measure(call: Callable[[], object], repeat: int, warmup: int) -> Timing:
    """Median and p95 of `repeat` timed calls after `warmup` untimed ones."""
    for _ in range(warmup):
        call()
    gc.collect()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return Timing.of(samples)


@dataclass(frozen=True)
class Profile:
    """cProfile of one case: the printable listing and the top functions with their share of the
    time."""

    text: str
    cumulative: list[tuple[str, float]]
    own: list[tuple[str, float]]


def _is_entry_point(name: str) -> bool:
    """The benchmark's own frames and the entry point every case calls name no fix."""
    return "bench_planner" in name or name == "plan.py(plan)" or name.startswith("{")


def hot_spots(call: Callable[[], object], calls: int = 50, top: int = 12) -> Profile:
    """cProfile of `calls` runs: the functions with the most cumulative time, then the most own
    time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    own = {f"{file}({func})": float(row[2]) for (file, _line, func), row in raw.items()}
    cumulative = {f"{file}({func})": float(row[3]) for (file, _line, func), row in raw.items()}
    whole = max(cumulative.values(), default=0.0) or 1.0

    def ranked(times: dict[str, float]) -> list[tuple[str, float]]:
        names = sorted((n for n in times if not _is_entry_point(n)), key=lambda n: -times[n])[:5]
        return [(name, times[name] / whole) for name in names]

    return Profile(out.getvalue(), cumulative=ranked(cumulative), own=ranked(own))


def fresh_process(
    request: dict[str, Any], user_dir: str, runs: int = 3
) -> tuple[float, float, float]:
    """Median import, cold-catalog and first-plan seconds in new interpreters (interpreter start
    excluded)."""
    import json

    rows = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _FRESH_PROCESS, json.dumps(request), user_dir],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            cwd=Path(__file__).resolve().parent.parent,
        )
        rows.append([float(x) for x in done.stdout.split()])
    med = np.median(np.asarray(rows), axis=0)
    return float(med[0]), float(med[1]), float(med[2])


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def run(repeat: int, warmup: int, profile_all: bool) -> dict[str, Any]:
    """Measure every case; return what the report and the document need."""
    # no overrides: the shipped catalog
    with tempfile.TemporaryDirectory(prefix="tuneplan-bench-") as empty:
        return _run(empty, repeat, warmup, profile_all)


def _run(empty: str, repeat: int, warmup: int, profile_all: bool) -> dict[str, Any]:
    catalog: Catalog = load_catalog(Path(empty))
    single = PlanRequest.model_validate(DESIGN_REQUEST)
    searched = single.model_copy(update={"hardware": None})
    full70 = PlanRequest.model_validate(FULL_70B_REQUEST)
    full405 = PlanRequest.model_validate(FULL_405B_REQUEST)
    arch8, _ = resolve_model(searched.model, catalog)
    arch70, _ = resolve_model(full70.model, catalog)
    arch405, _ = resolve_model(full405.model, catalog)

    def cold_catalog() -> object:
        shipped_catalog.cache_clear()
        return load_catalog(Path(empty))

    cases = [
        Case(
            "plan",
            "single plan, 8B LoRA on 8×H100-SXM (DESIGN §3.1)",
            lambda: plan(single, catalog),
            SINGLE_PLAN_BUDGET_S,
        ),
        Case(
            "plan_search_8b",
            "plan with search, 8B LoRA (search + plan of the winner)",
            lambda: plan(searched, catalog),
            SEARCH_BUDGET_S,
        ),
        Case(
            "search_8b",
            "search only, 8B LoRA (core.planner.choose.search.search)",
            lambda: planner_search.search(arch8, searched, catalog),
            SEARCH_BUDGET_S,
        ),
        Case(
            "plan_search_70b",
            "plan with search, 70B full fine-tune",
            lambda: plan(full70, catalog),
            SEARCH_BUDGET_S,
        ),
        Case(
            "search_70b",
            "search only, 70B full fine-tune",
            lambda: planner_search.search(arch70, full70, catalog),
            SEARCH_BUDGET_S,
        ),
        Case(
            "search_405b",
            "search only, 405B full fine-tune (tensor × pipeline layouts tried)",
            lambda: planner_search.search(arch405, full405, catalog),
            SEARCH_BUDGET_S,
        ),
        Case(
            "catalog_cold",
            "catalog load, cold (parse + validate resources/catalog)",
            cold_catalog,
            None,
        ),
        Case("catalog_cached", "catalog load, cached", lambda: load_catalog(Path(empty)), None),
    ]
    outcomes = [Outcome(case, measure(case.call, repeat, warmup)) for case in cases]
    shipped_catalog.cache_clear()
    catalog = load_catalog(Path(empty))

    searches = {}
    for key, arch, request in (
        ("search_8b", arch8, searched),
        ("search_70b", arch70, full70),
        ("search_405b", arch405, full405),
    ):
        found = planner_search.search(arch, request, catalog)
        best = found.best
        parallel = ""
        if best is not None:  # the model-parallel degrees the search chose, where it searches them
            tp, pp = (
                getattr(best, "tensor_parallel", None),
                getattr(best, "pipeline_parallel", None),
            )
            if tp is not None or pp is not None:
                parallel = f", tp {tp or 1} × pp {pp or 1}"
        searches[key] = {
            "evaluated": found.evaluated,
            "kept": len(found.candidates),
            "best": (
                f"{best.gpus_per_node}×{best.gpu} × {best.nodes} node(s), {best.sharding.value}, "
                f"micro-batch {best.micro_batch_size}, "
                f"checkpointing {'on' if best.gradient_checkpointing else 'off'}{parallel}"
                if best
                else f"none ({found.reason})"
            ),
        }
    profiles = {
        o.case.key: hot_spots(o.case.call)
        for o in outcomes
        if profile_all or (o.verdict != "within" and o.case.budget_s is not None)
    }
    imports, cold, first = fresh_process(DESIGN_REQUEST, empty)
    return {
        "outcomes": outcomes,
        "searches": searches,
        "profiles": profiles,
        "machine": perf_doc.machine(),
        "fresh": {"imports": imports, "catalog": cold, "first_plan": first},
        "repeat": repeat,
        "warmup": warmup,
    }


def report_text(result: dict[str, Any]) -> str:
    """Plain-text figures for the terminal."""
    lines = ["tuneplan planner benchmark", ""]
    lines += [f"  {k:7} {v}" for k, v in result["machine"].items()]
    lines += [
        "",
        f"  {result['repeat']} timed runs after {result['warmup']} warm-up runs per case",
        "",
    ]
    head = (
        f"  {'case':58} {'median':>10} {'p95':>10} {'min':>9} {'budget':>9} {'ratio':>7} "
        f"{'ratio p95':>9}"
        "  verdict"
    )
    lines += [head, "  " + "-" * (len(head) - 2)]
    for o in result["outcomes"]:
        budget = "—" if o.case.budget_s is None else _ms(o.case.budget_s)
        lines.append(
            f"  {o.case.label:58} {_ms(o.timing.median):>10} {_ms(o.timing.p95):>10} "
            f"{_ms(o.timing.best):>9} {budget:>9} "
            f"{_ratio(o.ratio):>7} {_ratio(o.ratio_p95):>9}  {o.verdict}"
        )
    lines.append("")
    for key, s in result["searches"].items():
        lines.append(
            f"  {key}: {s['evaluated']:,} configurations evaluated, {s['kept']} shown; "
            f"best: {s['best']}"
        )
    f = result["fresh"]
    lines += [
        "",
        f"  fresh process: imports {_ms(f['imports'])}, cold catalog {_ms(f['catalog'])}, "
        f"first plan {_ms(f['first_plan'])}",
    ]
    missed = [o for o in result["outcomes"] if o.verdict == "MISSED"]
    lines += [
        "",
        "  BUDGET MISSED: " + ", ".join(o.case.label for o in missed)
        if missed
        else "  every budget met at the median",
    ]
    for key, profile in result["profiles"].items():
        lines += ["", f"  --- cProfile, {key} ---", profile.text]
    return "\n".join(lines)


def section_markdown(result: dict[str, Any], today: dt.date) -> str:
    """The `## Planner` section of docs/performance.md."""
    m = result["machine"]
    out = [
        SECTION_TITLE,
        "",
        f"Measured {today.isoformat()} with `python -m bench.bench_planner --repeat "
        f"{result['repeat']}` on {m['cpu']}, {m['cores']}, Python {m['python']}, NumPy "
        f"{m['numpy']}, {m['os']}; load {m['load']}. Each case: {result['warmup']} warm-up runs, "
        f"then {result['repeat']} runs timed with "
        "`time.perf_counter` (garbage collector on). Ratio = budget ÷ measured; above 1× is "
        "within budget.",
        "",
        "| case | median | p95 | min | budget | ratio (median) | ratio (p95) | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for o in result["outcomes"]:
        budget = "—" if o.case.budget_s is None else _ms(o.case.budget_s)
        out.append(
            f"| {o.case.label} | {_ms(o.timing.median)} | {_ms(o.timing.p95)} | "
            f"{_ms(o.timing.best)} | {budget} | {_ratio(o.ratio)} | {_ratio(o.ratio_p95)} | "
            f"{o.verdict} |"
        )
    f = result["fresh"]
    out += [
        "",
        "Hardware search size (`SearchOutcome.evaluated`: GPU types with a price × GPUs per node "
        "× nodes × micro-batches, within `search.max_gpus`, summed over the sharding × "
        "checkpointing loop):",
        "",
    ]
    for key, s in result["searches"].items():
        label = {"search_8b": "8B LoRA", "search_70b": "70B full fine-tune"}.get(
            key, "405B full fine-tune"
        )
        out.append(
            f"- {label}: {s['evaluated']:,} configurations, {s['kept']} shown; "
            f"recommended {s['best']}."
        )
    out += [
        "",
        f"A fresh interpreter (interpreter start excluded) spends {_ms(f['imports'])} importing "
        f"the engine, {_ms(f['catalog'])} on the cold catalog and {_ms(f['first_plan'])} on its "
        "first plan.",
        "",
        "What the cases measure: *single plan* is `core.planner.plan.plan()` with fixed hardware "
        "(memory, compute, communication, storage, checkpoints, cost, and the vectorised search "
        "for the largest micro-batch and sequence that fit); its request sets micro-batch, "
        "sharding and recomputation, so no settings search runs (one that leaves them out adds "
        "`search.on_hardware`, one GPU's settings grid, tens of milliseconds). *Plan with search* "
        "is the same request without `hardware`: `core.planner.choose.search.search` over the "
        "whole priced catalog, then a full plan of the recommended configuration. *Search only* "
        "times `search()` alone. *Catalog cold* clears the in-process cache and parses "
        "`resources/catalog/*.json` again; *cached* is every later `load_catalog()` call.",
    ]
    missed = [
        o for o in result["outcomes"] if o.verdict != "within" and o.case.budget_s is not None
    ]
    if missed:
        out += [
            "",
            "**Budget not met:** "
            + "; ".join(
                f"{o.case.label} ({o.verdict}, median {_ms(o.timing.median)} vs "
                f"{_ms(o.case.budget_s or 0)})"
                for o in missed
            )
            + ".",
        ]
        for o in missed:
            profile: Profile | None = result["profiles"].get(o.case.key)
            if profile is None:
                continue
            out.append("")
            for kind, spots in (("cumulative", profile.cumulative), ("own", profile.own)):
                out.append(
                    f"- hot spots in `{o.case.key}` by {kind} time (share of the case's time under "
                    "cProfile): "
                    + ", ".join(f"`{name}` {share:.0%}" for name, share in spots)
                    + "."
                )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_planner", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--repeat", type=int, default=200, help="timed runs per case (default 200)")
    parser.add_argument(
        "--warmup", type=int, default=20, help="untimed runs per case first (default 20)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="print cProfile hot spots for every case"
    )
    parser.add_argument(
        "--write", type=Path, metavar="FILE", help="(re)write the '## Planner' section of FILE"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be at least 1 and --warmup at least 0")
    result = run(args.repeat, args.warmup, args.profile)
    print(report_text(result))
    if args.write:
        perf_doc.write_section(args.write, SECTION_TITLE, section_markdown(result, dt.date.today()))
        print(f"\nwrote the '{SECTION_TITLE}' section of {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
