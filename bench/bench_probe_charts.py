"""How the probe pane's live charts keep up, against DESIGN §7.

8 GPUs × 8 metrics at 10 Hz with an hour of
history, a redraw timer at ≤ 20 Hz, no UI stalls.

    python -m bench.bench_probe_charts [--frames N] [--loop-seconds S] [--write docs/performance.md]

Offscreen Qt (``QT_QPA_PLATFORM=offscreen``: raster painting into memory, the same painting code as
on screen minus the compositor). The charts widget shows all eight metrics
(`gui.probe.gpu_history.METRICS`) for eight GPUs: 64 curves. Every GPU's ring buffer is first filled
with one hour of 10 Hz samples (36,000 per GPU), then:

* *frame* — one 10 Hz tick of samples is added (eight ``GpuMetric``, as the runner's
  ``MetricsBatch`` carries them), then the redraw (``setData`` on every curve, the newest-value
  table) and a synchronous repaint of every plot are timed with ``time.perf_counter``; median and
  95th percentile over ``--frames`` frames, for the default five-minute window and for the whole
  hour on screen;
* *event loop* — the real loop runs for ``--loop-seconds`` with the 20 Hz redraw timer and a 10 Hz
  feeder timer; UI-thread load is the main thread's CPU time (``time.thread_time``) over wall time,
  and a 5 ms heartbeat timer records the longest gap between its ticks (the longest the loop could
  not paint or take input).

The samples are synthetic (smooth curves with noise in each metric's real range): the figures are
about drawing cost, which does not depend on the values.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["PYQTGRAPH_QT_LIB"] = "PySide6"

import numpy as np
from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication

from bench import perf_doc
from core.probes.samples import GpuMetric
from gui.probe.gpu_history import METRICS, GpuHistory
from gui.probe.live_charts import LiveGpuCharts

GPUS = 8
HZ = 10.0
HISTORY_S = 3600.0
REDRAW_HZ = 20.0
FRAME_BUDGET_S = 1 / REDRAW_HZ  # a frame must end before the next timer tick
GAP_BUDGET_S = 0.050  # no stall longer than one 20 Hz period
SECTION_TITLE = "## Probe live charts"
# (low, high) of each metric in chart units, in METRICS order, for the synthetic curves.
RANGES = {
    "util_pct": (60, 100),
    "mem_used_bytes": (40 * 2**30, 78 * 2**30),
    "temp_c": (45, 80),
    "power_w": (300, 700),
    "sm_clock_mhz": (1400, 1980),
    "mem_util_pct": (10, 60),
    "mem_temp_c": (40, 75),
    "mem_clock_mhz": (2619, 2619),
}


def synthetic(gpu: int, t: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Raw GpuMetric field values (bytes, not GiB) for times ``t``: a slow wave plus noise per
    metric."""
    out = {}
    for k, spec in enumerate(METRICS):
        lo, hi = RANGES[spec.field]
        wave = 0.5 + 0.4 * np.sin(t / (90 + 13 * k) + gpu) + 0.1 * rng.standard_normal(t.shape)
        out[spec.field] = lo + (hi - lo) * np.clip(wave, 0, 1)
    return out


def prefill(history: GpuHistory, rng: np.random.Generator) -> float:
    """One hour of samples per GPU straight into the rings; returns the last time."""
    t = np.arange(int(HISTORY_S * HZ)) / HZ
    for gpu in range(GPUS):
        values = synthetic(gpu, t, rng)
        rows = np.vstack([values[s.field] * s.scale for s in METRICS])
        history.add_columns(gpu, t, rows)
    return float(t[-1])


def tick(t: float, rng: np.random.Generator) -> list[GpuMetric]:
    """One 10 Hz tick for every GPU, as the runner streams them."""
    out = []
    for gpu in range(GPUS):
        v = synthetic(gpu, np.array([t]), rng)
        out.append(
            GpuMetric(
                t=t,
                gpu=gpu,
                util_pct=float(v["util_pct"][0]),
                mem_used_bytes=int(v["mem_used_bytes"][0]),
                temp_c=float(v["temp_c"][0]),
                power_w=float(v["power_w"][0]),
                sm_clock_mhz=float(v["sm_clock_mhz"][0]),
                mem_util_pct=float(v["mem_util_pct"][0]),
                mem_temp_c=float(v["mem_temp_c"][0]),
                mem_clock_mhz=float(v["mem_clock_mhz"][0]),
            )
        )
    return out


@dataclass
class FrameTimes:
    """Per frame: ingest of one tick, the whole synchronous frame split into setData and paint, and
    the timer's way of drawing it (a few plots per tick, each tick's setData + paint timed)."""

    window: str
    ingest: list[float]
    set_data: list[float]
    paint: list[float]
    ticks: list[float]
    timer_frames: list[float]

    @property
    def total(self) -> list[float]:
        return [a + b for a, b in zip(self.set_data, self.paint, strict=True)]


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def make_charts(app: QApplication) -> tuple[LiveGpuCharts, float, np.random.Generator]:
    rng = np.random.default_rng(7)
    charts = LiveGpuCharts(shown=[s.field for s in METRICS], redraw_hz=REDRAW_HZ, columns=3)
    charts.resize(1600, 1000)
    charts.show()
    t_end = prefill(charts.history, rng)
    app.processEvents()
    return charts, t_end, rng


def time_frames(
    app: QApplication,
    charts: LiveGpuCharts,
    t: float,
    rng: np.random.Generator,
    frames: int,
    window: str,
) -> tuple[FrameTimes, float]:
    charts.window_box.setCurrentIndex(charts.window_box.findText(window))
    app.processEvents()
    times = FrameTimes(window, [], [], [], [], [])
    plots = list(charts.plots.values())
    charts.pace = False
    for i in range(frames + 5):  # the timer's way: each tick's setData, then what Qt paints for it
        t += 1 / HZ
        charts.add_metrics(tick(t, rng))
        charts._last_draw = 0.0  # start the frame now, whatever the pacing would say
        ticks = []
        while True:
            a = time.perf_counter()
            charts._on_timer()
            app.processEvents()  # paints the plots this tick changed
            ticks.append(time.perf_counter() - a)
            if charts._frame is None:
                break
        if i >= 5:
            times.ticks += ticks
            times.timer_frames.append(sum(ticks))
    for i in range(frames + 5):  # the whole frame at once, as after a window change
        t += 1 / HZ
        batch = tick(t, rng)
        a = time.perf_counter()
        charts.add_metrics(batch)
        b = time.perf_counter()
        charts.redraw()
        c = time.perf_counter()
        for plot in plots:
            plot.viewport().repaint()
        charts.now.viewport().repaint()
        d = time.perf_counter()
        if i >= 5:  # warm-up frames (first setData allocations, font caches)
            times.ingest.append(b - a)
            times.set_data.append(c - b)
            times.paint.append(d - c)
    return times, t


def event_loop(
    app: QApplication,
    charts: LiveGpuCharts,
    t: float,
    rng: np.random.Generator,
    seconds: float,
    window: str,
    pace: bool | None,
) -> tuple[dict[str, Any], float]:
    """The real loop: 20 Hz redraw timer, 10 Hz feeder; thread CPU over wall time and heartbeat
    gaps.

    ``pace=None`` is the control: the same loop with no charts timer and no feeder, only the
    heartbeat, so gaps that come from the machine (other processes, the scheduler) show as what they
    are."""
    charts.window_box.setCurrentIndex(charts.window_box.findText(window))
    charts.pace = bool(pace)
    state = {"t": t}

    def feed() -> None:
        state["t"] += 1 / HZ
        charts.add_metrics(tick(state["t"], rng))

    feeder = QTimer()
    feeder.setInterval(round(1000 / HZ))
    feeder.timeout.connect(feed)
    gaps: list[float] = []
    last = [0.0]

    def beat() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    heartbeat = QTimer()
    heartbeat.setInterval(5)
    heartbeat.timeout.connect(beat)
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    redraws_before = charts.redraws
    app.processEvents()
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    last[0] = wall0
    heartbeat.start()
    if pace is not None:
        feeder.start()
        charts.start()
    loop.exec()
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    charts.timer.stop()
    feeder.stop()
    heartbeat.stop()
    redraws = charts.redraws - redraws_before
    return (
        {
            "window": window,
            "pace": pace,
            "seconds": wall,
            "load": cpu / wall,
            "redraws": redraws,
            "redraw_hz": redraws / wall,
            "max_gap": max(gaps) if gaps else float("nan"),
            "p99_gap": float(np.percentile(gaps, 99)) if gaps else float("nan"),
        },
        state["t"],
    )


def machine() -> dict[str, str]:
    import pyqtgraph
    import PySide6

    info = perf_doc.machine()
    info.update(
        qt=f"PySide6 {PySide6.__version__}",
        pyqtgraph=pyqtgraph.__version__,
        platform=os.environ.get("QT_QPA_PLATFORM", ""),
    )
    return info


def run(frames: int, loop_seconds: float) -> dict[str, Any]:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    charts, t, rng = make_charts(app)
    results = []
    for window in ("last 5 minutes", "last hour"):
        times, t = time_frames(app, charts, t, rng, frames, window)
        results.append(times)
    loops = []
    cases: tuple[tuple[str, bool | None], ...] = (
        ("last 5 minutes", None),
        ("last 5 minutes", True),
        ("last minute", True),
        ("last 5 minutes", False),
    )
    for window, pace in cases:
        found, t = event_loop(app, charts, t, rng, loop_seconds, window, pace)
        loops.append(found)
    curves = sum(len(p.curves) for p in charts.plots.values())
    samples = sum(len(r) for r in charts.history.rings.values())
    charts.close()
    return {
        "frames": results,
        "loops": loops,
        "curves": curves,
        "samples": samples,
        "machine": machine(),
        "frame_count": frames,
        "loop_seconds": loop_seconds,
    }


def loop_label(loop: dict[str, Any]) -> str:
    if loop["pace"] is None:
        return "control: heartbeat only, no charts, no samples"
    return f"{loop['window']}, " + (
        "paced (the app)" if loop["pace"] else "every tick (for comparison)"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _verdict(value: float, budget: float) -> str:
    return "within" if value <= budget else "MISSED"


def report_text(result: dict[str, Any]) -> str:
    lines = [
        f"probe live charts: {result['curves']} curves, {result['samples']:,} samples held, "
        f"{result['frame_count']} frames per window"
    ]
    for f in result["frames"]:
        lines.append(
            f"  {f.window:15} timer tick median {_ms(statistics.median(f.ticks))}, p95 "
            f"{_ms(p95(f.ticks))}, max {_ms(max(f.ticks))} (budget {_ms(FRAME_BUDGET_S)}); a "
            f"frame over its ticks {_ms(statistics.median(f.timer_frames))}"
        )
        lines.append(
            f"  {f.window:15} setData median {_ms(statistics.median(f.set_data))}, paint median "
            f"{_ms(statistics.median(f.paint))}; frame median {_ms(statistics.median(f.total))}, "
            f"p95 {_ms(p95(f.total))} (budget {_ms(FRAME_BUDGET_S)}); ingest of one tick "
            f"{_ms(statistics.median(f.ingest))}"
        )
    for loop in result["loops"]:
        lines.append(
            f"  event loop, {loop_label(loop)}: "
            f"UI-thread load {loop['load']:.1%}, {loop['redraw_hz']:.1f} redraws/s, longest "
            f"heartbeat gap {_ms(loop['max_gap'])} (p99 {_ms(loop['p99_gap'])}, budget "
            f"{_ms(GAP_BUDGET_S)})"
        )
    return "\n".join(lines)


def section_markdown(result: dict[str, Any], today: dt.date, command: str) -> str:
    m = result["machine"]
    out = [
        SECTION_TITLE,
        "",
        f"Measured {today.isoformat()} with `{command}` on {m['cpu']}, {m['cores']}, Python "
        f"{m['python']}, {m['qt']}, pyqtgraph {m['pyqtgraph']}, NumPy {m['numpy']}, Qt platform "
        f"`{m['platform']}`; load {m['load']}.",
        "",
        f"Setup: `LiveGpuCharts` showing all eight metrics for 8 GPUs ({result['curves']} curves, "
        "width-1 pens, `setDownsampling(mode='peak')`, `setClipToView(True)`), every ring buffer "
        "holding one "
        f"hour of 10 Hz samples ({result['samples']:,} in all). A frame = one 10 Hz tick of 8 "
        "`GpuMetric` "
        "added, `redraw()` (`setData` with a view of the visible window for every curve, "
        "newest-value table) and the repaint of every plot. The redraw timer draws a frame over "
        "several ticks (`PLOTS_PER_TICK` plots each): a *timer tick* is one such step, its "
        "`setData` and the paint Qt does for it (`processEvents`); no tick may hold the GUI "
        "thread longer than one 20 Hz period. A *whole frame at once* (all plots in one go, as "
        "after a window change or a reopen) is timed too, with no budget. Ratio = budget ÷ "
        "measured.",
        "",
        "| case | median | p95 | max | budget | ratio (p95) | verdict |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for f in result["frames"]:
        out.append(
            f"| timer tick, {f.window} on screen | {_ms(statistics.median(f.ticks))} | "
            f"{_ms(p95(f.ticks))} | {_ms(max(f.ticks))} | {_ms(FRAME_BUDGET_S)} | "
            f"{FRAME_BUDGET_S / p95(f.ticks):.1f}× | {_verdict(p95(f.ticks), FRAME_BUDGET_S)} |"
        )
        out.append(
            f"| — a frame over its ticks | {_ms(statistics.median(f.timer_frames))} | "
            f"{_ms(p95(f.timer_frames))} | {_ms(max(f.timer_frames))} | — | — | — |"
        )
        total = f.total
        out.append(
            f"| whole frame at once, {f.window} | {_ms(statistics.median(total))} | "
            f"{_ms(p95(total))} | {_ms(max(total))} | — | — | — |"
        )
        out.append(
            f"| — of which `setData` + table | {_ms(statistics.median(f.set_data))} | "
            f"{_ms(p95(f.set_data))} | {_ms(max(f.set_data))} | — | — | — |"
        )
        out.append(
            f"| — of which paint | {_ms(statistics.median(f.paint))} | {_ms(p95(f.paint))} | "
            f"{_ms(max(f.paint))} | — | — | — |"
        )
        out.append(
            "| adding one 10 Hz tick (8 samples) to the rings | "
            f"{_ms(statistics.median(f.ingest))} | {_ms(p95(f.ingest))} | {_ms(max(f.ingest))} | "
            "— | — | — |"
        )
    out += [
        "",
        f"Event loop, {result['loop_seconds']:g} s per case, the 20 Hz redraw timer and a 10 Hz "
        "feeder (8 samples "
        "per tick). *Paced* is what the app does: a frame starts when the newest sample has moved "
        "the curves by a pixel column (window ÷ plot width), at least once a second, never more "
        "than a third of the thread, and a frame is spread over ticks (`PLOTS_PER_TICK` plots per "
        "tick); *every tick* starts a frame on every new tick. The *control* runs the same loop "
        "with only the heartbeat: its gaps are the machine's (other processes, the scheduler), "
        "not the charts'.",
        "",
        "| case | UI-thread load | frames/s | longest heartbeat gap | p99 gap | budget | verdict |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for loop in result["loops"]:
        out.append(
            f"| {loop_label(loop)} | {loop['load']:.1%} | "
            f"{loop['redraw_hz']:.1f} | {_ms(loop['max_gap'])} | {_ms(loop['p99_gap'])} | "
            f"{_ms(GAP_BUDGET_S)} | {_verdict(loop['max_gap'], GAP_BUDGET_S)} |"
        )
    out += [
        "",
        "UI-thread load = main-thread CPU time (`time.thread_time`) ÷ wall time over the case; "
        "the heartbeat is a 5 ms QTimer and a gap is the longest the event loop could not paint "
        "or take input. The *whole frame at once* rows draw all eight plots in one go (a window "
        "change, a reopen); while samples stream the timer spreads a frame over several ticks, "
        "which is why the loop's gaps are shorter than a whole frame.",
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_probe_charts", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--frames", type=int, default=100, help="timed frames per window (default 100)"
    )
    parser.add_argument(
        "--loop-seconds",
        type=float,
        default=20.0,
        help="seconds of real event loop for the load figure (default 20)",
    )
    parser.add_argument(
        "--write", type=Path, metavar="FILE", help=f"(re)write the '{SECTION_TITLE}' section"
    )
    args = parser.parse_args(argv)
    if args.frames < 1 or args.loop_seconds <= 0:
        parser.error("--frames must be at least 1 and --loop-seconds above 0")
    result = run(args.frames, args.loop_seconds)
    print(report_text(result))
    if args.write:
        command = (
            "python -m bench.bench_probe_charts"
            + (f" --frames {args.frames}" if args.frames != 100 else "")
            + (f" --loop-seconds {args.loop_seconds:g}" if args.loop_seconds != 20.0 else "")
        )
        perf_doc.write_section(
            args.write, SECTION_TITLE, section_markdown(result, dt.date.today(), command)
        )
        print(f"\nwrote the '{SECTION_TITLE}' section of {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
