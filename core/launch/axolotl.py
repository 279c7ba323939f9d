"""`axolotl`: an axolotl config YAML (``axolotl train config.yaml``) for the plan's model and
method.

Keys are axolotl's config schema (src/axolotl/utils/schemas/*.py, AxolotlInputConfig,
axolotl-ai-cloud/axolotl 067b021) laid out like its examples (examples/llama-3/lora-1b.yml). ZeRO
plans point ``deepspeed`` at the ``ds_config.json`` that ``--format deepspeed`` writes (written
alongside); FSDP plans use ``fsdp_version: 2`` and ``fsdp_config``. Optimizer names are
transformers' ``OptimizerNames`` (training_args.py), which axolotl passes through. The dataset and
learning rate are not part of a plan: the dataset is a placeholder and the learning rate is the
example's (2e-4 adapters; 2e-5 full, axolotl examples/llama-3/fft-8b.yaml).
"""

from __future__ import annotations

from typing import Any

from core.launch import deepspeed, emit
from core.launch.model_ref import decoder_layer
from core.launch.plan_view import LaunchError, LaunchPlan
from core.planner.model.lora_targets import PARAMETER_KINDS, target_parameter_kinds, target_set
from core.planner.request import Attention, Method, Optimizer, Precision, Sharding

FILE = "axolotl_config.yaml"

OPTIMIZERS = {
    Optimizer.adamw: "adamw_torch_fused",
    Optimizer.adamw_8bit: "adamw_bnb_8bit",
    Optimizer.paged_adamw_8bit: "paged_adamw_8bit",
    Optimizer.paged_adamw_32bit: "paged_adamw_32bit",
    Optimizer.sgd: "sgd",
    Optimizer.adafactor: "adafactor",
    Optimizer.lion: "lion_32bit",
}
# PEFT module names of the Llama-style projections (what lora_target_modules lists).
MODULES = {
    "q": "q_proj",
    "k": "k_proj",
    "v": "v_proj",
    "o": "o_proj",
    "gate": "gate_proj",
    "up": "up_proj",
    "down": "down_proj",
    "head": "lm_head",
    "embed": "embed_tokens",
}
ATTENTION = {Attention.flash: "flash_attention_2", Attention.sdpa: "sdpa", Attention.eager: "eager"}


# The fused expert weights' names in transformers' MoE blocks (gpt-oss: GptOssExperts under
# model.layers.N.mlp).
PARAMETERS = {
    "experts_gate_up": "mlp.experts.gate_up_proj",
    "experts_down": "mlp.experts.down_proj",
}


def check(p: LaunchPlan) -> None:
    t = p.training
    if t.pipeline_parallel > 1:
        raise LaunchError(
            f"training.pipeline_parallel {t.pipeline_parallel}: axolotl has no pipeline stages; "
            "plan with 1"
        )
    if t.optimizer not in OPTIMIZERS:
        raise LaunchError(
            f"training.optimizer {t.optimizer.value} has no transformers optimizer name; use "
            f"{', '.join(o.value for o in OPTIMIZERS)}"
        )
    if t.sharding in (Sharding.fsdp, Sharding.hsdp) and t.offload.value == "optimizer":
        raise LaunchError(
            "training.offload optimizer: FSDP offloads parameters and states together "
            "(fsdp_config offload_params); plan with optimizer_and_params or none"
        )
    if t.sharding is Sharding.hsdp:
        raise LaunchError(
            "training.sharding hsdp: axolotl's fsdp_config shards across every GPU; plan with fsdp"
        )
    if t.checkpointing == "selective":
        raise LaunchError(
            "training.gradient_checkpointing selective: axolotl's gradient_checkpointing "
            "recomputes whole layers; plan with true or false"
        )
    if (t.checkpoint_every_k_blocks or 1) > 1:
        raise LaunchError(
            f"training.checkpoint_every_k_blocks {t.checkpoint_every_k_blocks}: axolotl's "
            "gradient_checkpointing recomputes every layer; plan without it"
        )


def config(p: LaunchPlan, repo: str) -> dict[str, Any]:
    check(p)
    t = p.training
    cfg: dict[str, Any] = {"base_model": repo}
    if t.method is Method.qlora:
        cfg |= {"load_in_4bit": True, "adapter": "qlora"}
    elif t.method is Method.lora:
        cfg["adapter"] = "lora"
    cfg |= {
        "datasets": [{"path": "REPLACE_WITH_YOUR_DATASET", "type": "alpaca"}],
        "output_dir": p.checkpoint_dir,
        "sequence_len": p.seq_len,
        "sample_packing": p.result.request.data.packing,
    }
    if p.lora:
        rank = t.lora_rank or 16
        kinds = target_set(t.lora_targets)
        cfg |= {
            "lora_r": rank,
            "lora_alpha": 2 * rank,
            "lora_dropout": t.lora_dropout,
            "lora_target_modules": [MODULES[k] for k in MODULES if k in kinds],
        }
        if t.lora_target_parameters:
            # axolotl passes lora_target_parameters to PEFT's LoraConfig(target_parameters=...)
            # (schemas/peft.py).
            cfg["lora_target_parameters"] = [
                PARAMETERS[k]
                for k in PARAMETER_KINDS
                if k in target_parameter_kinds(t.lora_target_parameters)
            ]
    cfg |= {
        "micro_batch_size": p.micro_batch,
        "gradient_accumulation_steps": p.accumulation,
        "num_epochs": p.result.request.data.epochs,
        "optimizer": OPTIMIZERS[t.optimizer],
        "learning_rate": 2e-4 if p.lora else 2e-5,
        "bf16": p.bf16,
        "fp16": t.precision is Precision.amp_fp16,
        "tf32": t.precision is Precision.fp32,
        "gradient_checkpointing": t.checkpointing == "full",
        "attn_implementation": ATTENTION[t.attention],
        # The plan's checkpoint interval and kept count, resuming from the newest checkpoint in
        # output_dir (AxolotlInputConfig save_steps, save_total_limit,
        # auto_resume_from_checkpoints).
        "save_steps": p.save_steps,
        "save_total_limit": p.checkpoints_kept,
        "auto_resume_from_checkpoints": True,
    }
    if t.tensor_parallel > 1:
        cfg["tensor_parallel_size"] = t.tensor_parallel
    if t.context_parallel > 1:
        cfg["context_parallel_size"] = t.context_parallel
    if t.sharding in (Sharding.zero1, Sharding.zero2, Sharding.zero3):
        cfg["deepspeed"] = deepspeed.FILE
    elif t.sharding is Sharding.fsdp:
        cfg["fsdp_version"] = 2
        cfg["fsdp_config"] = {
            "offload_params": p.offload_params,
            "state_dict_type": "SHARDED_STATE_DICT",
            "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "transformer_layer_cls_to_wrap": decoder_layer(p),
            "reshard_after_forward": True,
            "cpu_ram_efficient_loading": True,
        }
    return cfg


def files(p: LaunchPlan, repo: str) -> dict[str, str]:
    out = {
        FILE: emit.yaml_document(
            config(p, repo),
            [
                *p.header_lines(),
                "",
                "run: axolotl train axolotl_config.yaml",
                "the dataset is a placeholder: set datasets[0].path",
            ],
        )
    }
    if p.training.sharding in (Sharding.zero1, Sharding.zero2, Sharding.zero3):
        out |= deepspeed.files(p)
    return out
