"""Run GPU memory measurements one case per process, so no case inherits another's allocator state.

Shared by bench/litgpt_memory.py and bench/hf_memory.py: each re-runs itself with ``--one CASE`` per
case, appends the case's JSON line to a results file and prints it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any


def package_version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"


def record(results: Path, result: dict[str, Any]) -> None:
    """Append one case's result to the JSON-lines file and show it."""
    with results.open("a", encoding="utf-8") as f:
        f.write(json.dumps(result) + "\n")
    print(json.dumps(result), flush=True)


def run_each(script: str, case_ids: Iterable[str], args: list[str], timeout: float) -> int:
    """`python SCRIPT ARGS --one CASE` for every case in a fresh process; 1 when any failed or timed
    out."""
    failures = 0
    for case_id in case_ids:
        start = time.monotonic()
        try:
            code = subprocess.run(
                [sys.executable, script, *args, "--one", case_id], timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            code = -1
        failures += code != 0
        print(f"# {case_id}: exit {code} in {time.monotonic() - start:.0f} s", flush=True)
    return 1 if failures else 0
