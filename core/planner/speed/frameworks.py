"""Framework profiles: the training settings each fine-tuning stack uses by default, applied under
the request.

A profile holds only what the framework's own documentation or shipped configs state for its default
recipes (docs/formulas.md, "Framework profiles", gives each value with its source and version). A
setting the framework leaves to the user, or whose default could not be found, is absent: the
engine's own default then stands. Explicit request fields always win: pydantic's
``model_fields_set`` says which ones the user set.
"""

from __future__ import annotations

from typing import Any

from core.planner.request import CrossEntropy, Framework, Precision, Sharding, TrainingSpec

PROFILES: dict[Framework, dict[str, Any]] = {
    # transformers Trainer is the engine's reference stack (the calibration is against it): nothing
    # to change.
    Framework.hf_trainer: {},
    # torchtune single-device LoRA/full configs
    # (recipes/configs/llama3_1/8B_lora_single_device.yaml): dtype: bf16,
    # enable_activation_checkpointing: True, enable_activation_offloading: False, loss:
    # CEWithChunkedOutputLoss, compile: False.
    Framework.torchtune: {
        "precision": Precision.pure_bf16,
        "gradient_checkpointing": True,
        "activation_offload": False,
        "cross_entropy": CrossEntropy.chunked,
        "compile": False,
    },
    # Unsloth: use_gradient_checkpointing="unsloth" offloads the checkpointed activations to system
    # RAM. Its Triton cross-entropy keeps the 16-bit logits and works in place, which none of the
    # three kinds matches: left unset (docs/formulas.md, "Framework profiles").
    Framework.unsloth: {"gradient_checkpointing": True, "activation_offload": True},
    # axolotl's example configs (examples/llama-3/lora-8b.yml) set gradient_checkpointing: true;
    # everything else it leaves at transformers' defaults.
    Framework.axolotl: {"gradient_checkpointing": True},
    # litgpt config_hub/finetune/*.yaml: precision bf16-true; its finetune scripts have no
    # activation checkpointing.
    Framework.litgpt: {"precision": Precision.pure_bf16, "gradient_checkpointing": False},
    # torchtitan llama3 train configs: FSDP2 (data_parallel_shard_degree = -1),
    # activation_checkpoint mode = "selective", compile off by default.
    Framework.torchtitan: {
        "sharding": Sharding.fsdp,
        "gradient_checkpointing": "selective",
        "compile": False,
    },
    # Megatron-LM: --recompute-granularity defaults to None (no recomputation).
    Framework.megatron: {"gradient_checkpointing": False},
    # DeepSpeed: zero_optimization.stage defaults to 0 and activation checkpointing is off; the
    # engine's sharding default (none) already matches, and gradient checkpointing of a Hugging Face
    # model is the model's choice.
    Framework.deepspeed: {},
}


def effective_training(training: TrainingSpec) -> TrainingSpec:
    """The training settings planned: the framework profile under the fields the request set itself.

    A profile value that cannot hold with what the user chose (activation offload when the user
    turned checkpointing off) is dropped rather than turned into an error the user did not cause.
    """
    profile = {
        k: v for k, v in PROFILES[training.framework].items() if k not in training.model_fields_set
    }
    if training.checkpoint_every_k_blocks is not None:
        # every k-th block is the user's recompute choice
        profile.pop("gradient_checkpointing", None)
    if not profile:
        return training
    merged = {**training.model_dump(exclude_unset=True), **profile}
    ckpt = merged.get("gradient_checkpointing", training.gradient_checkpointing)
    if merged.get("activation_offload") and ckpt is not True and "activation_offload" in profile:
        merged["activation_offload"] = False
    return TrainingSpec.model_validate(merged)
