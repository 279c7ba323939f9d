"""`torchtune`: a recipe config for ``tune run`` (LoRA, QLoRA or full fine-tuning) matching the
plan.

Written for torchtune 0.6.1, the current release: the layout, the loss, the learning-rate schedule
and the checkpoint files follow its shipped recipe configs (recipes/configs/llama3_1/8B_lora.yaml,
8B_lora_single_device.yaml, 8B_qlora_single_device.yaml, 8B_full.yaml, 8B_full_single_device.yaml at
tag v0.6.1 of pytorch/torchtune), and every key its four fine-tuning recipes read without a default
is written. The distributed recipes shard with FSDP2 (full shard), so a multi-GPU plan must shard
with fsdp or zero3. torchtune trains in ``dtype`` bf16 or fp32 with no fp32 master copy of the
weights: for LoRA and QLoRA that copy (of the small adapter) is all amp_bf16 adds, so amp_bf16 is
written as bf16; for a full fine-tune it is a large part of the planned memory, so amp_bf16 is
refused. Learning rates and the LoRA warm-up are the shipped recipes' (3e-4 LoRA with 100 warm-up
steps, 2e-5 full at a constant rate): the plan does not choose them.
"""

from __future__ import annotations

from typing import Any

from core.launch import emit
from core.launch.plan_view import LaunchError, LaunchPlan
from core.launch.torchrun import PORT
from core.planner.model.lora_targets import target_set
from core.planner.request import Method, Offload, Optimizer, Precision, Sharding

FILE = "torchtune_config.yaml"
VERSION = "0.6.1"

# preset -> (torchtune.models module, builder stem, checkpointer model_type, tokenizer component,
# tokenizer file) builder names: torchtune/models/<family>/__init__.py __all__ (lora_/qlora_
# prefixes for the adapters).
MODELS: dict[str, tuple[str, str, str, str, str]] = {
    "llama-3.1-8b": (
        "llama3_1",
        "llama3_1_8b",
        "LLAMA3",
        "llama3.llama3_tokenizer",
        "original/tokenizer.model",
    ),
    "llama-3.1-70b": (
        "llama3_1",
        "llama3_1_70b",
        "LLAMA3",
        "llama3.llama3_tokenizer",
        "original/tokenizer.model",
    ),
    "llama-3.1-405b": (
        "llama3_1",
        "llama3_1_405b",
        "LLAMA3",
        "llama3.llama3_tokenizer",
        "original/tokenizer.model",
    ),
    "llama-3.2-1b": (
        "llama3_2",
        "llama3_2_1b",
        "LLAMA3_2",
        "llama3.llama3_tokenizer",
        "original/tokenizer.model",
    ),
    "llama-3.2-3b": (
        "llama3_2",
        "llama3_2_3b",
        "LLAMA3_2",
        "llama3.llama3_tokenizer",
        "original/tokenizer.model",
    ),
    "llama-2-7b": ("llama2", "llama2_7b", "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model"),
    "llama-2-13b": ("llama2", "llama2_13b", "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model"),
    "llama-2-70b": ("llama2", "llama2_70b", "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model"),
    "mistral-7b-v0.1": (
        "mistral",
        "mistral_7b",
        "MISTRAL",
        "mistral.mistral_tokenizer",
        "tokenizer.model",
    ),
    "gemma-2-2b": ("gemma2", "gemma2_2b", "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model"),
    "gemma-2-9b": ("gemma2", "gemma2_9b", "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model"),
    "gemma-2-27b": ("gemma2", "gemma2_27b", "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model"),
}
# preset -> (weight file name, with {} {} for the shard number and count; shard count; `tune
# download --ignore-patterns`). The files of each preset's Hugging Face repository that torchtune's
# checkpointer loads, as torchtune's own v0.6.1 recipe config for the same model lists them (and
# skips the rest when downloading): recipes/configs/llama3_1/8B_lora.yaml (4 files),
# llama3_1/70B_lora.yaml (30), llama3_1/405B_qlora.yaml (191), llama3_2/1B_lora.yaml (one
# model.safetensors), llama3_2/3B_lora.yaml (2), llama2/7B_lora.yaml (2), llama2/13B_lora.yaml (3),
# llama2/70B_lora.yaml (15), mistral/7B_lora.yaml (2), gemma2/2B_lora.yaml (3), gemma2/9B_lora.yaml
# (8), gemma2/27B_lora.yaml (24). Those configs load the Instruct repositories of Llama 3.x; the
# base repositories the presets name are split into the same files (the same
# model.safetensors.index.json layout). Llama 2 and Mistral load the PyTorch .bin files, as
# torchtune's configs do, and skip the safetensors.
WEIGHTS: dict[str, tuple[str, int, str]] = {
    "llama-3.1-8b": ("model-{}-of-{}.safetensors", 4, "original/consolidated*"),
    "llama-3.1-70b": ("model-{}-of-{}.safetensors", 30, "original/consolidated*"),
    "llama-3.1-405b": ("model-{}-of-{}.safetensors", 191, "original/consolidated*"),
    "llama-3.2-1b": ("model.safetensors", 1, "original/consolidated*"),
    "llama-3.2-3b": ("model-{}-of-{}.safetensors", 2, "original/consolidated*"),
    "llama-2-7b": ("pytorch_model-{}-of-{}.bin", 2, "*.safetensors"),
    "llama-2-13b": ("pytorch_model-{}-of-{}.bin", 3, "*.safetensors"),
    "llama-2-70b": ("pytorch_model-{}-of-{}.bin", 15, "*.safetensors"),
    "mistral-7b-v0.1": ("pytorch_model-{}-of-{}.bin", 2, "*.safetensors"),
    "gemma-2-2b": ("model-{}-of-{}.safetensors", 3, "*.gguf"),
    "gemma-2-9b": ("model-{}-of-{}.safetensors", 8, "*.gguf"),
    "gemma-2-27b": ("model-{}-of-{}.safetensors", 24, "*.gguf"),
}
# torchtune's own module names for the attention projections (torchtune/modules/peft/_utils.py
# LORA_ATTN_MODULES).
ATTN = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}
OPTIMIZERS: dict[Optimizer, dict[str, Any]] = {
    Optimizer.adamw: {"_component_": "torch.optim.AdamW", "fused": True, "weight_decay": 0.01},
    Optimizer.adamw_8bit: {"_component_": "bitsandbytes.optim.AdamW8bit"},
    Optimizer.paged_adamw_8bit: {"_component_": "bitsandbytes.optim.PagedAdamW8bit"},
    Optimizer.paged_adamw_32bit: {"_component_": "bitsandbytes.optim.PagedAdamW32bit"},
    Optimizer.sgd: {"_component_": "torch.optim.SGD"},
    Optimizer.sgd_momentum: {"_component_": "torch.optim.SGD", "momentum": 0.9},
    Optimizer.adafactor: {"_component_": "torch.optim.Adafactor"},
    Optimizer.lion: {"_component_": "bitsandbytes.optim.Lion"},
}
# The shipped LoRA configs' schedule (8B_lora.yaml lr_scheduler); the LoRA recipes read
# cfg.lr_scheduler without a default, the full ones with cfg.get and a constant rate when it is
# absent (8B_full.yaml has none).
WARMUP_STEPS = 100
# Where the recipes write their recipe state at each epoch's end
# (torchtune/training/checkpointing/_utils.py RECIPE_STATE_DIRNAME) and where
# resume_from_checkpoint=True looks for it.
RECIPE_STATE = "recipe_state/recipe_state.pt"


def check(p: LaunchPlan) -> tuple[str, str, str, str, str]:
    t = p.training
    preset = p.result.request.model.preset
    if preset not in MODELS:
        raise LaunchError(
            f"model {preset or 'without a preset'} has no torchtune builder here; use one of "
            f"{', '.join(MODELS)}"
        )
    if t.tensor_parallel > 1 or t.pipeline_parallel > 1 or t.context_parallel > 1:
        raise LaunchError(
            f"training.pipeline_parallel {t.pipeline_parallel} / tensor_parallel "
            f"{t.tensor_parallel} / context_parallel {t.context_parallel}: torchtune's "
            "fine-tuning recipes shard with FSDP only; plan with 1"
        )
    if p.world_size > 1 and t.sharding not in (Sharding.fsdp, Sharding.zero3):
        raise LaunchError(
            f"training.sharding {t.sharding.value} on {p.world_size} GPUs: torchtune's "
            "distributed recipes "
            "shard fully with FSDP2; plan with sharding fsdp (or zero3)"
        )
    if t.offload is Offload.optimizer:
        raise LaunchError(
            "training.offload optimizer: torchtune's FSDP CPU offload moves parameters, gradients "
            "and states together (fsdp_cpu_offload); plan with optimizer_and_params or none"
        )
    if p.offload_params and p.world_size == 1:
        raise LaunchError(
            "training.offload optimizer_and_params on one GPU: only torchtune's distributed "
            "recipes offload (fsdp_cpu_offload); plan with offload none"
        )
    if t.precision is Precision.amp_bf16 and not p.lora:
        raise LaunchError(
            "training.precision amp_bf16: torchtune trains in dtype bf16 with no fp32 master copy "
            "of the weights, a large part of a full fine-tune's planned memory; plan with "
            "pure_bf16 or fp32"
        )
    if t.precision not in (Precision.amp_bf16, Precision.pure_bf16, Precision.fp32):
        raise LaunchError(
            f"training.precision {t.precision.value}: torchtune trains in dtype bf16 or fp32; "
            "plan with "
            "pure_bf16 or fp32"
        )
    epochs = p.result.request.data.epochs
    if epochs != int(epochs):
        raise LaunchError(
            f"data.epochs {epochs:g}: torchtune's epochs is a whole number; plan with whole epochs"
        )
    if t.checkpointing == "selective":
        raise LaunchError(
            "training.gradient_checkpointing selective: torchtune checkpoints whole layers "
            "(enable_activation_checkpointing); plan with true or false"
        )
    if (t.checkpoint_every_k_blocks or 1) > 1:
        raise LaunchError(
            f"training.checkpoint_every_k_blocks {t.checkpoint_every_k_blocks}: torchtune's "
            "enable_activation_checkpointing checkpoints every layer; plan without it"
        )
    if t.optimizer_in_backward and p.lora:
        raise LaunchError(
            "training.optimizer_in_backward: torchtune's LoRA recipes have no optimizer_in_bwd; "
            "plan with false"
        )
    if t.optimizer_in_backward and p.accumulation > 1:
        raise LaunchError(
            f"training.optimizer_in_backward with {p.accumulation} micro-batches per step: "
            "torchtune's full "
            "recipes refuse optimizer_in_bwd with gradient accumulation; plan with false or "
            "accumulation 1"
        )
    if p.lora:
        kinds = target_set(t.lora_targets)
        if "embed" in kinds:
            raise LaunchError(
                "training.lora_targets: torchtune's LoRA builders have no adapter for the token "
                "embedding (embed_tokens); plan without it, or write the axolotl file"
            )
        mlp = kinds & {"gate", "up", "down"}
        if mlp and mlp != {"gate", "up", "down"}:
            raise LaunchError(
                "training.lora_targets: torchtune adapts the MLP's three matrices together "
                "(apply_lora_to_mlp); target all of gate, up and down or none of them"
            )
    return MODELS[preset]


def checkpoint_files(preset: str) -> list[str] | dict[str, str]:
    """The ``checkpointer.checkpoint_files`` of a preset: its one file, or the shards in torchtune's
    short form.

    ``{"filename_format", "max_filename"}`` is how the shipped 70B and 405B configs name their
    shards; torchtune (FormattedCheckpointFiles) expands it to every number up to max_filename,
    zero-padded to its width.
    """
    name, count, _ = WEIGHTS[preset]
    if count == 1:
        return [name]
    return {"filename_format": name, "max_filename": f"{count:05d}"}


def model_component(p: LaunchPlan, family: str, stem: str) -> dict[str, Any]:
    t = p.training
    prefix = {Method.full: "", Method.lora: "lora_", Method.qlora: "qlora_"}[t.method]
    model: dict[str, Any] = {"_component_": f"torchtune.models.{family}.{prefix}{stem}"}
    if p.lora:
        kinds = target_set(t.lora_targets)
        rank = t.lora_rank or 16
        model |= {
            "lora_attn_modules": [ATTN[k] for k in ("q", "k", "v", "o") if k in kinds],
            "apply_lora_to_mlp": bool(kinds & {"gate", "up", "down"}),
            "apply_lora_to_output": "head" in kinds,
            "lora_rank": rank,
            # the recipes' convention: "usually alpha=2*rank" (8B_lora.yaml)
            "lora_alpha": 2 * rank,
            "lora_dropout": t.lora_dropout,
        }
    return model


def config(p: LaunchPlan, model_dir: str) -> dict[str, Any]:
    t = p.training
    family, stem, model_type, tokenizer, tok_file = check(p)
    preset = str(p.result.request.model.preset)
    out = p.checkpoint_dir
    cfg: dict[str, Any] = {
        "output_dir": out,
        "tokenizer": {
            "_component_": f"torchtune.models.{tokenizer}",
            "path": f"{model_dir}/{tok_file}",
            "max_seq_len": p.seq_len,
        },
        "model": model_component(p, family, stem),
        "checkpointer": {
            "_component_": "torchtune.training.FullModelHFCheckpointer",
            "checkpoint_dir": model_dir,
            "checkpoint_files": checkpoint_files(preset),
            "recipe_checkpoint": None,
            "output_dir": out,
            "model_type": model_type,
        },
        # True stops a first run in 0.6.1 (no recipe state to load yet): a restart sets it (files'
        # header).
        "resume_from_checkpoint": False,
        "dataset": {
            "_component_": "torchtune.datasets.alpaca_cleaned_dataset",
            "packed": p.result.request.data.packing,
        },
        "seed": None,
        "shuffle": True,
        "optimizer": dict(OPTIMIZERS[t.optimizer]) | {"lr": 3e-4 if p.lora else 2e-5},
        "loss": {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"},
        "epochs": int(p.result.request.data.epochs),
        "batch_size": p.micro_batch,
        "max_steps_per_epoch": None,
        "gradient_accumulation_steps": p.accumulation,
        "compile": t.compile,
        "device": "cuda",
        "dtype": "fp32" if t.precision is Precision.fp32 else "bf16",
        "enable_activation_checkpointing": t.checkpointing == "full",
        "enable_activation_offloading": t.activation_offload,
        "metric_logger": {
            "_component_": "torchtune.training.metric_logging.DiskLogger",
            "log_dir": f"{out}/logs",
        },
        "log_every_n_steps": 1,
        "log_peak_memory_stats": True,
    }
    if p.lora:
        # A plan shorter than the shipped warm-up would never reach its learning rate: warm up over
        # it instead.
        steps = p.result.compute.steps or WARMUP_STEPS
        cfg["lr_scheduler"] = {
            "_component_": "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
            "num_warmup_steps": min(WARMUP_STEPS, steps),
        }
    # the full recipes step each weight in backward when asked (8B_full.yaml optimizer_in_bwd)
    else:
        cfg["optimizer_in_bwd"] = t.optimizer_in_backward
    # both distributed recipes read it (cfg.get), as recipes/configs/llama3_1/70B_full.yaml sets
    if p.world_size > 1:
        cfg["fsdp_cpu_offload"] = p.offload_params
    return cfg


def recipe(p: LaunchPlan) -> str:
    kind = "full_finetune" if not p.lora else "lora_finetune"
    return f"{kind}_{'distributed' if p.world_size > 1 else 'single_device'}"


def checkpoint_lines(p: LaunchPlan) -> list[str]:
    """What torchtune 0.6.1 does with checkpoints, and what it leaves to the user on a spot plan.

    Its recipes save (the weights in output_dir/epoch_N, the optimizer and progress in recipe_state)
    only at the end of each epoch; none saves every N steps, none deletes old epochs, and
    ``resume_from_checkpoint: True`` stops a run whose output_dir holds no recipe state yet. So the
    interval and the kept count are stated here, and the restart command turns resuming on only once
    there is something to resume.
    """
    out = p.checkpoint_dir
    lines = [
        f"checkpoints: torchtune {VERSION} saves only at the end of each epoch (epoch_N/ and "
        f"{RECIPE_STATE} in {out}); the planned interval ({p.save_steps} steps) is not a setting "
        "its recipes take"
    ]
    if not p.spot:
        return lines
    kept = p.checkpoints_kept
    lines += [
        "spot: a preemption loses the epoch in progress; restart with "
        f"resume_from_checkpoint=True once {out}/{RECIPE_STATE} exists (the run line above does), "
        f"which {VERSION} refuses on a first run",
        f"spot: the plan keeps {kept} checkpoint(s); torchtune {VERSION} keeps every epoch_N "
        f"folder and has no setting for it: delete all but the newest {kept} yourself",
    ]
    if not p.lora:
        lines.append(
            "spot: a full fine-tune resumes from its saved weights: before restarting, point "
            "checkpointer.checkpoint_files at the newest epoch_N/ files in output_dir"
        )
    return lines


def files(p: LaunchPlan, repo: str) -> dict[str, str]:
    model_dir = f"./models/{repo.rstrip('/').split('/')[-1]}"
    cfg = config(p, model_dir)
    preset = str(p.result.request.model.preset)
    rank_args = (
        f"--nnodes {p.nodes} --nproc_per_node {p.gpus_per_node} " if p.world_size > 1 else ""
    )
    # tune run passes torchrun's own arguments on: the c10d rendezvous, as torchrun.sh has it
    if p.nodes > 1:
        rank_args += (
            f"--rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:{PORT} --rdzv_id {p.name_slug} "
        )
    run = f"tune run {rank_args}{recipe(p)} --config {FILE}"
    # resume only when the previous attempt left recipe state behind (see checkpoint_lines)
    if p.spot:
        run += (
            f" resume_from_checkpoint=$(test -f {p.checkpoint_dir}/{RECIPE_STATE} "
            "&& echo True || echo False)"
        )
    header = [
        *p.header_lines(),
        "",
        f"for torchtune {VERSION}: tune validate {FILE} checks it",
        f"weights: tune download {repo} --output-dir {model_dir} --ignore-patterns "
        f'"{WEIGHTS[preset][2]}"',
        f"run: {run}",
        *checkpoint_lines(p),
        "the dataset is a placeholder (alpaca_cleaned_dataset): point `dataset` at your data",
    ]
    if p.lora and p.training.precision is Precision.amp_bf16:
        header.append(
            "precision amp_bf16 runs as dtype bf16: torchtune keeps no fp32 master copy of the "
            "adapter weights, the only part amp_bf16 would keep in fp32"
        )
    return {FILE: emit.yaml_document(cfg, header)}
