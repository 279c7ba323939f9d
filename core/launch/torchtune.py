"""`torchtune`: a recipe config for ``tune run`` (LoRA, QLoRA or full fine-tuning) matching the plan.

The layout follows torchtune's shipped recipe configs (recipes/configs/llama3_1/8B_lora.yaml,
8B_lora_single_device.yaml, 8B_qlora_single_device.yaml, 8B_full.yaml, 8B_full_single_device.yaml at
pytorch/torchtune bd2a0fc). The distributed recipes shard with FSDP2 (full shard), so a multi-GPU plan must
shard with fsdp or zero3; torchtune trains in ``dtype`` bf16 or fp32 with no fp32 master copy, so amp_bf16
(fp32 master weights) is not something it can run. Learning rates are the shipped recipes' (3e-4 LoRA,
2e-5 full): the plan does not choose one.
"""

from __future__ import annotations

from typing import Any

from core.launch import emit
from core.launch.plan_view import LaunchError, LaunchPlan
from core.planner.lora import target_set
from core.planner.models import Method, Offload, Optimizer, Precision, Sharding

FILE = "torchtune_config.yaml"

# preset -> (torchtune.models module, builder stem, checkpointer model_type, tokenizer component, tokenizer file)
# builder names: torchtune/models/<family>/__init__.py __all__ (lora_/qlora_ prefixes for the adapters).
MODELS: dict[str, tuple[str, str, str, str, str]] = {
    "llama-3.1-8b": ("llama3_1", "llama3_1_8b", "LLAMA3", "llama3.llama3_tokenizer", "original/tokenizer.model"),
    "llama-3.1-70b": ("llama3_1", "llama3_1_70b", "LLAMA3", "llama3.llama3_tokenizer", "original/tokenizer.model"),
    "llama-3.1-405b": ("llama3_1", "llama3_1_405b", "LLAMA3", "llama3.llama3_tokenizer",
                       "original/tokenizer.model"),
    "llama-3.2-1b": ("llama3_2", "llama3_2_1b", "LLAMA3_2", "llama3.llama3_tokenizer", "original/tokenizer.model"),
    "llama-3.2-3b": ("llama3_2", "llama3_2_3b", "LLAMA3_2", "llama3.llama3_tokenizer", "original/tokenizer.model"),
    "llama-2-7b": ("llama2", "llama2_7b", "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model"),
    "llama-2-13b": ("llama2", "llama2_13b", "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model"),
    "llama-2-70b": ("llama2", "llama2_70b", "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model"),
    "mistral-7b-v0.1": ("mistral", "mistral_7b", "MISTRAL", "mistral.mistral_tokenizer", "tokenizer.model"),
    "gemma-2-2b": ("gemma2", "gemma2_2b", "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model"),
    "gemma-2-9b": ("gemma2", "gemma2_9b", "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model"),
    "gemma-2-27b": ("gemma2", "gemma2_27b", "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model"),
}
# torchtune's own module names for the attention projections (torchtune/modules/peft/_utils.py LORA_ATTN_MODULES).
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


def check(p: LaunchPlan) -> tuple[str, str, str, str, str]:
    t = p.training
    preset = p.result.request.model.preset
    if preset not in MODELS:
        raise LaunchError(
            f"model {preset or 'without a preset'} has no torchtune builder here; use one of {', '.join(MODELS)}"
        )
    if t.tensor_parallel > 1 or t.pipeline_parallel > 1 or t.context_parallel > 1:
        raise LaunchError(
            f"training.pipeline_parallel {t.pipeline_parallel} / tensor_parallel {t.tensor_parallel} / "
            f"context_parallel {t.context_parallel}: torchtune's fine-tuning recipes shard with FSDP only; plan with 1"
        )
    if p.world_size > 1 and t.sharding not in (Sharding.fsdp, Sharding.zero3):
        raise LaunchError(
            f"training.sharding {t.sharding.value} on {p.world_size} GPUs: torchtune's distributed recipes "
            "shard fully with FSDP2; plan with sharding fsdp (or zero3)"
        )
    if t.offload is Offload.optimizer:
        raise LaunchError(
            "training.offload optimizer: torchtune's FSDP CPU offload moves parameters, gradients and states "
            "together (fsdp_cpu_offload); plan with optimizer_and_params or none"
        )
    if t.precision not in (Precision.pure_bf16, Precision.fp32):
        raise LaunchError(
            f"training.precision {t.precision.value}: torchtune trains in dtype bf16 (no fp32 master weights) or "
            "fp32; plan with pure_bf16 or fp32"
        )
    epochs = p.result.request.data.epochs
    if epochs != int(epochs):
        raise LaunchError(f"data.epochs {epochs:g}: torchtune's epochs is a whole number; plan with whole epochs")
    if t.checkpointing == "selective":
        raise LaunchError("training.gradient_checkpointing selective: torchtune checkpoints whole layers "
                          "(enable_activation_checkpointing); plan with true or false")
    if p.lora:
        kinds = target_set(t.lora_targets)
        mlp = kinds & {"gate", "up", "down"}
        if mlp and mlp != {"gate", "up", "down"}:
            raise LaunchError(
                "training.lora_targets: torchtune adapts the MLP's three matrices together (apply_lora_to_mlp); "
                "target all of gate, up and down or none of them"
            )
    return MODELS[preset]


def config(p: LaunchPlan, model_dir: str) -> dict[str, Any]:
    t = p.training
    family, stem, model_type, tokenizer, tok_file = check(p)
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
            "lora_alpha": 2 * rank,  # the recipes' convention: "usually alpha=2*rank" (8B_lora.yaml)
            "lora_dropout": t.lora_dropout,
        }
    optimizer = dict(OPTIMIZERS[t.optimizer]) | {"lr": 3e-4 if p.lora else 2e-5}
    out = p.checkpoint_dir
    cfg: dict[str, Any] = {
        "output_dir": out,
        "tokenizer": {"_component_": f"torchtune.models.{tokenizer}", "path": f"{model_dir}/{tok_file}",
                      "max_seq_len": p.seq_len},
        "model": model,
        "checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer",
                         "checkpoint_dir": model_dir, "checkpoint_files": {"filename_format":
                         "model-{}-of-{}.safetensors", "max_filename": "REPLACE_WITH_SHARD_COUNT"},
                         "recipe_checkpoint": None, "output_dir": out, "model_type": model_type},
        "resume_from_checkpoint": False,
        "dataset": {"_component_": "torchtune.datasets.alpaca_cleaned_dataset",
                    "packed": p.result.request.data.packing},
        "seed": None,
        "shuffle": True,
        "optimizer": optimizer,
        "loss": {"_component_": "torchtune.modules.loss.LinearCrossEntropyLoss"},
        "epochs": int(p.result.request.data.epochs),
        "batch_size": p.micro_batch,
        "max_steps_per_epoch": None,
        "gradient_accumulation_steps": p.accumulation,
        "compile": t.compile,
        "device": "cuda",
        "dtype": "bf16" if t.precision is Precision.pure_bf16 else "fp32",
        "enable_activation_checkpointing": t.checkpointing == "full",
        "enable_activation_offloading": t.activation_offload,
        "metric_logger": {"_component_": "torchtune.training.metric_logging.DiskLogger",
                          "log_dir": f"{out}/logs"},
        "log_every_n_steps": 1,
        "log_peak_memory_stats": True,
    }
    if p.world_size > 1 and not p.lora:  # recipes/full_finetune_distributed.py reads it (cfg.get)
        cfg["fsdp_cpu_offload"] = p.offload_params
    elif p.offload_params:
        raise LaunchError("training.offload optimizer_and_params: of torchtune's recipes only "
                          "full_finetune_distributed offloads (fsdp_cpu_offload); plan with offload none")
    if not p.lora:  # the full recipes step each weight in backward when asked (8B_full.yaml optimizer_in_bwd)
        cfg["optimizer_in_bwd"] = t.optimizer_in_backward
    elif t.optimizer_in_backward:
        raise LaunchError("training.optimizer_in_backward: torchtune's LoRA recipes have no optimizer_in_bwd; "
                          "plan with false")
    return cfg


def recipe(p: LaunchPlan) -> str:
    kind = "full_finetune" if not p.lora else "lora_finetune"
    return f"{kind}_{'distributed' if p.world_size > 1 else 'single_device'}"


def files(p: LaunchPlan, repo: str) -> dict[str, str]:
    model_dir = f"./models/{repo.rstrip('/').split('/')[-1]}"
    cfg = config(p, model_dir)
    rank_args = f"--nnodes {p.nodes} --nproc_per_node {p.gpus_per_node} " if p.world_size > 1 else ""
    header = [*p.header_lines(), "",
              f"weights: tune download {repo} --output-dir {model_dir}",
              f"run: tune run {rank_args}{recipe(p)} --config torchtune_config.yaml",
              f"checkpoints: torchtune saves at the end of each epoch; the planned interval ({p.save_steps} steps) "
              "is not a setting its recipes take",
              "the dataset is a placeholder (alpaca_cleaned_dataset): point `dataset` at your data;",
              "checkpoint_files: set max_filename to the number of safetensors shards in checkpoint_dir"]
    return {FILE: emit.yaml_document(cfg, header)}
