"""`tuneplan launch` as a user runs it: real subprocesses, files on disk, exit codes, one-sentence
errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.launch_cases import CASES

ROOT = Path(__file__).parents[2]


def tuneplan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def request_file(tmp_path: Path, index: int, **training: object) -> str:
    raw = dict(CASES[index].request)
    raw["training"] = {**raw["training"], **training}
    path = tmp_path / f"{CASES[index].name}.json"
    path.write_text(json.dumps(raw))
    return str(path)


def test_launch_writes_the_files_and_lists_them(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = tuneplan("launch", request_file(tmp_path, 2), "--format", "slurm", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(out / "train.sbatch")]
    text = (out / "train.sbatch").read_text()
    # The header: the plan (named after the request file), the version, the date, what to expect.
    assert "plan 'zero3-2node-offload'" in text and "written by tuneplan " in text
    assert "per GPU reserved" in text and "tokens/s" in text and " steps" in text
    assert "#SBATCH --nodes=2" in text


def test_a_setting_the_format_cannot_express_is_one_sentence_and_exit_1(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = tuneplan("launch", request_file(tmp_path, 1), "--format", "deepspeed", "-o", str(out))
    assert result.returncode == 1
    assert (
        result.stderr.startswith("tuneplan: deepspeed: training.sharding fsdp")
        and result.stderr.count("\n") == 1
    )
    assert "Traceback" not in result.stderr and not out.exists()


def test_the_command_line_offers_every_format() -> None:
    from cli.launch import FORMAT_NAMES
    from core.launch import FORMATS

    assert tuple(FORMATS) == FORMAT_NAMES


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    result = tuneplan("launch", request_file(tmp_path, 0), "--format", "kubeflow")
    assert result.returncode == 2 and "invalid choice: 'kubeflow'" in result.stderr


def test_all_writes_what_can_be_written_and_names_each_refusal(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # 8-GPU FSDP: DeepSpeed cannot express FSDP; torchtune cannot run amp_bf16 (fp32 master
    # weights).
    result = tuneplan("launch", request_file(tmp_path, 1), "--format", "all", "-o", str(out))
    assert result.returncode == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "accelerate_config.yaml",
        "axolotl_config.yaml",
        "k8s_common.yaml",
        "k8s_jobset.yaml",
        "k8s_trainjob.yaml",
        "sky_task.yaml",
        "torchrun.sh",
        "train.sbatch",
    ]
    refused = result.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in refused] == ["deepspeed", "torchtune"]


@pytest.mark.parametrize("bad", ["{", "[1]"])
def test_a_bad_request_file_is_one_sentence(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(bad)
    result = tuneplan("launch", str(path), "--format", "torchrun")
    assert (
        result.returncode == 1
        and result.stderr.startswith("tuneplan: ")
        and "Traceback" not in result.stderr
    )


def test_an_unwritable_folder_is_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = tuneplan(
        "launch", request_file(tmp_path, 0), "--format", "torchrun", "-o", str(blocker / "sub")
    )
    assert (
        result.returncode == 1
        and "output folder" in result.stderr
        and "Traceback" not in result.stderr
    )


def test_json_lists_each_formats_files_and_each_refusal(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = tuneplan(
        "launch", request_file(tmp_path, 2), "--format", "all", "-o", str(out), "--json"
    )
    listed = json.loads(result.stdout)  # nothing but the JSON on stdout
    assert set(listed) == {"written", "refused"}
    on_disk = sorted(p.name for p in out.iterdir())
    named = sorted({Path(p).name for paths in listed["written"].values() for p in paths})
    assert named == on_disk and all(
        Path(p).parent == out for paths in listed["written"].values() for p in paths
    )
    assert listed["written"]["slurm"] == [str(out / "train.sbatch")]
    assert set(listed["written"]).isdisjoint(listed["refused"])
    assert result.returncode == (1 if listed["refused"] else 0)


def test_kubernetes_with_a_bad_queue_name_is_one_sentence_and_writes_nothing(
    tmp_path: Path,
) -> None:
    raw = dict(CASES[2].request) | {"launch": {"kueue_queue": "Team A"}}
    path = tmp_path / "queued.json"
    path.write_text(json.dumps(raw))
    out = tmp_path / "out"
    result = tuneplan("launch", str(path), "--format", "kubernetes", "-o", str(out))
    assert result.returncode == 1 and not out.exists() and "Traceback" not in result.stderr
    assert result.stderr == (
        "tuneplan: launch.kueue_queue 'Team A' is not a Kubernetes name: use 1 to 63 lowercase "
        "letters, digits and '-', starting and ending with a letter or digit\n"
    )


def test_kubernetes_writes_the_common_objects_and_both_jobs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = tuneplan(
        "launch", request_file(tmp_path, 2), "--format", "kubernetes", "-o", str(out), "--json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "written": {
            "kubernetes": [
                str(out / "k8s_common.yaml"),
                str(out / "k8s_trainjob.yaml"),
                str(out / "k8s_jobset.yaml"),
            ]
        },
        "refused": {},
    }
