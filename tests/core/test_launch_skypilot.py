"""`--format skypilot`: the task YAML checked against SkyPilot's own JSON schemas.

Besides ``sky.Task.from_yaml`` itself (the last test, in SkyPilot's own virtual environment), the
schema check runs in the project's environment: skypilot 0.14.1 installs about seventy packages (its
API server's fastapi, uvicorn, SQLAlchemy, asyncpg, alembic, casbin, ...) and a CI minute or more
for a four-key file. Its task, resources and storage schemas are plain JSON Schema
(sky/utils/schemas.py), the same ones ``Task.from_yaml`` validates with;
tests/fixtures/launch/skypilot/schemas.json keeps them as SkyPilot 0.14.1 builds them
(tests/fixtures/launch/SOURCES.md says how), and ``jsonschema`` applies them here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from core.launch import LaunchError
from tests.core.launch_cases import CASES, Case, write

jsonschema = pytest.importorskip("jsonschema", reason="the launch extra brings jsonschema")
yaml = pytest.importorskip("yaml", reason="the launch extra brings PyYAML")
SCHEMAS = json.loads(
    (Path(__file__).parents[1] / "fixtures/launch/skypilot/schemas.json").read_text()
)


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
    validators={
        "case_insensitive_enum": _case_insensitive_enum,
        "case_sensitive_enum": _case_sensitive_enum,
    },
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


# What each case must run on, worked out by hand from the plan's priced offer
# (resources/catalog/prices.json) and SkyPilot's catalogs (tests/fixtures/launch/skypilot/catalogs):
# accelerator in that cloud's spelling, the cloud, the instance the plan priced, and whether the
# multi-node network tier is asked for.
LAMBDA = Case(
    **{
        **CASES[0].__dict__,
        "name": "lambda-h100-sxm",
        "request": {**CASES[0].request, "pricing": {"provider": "lambda"}},
    }
)
# An on-demand plan on AWS: the shipped p4de.24xlarge on-demand price is us-east-1's, so the region
# is pinned too.
AWS_ON_DEMAND = Case(
    **{
        **CASES[3].__dict__,
        "name": "aws-on-demand-region",
        "spot": False,
        "request": {**CASES[3].request, "pricing": {"provider": "aws", "mode": "on_demand"}},
    }
)
SKY_CASES = [*CASES, LAMBDA, AWS_ON_DEMAND]
SKY_IDS = [f"{c.name}-skypilot-0.14.1" for c in SKY_CASES]
EXPECTED = {
    # cheapest H100-SXM: RunPod Secure Cloud, one GPU (RunPod spells the SXM part H100-SXM)
    "single-gpu-lora": ({"H100-SXM": 1}, "runpod", "1x_H100-SXM_SECURE", None),
    "fsdp-8gpu-full": ({"H100": 8}, "mithril", "h100-80gb.sxm.8x", None),
    # Mithril has no network_tier in SkyPilot 0.14.1 (CUSTOM_NETWORK_TIER unsupported): none is
    # written
    "zero3-2node-offload": ({"H100": 8}, "mithril", "h100-80gb.sxm.8x", None),
    "spot-zero2-2node": ({"A100-80GB": 8}, "aws", "p4de.24xlarge", "best"),
    # the case: H100: 1 on Lambda alone picks gpu_1x_h100_pcie ($3.29) before
    # gpu_1x_h100_sxm5 ($4.29)
    "lambda-h100-sxm": ({"H100": 1}, "lambda", "gpu_1x_h100_sxm5", None),
    "aws-on-demand-region": ({"A100-80GB": 8}, "aws", "p4de.24xlarge", "best"),
}
# The region each case's price is for, pinned with the instance (resources/catalog/prices.json:
# AWS's p4de.24xlarge rows are us-east-1's; the others price any region, and a spot plan is left
# free to move).
REGIONS = {"aws-on-demand-region": "us-east-1"}


@pytest.mark.parametrize("case", SKY_CASES, ids=SKY_IDS)
def test_skypilot_task_matches_the_plan(case: Case, tmp_path: Path) -> None:
    """Checked against SkyPilot 0.14.1's task, resources and storage schemas."""
    write(case, "skypilot", tmp_path)
    task = yaml.safe_load((tmp_path / "sky_task.yaml").read_text())
    validate(task)
    assert task["num_nodes"] == case.nodes
    accelerators, infra, instance, tier = EXPECTED[case.name]
    res = task["resources"]
    pinned = f"{infra}/{REGIONS[case.name]}" if case.name in REGIONS else infra
    assert (res["accelerators"], res["infra"], res["instance_type"]) == (
        accelerators,
        pinned,
        instance,
    )
    assert res.get("network_tier") == tier
    assert res.get("use_spot", False) == case.spot
    if case.spot:  # managed-job recovery; the spot case prices on AWS: the bucket is S3
        assert res["job_recovery"] == {"strategy": "EAGER_NEXT_REGION", "max_restarts_on_errors": 3}
        assert task["file_mounts"]["/checkpoints"]["store"] == "s3"
    else:
        assert "job_recovery" not in res
    mount = task["file_mounts"]["/checkpoints"]
    assert mount["mode"] == "MOUNT_CACHED"
    # the plan's checkpoint interval and kept count (2, the request default) for the user's script
    assert (
        task["envs"]["CHECKPOINT_DIR"] == "/checkpoints" and task["envs"]["SAVE_TOTAL_LIMIT"] == "2"
    )
    assert task["envs"]["RESUME"] == "1"
    assert int(task["envs"]["SAVE_STEPS"]) >= 1
    for var in ("SKYPILOT_NODE_RANK", "SKYPILOT_NODE_IPS", "SKYPILOT_NUM_NODES"):
        assert f"${var}" in task["run"]
    assert f"--nproc-per-node={case.per_node} " in task["run"]
    text = (tmp_path / "sky_task.yaml").read_text()
    assert f"# instance_type {instance} on {pinned} is the instance the plan priced" in text
    # the spot case priced us-east-1 (prices.json) but leaves the region to the managed job
    if case.spot:
        assert "# region: the plan priced us-east-1; not pinned" in text


CATALOG = Path(__file__).parents[1] / "fixtures/launch/skypilot/catalogs"


def test_accelerator_names_are_skypilots_catalog_spelling() -> None:
    """Every name written is spelled exactly as SkyPilot's accelerators.csv spells it (for that
    cloud)."""
    import csv

    from core.launch import skypilot

    with (CATALOG / "v8/common/accelerators.csv").open(newline="") as fh:
        rows = {r["AcceleratorName"]: r["Clouds"].lower() for r in csv.DictReader(fh)}
    for gpu, name in skypilot.ACCELERATORS.items():
        assert name in rows, f"{gpu} -> {name} is not a SkyPilot catalog name"
    for cloud_name, names in skypilot.CLOUD_ACCELERATORS.items():
        for name in names.values():
            assert name in rows and cloud_name in rows[name], (
                f"{name} is not in {cloud_name}'s catalog"
            )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pinned_instances_carry_the_accelerators_in_skypilots_catalog(name: str) -> None:
    """Each instance a case pins is a row of that cloud's SkyPilot catalog with the accelerators
    written."""
    import csv

    accelerators, infra, instance, _tier = EXPECTED[name]
    with (CATALOG / f"v8/{infra}/vms.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["InstanceType"] == instance]
    assert rows, f"{instance} is not in SkyPilot's {infra} catalog"
    assert {r["AcceleratorName"]: int(float(r["AcceleratorCount"])) for r in rows} == accelerators


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


# SkyPilot's own reader, in the separate virtual environment packaging/test.sh makes for it
# (.venv-skypilot): its seventy dependencies stay out of the project's environment. It reads the
# task offline (no cloud account) and builds the Task, its Resources and its Storage mounts.
# Resources with an instance_type are checked against the cloud's catalog (the instance exists there
# and carries the accelerators asked for), which SkyPilot would download from skypilot-catalog: the
# test gives it the rows it needs under ~/.sky/catalogs instead (tests/fixtures/launch/SOURCES.md
# says where each came from).
SKY_PYTHON = Path(__file__).parents[2] / ".venv-skypilot" / "bin" / "python"
READ_BACK = """
import json, sys
import sky
task = sky.Task.from_yaml(sys.argv[1])
(res,) = task.resources
print(json.dumps({"num_nodes": task.num_nodes, "accelerators": res.accelerators, "use_spot": res.use_spot,
                  "cloud": str(res.cloud).lower(), "region": res.region, "instance_type": res.instance_type,
                  "network_tier": res.network_tier.value if res.network_tier else None,
                  "job_recovery": res.job_recovery, "envs": task.envs,
                  "mounts": sorted(task.storage_mounts), "run_has_rank": "SKYPILOT_NODE_RANK" in task.run}))
"""  # noqa: E501


def sky_read(path: Path, home: Path) -> subprocess.CompletedProcess[str]:
    if not SKY_PYTHON.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SKY_PYTHON} is missing: packaging/test.sh installs SkyPilot there in CI")
        pytest.skip(f"SkyPilot is not installed in {SKY_PYTHON} (packaging/test.sh makes it in CI)")
    # fresh files: SkyPilot does not re-download them
    shutil.copytree(CATALOG, home / ".sky" / "catalogs")
    # SkyPilot writes its state under ~/.sky: keep it in the test
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(
        [str(SKY_PYTHON), "-c", READ_BACK, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("case", SKY_CASES, ids=SKY_IDS)
def test_sky_task_from_yaml_reads_back_the_plan(case: Case, tmp_path: Path) -> None:
    """sky.Task.from_yaml of SkyPilot 0.14.1 reads the file and builds the resources the plan
    priced."""
    write(case, "skypilot", tmp_path)
    done = sky_read(tmp_path / "sky_task.yaml", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    accelerators, infra, instance, tier = EXPECTED[case.name]
    assert got["envs"]["SAVE_TOTAL_LIMIT"] == "2"
    assert got["job_recovery"] == (
        {"strategy": "EAGER_NEXT_REGION", "max_restarts_on_errors": 3} if case.spot else None
    )
    del got["envs"], got["job_recovery"]
    assert got == {
        "num_nodes": case.nodes,
        "accelerators": accelerators,
        "use_spot": case.spot,
        "cloud": infra,
        "region": REGIONS.get(case.name),
        "instance_type": instance,
        "network_tier": tier,
        "mounts": ["/checkpoints"],
        "run_has_rank": True,
    }
