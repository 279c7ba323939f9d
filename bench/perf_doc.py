"""docs/performance.md: one `## ` section per area, each rewritten by its own benchmark."""

from __future__ import annotations

import argparse
import os
import platform
from collections.abc import Callable
from pathlib import Path

import numpy as np

PREAMBLE = (
    "# Performance\n\n"
    "Measured figures against the budgets in DESIGN §7, one `## ` section per area. Each section "
    "is\nwritten by its benchmark under `bench/`; rerun the benchmark rather than editing its "
    "section by hand.\n"
)


def write_section(path: Path, title: str, section: str) -> None:
    """Replace the section headed `title` (e.g. '## Planner') in `path`, or add it; other sections
    stay as they are."""
    text = path.read_text(encoding="utf-8") if path.exists() else PREAMBLE
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == title), None)
    if start is None:
        body = text.rstrip("\n") + "\n\n" + section
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        after = "".join(lines[end:])
        body = "".join(lines[:start]) + section + ("\n" + after if after else "")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def section_main(
    argv: list[str] | None,
    description: str | None,
    title: str,
    section: Callable[[int], str],
    count: str,
    default: int,
) -> int:
    """The command line of a benchmark that writes one section: `--COUNT N` runs, the section
    printed, and with `--write FILE` put in place of its `title` section there."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(f"--{count}", type=int, default=default)
    parser.add_argument("--write", type=Path, help="rewrite this section of docs/performance.md")
    args = parser.parse_args(argv)
    text = section(getattr(args, count))
    print(text)
    if args.write:
        write_section(args.write, title, text)
    return 0


def machine() -> dict[str, str]:
    """CPU model, cores and library versions: figures mean nothing without them."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": cpu,
        "cores": f"{usable} usable ({os.cpu_count()} online)",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "os": f"{platform.system()} {platform.release()}",
        "load": _load_average(),
    }


def _load_average() -> str:
    """1-minute load average when the run started: other work on a 2-core machine moves every
    figure."""
    try:
        return f"{os.getloadavg()[0]:.2f} (1-min load average at start)"
    except OSError:
        return "unknown"
