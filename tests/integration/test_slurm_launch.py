"""`--format slurm` judged by a real Slurm (tests/integration/slurm.py): ``sbatch --test-only``
accepts every case's script on nodes with 8 GPUs (a counted GRES) and 64 CPUs, refuses one that asks
for more GPUs than a node has, and a spot job really run on two of them with a stub torchrun gets
the USR1 that ``--signal=B:USR1`` sends, on every node, and goes back in the queue. What is expected
comes from Slurm itself (sbatch's answer, ``scontrol show job``).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.core.launch_cases import CASES, IDS, SPOT_LONG, Case, write

try:
    from tests.integration.slurm import PARTITION, SlurmCluster, SlurmUnavailable
    from tests.integration.sshd import unavailable
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from slurm import PARTITION, SlurmCluster, SlurmUnavailable  # type: ignore[no-redef]
    from sshd import unavailable  # type: ignore[no-redef]

pytestmark = pytest.mark.integration

GPUS = 8
CPUS = 64


@pytest.fixture(scope="module")
def gpu_slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """Four nodes (the largest plan's) of 8 GPUs and 64 CPUs each, as the plans' 8-GPU nodes
    need."""
    cluster = SlurmCluster(
        tmp_path_factory.mktemp("slurm-gpu"),
        nodes=tuple(f"tpnode{i}" for i in range(1, 5)),
        gpus=GPUS,
        cpus=CPUS,
    )
    try:
        cluster.start()
    except SlurmUnavailable as exc:
        unavailable(f"a test Slurm cannot start here: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


def sbatch_version(cluster: SlurmCluster) -> str:
    return cluster.run("sbatch", "--version").stdout.strip()


@pytest.mark.parametrize("case", [*CASES, SPOT_LONG], ids=[*IDS, SPOT_LONG.name])
def test_sbatch_test_only_accepts_the_script(
    gpu_slurm: SlurmCluster,
    case: Case,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    write(case, "slurm", tmp_path)
    checked = gpu_slurm.run(
        "sbatch", "--test-only", f"--partition={PARTITION}", str(tmp_path / "train.sbatch")
    )
    version = sbatch_version(gpu_slurm)
    record_property("slurm", version)  # the Slurm that judged it, in the JUnit report
    assert checked.returncode == 0, f"{version}: {checked.stderr}{gpu_slurm.logs()}"
    # "sbatch: Job 3 to start at 2026-12-01T23:24:23 using 128 processors on nodes tpnode[1-2] in
    # partition tptest"
    started = re.search(
        r"Job \d+ to start at \S+ using (\d+) processors on nodes (\S+)", checked.stderr
    )
    assert started, checked.stderr
    whole = case.nodes > 1 or case.per_node >= GPUS
    # --exclusive: all CPUs
    assert int(started.group(1)) == (CPUS * case.nodes if whole else 4 * case.per_node)
    assert re.fullmatch(r"slurm(-wlm)? \d+\.\d+\.\d+", version)  # e.g. "slurm-wlm 22.05.8"


def test_sbatch_test_only_refuses_more_gpus_than_a_node_has(
    gpu_slurm: SlurmCluster, tmp_path: Path
) -> None:
    """The check is real: the same script asking for 9 GPUs per node is refused."""
    write(CASES[1], "slurm", tmp_path)
    script = tmp_path / "train.sbatch"
    script.write_text(
        script.read_text().replace(f"--gpus-per-node={GPUS}\n", f"--gpus-per-node={GPUS + 1}\n")
    )
    checked = gpu_slurm.run("sbatch", "--test-only", f"--partition={PARTITION}", str(script))
    assert checked.returncode != 0
    assert "Requested node configuration is not available" in checked.stderr


STUB_TORCHRUN = """#!/bin/bash
# Stands in for torchrun on each node: says what it got, and saves (here: writes a line) on USR1.
log="$OUT/torchrun.$SLURM_NODEID"
{ echo "$*"; echo "SAVE_STEPS=$SAVE_STEPS RESUME=$RESUME CPUS_PER_TASK=$SLURM_CPUS_PER_TASK"; } > "$log"
trap 'echo USR1 >> "$log"; exit 0' USR1
for _ in $(seq 600); do sleep 0.1; done
"""  # noqa: E501


def test_usr1_reaches_every_node_and_the_spot_job_requeues(
    gpu_slurm: SlurmCluster, tmp_path: Path
) -> None:
    """The spot plan's script run by Slurm: USR1 to the batch shell (``scancel --batch``, what
    --signal=B:USR1 does at the time limit) reaches torchrun on both nodes through srun, and the job
    goes back in the queue."""
    out = tmp_path / "out"
    write(CASES[3], "slurm", out)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "torchrun").write_text(STUB_TORCHRUN)
    (stubs / "torchrun").chmod(0o755)
    env = {
        **os.environ,
        **gpu_slurm.env,
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "OUT": str(out),
        "CHECKPOINT_DIR": str(out / "checkpoints"),
    }
    submitted = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--partition={PARTITION}",
            f"--chdir={out}",
            str(out / "train.sbatch"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    logs = [out / "torchrun.0", out / "torchrun.1"]
    try:
        deadline = time.monotonic() + 30
        while not all(log.exists() for log in logs) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(log.exists() for log in logs), gpu_slurm.logs()
        time.sleep(0.5)  # the stubs' traps are set right after their first line
        assert gpu_slurm.run("scancel", "--signal=USR1", "--batch", job).returncode == 0
        deadline = time.monotonic() + 30
        shown = ""
        while time.monotonic() < deadline:
            shown = gpu_slurm.run("scontrol", "show", "job", job).stdout
            if "Restarts=1" in shown:
                break
            time.sleep(0.2)
        assert "Restarts=1" in shown and re.search(r"JobState=(PENDING|REQUEUED)", shown), shown
        for log in logs:
            args, env_line, *rest = log.read_text().splitlines()
            assert re.match(
                r"--nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
                rf"--rdzv-endpoint=tpnode\d:29500 --rdzv-id={job} train.py$",
                args,
            ), args
            assert env_line.startswith("SAVE_STEPS=") and "RESUME=1" in env_line
            assert f"CPUS_PER_TASK={CPUS}" in env_line  # every CPU of the exclusive node
            assert rest == ["USR1"]
        output = (out / f"tuneplan-spot-zero2-2node-{job}.out").read_text()
        assert f"requeueing job {job}" in output
    finally:
        gpu_slurm.run("scancel", job)
