"""`--format torchtune`: the recipe config read back by torchtune 0.6.1 (the current release)
itself.

Two checks. Here, always: each file against torchtune's own v0.6.1 recipe config of the same kind
(tests/fixtures/launch/torchtune/<family>/<config>.yaml, verbatim) — the keys, the loss and schedule
components, and each preset's checkpoint files. In the virtual environment packaging/test.sh makes
(.venv-torchtune, with torchtune 0.6.1 and the torch and torchao it imports): ``tune validate`` on
each file, which imports every ``_component_`` and binds its arguments, and the recipe ``tune run``
would start, read from the installed release: every key it reads without a default
(``cfg.lr_scheduler``) must be in the file, and every key the file sets must be one the recipe
reads. ``tune validate`` alone does not see a missing key.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import shlex
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from core.launch import LaunchError, LaunchPlan
from core.launch.torchtune import MODELS, checkpoint_files
from core.planner.plan import plan
from core.planner.request import PlanRequest
from tests.core.launch_cases import CASES, TODAY, Case, write

yaml = pytest.importorskip("yaml", reason="the launch extra brings PyYAML")
FIXTURES = Path(__file__).parents[1] / "fixtures/launch/torchtune"
TORCHTUNE = "0.6.1"
VENV = Path(__file__).parents[2] / ".venv-torchtune"

# The four round-trip plans as torchtune can run them. The spot plan (LoRA on 2 × 8 GPUs) shards
# with FSDP and keeps its optimizer on the GPU: torchtune's distributed recipes shard fully and
# offload all or nothing.
TT_PLANS: list[tuple[Case, dict[str, Any]]] = [
    (CASES[0], {}),  # amp_bf16, the request's default: LoRA writes it as bf16
    (CASES[1], {"precision": "pure_bf16"}),
    (CASES[2], {"precision": "pure_bf16"}),
    (CASES[3], {"sharding": "fsdp", "offload": "none"}),
]
IDS = [f"torchtune-{TORCHTUNE}-{case.name}" for case, _ in TT_PLANS]
# Each plan's recipe and torchtune's shipped config for the same model and recipe
# (recipes/configs/llama3_1).
SHIPPED = {
    "single-gpu-lora": "llama3_1/8B_lora_single_device.yaml",
    "fsdp-8gpu-full": "llama3_1/8B_full.yaml",
    "zero3-2node-offload": "llama3_1/70B_full.yaml",
    "spot-zero2-2node": "llama3_1/8B_lora.yaml",
}
RECIPES = {
    "single-gpu-lora": "lora_finetune_single_device",
    "fsdp-8gpu-full": "full_finetune_distributed",
    "zero3-2node-offload": "full_finetune_distributed",
    "spot-zero2-2node": "lora_finetune_distributed",
}
# Each preset's model as torchtune's v0.6.1 configs load it (the files WEIGHTS in
# core/launch/torchtune.py cites).
PRESET_CONFIGS = {
    "llama-3.1-8b": "llama3_1/8B_lora.yaml",
    "llama-3.1-70b": "llama3_1/70B_lora.yaml",
    "llama-3.1-405b": "llama3_1/405B_qlora.yaml",
    "llama-3.2-1b": "llama3_2/1B_lora.yaml",
    "llama-3.2-3b": "llama3_2/3B_lora.yaml",
    "llama-2-7b": "llama2/7B_lora.yaml",
    "llama-2-13b": "llama2/13B_lora.yaml",
    "llama-2-70b": "llama2/70B_lora.yaml",
    "mistral-7b-v0.1": "mistral/7B_lora.yaml",
    "gemma-2-2b": "gemma2/2B_lora.yaml",
    "gemma-2-9b": "gemma2/9B_lora.yaml",
    "gemma-2-27b": "gemma2/27B_lora.yaml",
}


def shipped(name: str) -> dict[str, Any]:
    return yaml.safe_load((FIXTURES / name).read_text())


def file_names(files: list[str] | dict[str, str]) -> list[str]:
    """checkpoint_files as torchtune 0.6.1 expands them
    (FormattedCheckpointFiles.build_checkpoint_filenames)."""
    if isinstance(files, list):
        return files
    last = files["max_filename"]
    return [
        files["filename_format"].format(str(i).zfill(len(last)), last)
        for i in range(1, int(last) + 1)
    ]


def written(case: Case, training: dict[str, Any], out: Path) -> tuple[dict[str, Any], str]:
    write(case, "torchtune", out, **training)
    text = (out / "torchtune_config.yaml").read_text()
    return yaml.safe_load(text), text


def launch_plan(case: Case, training: dict[str, Any]) -> LaunchPlan:
    raw = dict(case.request)
    raw["training"] = {**raw["training"], **training}
    request = PlanRequest.model_validate(raw)
    return LaunchPlan(result=plan(request), name=case.name, date=TODAY)


@pytest.mark.parametrize(("case", "training"), TT_PLANS, ids=IDS)
def test_torchtune_config_matches_the_plan(
    case: Case, training: dict[str, Any], tmp_path: Path
) -> None:
    cfg, text = written(case, training, tmp_path)
    ref = shipped(SHIPPED[case.name])
    lora = case.request["training"]["method"] == "lora"
    # Nothing torchtune's own config of this recipe does not set; fsdp_cpu_offload is read by both
    # distributed recipes (cfg.get) and set in recipes/configs/llama3_1/70B_full.yaml.
    assert set(cfg) <= set(ref) | {"fsdp_cpu_offload"}
    assert (
        cfg["loss"]
        == ref["loss"]
        == {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"}
    )
    if lora:
        assert cfg["lr_scheduler"] == ref["lr_scheduler"]  # cosine with 100 warm-up steps
    assert file_names(cfg["checkpointer"]["checkpoint_files"]) == file_names(
        ref["checkpointer"]["checkpoint_files"]
    )
    assert cfg["batch_size"] == case.micro
    assert cfg["gradient_accumulation_steps"] == case.accumulation
    assert cfg["dtype"] == "bf16"
    assert cfg["tokenizer"]["max_seq_len"] == 4096
    assert cfg["resume_from_checkpoint"] is False  # 0.6.1 stops a first run that sets it
    assert cfg.get("fsdp_cpu_offload") == (case.offload_params if case.world > 1 else None)
    builder = (
        "llama3_1_70b" if case.request["model"]["preset"] == "llama-3.1-70b" else "llama3_1_8b"
    )
    assert (
        cfg["model"]["_component_"]
        == f"torchtune.models.llama3_1.{'lora_' if lora else ''}{builder}"
    )
    if lora:  # all-linear: q, k, v, o and the MLP; rank 16 as requested
        assert cfg["model"]["lora_attn_modules"] == ["q_proj", "k_proj", "v_proj", "output_proj"]
        assert cfg["model"]["apply_lora_to_mlp"] is True and cfg["model"]["lora_rank"] == 16
    # `tune run` hands its leading arguments to torchrun's own parser (torchtune/_cli/run.py): read
    # them with it.
    torch_run = pytest.importorskip(
        "torch.distributed.run", reason="torch (CPU) provides torchrun's parser"
    )
    (run,) = [
        line.removeprefix("# run: tune run ")
        for line in text.splitlines()
        if line.startswith("# run: ")
    ]
    args = torch_run.get_args_parser().parse_args(
        shlex.split(run.split(" resume_from_checkpoint=")[0])
    )
    assert args.training_script == RECIPES[case.name] and args.training_script_args == [
        "--config",
        "torchtune_config.yaml",
    ]
    if case.world > 1:
        assert (args.nnodes, args.nproc_per_node) == (str(case.nodes), str(case.per_node))
    # several nodes meet at the c10d rendezvous, as torchrun.sh and train.sbatch do
    if case.nodes > 1:
        assert args.rdzv_backend == "c10d" and args.rdzv_endpoint == "$MASTER_ADDR:29500"


@pytest.mark.parametrize("preset", list(MODELS))
def test_each_preset_loads_the_files_torchtunes_own_config_loads(preset: str) -> None:
    ref = shipped(PRESET_CONFIGS[preset])["checkpointer"]["checkpoint_files"]
    assert file_names(checkpoint_files(preset)) == file_names(ref)


def test_amp_bf16_lora_runs_as_bf16_and_says_so(tmp_path: Path) -> None:
    cfg, text = written(CASES[0], {}, tmp_path)
    assert cfg["dtype"] == "bf16"
    assert (
        "# precision amp_bf16 runs as dtype bf16: torchtune keeps no fp32 master copy of the "
        "adapter" in text
    )


def test_a_spot_plan_states_its_interval_kept_count_and_resumes_once_there_is_state(
    tmp_path: Path,
) -> None:
    case, training = TT_PLANS[3]
    p = launch_plan(case, training)
    kept = p.result.request.assumptions.checkpoints_kept
    cfg, text = written(case, training, tmp_path)
    state = f"{p.checkpoint_dir}/recipe_state/recipe_state.pt"
    assert cfg["resume_from_checkpoint"] is False and cfg["output_dir"] == p.checkpoint_dir
    assert (
        f"--config torchtune_config.yaml resume_from_checkpoint=$(test -f {state} && echo True || "
        "echo False)" in text
    )
    assert f"the planned interval ({p.save_steps} steps) is not a setting its recipes take" in text
    assert (
        f"the plan keeps {kept} checkpoint(s)" in text
        and f"delete all but the newest {kept} yourself" in text
    )
    # LoRA resumes from the base weights
    assert "checkpoint_files at the newest epoch_N" not in text


def test_a_full_spot_plan_says_where_to_point_checkpoint_files(tmp_path: Path) -> None:
    case = CASES[1]
    spot = dataclasses.replace(
        case, request=case.request | {"pricing": {"provider": "aws", "mode": "spot"}}
    )
    _, text = written(spot, {"precision": "pure_bf16"}, tmp_path)
    assert "point checkpointer.checkpoint_files at the newest epoch_N/ files in output_dir" in text
    assert "resume_from_checkpoint=$(test -f" in text


@pytest.mark.parametrize(
    ("case", "training", "named"),
    [
        (
            CASES[1],
            {},
            "training.precision amp_bf16: torchtune trains in dtype bf16 with no fp32 master copy",
        ),
        (CASES[0], {"precision": "fp8"}, "training.precision fp8"),
        (
            CASES[2],
            {
                "precision": "pure_bf16",
                "sharding": "fsdp",
                "pipeline_parallel": 2,
                "offload": "none",
            },
            "training.pipeline_parallel 2",
        ),
        (CASES[3], {"precision": "pure_bf16"}, "training.sharding zero2 on 16 GPUs"),
        (CASES[0], {"lora_targets": "q,v,up"}, "apply_lora_to_mlp"),
        (
            CASES[0],
            {"lora_targets": ["q_proj", "v_proj", "embed_tokens"]},
            "no adapter for the token embedding",
        ),
        (
            CASES[0],
            {"sharding": "fsdp", "offload": "optimizer_and_params"},
            "optimizer_and_params on one GPU",
        ),
        (
            CASES[1],
            {"precision": "pure_bf16", "optimizer_in_backward": True},
            "with 8 micro-batches per step",
        ),
    ],
)
def test_settings_torchtune_cannot_express_are_named(
    case: Case, training: dict[str, Any], named: str, tmp_path: Path
) -> None:
    with pytest.raises(LaunchError, match=re.escape(named)):
        write(case, "torchtune", tmp_path, **training)


# ---- torchtune 0.6.1 itself, in its own virtual environment (packaging/test.sh makes
# .venv-torchtune) ----------


def site_packages() -> Path:
    if not (VENV / "bin" / "tune").exists():
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"{VENV} is missing: packaging/test.sh installs torchtune {TORCHTUNE} there in CI"
            )
        pytest.skip(
            f"torchtune {TORCHTUNE} is not installed in {VENV} (packaging/test.sh makes it in CI)"
        )
    (site,) = VENV.glob("lib/python*/site-packages")
    return site


def tune_validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV / "bin" / "tune"), "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "HOME": str(path.parent)},
    )


def recipe_reads(site: Path, recipe: str) -> tuple[set[tuple[str, ...]], set[str]]:
    """The config keys an installed recipe reads: without a default (``cfg.a``, ``cfg.a.b``) and
    with ``cfg.get``."""
    tree = ast.parse((site / "recipes" / f"{recipe}.py").read_text())
    required: set[tuple[str, ...]] = set()
    optional: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "cfg"
        ):
            if node.attr != "get":
                required.add((node.attr,))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "cfg"
            and node.attr != "get"
        ):
            required.add((node.value.attr, node.attr))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "cfg"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            optional.add(node.args[0].value)
    return required, optional


def missing_and_unread(cfg: dict[str, Any], site: Path, recipe: str) -> tuple[list[str], list[str]]:
    required, optional = recipe_reads(site, recipe)

    def has(keys: tuple[str, ...]) -> bool:
        node: Any = cfg
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return True

    missing = sorted(".".join(keys) for keys in required if not has(keys))
    unread = sorted(set(cfg) - {keys[0] for keys in required} - optional)
    return missing, unread


@pytest.mark.parametrize(("case", "training"), TT_PLANS, ids=IDS)
def test_tune_validate_of_torchtune_0_6_1_reads_the_file(
    case: Case, training: dict[str, Any], tmp_path: Path
) -> None:
    site = site_packages()
    versions = {d.metadata["Name"]: d.version for d in metadata.distributions(path=[str(site)])}
    assert versions["torchtune"] == TORCHTUNE
    cfg, _ = written(case, training, tmp_path)
    done = tune_validate(tmp_path / "torchtune_config.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "Config is well-formed!"
    assert missing_and_unread(cfg, site, RECIPES[case.name]) == ([], [])


def test_the_torchtune_checks_can_fail(tmp_path: Path) -> None:
    site = site_packages()
    cfg, _ = written(CASES[0], {}, tmp_path)
    cfg["model"]["lora_ranks"] = cfg["model"].pop("lora_rank")
    del cfg["lr_scheduler"]
    cfg["save_every_n_steps"] = 100
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(cfg))
    done = tune_validate(path)
    assert done.returncode != 0 and "lora_ranks" in done.stderr
    assert missing_and_unread(cfg, site, "lora_finetune_single_device") == (
        ["lr_scheduler"],
        ["save_every_n_steps"],
    )
