"""`--format torchtune`: the recipe config checked the way torchtune's ``config.validate`` checks it.

Why not ``torchtune.config.validate`` itself: torchtune 0.6.1 pulls datasets, pyarrow, pandas, sentencepiece,
tiktoken, kagglehub and blobfile, and ``validate`` imports every ``_component_`` (torchao's quantisation
kernels among them) before binding its arguments. What ``validate`` does is short (torchtune/config/_validate.py):
for each top-level node with a ``_component_``, ``inspect.signature(component).bind(**kwargs)``, falling back to
``bind_partial`` when only a required argument is missing (optimizers get their parameters in the recipe).
This test does exactly that, with each torchtune component's signature read from its source
(tests/fixtures/launch/torchtune/src, pytorch/torchtune bd2a0fc) and torch's optimizers from torch itself;
the top-level keys must be keys of the shipped recipe config of the same kind.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from core.launch import LaunchError
from tests.core.launch_cases import CASES, Case, write

yaml = pytest.importorskip("yaml", reason="the launch extra brings PyYAML")
FIXTURES = Path(__file__).parents[1] / "fixtures/launch/torchtune"
# component path -> (fixture source file, function or class name, keyword values a functools.partial fixes)
SOURCES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "torchtune.models.llama3.llama3_tokenizer": ("torchtune_models_llama3__model_builders.py", "llama3_tokenizer", ()),
    "torchtune.training.FullModelHFCheckpointer": ("torchtune_training_checkpointing__checkpointer.py",
                                                   "FullModelHFCheckpointer", ()),
    # alpaca_cleaned_dataset = partial(alpaca_dataset, source="yahma/alpaca-cleaned") (_alpaca.py)
    "torchtune.datasets.alpaca_cleaned_dataset": ("torchtune_datasets__alpaca.py", "alpaca_dataset", ("source",)),
    "torchtune.modules.loss.LinearCrossEntropyLoss": ("torchtune_modules_loss_cross_entropy_loss.py",
                                                      "LinearCrossEntropyLoss", ()),
    "torchtune.training.metric_logging.DiskLogger": ("torchtune_training_metric_logging.py", "DiskLogger", ()),
}
RECIPES = {("lora", False): "8B_lora_single_device.yaml", ("lora", True): "8B_lora.yaml",
           ("full", False): "8B_full_single_device.yaml", ("full", True): "8B_full.yaml"}


def _signature(fn: ast.FunctionDef, drop_self: bool, fixed: tuple[str, ...]) -> inspect.Signature:
    a = fn.args
    params: list[inspect.Parameter] = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        if drop_self and arg.arg == "self":
            continue
        if arg.arg in fixed:
            continue
        params.append(inspect.Parameter(arg.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=inspect.Parameter.empty if default is None else None))
    if a.vararg:
        params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY,
                                        default=inspect.Parameter.empty if kw_default is None else None))
    if a.kwarg:
        params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


@functools.cache
def _tree(filename: str) -> ast.Module:
    return ast.parse((FIXTURES / "src" / f"{filename}.txt").read_text())


def signature(component: str) -> inspect.Signature:
    if component.startswith("torch.optim."):
        return inspect.signature(getattr(importlib.import_module("torch.optim"), component.rsplit(".", 1)[1]))
    fixed: tuple[str, ...]
    if component.startswith("torchtune.models.llama3_1."):
        filename, name, fixed = "torchtune_models_llama3_1__model_builders.py", component.rsplit(".", 1)[1], ()
    else:
        filename, name, fixed = SOURCES[component]
    for node in _tree(filename).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return _signature(node, False, fixed)
        if isinstance(node, ast.ClassDef) and node.name == name:
            init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
            return _signature(init, True, fixed)
    raise AssertionError(f"{component}: no {name} in torchtune's {filename}")


def validate(cfg: dict[str, Any]) -> None:
    """torchtune.config.validate, node by node (see the module docstring)."""
    errors = []
    for node, value in cfg.items():
        if isinstance(value, dict) and "_component_" in value:
            kwargs = {k: v for k, v in value.items() if k != "_component_"}
            sig = signature(value["_component_"])
            try:
                sig.bind(**kwargs)
            except TypeError as exc:
                if "missing a required argument" in str(exc):
                    sig.bind_partial(**kwargs)
                else:
                    errors.append(f"{node}: {value['_component_']} {exc}")
    assert not errors, errors


def recipe_keys(lora: bool, distributed: bool) -> set[str]:
    return set(yaml.safe_load((FIXTURES / RECIPES[("lora" if lora else "full", distributed)]).read_text()))


TT_CASES = [CASES[0], CASES[1]]  # single-GPU LoRA, 8-GPU FSDP full (the two torchtune can run)


@pytest.mark.parametrize("case", TT_CASES, ids=[c.name for c in TT_CASES])
def test_torchtune_config_matches_the_plan(case: Case, tmp_path: Path) -> None:
    write(case, "torchtune", tmp_path, precision="pure_bf16")  # torchtune's dtype bf16 is pure bf16
    text = (tmp_path / "torchtune_config.yaml").read_text()
    cfg = yaml.safe_load(text)
    validate(cfg)
    lora = case.request["training"]["method"] == "lora"
    # fsdp_cpu_offload: read by recipes/full_finetune_distributed.py (cfg.get), set in
    # recipes/configs/llama3_1/70B_full.yaml
    assert set(cfg) <= recipe_keys(lora, case.world > 1) | {"fsdp_cpu_offload"}
    assert cfg["batch_size"] == case.micro
    assert cfg["gradient_accumulation_steps"] == case.accumulation
    assert cfg["dtype"] == "bf16"
    assert cfg["tokenizer"]["max_seq_len"] == 4096
    assert cfg["model"]["_component_"] == ("torchtune.models.llama3_1.lora_llama3_1_8b" if lora
                                           else "torchtune.models.llama3_1.llama3_1_8b")
    if lora:  # all-linear: q, k, v, o and the MLP; rank 16 as requested
        assert cfg["model"]["lora_attn_modules"] == ["q_proj", "k_proj", "v_proj", "output_proj"]
        assert cfg["model"]["apply_lora_to_mlp"] is True and cfg["model"]["lora_rank"] == 16
    run = "tune run --nnodes 1 --nproc_per_node 8 full_finetune_distributed" if case.world > 1 else \
        "tune run lora_finetune_single_device"
    assert run in text


def test_the_check_can_fail(tmp_path: Path) -> None:
    write(CASES[0], "torchtune", tmp_path, precision="pure_bf16")
    cfg = yaml.safe_load((tmp_path / "torchtune_config.yaml").read_text())
    cfg["model"]["lora_ranks"] = cfg["model"].pop("lora_rank")
    with pytest.raises(AssertionError, match="lora_ranks"):
        validate(cfg)


@pytest.mark.parametrize(("case", "training", "named"), [
    (CASES[0], {}, "training.precision amp_bf16"),
    (CASES[2], {"precision": "pure_bf16", "sharding": "fsdp", "pipeline_parallel": 2, "offload": "none"},
     "training.pipeline_parallel 2"),
    (CASES[3], {"precision": "pure_bf16"}, "training.sharding zero2 on 16 GPUs"),
    (CASES[0], {"precision": "pure_bf16", "lora_targets": "q,v,up"}, "apply_lora_to_mlp"),
])
def test_settings_torchtune_cannot_express_are_named(case: Case, training: dict[str, Any], named: str,
                                                     tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match=named):
        write(case, "torchtune", tmp_path, **training)
