"""How fast the desktop bundle starts, beside the source install, and how big it is.

The goal: under 1 s to an interactive window on this machine.

    python -m bench.bench_bundle [--bundle dist/tuneplan] [--repeat N] [--write docs/performance.md]

"Interactive" is the moment the window is shown and its event loop runs: gui/smoke.py prints
`smoke: interactive` from the first timer the running loop fires, and the time is taken from process
start to that line (offscreen platform, an empty home so no saved library or settings are read). The
first start of each app after a build is reported apart from the median of the rest: it is the
coldest this benchmark can make without dropping the operating system's file cache, which needs
privileges a benchmark should not use.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import perf_doc

ROOT = Path(__file__).resolve().parent.parent
SECTION_TITLE = "## Desktop bundle"
GOAL_S = 1.0


def time_to_interactive(cmd: list[str], home: Path, timeout: float = 60.0) -> float:
    """Seconds from spawning `cmd` to its `smoke: interactive` line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNEPLAN_", "XDG_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "c"),
        XDG_DATA_HOME=str(home / "d"),
        QT_QPA_PLATFORM="offscreen",
        TUNEPLAN_SMOKE_TEST="1",
        TUNEPLAN_SMOKE_DELAY_MS="0",
    )
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    elapsed = float("nan")
    for line in proc.stdout:
        if line.startswith("smoke: interactive"):
            elapsed = time.perf_counter() - start
            break
    proc.stdout.read()
    proc.wait(timeout=timeout)
    if proc.returncode != 0 or elapsed != elapsed:
        raise RuntimeError(f"{cmd[0]} did not reach an interactive window (exit {proc.returncode})")
    return elapsed


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "tuneplan")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    binary = args.bundle / "tuneplan"
    if not binary.exists():
        print(f"no bundle at {args.bundle}: run bash packaging/build.sh first", file=sys.stderr)
        return 1
    apps = {
        "frozen bundle": [str(binary)],
        "source install (venv)": [sys.executable, "-m", "tuneplan"],
    }
    rows: list[tuple[str, float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in apps.items():
            first = time_to_interactive(cmd, Path(tmp) / f"{len(rows)}-first")
            rest = [
                time_to_interactive(cmd, Path(tmp) / f"{len(rows)}-{i}") for i in range(args.repeat)
            ]
            rows.append((name, first, statistics.median(rest), max(rest)))
    size = folder_bytes(args.bundle)
    tarballs = sorted((args.bundle.parent).glob("tuneplan-*.tar.gz"))
    info = perf_doc.machine()
    lines = [
        SECTION_TITLE,
        "",
        f"Start to an interactive window (offscreen, empty home), goal under {GOAL_S:.0f} s; "
        f"measured on {info['cpu']}, {info['cores']}, Python {info['python']}, load "
        f"{info['load']}. `python -m "
        "bench.bench_bundle --write docs/performance.md` after `bash packaging/build.sh`.",
        "",
        "| app | first start (s) | median of the next "
        f"{args.repeat} (s) | slowest (s) | goal / median |",
        "|---|---|---|---|---|",
    ]
    for name, first, median, worst in rows:
        lines.append(
            f"| {name} | {first:.2f} | {median:.2f} | {worst:.2f} | {GOAL_S / median:.2f} |"
        )
    lines += [
        "",
        f"Bundle folder: {size / 1e6:.0f} MB"
        + (
            f"; tarball {tarballs[-1].name}: {tarballs[-1].stat().st_size / 1e6:.0f} MB"
            if tarballs
            else ""
        )
        + ". Only QtCore, QtGui, QtWidgets and QtSvg of Qt are inside (packaging/tuneplan.spec).",
        "",
        "Before the window shows, the app imports Qt, pydantic with the request and catalog "
        "models, and the wizard's pages. The planner and NumPy load on the first plan's worker, "
        "sqlite-utils on a worker once the event loop runs (the library opens then; the first run "
        "is read with plain sqlite3), the PDF and launch-file writers when used, pyqtgraph before "
        "the first chart (tests/gui/test_start_up.py checks that none of them is loaded when the "
        "window shows).",
        "",
    ]
    section = "\n".join(lines)
    print(section)
    if args.write:
        perf_doc.write_section(args.write, SECTION_TITLE, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
