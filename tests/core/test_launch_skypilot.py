"""`--format skypilot`: the task YAML checked against SkyPilot's own JSON schemas.

Besides ``sky.Task.from_yaml`` itself (the last test, in SkyPilot's own virtual environment), the schema check
runs in the project's environment: skypilot 0.14.1 installs about seventy packages (its API server's fastapi,
uvicorn, SQLAlchemy, asyncpg, alembic, casbin, ...) and a CI minute or more for a four-key file. Its task,
resources and storage schemas are plain JSON Schema (sky/utils/schemas.py), the same ones ``Task.from_yaml``
validates with; tests/fixtures/launch/skypilot/schemas.json keeps them as SkyPilot 0.14.1 builds them
(tests/fixtures/launch/SOURCES.md says how), and ``jsonschema`` applies them here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from core.launch import LaunchError
from tests.core.launch_cases import CASES, IDS, Case, write

jsonschema = pytest.importorskip("jsonschema", reason="the launch extra brings jsonschema")
yaml = pytest.importorskip("yaml", reason="the launch extra brings PyYAML")
SCHEMAS = json.loads((Path(__file__).parents[1] / "fixtures/launch/skypilot/schemas.json").read_text())


def _case_insensitive_enum(validator: Any, enums: list[str], instance: Any, schema: Any) -> Any:
    """SkyPilot's own keyword (sky/utils/validator.py, skypilot 0.14.1), as it defines it."""
    del validator, schema
    if instance.lower() not in [e.lower() for e in enums]:
        yield jsonschema.ValidationError(f"{instance!r} is not one of {enums!r}")


def _case_sensitive_enum(validator: Any, enums: list[str], instance: Any, schema: Any) -> Any:
    del validator, schema
    if instance not in enums:
        yield jsonschema.ValidationError(f"{instance!r} is not one of {enums!r}")


# sky/utils/validator.py get_schema_validator(): Draft 7 extended with SkyPilot's two enum keywords.
SkyValidator = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    validators={"case_insensitive_enum": _case_insensitive_enum, "case_sensitive_enum": _case_sensitive_enum},
)


def _check(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    # common_utils.validate_schema drops None values first (yaml loads empty fields as None).
    SkyValidator(schema).validate({k: v for k, v in obj.items() if v is not None})


def validate(task: dict[str, Any]) -> None:
    """What sky.Task.from_yaml_config checks: the task, its resources, each storage mount."""
    _check(task, SCHEMAS["task"])
    _check(task["resources"], SCHEMAS["resources"])
    for mount in task.get("file_mounts", {}).values():
        if isinstance(mount, dict):
            _check(mount, SCHEMAS["storage"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_skypilot_task_matches_the_plan(case: Case, tmp_path: Path) -> None:
    write(case, "skypilot", tmp_path)
    task = yaml.safe_load((tmp_path / "sky_task.yaml").read_text())
    validate(task)
    assert task["num_nodes"] == case.nodes
    gpu = case.request["hardware"]["gpu"]
    assert task["resources"]["accelerators"] == {{"H100-SXM": "H100", "A100-80GB-SXM": "A100-80GB"}[gpu]:
                                                 case.per_node}
    assert task["resources"].get("use_spot", False) == case.spot
    assert ("job_recovery" in task["resources"]) == case.spot
    mount = task["file_mounts"]["/checkpoints"]
    assert mount["mode"] == "MOUNT_CACHED" and task["envs"]["CHECKPOINT_DIR"] == "/checkpoints"
    for var in ("SKYPILOT_NODE_RANK", "SKYPILOT_NODE_IPS", "SKYPILOT_NUM_NODES", "SKYPILOT_NUM_GPUS_PER_NODE"):
        assert f"${var}" in task["run"]
    if case.spot:  # the spot case prices on AWS: the bucket is S3 and the task runs there
        assert mount["store"] == "s3" and task["resources"]["infra"] == "aws"


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    write(CASES[3], "skypilot", tmp_path)
    task = yaml.safe_load((tmp_path / "sky_task.yaml").read_text())
    task["resources"]["use_spots"] = task["resources"].pop("use_spot")
    with pytest.raises(jsonschema.ValidationError, match="use_spots"):
        validate(task)
    task = yaml.safe_load((tmp_path / "sky_task.yaml").read_text())
    task["file_mounts"]["/checkpoints"]["mode"] = "MOUNTED"
    with pytest.raises(jsonschema.ValidationError, match="MOUNTED"):
        validate(task)


def test_a_gpu_skypilot_has_no_name_for_is_refused(tmp_path: Path) -> None:
    case = CASES[0]
    raw = dict(case.request) | {"hardware": {"gpu": "GAUDI2", "gpus_per_node": 1, "nodes": 1}}
    bad = Case(**{**case.__dict__, "request": raw})
    with pytest.raises(LaunchError, match=r"hardware\.gpu GAUDI2 has no SkyPilot accelerator name"):
        write(bad, "skypilot", tmp_path)


# SkyPilot's own reader, in the separate virtual environment packaging/test.sh makes for it (.venv-skypilot):
# its seventy dependencies stay out of the project's environment. It reads the task offline (no cloud account,
# no catalog download) and builds the Task, its Resources and its Storage mounts.
SKY_PYTHON = Path(__file__).parents[2] / ".venv-skypilot" / "bin" / "python"
READ_BACK = """
import json, sys
import sky
task = sky.Task.from_yaml(sys.argv[1])
(res,) = task.resources
print(json.dumps({"num_nodes": task.num_nodes, "accelerators": res.accelerators, "use_spot": res.use_spot,
                  "mounts": sorted(task.storage_mounts), "run_has_rank": "SKYPILOT_NODE_RANK" in task.run}))
"""


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sky_task_from_yaml_reads_back_the_plan(case: Case, tmp_path: Path) -> None:
    if not SKY_PYTHON.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SKY_PYTHON} is missing: packaging/test.sh installs SkyPilot there in CI")
        pytest.skip(f"SkyPilot is not installed in {SKY_PYTHON} (packaging/test.sh makes it in CI)")
    write(case, "skypilot", tmp_path)
    env = {**os.environ, "HOME": str(tmp_path)}  # SkyPilot writes its state under ~/.sky: keep it in the test
    done = subprocess.run([str(SKY_PYTHON), "-c", READ_BACK, str(tmp_path / "sky_task.yaml")], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    gpu = {"H100-SXM": "H100", "A100-80GB-SXM": "A100-80GB"}[case.request["hardware"]["gpu"]]
    assert got == {"num_nodes": case.nodes, "accelerators": {gpu: case.per_node}, "use_spot": case.spot,
                   "mounts": ["/checkpoints"], "run_has_rank": True}
