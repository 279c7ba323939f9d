"""`accelerate`: an ``accelerate launch --config_file`` YAML for the plan (FSDP, DeepSpeed or plain
DDP).

The keys are accelerate's ``ClusterConfig`` fields (accelerate/commands/config/config_args.py) and
the ``fsdp_config`` / ``deepspeed_config`` / ``parallelism_config`` keys are the names of
``accelerate launch`` arguments (accelerate/commands/launch.py), which is how accelerate reads them
back: ``launch_command`` copies each key of those sections onto the parsed arguments. accelerate
1.15.0.

The micro-batch is the training script's DataLoader ``batch_size`` and, under FSDP or DDP, the
accumulation is ``Accelerator(gradient_accumulation_steps=...)``: the header says both; a DeepSpeed
run carries everything in the ``ds_config.json`` that ``--format deepspeed`` writes, written beside
this file.

Why a file and not inline keys: one DeepSpeed config, the same one the deepspeed and axolotl formats
write (optimizer, bucket sizes, precision), instead of a second, shorter copy. accelerate then
refuses the inline keys the file decides (``DeepSpeedPlugin._deepspeed_config_checks``:
gradient_accumulation_steps, zero_stage, offload devices, zero3_save_16bit_model, and a
``mixed_precision`` from the config file; accelerate 1.15.0), so the section holds only
``deepspeed_config_file``, ``zero3_init_flag`` and ``deepspeed_multinode_launcher``, and
``mixed_precision`` is left out (bf16/fp16 are in the JSON).
"""

from __future__ import annotations

from typing import Any

from core.launch import deepspeed, emit
from core.launch.model_ref import decoder_layer
from core.launch.plan_view import LaunchError, LaunchPlan
from core.planner.request import Precision, Sharding

FILE = "accelerate_config.yaml"
# torch.distributed's default master port (torch/distributed/run.py --master-port)
MAIN_PORT = 29500

MIXED_PRECISION = {
    Precision.amp_bf16: "bf16",
    Precision.amp_fp16: "fp16",
    Precision.fp32: "no",
    Precision.fp8: "fp8",
}


def check(p: LaunchPlan) -> None:
    t = p.training
    if t.tensor_parallel > 1 or t.pipeline_parallel > 1 or t.context_parallel > 1:
        raise LaunchError(
            f"training.tensor_parallel {t.tensor_parallel} / pipeline_parallel "
            f"{t.pipeline_parallel} / context_parallel {t.context_parallel} cannot be written in "
            f"an accelerate config for {t.sharding.value} (accelerate has no pipeline stages, and "
            "its tp needs the model's tp_plan); "
            "plan with 1, or use --format torchrun with Megatron or torchtitan"
        )
    if t.precision is Precision.pure_bf16:
        raise LaunchError(
            "training.precision pure_bf16 is not an accelerate mixed_precision (bf16 there keeps "
            "fp32 weights); load the model in bf16 in code, or plan with amp_bf16"
        )
    if t.sharding in (Sharding.fsdp, Sharding.hsdp):
        if t.offload.value == "optimizer":
            raise LaunchError(
                "training.offload optimizer: FSDP offloads parameters, gradients and optimizer "
                "states together (fsdp_offload_params); plan with offload optimizer_and_params or "
                "none"
            )
        if t.checkpointing == "selective":
            raise LaunchError(
                "training.gradient_checkpointing selective: accelerate's "
                "fsdp_activation_checkpointing recomputes whole layers; plan with true or false"
            )
        if (t.checkpoint_every_k_blocks or 1) > 1:
            raise LaunchError(
                f"training.checkpoint_every_k_blocks {t.checkpoint_every_k_blocks}: accelerate's "
                "fsdp_activation_checkpointing recomputes every layer; plan without it"
            )


def config(p: LaunchPlan) -> dict[str, Any]:
    t = p.training
    if t.sharding in (Sharding.fsdp, Sharding.hsdp):
        distributed = "FSDP"
    elif t.sharding is not Sharding.none:
        distributed = "DEEPSPEED"
    else:
        distributed = "MULTI_GPU" if p.world_size > 1 else "NO"
    cfg: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": distributed,
        "num_machines": p.nodes,
        "num_processes": p.world_size,
        "machine_rank": 0,
        "mixed_precision": MIXED_PRECISION[t.precision],
        "use_cpu": False,
        "gpu_ids": "all",
        "main_training_function": "main",
        "downcast_bf16": "no",
    }
    if p.nodes > 1:
        # main_process_ip is node 0's address, known only once the machines exist: given on the
        # command line.
        cfg |= {"main_process_port": MAIN_PORT, "rdzv_backend": "c10d", "same_network": True}
    if distributed == "DEEPSPEED":
        del cfg["mixed_precision"]  # the JSON's bf16/fp16 section decides; accelerate refuses both
        cfg["deepspeed_config"] = {
            "deepspeed_config_file": deepspeed.FILE,
            "zero3_init_flag": p.zero_stage == 3,
            "deepspeed_multinode_launcher": "standard",
        }
    if distributed == "FSDP":
        cfg["fsdp_config"] = {
            "fsdp_version": 2,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_transformer_layer_cls_to_wrap": decoder_layer(p),
            "fsdp_offload_params": p.offload_params,
            "fsdp_reshard_after_forward": True,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_activation_checkpointing": t.checkpointing == "full",
        }
        if t.sharding is Sharding.hsdp:
            # HSDP: replicate across nodes, shard within one (accelerate's ParallelismConfig).
            cfg["parallelism_config"] = {
                "parallelism_config_dp_replicate_size": p.nodes,
                "parallelism_config_dp_shard_size": p.gpus_per_node,
            }
    return cfg


def files(p: LaunchPlan) -> dict[str, str]:
    check(p)
    header = [
        *p.header_lines(),
        "",
        f"in the training script: DataLoader batch_size={p.micro_batch} per GPU; "
        f"Accelerator(gradient_accumulation_steps={p.accumulation})",
    ]
    if p.nodes > 1:
        header.append(
            "on each node: accelerate launch --config_file accelerate_config.yaml "
            "--machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR train.py"
        )
    else:
        header.append("run: accelerate launch --config_file accelerate_config.yaml train.py")
    out = {FILE: emit.yaml_document(config(p), header)}
    if p.training.sharding in (Sharding.zero1, Sharding.zero2, Sharding.zero3):
        out |= deepspeed.files(p)  # the ds_config.json deepspeed_config_file names, and its README
    return out
