"""`--format accelerate`: accelerate's ClusterConfig and its `accelerate launch` argument handling
read it back.

``ClusterConfig.from_yaml_file`` refuses unknown top-level keys; ``_validate_launch_command`` is
what ``accelerate launch --config_file`` runs to turn the file into launch arguments, and the
fsdp_config / deepspeed_config keys are then parsed again by ``launch_command_parser()`` so an
unknown key or a value outside an argument's choices fails here as it would on the cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.launch import LaunchError
from tests.core.launch_cases import CASES, IDS, Case, write

pytest.importorskip(
    "accelerate", reason="the launch extra (pip install -e '.[launch]') brings accelerate"
)
from accelerate.commands.config.config_args import ClusterConfig
from accelerate.commands.launch import _validate_launch_command, launch_command_parser


def _argv(section: dict[str, Any]) -> list[str]:
    argv: list[str] = []
    for key, value in section.items():
        argv += [f"--{key}", str(value).lower() if isinstance(value, bool) else str(value)]
    return argv


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-accelerate-1.15.0" for i in IDS])
def test_accelerate_reads_back_the_plan(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """accelerate 1.15.0 reads the file back (the spot case included)."""
    written = write(case, "accelerate", tmp_path)
    path = tmp_path / "accelerate_config.yaml"
    cfg = ClusterConfig.from_yaml_file(str(path))
    assert (cfg.num_processes, cfg.num_machines) == (case.world, case.nodes)
    # DeepSpeed: in the JSON
    assert cfg.mixed_precision == (None if case.stage in (1, 2, 3) else "bf16")
    args = launch_command_parser().parse_args(["--config_file", str(path), "train.py"])
    args, _defaults, _mp = _validate_launch_command(args)
    assert (args.num_processes, args.num_machines) == (case.world, case.nodes)
    if case.stage is None:  # FSDP
        assert cfg.distributed_type.value == "FSDP" and args.use_fsdp
        fsdp = launch_command_parser().parse_args([*_argv(cfg.fsdp_config), "train.py"])
        assert fsdp.fsdp_version == "2"
        # Llama 3.1's config.json
        assert fsdp.fsdp_transformer_layer_cls_to_wrap == "LlamaDecoderLayer"
        assert fsdp.fsdp_auto_wrap_policy == "TRANSFORMER_BASED_WRAP"
        assert fsdp.fsdp_offload_params == ("true" if case.offload_params else "false")
        # the request's gradient_checkpointing true
        assert fsdp.fsdp_activation_checkpointing == "true"
    elif case.stage == 0:
        assert cfg.distributed_type.value == ("NO" if case.world == 1 else "MULTI_GPU")
    else:
        assert cfg.distributed_type.value == "DEEPSPEED" and args.use_deepspeed
        ds = launch_command_parser().parse_args([*_argv(cfg.deepspeed_config), "train.py"])
        assert ds.deepspeed_config_file == "ds_config.json"
        assert {p.name for p in written.paths} == {
            "accelerate_config.yaml",
            "ds_config.json",
            "ds_config.README.md",
        }
        # DeepSpeedPlugin reads the JSON and runs accelerate's own check that no inline key
        # contradicts it
        from accelerate.utils import DeepSpeedPlugin

        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("ACCELERATE_CONFIG_DS_FIELDS", ",".join(cfg.deepspeed_config).lower())
        plugin = DeepSpeedPlugin(hf_ds_config="ds_config.json")
        plugin._deepspeed_config_checks()
        assert plugin.deepspeed_config["zero_optimization"]["stage"] == case.stage
        assert plugin.deepspeed_config["gradient_accumulation_steps"] == case.accumulation
        offload = (
            plugin.deepspeed_config["zero_optimization"].get("offload_optimizer", {}).get("device")
        )
        assert offload == ("cpu" if case.offload_optimizer else None)


def test_hsdp_replicates_across_nodes_and_shards_within(tmp_path: Path) -> None:
    case = CASES[2]  # 2 nodes × 8
    write(case, "accelerate", tmp_path, sharding="hsdp")
    cfg = ClusterConfig.from_yaml_file(str(tmp_path / "accelerate_config.yaml"))
    par = launch_command_parser().parse_args([*_argv(cfg.parallelism_config), "train.py"])
    assert (par.parallelism_config_dp_replicate_size, par.parallelism_config_dp_shard_size) == (
        2,
        8,
    )


def test_a_typo_is_refused_by_accelerate(tmp_path: Path) -> None:
    """The check can fail: a misspelt key is an unknown accelerate argument."""
    write(CASES[1], "accelerate", tmp_path)
    cfg = ClusterConfig.from_yaml_file(str(tmp_path / "accelerate_config.yaml"))
    bad = dict(cfg.fsdp_config) | {"fsdp_ofload_params": True}
    with pytest.raises(SystemExit):
        launch_command_parser().parse_args([*_argv(bad), "train.py"])


@pytest.mark.parametrize(
    ("case", "training", "named"),
    [
        (CASES[1], {"tensor_parallel": 2}, "training.tensor_parallel 2"),
        (
            CASES[2],
            {"pipeline_parallel": 2, "sharding": "fsdp", "offload": "none"},
            "pipeline_parallel 2",
        ),
        (CASES[1], {"offload": "optimizer"}, "training.offload optimizer"),
        (CASES[1], {"gradient_checkpointing": "selective"}, "gradient_checkpointing selective"),
        (CASES[0], {"precision": "pure_bf16"}, "training.precision pure_bf16"),
    ],
)
def test_settings_accelerate_cannot_express_are_named(
    case: Case, training: dict[str, Any], named: str, tmp_path: Path
) -> None:
    with pytest.raises(LaunchError, match=named):
        write(case, "accelerate", tmp_path, **training)
    assert not any(tmp_path.iterdir())
