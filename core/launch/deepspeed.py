"""`deepspeed`: the DeepSpeed config JSON (``ds_config.json``) for the plan, and its sidecar README.

JSON has no comments, and DeepSpeed's sub-sections are pydantic models that refuse unknown keys
(``DeepSpeedConfigModel``: ``extra="forbid"``), so the plan's header goes into
``ds_config.README.md`` next to the JSON rather than into a key of it.

Keys and defaults are DeepSpeed's (https://www.deepspeed.ai/docs/config-json/ and
deepspeed/runtime/zero/config.py of deepspeed 0.19.8): ``reduce_bucket_size`` and
``allgather_bucket_size`` 5e8 (its defaults), ``stage3_prefetch_bucket_size`` 5e7 and
``stage3_param_persistence_threshold`` 1e5 (its defaults), ``overlap_comm`` on (DeepSpeed turns it
on by itself for stage 3; the plan's step model assumes communication overlaps compute at every
stage, ``assumptions.comm_overlap``).

The ``optimizer`` block: under CPU offload DeepSpeed must build the optimizer itself.
``deepspeed.initialize`` with offload and a client optimizer refuses to run unless it is DeepSpeed's
CPU optimizer (``zero_force_ds_cpu_optimizer``, on by default, deepspeed/runtime/engine.py 0.19.8),
and from a config ``AdamW`` / ``Lion`` it builds ``DeepSpeedCPUAdam`` / ``DeepSpeedCPULion`` when
offload is on (``_configure_basic_optimizer``). So the plan's AdamW and Lion are written as
DeepSpeed optimizer types; an optimizer DeepSpeed has no config type for (bitsandbytes 8-bit or
paged, Adafactor, SGD) is refused with offload and otherwise left to the training code (the client
optimizer). A plan chooses no learning rate: the file uses the other formats' convention, 2e-4 for
adapters and 2e-5 for a full fine-tune.
"""

from __future__ import annotations

from typing import Any

from core.launch import emit
from core.launch.plan_view import LaunchError, LaunchPlan
from core.planner.request import Optimizer, Precision, Sharding

FILE = "ds_config.json"
README = "ds_config.README.md"

# deepspeed/runtime/zero/config.py (0.19.8) defaults, written out so the file says what runs.
REDUCE_BUCKET = 500_000_000
ALLGATHER_BUCKET = 500_000_000
STAGE3_PREFETCH_BUCKET = 50_000_000
STAGE3_PERSISTENCE_THRESHOLD = 100_000
# The plan's optimizer -> DeepSpeed's config type (deepspeed/runtime/config.py
# DEEPSPEED_OPTIMIZERS).
OPTIMIZERS = {Optimizer.adamw: "AdamW", Optimizer.lion: "Lion"}


def learning_rate(p: LaunchPlan) -> float:
    """The launch formats' convention (a plan chooses none): 2e-4 for adapters, 2e-5 for a full
    fine-tune."""
    return 2e-4 if p.lora else 2e-5


def optimizer(p: LaunchPlan) -> dict[str, Any] | None:
    """DeepSpeed's optimizer block for the plan, or None where the training code's optimizer is
    used."""
    kind = OPTIMIZERS.get(p.training.optimizer)
    if kind is None:
        return None
    params: dict[str, Any] = {"lr": learning_rate(p), "weight_decay": 0.0}
    if kind == "AdamW":
        params |= {"betas": [0.9, 0.999], "eps": 1e-8}
    return {"type": kind, "params": params}


def check(p: LaunchPlan) -> None:
    """The plan settings DeepSpeed's JSON cannot carry, as one sentence each (the first one met)."""
    t = p.training
    if t.sharding in (Sharding.fsdp, Sharding.hsdp):
        raise LaunchError(
            f"training.sharding {t.sharding.value} is PyTorch FSDP, which a DeepSpeed config "
            "cannot express; "
            "use --format accelerate or torchtune, or plan with sharding zero3"
        )
    if t.tensor_parallel > 1 or t.pipeline_parallel > 1 or t.context_parallel > 1:
        raise LaunchError(
            f"training.tensor_parallel {t.tensor_parallel} / pipeline_parallel "
            f"{t.pipeline_parallel} / context_parallel {t.context_parallel}: a DeepSpeed config "
            "sets data parallelism and ZeRO only "
            "(tensor and pipeline layouts are built in the training code, e.g. "
            "Megatron-DeepSpeed); plan with 1"
        )
    if t.precision is Precision.fp8:
        raise LaunchError(
            "training.precision fp8 is not a DeepSpeed config setting (FP8 comes from Transformer "
            "Engine in the model code); use amp_bf16 for this file"
        )
    if p.offload_optimizer and t.optimizer not in OPTIMIZERS:
        raise LaunchError(
            f"training.optimizer {t.optimizer.value} with CPU offload: DeepSpeed offload runs "
            "only its own CPU "
            "optimizers (DeepSpeedCPUAdam, DeepSpeedCPULion); plan with adamw or lion, or offload "
            "none"
        )
    if t.precision is Precision.pure_bf16 and p.zero_stage == 0:
        raise LaunchError(
            "training.precision pure_bf16 needs a ZeRO stage in DeepSpeed "
            "(bf16_master_weights_and_grads is ZeRO 1-3 only); plan with sharding zero1, zero2 or "
            "zero3, or precision amp_bf16"
        )


def config(p: LaunchPlan) -> dict[str, Any]:
    """The DeepSpeed config dict for the plan (call `check` first)."""
    t = p.training
    zero: dict[str, Any] = {
        "stage": p.zero_stage,
        "overlap_comm": True,
        "contiguous_gradients": True,
        "reduce_bucket_size": REDUCE_BUCKET,
    }
    if p.zero_stage in (1, 2):
        zero["allgather_bucket_size"] = ALLGATHER_BUCKET
    if p.zero_stage == 3:
        zero["stage3_prefetch_bucket_size"] = STAGE3_PREFETCH_BUCKET
        zero["stage3_param_persistence_threshold"] = STAGE3_PERSISTENCE_THRESHOLD
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    if p.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if p.offload_params:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    cfg: dict[str, Any] = {
        "train_batch_size": p.global_batch,
        "train_micro_batch_size_per_gpu": p.micro_batch,
        "gradient_accumulation_steps": p.accumulation,
        "zero_optimization": zero,
        **({"optimizer": opt} if (opt := optimizer(p)) else {}),
        "steps_per_print": 100,
        "wall_clock_breakdown": False,
    }
    if t.precision in (Precision.amp_bf16, Precision.pure_bf16):
        bf16: dict[str, Any] = {"enabled": True}
        if t.precision is Precision.pure_bf16:
            bf16 |= {"bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}
        cfg["bf16"] = bf16
    elif t.precision is Precision.amp_fp16:
        # Dynamic loss scaling (loss_scale 0), DeepSpeed's default and the one its docs show.
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    return cfg


def recompute(p: LaunchPlan) -> str:
    """The plan's activation recompute in words: none, selective, full, or every k-th block."""
    k = p.training.checkpoint_every_k_blocks or 1
    if p.training.checkpointing == "full" and k > 1:
        return (
            f"on one block in {k} only (torchtitan's selective_ac_option \"{k}\"; HF's switch "
            "does every block)"
        )
    return p.training.checkpointing


def files(p: LaunchPlan) -> dict[str, str]:
    """``ds_config.json`` and the README that carries its header."""
    check(p)
    body = emit.json_document(config(p))
    notes = [
        "",
        f"`{FILE}` is the DeepSpeed config of this plan. JSON has no comments, so its header is "
        "this file.",
        "Activation checkpointing is the training code's switch (e.g. "
        "`gradient_checkpointing=True` in "
        f"transformers): the plan has it {recompute(p)}.",
        "Pass it as `--deepspeed ds_config.json` (transformers, axolotl) or "
        "`deepspeed_config_file` (accelerate).",
        (
            f"optimizer: {OPTIMIZERS[p.training.optimizer]} at lr {learning_rate(p):g} (a plan "
            "chooses no learning "
            "rate: 2e-4 adapters, 2e-5 full), built by DeepSpeed"
            + (" as its CPU optimizer, which offload needs" if p.offload_optimizer else "")
            if p.training.optimizer in OPTIMIZERS
            else "optimizer: none here; DeepSpeed has no config type for "
            f"{p.training.optimizer.value}, so the training "
            "code's optimizer is used"
        ),
        "checkpoints: DeepSpeed's JSON has no save path or interval; the training code saves "
        f"every {p.save_steps} steps to {p.checkpoint_dir} (CHECKPOINT_DIR), keeps "
        f"{p.checkpoints_kept}, and resumes from the newest "
        "(e.g. transformers save_steps, save_total_limit, resume_from_checkpoint).",
    ]
    head = p.header_lines()
    readme = [
        *emit.comment_lines(head[:1]),
        "",
        *emit.comment_lines(head[1:], "-"),
        *(emit.one_line(n) for n in notes),
    ]
    return {FILE: body, README: "\n".join(readme) + "\n"}
