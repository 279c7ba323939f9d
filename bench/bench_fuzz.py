"""100,000 generated plan requests through `tuneplan plan FILE --json`, in-process: no traceback,
ever.

    python -m bench.bench_fuzz [--count 100000] [--write docs/performance.md]
    (TUNEPLAN_FUZZ_WORKERS=2)

Each request starts from a valid one (Llama 3.1 8B LoRA on 8 × H100, or a search of the whole
catalog) and is changed as tests/core/test_request_fuzz.py changes it, with a seeded random
generator instead of Hypothesis (a hundred thousand examples must run in minutes): up to three
fields of the request schema (walked from PlanRequest itself) set to a value inside the field's
bounds or a hostile one (NaN, ±inf, 1e308, 10**400, 0, -1, a newline, a terminal escape, a
5,000-character name, a list, an object), an inline config.json with its size keys broken the same
way, a parameter count, or the whole document replaced. Every request is written to a file and
planned by ``cli.main.main`` as the command line runs it; its stdout and stderr are captured. The
command line's parser is built once per process (building it is a third of a refused request's time
and no part of what is tested); the requests are split over TUNEPLAN_FUZZ_WORKERS processes (default
2, the cores the figure is for), each with its own seed.

Counted: exit code 0 (a plan), exit code 1 (one sentence), and tracebacks: an exception out of
``main``, or an exit-1 sentence that is Python's own words rather than the program's (``cannot
convert float NaN to integer``, ``int too large to convert to float``...). The run is seeded, so a
traceback found is found again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import io
import json
import multiprocessing
import os
import random
import re
import tempfile
import time
import traceback
import warnings
from collections import Counter
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic.fields import FieldInfo

from bench import perf_doc
from cli import main as cli
from core.planner.model.config_limits import LIMITS
from core.planner.request import PlanRequest
from tests.core.test_request_fuzz import CONFIG, VALID, schema_fields
from tests.core.test_request_fuzz import _set as set_field

SECTION_TITLE = "## Generated requests"
SEED = 20261207
HOSTILE: list[Any] = [
    0,
    -1,
    0.5,
    -0.0,
    1e-9,
    1e308,
    -1e308,
    2**31,
    2**63,
    10**30,
    10**400,
    float("nan"),
    float("inf"),
    float("-inf"),
    True,
    None,
    "",
    " ",
    "a\nb",
    "\x1b[31mred",
    "x" * 5000,
    "1,5B",
    "2,5e8",
    "80G",
    "null",
    "-1",
    "\u2028",
    "../../etc/passwd",
    "H100-SXM\n",
    [],
    [1, "a"],
    {},
    {"a": 1},
]
PLAUSIBLE: list[Any] = [
    1,
    8,
    64,
    0.3,
    True,
    "aws",
    "lambda",
    "runpod",
    "H100-SXM",
    "RTX-4090",
    "A10G",
    "q,v",
    "all-linear",
]
# Python's own error words: an exit-1 line in them is an exception that reached the user, not a
# sentence.
PYTHON_WORDS = re.compile(
    r"cannot convert|int too large|invalid literal|object has no attribute|unsupported operand|"
    r"not subscriptable|is not iterable|division by zero|math domain error|object is not|"
    r"takes \d+ positional|unhashable type|maximum recursion|Exceeds the limit"
)


FIELDS = [(path, info) for path, info in schema_fields(PlanRequest) if path[0] != "model"]


def in_range(rng: random.Random, info: FieldInfo) -> Any:
    """A value the field's own type and bounds allow (so that a good share of requests plan)."""
    bound = {
        k: getattr(m, k) for m in info.metadata for k in ("ge", "gt", "le", "lt") if hasattr(m, k)
    }
    low, high = (
        float(bound.get("ge", bound.get("gt", 0))),
        float(bound.get("le", bound.get("lt", 10**6))),
    )
    for kind in get_args(info.annotation) or (info.annotation,):
        if kind is bool:
            return rng.random() < 0.5
        if isinstance(kind, type) and issubclass(kind, Enum):
            return rng.choice([m.value for m in kind])
        if get_origin(kind) is Literal:
            return rng.choice(get_args(kind))
        if kind is int:
            return rng.randint(int(low), int(min(high, 10**6)))
        if kind is float:
            return rng.choice([low, high, rng.uniform(low, min(high, 1e6))])
    return rng.choice(PLAUSIBLE)


def _value(rng: random.Random, info: FieldInfo | None = None) -> Any:
    roll = rng.random()
    if info is not None and roll < 0.6:
        return in_range(rng, info)
    return rng.choice(HOSTILE) if roll < 0.9 else rng.choice(PLAUSIBLE)


def generated(rng: random.Random) -> dict[str, Any] | str:
    """One request: the valid one with fields broken, another model, or the whole document
    replaced."""
    request: dict[str, Any] = json.loads(json.dumps(VALID))
    kind = rng.choices(["fields", "config", "params", "document"], weights=[6, 2, 1, 1])[0]
    if kind == "document":
        return rng.choice(
            [json.dumps(_value(rng)) if rng.random() < 0.9 else "[" * 5000, "{", "", "\x00"]
        )
    if kind == "config":
        config = dict(CONFIG)
        for key in rng.sample(
            [*LIMITS, "expansion_ratio", "model_type", "tie_word_embeddings"], rng.randint(0, 3)
        ):
            config[key] = rng.choice([_value(rng), rng.randint(0, 2**20), rng.randint(1, 64)])
        request["model"] = config
    elif kind == "params":
        request["model"] = {"params": _value(rng)}
    if rng.random() < 0.1:
        del request["hardware"]  # the search over the whole catalog instead of the GPU given
    for path, info in rng.sample(FIELDS, rng.randint(0, 3)):
        set_field(request, path, _value(rng, info))
    return request


def _text(request: dict[str, Any] | str) -> str:
    if isinstance(request, str):
        return request
    try:
        # NaN and Infinity written as Python writes them: the reader must refuse them
        return json.dumps(request)
    except ValueError:  # an integer of more digits than Python writes as text
        return json.dumps({**request, "data": {"tokens": "9" * 5000}})


def run(count: int, seed: int = SEED) -> tuple[Counter[str], list[str], float]:
    """Plan `count` generated requests: the outcomes counted, the first tracebacks, the CPU seconds
    it took (what the work costs, whatever else the machine runs)."""
    cli.build_parser = functools.cache(cli.build_parser)
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    found: list[str] = []
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(folder) / "request.json"
        start = time.process_time()
        for _ in range(count):
            path.write_text(_text(generated(rng)), encoding="utf-8")
            out, err = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = cli.main(["plan", str(path), "--json"])
            except Exception:  # what is counted: any exception out of main is a traceback
                outcomes["traceback"] += 1
                if len(found) < 5:
                    found.append(
                        traceback.format_exc(limit=3) + path.read_text(encoding="utf-8")[:300]
                    )
                continue
            said = err.getvalue()
            if code == 1 and (PYTHON_WORDS.search(said) or said.count("\n") != 1):
                outcomes["traceback"] += 1
                if len(found) < 5:
                    found.append(said[:300] + " <- " + path.read_text(encoding="utf-8")[:300])
            else:
                outcomes["plan" if code == 0 else "sentence" if code == 1 else f"exit {code}"] += 1
        cpu = time.process_time() - start
    return outcomes, found, cpu


def _run_part(part: tuple[int, int]) -> tuple[Counter[str], list[str], float]:
    return run(*part)


def run_all(count: int, workers: int) -> tuple[Counter[str], list[str], float, float]:
    """`run` split over `workers` processes (seeds SEED, SEED + 1, ...): the outcomes summed, the
    tracebacks found, the wall time and the CPU time of all of them."""
    parts = [(count // workers + (i < count % workers), SEED + i) for i in range(workers)]
    start = time.perf_counter()
    if workers == 1:
        results = [run(*parts[0])]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(_run_part, parts)
    outcomes: Counter[str] = sum((r[0] for r in results), Counter())
    return (
        outcomes,
        [t for r in results for t in r[1]],
        time.perf_counter() - start,
        sum(r[2] for r in results),
    )


def section(count: int) -> str:
    workers = int(os.environ.get("TUNEPLAN_FUZZ_WORKERS", "2"))
    outcomes, found, wall, cpu = run_all(count, workers)
    m = perf_doc.machine()
    for text in found:
        print(text)
    return (
        f"{SECTION_TITLE}\n\n"
        f"Measured {dt.date.today().isoformat()} with `python -m bench.bench_fuzz --count "
        f"{count}` on {m['cpu']}, {m['cores']}, Python {m['python']}, {m['os']}; load "
        f"{m['load']}. Seeded ({SEED}) generated requests "
        "(bench/bench_fuzz.py: fields of the schema in and out of range, NaN, infinity, 10**400, "
        "text where numbers go, broken config.json sizes, whole documents replaced), each planned "
        "by `tuneplan plan FILE "
        f"--json` in-process, in {workers} process{'es' if workers > 1 else ''}.\n\n"
        "| requests | plans | one-sentence refusals | tracebacks | wall time | CPU time | CPU per "
        "request |\n|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {count:,} | {outcomes['plan']:,} | {outcomes['sentence']:,} | "
        f"{outcomes['traceback']:,} | {wall:,.0f} s | {cpu:,.0f} s | {cpu / count * 1000:.2f} ms "
        "|\n\n"
        "Wall time is what the run took on the machine as it was (other work shares its two "
        "cores); CPU time is what the requests themselves cost, all processes together. A "
        "traceback is an exception out of `main` or a refusal in Python's own words (\"cannot "
        "convert float NaN "
        'to integer"); the goal is none.\n'
    )


def main_bench(argv: list[str] | None = None) -> int:
    return perf_doc.section_main(argv, __doc__, SECTION_TITLE, section, "count", 100_000)


if __name__ == "__main__":
    raise SystemExit(main_bench())
