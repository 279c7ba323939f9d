"""Probe sample persistence against DESIGN §7: an hour of 10 Hz samples, 8 GPUs, reloads < 0.5 s.

    python -m bench.bench_probe_store [--minutes 60] [--gpus 8] [--hz 10] [--repeat 5]
                                      [--write docs/performance.md]

Writes the samples the way the runner does (one `ProbeStore.add_samples` block per 0.5 s flush) into
a fresh file, then times `load_samples` and `load_run` on a newly opened store (median of --repeat).
For comparison it also times the plain alternative, one SQLite row per sample, read back with one
query: that is why the store keeps blocks.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import perf_doc
from core.probes.history.sample_table import SAMPLE_COLUMNS, sample_values
from core.probes.history.store import ProbeStore
from core.probes.samples import GpuMetric

BUDGET_S = 0.5
FLUSH_S = 0.5  # the runner's sample flush period (core.probes.run.run_queue.SAMPLE_FLUSH_S)
SECTION_TITLE = "## Probe store"


@dataclass
class Result:
    rows: int
    flushes: int
    insert_total_s: float
    flush_median_ms: float
    flush_p95_ms: float
    load_samples_s: list[float]
    load_run_s: list[float]
    row_table_fetch_s: list[float]
    file_bytes: int


def make_metrics(minutes: float, gpus: int, hz: float) -> list[list[GpuMetric]]:
    """Synthetic but realistic samples, grouped into the batches the runner flushes."""
    rng = np.random.default_rng(7)
    ticks = int(minutes * 60 * hz)
    per_flush = max(1, int(FLUSH_S * hz))
    batches: list[list[GpuMetric]] = []
    batch: list[GpuMetric] = []
    for tick in range(ticks):
        t = tick / hz
        for gpu in range(gpus):
            batch.append(
                GpuMetric(
                    t=t,
                    gpu=gpu,
                    util_pct=float(rng.integers(90, 101)),
                    mem_used_bytes=int(60e9),
                    mem_total_bytes=int(80e9),
                    temp_c=float(rng.integers(55, 75)),
                    power_w=float(rng.uniform(600, 700)),
                    sm_clock_mhz=1980.0,
                    mem_clock_mhz=2619.0,
                    clocks_event_mask=0,
                )
            )
        if (tick + 1) % per_flush == 0:
            batches.append(batch)
            batch = []
    if batch:
        batches.append(batch)
    return batches


def run(minutes: float, gpus: int, hz: float, repeat: int) -> Result:
    batches = make_metrics(minutes, gpus, hz)
    rows = sum(len(b) for b in batches)
    with tempfile.TemporaryDirectory(prefix="tuneplan-bench-") as tmp:
        path = Path(tmp) / "probes.db"
        store = ProbeStore(path)
        run_id = store.start_run("bench", "full", ["burn"])
        flush_times = []
        start = time.perf_counter()
        for batch in batches:
            t0 = time.perf_counter()
            store.add_samples(run_id, batch)
            flush_times.append(time.perf_counter() - t0)
        insert_total = time.perf_counter() - start
        store.finish_run(run_id, "completed")
        store.close()
        load_samples, load_run = [], []
        for _ in range(repeat):
            fresh = ProbeStore(path)
            t0 = time.perf_counter()
            table = fresh.load_samples(run_id)
            load_samples.append(time.perf_counter() - t0)
            assert len(table) == rows
            t0 = time.perf_counter()
            fresh.load_run(run_id)
            load_run.append(time.perf_counter() - t0)
            fresh.close()
        file_bytes = path.stat().st_size + sum(
            p.stat().st_size for p in Path(tmp).glob("probes.db-*")
        )
        row_fetch = _row_table(Path(tmp) / "rows.db", batches, repeat)
    ms = sorted(t * 1e3 for t in flush_times)
    return Result(
        rows=rows,
        flushes=len(batches),
        insert_total_s=insert_total,
        flush_median_ms=statistics.median(ms),
        flush_p95_ms=ms[int(0.95 * (len(ms) - 1))],
        load_samples_s=load_samples,
        load_run_s=load_run,
        row_table_fetch_s=row_fetch,
        file_bytes=file_bytes,
    )


def _row_table(path: Path, batches: list[list[GpuMetric]], repeat: int) -> list[float]:
    """The rejected layout: one row per sample; time one SELECT of all rows into a NumPy matrix."""
    conn = sqlite3.connect(path)
    conn.execute(
        f"CREATE TABLE samples (run_id INTEGER, {', '.join(c + ' REAL' for c in SAMPLE_COLUMNS)})"
    )
    marks = ", ".join("?" * (len(SAMPLE_COLUMNS) + 1))
    with conn:
        for batch in batches:
            conn.executemany(
                f"INSERT INTO samples VALUES ({marks})", [(1, *sample_values(m)) for m in batch]
            )
    conn.close()
    times = []
    for _ in range(repeat):
        conn = sqlite3.connect(path)
        t0 = time.perf_counter()
        rows = conn.execute(
            f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM samples WHERE run_id = 1"
        ).fetchall()
        np.array(rows, dtype=np.float64)
        times.append(time.perf_counter() - t0)
        conn.close()
    return times


def machine() -> str:
    m = perf_doc.machine()
    return (
        f"{m['cpu']}, {m['cores']}, Python {m['python']}, SQLite {sqlite3.sqlite_version}, NumPy "
        f"{m['numpy']}, {m['os']}; load {m['load']}"
    )


def report_text(r: Result, minutes: float, gpus: int, hz: float) -> str:
    med_samples, med_run = statistics.median(r.load_samples_s), statistics.median(r.load_run_s)
    med_rows = statistics.median(r.row_table_fetch_s)
    return "\n".join(
        [
            f"{r.rows:,} samples ({minutes:g} min x {gpus} GPUs x {hz:g} Hz) in {r.flushes:,} "
            "flushes",
            f"insert: {r.insert_total_s:.2f} s in all, per flush median {r.flush_median_ms:.2f} "
            f"ms, p95 {r.flush_p95_ms:.2f} ms (one flush every {FLUSH_S} s of run time)",
            f"reload load_samples: median {med_samples * 1e3:.1f} ms (budget {BUDGET_S * 1e3:.0f} "
            f"ms, {BUDGET_S / med_samples:.1f}x)",
            f"reload load_run:     median {med_run * 1e3:.1f} ms ({BUDGET_S / med_run:.1f}x)",
            f"one row per sample (rejected): median {med_rows * 1e3:.1f} ms to fetch "
            f"({BUDGET_S / med_rows:.2f}x)",
            f"file size: {r.file_bytes / 2**20:.1f} MiB",
        ]
    )


def section_markdown(
    r: Result, minutes: float, gpus: int, hz: float, repeat: int, day: dt.date
) -> str:
    med_samples, med_run = statistics.median(r.load_samples_s), statistics.median(r.load_run_s)
    med_rows = statistics.median(r.row_table_fetch_s)
    verdict = "within" if med_run < BUDGET_S else "OVER BUDGET"
    return "\n".join(
        [
            SECTION_TITLE,
            "",
            f"Measured {day.isoformat()} with `python -m bench.bench_probe_store --minutes "
            f"{minutes:g} --gpus {gpus} --hz {hz:g} --repeat {repeat}` on {machine()}. Samples "
            "are written as the runner writes them (one `ProbeStore.add_samples` block per "
            f"{FLUSH_S} s flush) into a new file; reloads open the file afresh and report the "
            f"median of {repeat}. Ratio = budget ÷ measured.",
            "",
            "| case | measured | budget | ratio | verdict |",
            "|---|---:|---:|---:|---|",
            f"| reload {r.rows:,} samples, `load_samples` (NumPy columns) | "
            f"{med_samples * 1e3:.1f} ms | {BUDGET_S * 1e3:.0f} ms | "
            f"{BUDGET_S / med_samples:.1f}× | {'within' if med_samples < BUDGET_S else 'OVER'} |",
            f"| reload the whole run, `load_run` | {med_run * 1e3:.1f} ms | {BUDGET_S * 1e3:.0f} "
            f"ms | {BUDGET_S / med_run:.1f}× | {verdict} |",
            f"| write one flush ({r.rows // r.flushes} samples), median / p95 | "
            f"{r.flush_median_ms:.2f} / {r.flush_p95_ms:.2f} ms | "
            f"{FLUSH_S * 1e3:.0f} ms | {FLUSH_S * 1e3 / r.flush_p95_ms:.0f}× (p95) | within |",
            f"| write the hour, all {r.flushes:,} flushes | {r.insert_total_s:.2f} s | — | — | "
            f"{r.insert_total_s / (minutes * 60) * 100:.2f} % of the run's time |",
            f"| rejected layout: one row per sample, fetch all | {med_rows * 1e3:.1f} ms | "
            f"{BUDGET_S * 1e3:.0f} ms | {BUDGET_S / med_rows:.2f}× | why blocks |",
            "",
            f"File size for the hour: {r.file_bytes / 2**20:.1f} MiB. Each flushed batch is one "
            "`sample_blocks` row "
            "holding a float64 matrix (columns t, gpu, util, mem_used, mem_total, temp, power, "
            "sm_clock, mem_clock, throttle; NaN where the tool gave no value), so a reload is one "
            "query and a `numpy.frombuffer` per block, with no Python object per sample. A row "
            "per sample spends its time creating millions of Python objects in `fetchall`, before "
            "any conversion.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_probe_store", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hz", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help=f"(re)write the '{SECTION_TITLE}' section of FILE",
    )
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.gpus < 1 or args.hz <= 0 or args.repeat < 1:
        parser.error("--minutes, --hz must be positive and --gpus, --repeat at least 1")
    result = run(args.minutes, args.gpus, args.hz, args.repeat)
    print(report_text(result, args.minutes, args.gpus, args.hz))
    if args.write:
        section = section_markdown(
            result, args.minutes, args.gpus, args.hz, args.repeat, dt.date.today()
        )
        perf_doc.write_section(args.write, SECTION_TITLE, section)
        print(f"\nwrote the '{SECTION_TITLE}' section of {args.write}")
    return 0 if statistics.median(result.load_run_s) < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
