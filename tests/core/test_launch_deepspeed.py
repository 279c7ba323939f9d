"""`--format deepspeed`: DeepSpeed's own config parser reads back the plan's batch arithmetic, stage
and offload."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.launch import LaunchError
from tests.core.launch_cases import CASES, Case, write

pytest.importorskip(
    "deepspeed", reason="the launch extra (pip install -e '.[launch]') brings DeepSpeed"
)
READBACK = Path(__file__).with_name("ds_readback.py")
ROOT = Path(__file__).parents[2]


def readback(path: Path, dp: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(READBACK), str(path), str(dp)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


DS_CASES = [c for c in CASES if c.stage is not None]


@pytest.mark.slow
@pytest.mark.parametrize("case", DS_CASES, ids=[f"{c.name}-deepspeed-0.19.8" for c in DS_CASES])
def test_deepspeed_reads_back_the_plan(case: Case, tmp_path: Path) -> None:
    """DeepSpeed 0.19.8's DeepSpeedConfig parses the file (the spot case included)."""
    write(case, "deepspeed", tmp_path)
    got = readback(tmp_path / "ds_config.json", case.dp)
    assert got["world_size"] == case.dp
    assert (got["train_batch_size"], got["micro"], got["accumulation"]) == (
        case.global_batch,
        case.micro,
        case.accumulation,
    )
    assert got["stage"] == case.stage
    assert got["offload_optimizer"] == ("cpu" if case.offload_optimizer else None)
    assert got["offload_param"] == ("cpu" if case.offload_params else None)
    assert got["bf16"] and not got["fp16"]  # the cases plan amp_bf16, the default precision
    assert got["overlap_comm"]
    assert got["reduce_bucket_size"] == 500_000_000  # DeepSpeed's documented default, written out
    # the plan's AdamW as DeepSpeed's own (its CPU Adam under offload), lr by the formats'
    # convention
    lora = case.request["training"]["method"] == "lora"
    assert got["optimizer"] == "adamw"
    assert got["optimizer_params"]["lr"] == (2e-4 if lora else 2e-5)


@pytest.mark.parametrize(
    ("optimizer", "offload", "refused"),
    [
        ("adamw_8bit", "optimizer", True),
        ("paged_adamw_8bit", "none", False),
        ("lion", "optimizer", False),
    ],
)
def test_an_optimizer_deepspeed_cannot_build_is_left_to_the_code_or_refused(
    optimizer: str, offload: str, refused: bool, tmp_path: Path
) -> None:
    if refused:
        with pytest.raises(LaunchError, match=f"training.optimizer {optimizer} with CPU offload"):
            write(CASES[3], "deepspeed", tmp_path, optimizer=optimizer, offload=offload)
        return
    write(CASES[3], "deepspeed", tmp_path, optimizer=optimizer, offload=offload)
    cfg = json.loads((tmp_path / "ds_config.json").read_text())
    readme = (tmp_path / "ds_config.README.md").read_text()
    if optimizer == "lion":
        assert cfg["optimizer"]["type"] == "Lion"
    else:
        assert "optimizer" not in cfg and "the training code's optimizer is used" in readme


@pytest.mark.slow
def test_deepspeed_refuses_a_wrong_data_parallel_size(tmp_path: Path) -> None:
    """The parser really checks: the same file read as if the cluster had 4 replicas, not 16, is
    refused."""
    case = CASES[2]
    write(case, "deepspeed", tmp_path)
    got = readback(tmp_path / "ds_config.json", 4)
    assert "error" in got and "train_batch_size" in got["error"]


@pytest.mark.slow
def test_deepspeed_refuses_a_typo_in_the_zero_section(tmp_path: Path) -> None:
    case = CASES[2]
    write(case, "deepspeed", tmp_path)
    cfg = json.loads((tmp_path / "ds_config.json").read_text())
    cfg["zero_optimization"]["stage3_prefetch_bucket"] = cfg["zero_optimization"].pop(
        "stage3_prefetch_bucket_size"
    )
    (tmp_path / "typo.json").write_text(json.dumps(cfg))
    got = readback(tmp_path / "typo.json", 16)
    assert (
        "stage3_prefetch_bucket" in got.get("error", "")
        and "Extra inputs are not permitted" in got["error"]
    )


def test_sidecar_carries_the_header(tmp_path: Path) -> None:
    """JSON has no comments: the plan, version, date and expectations are in ds_config.README.md."""
    written = write(CASES[2], "deepspeed", tmp_path)
    assert sorted(p.name for p in written.paths) == ["ds_config.README.md", "ds_config.json"]
    readme = (tmp_path / "ds_config.README.md").read_text()
    assert "zero3-2node-offload" in readme and "2026-12-01" in readme and "tuneplan" in readme
    assert "per GPU" in readme and "tokens/s" in readme and " steps" in readme
    assert "_tuneplan" not in (tmp_path / "ds_config.json").read_text()


@pytest.mark.parametrize(
    ("case", "training", "named"),
    [
        (CASES[1], {}, "training.sharding fsdp"),
        (CASES[3], {"tensor_parallel": 2, "sharding": "zero1"}, "training.tensor_parallel 2"),
        (CASES[0], {"precision": "fp8"}, "training.precision fp8"),
        (CASES[0], {"precision": "pure_bf16"}, "training.precision pure_bf16"),
    ],
)
def test_settings_deepspeed_cannot_express_are_named(
    case: Case, training: dict[str, Any], named: str, tmp_path: Path
) -> None:
    with pytest.raises(LaunchError, match=named):
        write(case, "deepspeed", tmp_path, **training)
    assert not any(tmp_path.iterdir())  # nothing written
