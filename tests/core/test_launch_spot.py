"""A spot plan's launch files survive a preemption: every format carries the plan's checkpoint
interval, resumes, and keeps the plan's number of checkpoints (where the format has the setting;
where it has none, its header says so in words).

The interval in steps is the plan's own figure turned into optimizer steps: ⌊interval (s) ÷ step
time (s)⌋, both read from the plan result; the plan's interval itself comes from failures and
preemptions together (tests/core/test_reliability.py checks it against Daly's formula).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.launch import write_launch_files
from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.planner.result import PlanResult
from tests.core.launch_cases import TODAY

KEPT = 3  # not the request default (2), so a format that writes a constant is caught


def _spot(training: dict[str, Any]) -> tuple[PlanRequest, PlanResult]:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 2e9, "seq_len": 4096},
            "training": {
                "method": "lora",
                "micro_batch_size": 2,
                "global_batch_size": 64,
                **training,
            },
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 2},
            "pricing": {"provider": "aws", "mode": "spot"},
            "assumptions": {"checkpoints_kept": KEPT, "spot_preemptions_per_hour": 0.2},
        }
    )
    return request, plan(request, today=TODAY)


def _steps(result: PlanResult) -> int:
    steps = int(result.checkpoint.interval_minutes * 60 // result.compute.step_time_s)
    assert 1 < steps < result.compute.steps  # checkpoints during the run, not once at its end
    return steps


def _exports(text: str) -> dict[str, str]:
    return dict(re.findall(r'^export (\w+)="\$\{\w+:-([^}]*)\}"$', text, re.MULTILINE))


@pytest.fixture(scope="module")
def zero2(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, str]]:
    """The ZeRO-2 spot plan's files (every format but torchtune, whose recipes shard with FSDP
    only)."""
    request, result = _spot({"sharding": "zero2"})
    out = tmp_path_factory.mktemp("zero2")
    written = write_launch_files(
        request, result, "all", out, name="spot", today=TODAY, partial=True
    )
    assert set(written.refused) == {"torchtune"}
    return _steps(result), {p.name: p.read_text() for p in written.paths}


def test_shell_scripts_export_the_interval_the_kept_count_and_resume(
    zero2: tuple[int, dict[str, str]],
) -> None:
    steps, files = zero2
    for name in ("torchrun.sh", "train.sbatch"):
        env = _exports(files[name])
        assert (
            env["SAVE_STEPS"] == str(steps)
            and env["SAVE_TOTAL_LIMIT"] == str(KEPT)
            and env["RESUME"] == "1"
        )
    assert "#SBATCH --requeue" in files["train.sbatch"].splitlines()


def test_skypilot_recovers_the_managed_job_and_tells_the_script(
    zero2: tuple[int, dict[str, str]],
) -> None:
    steps, files = zero2
    task = yaml.safe_load(files["sky_task.yaml"])
    assert task["resources"]["use_spot"] is True and task["resources"]["job_recovery"]["strategy"]
    assert task["envs"]["SAVE_STEPS"] == str(steps) and task["envs"]["SAVE_TOTAL_LIMIT"] == str(
        KEPT
    )
    assert task["envs"]["RESUME"] == "1" and task["envs"]["CHECKPOINT_DIR"] == "/checkpoints"
    assert "/checkpoints" in task["file_mounts"]


def test_axolotl_saves_keeps_and_resumes(zero2: tuple[int, dict[str, str]]) -> None:
    steps, files = zero2
    cfg = yaml.safe_load(files["axolotl_config.yaml"])
    assert (cfg["save_steps"], cfg["save_total_limit"], cfg["auto_resume_from_checkpoints"]) == (
        steps,
        KEPT,
        True,
    )


def test_deepspeed_which_has_no_such_keys_says_so_beside_the_json(
    zero2: tuple[int, dict[str, str]],
) -> None:
    steps, files = zero2
    ds = json.loads(files["ds_config.json"])
    # DeepSpeed's JSON has no save interval: the README carries it
    assert "save_steps" not in json.dumps(ds)
    readme = files["ds_config.README.md"]
    assert f"every {steps} steps" in readme and f"keeps {KEPT}" in readme and "resumes" in readme


def test_torchtune_says_what_its_recipes_cannot_do_and_resumes_when_it_can(tmp_path: Path) -> None:
    request, result = _spot({"sharding": "fsdp"})
    written = write_launch_files(request, result, "torchtune", tmp_path, name="spot", today=TODAY)
    text = written.paths[0].read_text()
    steps = _steps(result)
    assert f"the planned interval ({steps} steps) is not a setting its recipes take" in text
    assert f"delete all but the newest {KEPT} yourself" in text
    # the run line resumes once a recipe state exists
    assert "resume_from_checkpoint=$(test -f " in text


def test_kubernetes_manifests_carry_the_interval_the_kept_count_and_resume(
    zero2: tuple[int, dict[str, str]],
) -> None:
    steps, files = zero2
    settings_map, _claim = yaml.safe_load_all(files["k8s_common.yaml"])
    data = settings_map["data"]
    assert (data["SAVE_STEPS"], data["SAVE_TOTAL_LIMIT"], data["RESUME"]) == (
        str(steps),
        str(KEPT),
        "1",
    )
    _service, jobset = yaml.safe_load_all(files["k8s_jobset.yaml"])
    trainjob = yaml.safe_load(files["k8s_trainjob.yaml"])
    for job in (jobset, trainjob):
        assert job["metadata"]["labels"]["tuneplan.io/preemptible"] == "true"
        assert job["metadata"]["annotations"]["tuneplan.io/checkpoint-every-steps"] == str(steps)
    # a preempted pod restarts the set, which resumes
    assert jobset["spec"]["failurePolicy"]["maxRestarts"] >= 1
