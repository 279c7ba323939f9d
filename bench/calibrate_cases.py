"""One published throughput/memory case (tests/fixtures/planner/throughput_cases.json) as the plan
request it describes.

The cases are written by people, not for this planner: GPU names such as "NVIDIA DGX-H100",
precisions such as "bf16 (FSDP mixed_precision PURE)", sharding such as "FSDP2 32-way". Each
translation below is written down once, with the reason, so a reader can check every choice against
the case notes. A case that needs a setting its source does not publish (a micro-batch, the
precision) is not planned, and says why; a setting that the framework fixes by default (Megatron's
recompute is off unless asked for) is taken from that default, and the row says it was assumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bench.calibrate_model import model_config
from bench.calibrate_stack import (
    NotPlanned,
    gradient_bucket,
    gradient_reduce_dtype,
    nvlink_domain,
    optimizer_kernel,
)
from core.planner.request import (
    Framework,
    Method,
    Offload,
    Optimizer,
    PlanRequest,
    Precision,
    Sharding,
)

# Tokens the throughput requests train. Any count gives the same tokens/s (a steady-state rate); it
# only has to be large enough that the job is many steps long.
THROUGHPUT_TOKENS = 1e9

THROUGHPUT_METRICS = (
    "tokens_per_s_per_gpu",
    "tokens_per_s_total",
    "achieved_tflops_per_gpu",
    "wall_time_s",
    "gpu_hours",
)
MEMORY_METRICS = ("peak_mem_gb_per_gpu", "peak_mem_gib_per_gpu")


def source_of(case: dict[str, Any]) -> str:
    """Who published a case: owner/name of its GitHub source_url, else the web site's host (one fold
    of the leave-one-source-out validation)."""
    parts = case["source_url"].split("/")
    if parts[2] != "github.com":
        return parts[2].removeprefix("www.")
    return f"{parts[3]}/{parts[4]}"


# Case GPU name → catalog GPU id. The first substring found wins; order matters (H100 before A100
# never clash, "A100 80GB" before the bare "A100").
GPU_NAMES: tuple[tuple[str, str, str | None], ...] = (
    (
        "h100 sxm 96gb",
        "H100-SXM",
        "torchtitan's H100s are 96 GB HBM2e parts capped at 500 W (Grand Teton); "
        "planned as the catalog H100-SXM (80 GB, 700 W): same 989 TFLOP/s BF16 peak",
    ),
    ("h200", "H200-SXM", None),
    ("b200", "B200", None),
    ("dgx-h100", "H100-SXM", None),
    ("h100_80gb", "H100-SXM", None),
    ("h100 80gb", "H100-SXM", None),
    ("nvidia h100", "H100-SXM", None),
    ("a100_80gb", "A100-80GB-SXM", None),
    ("a100 80gb", "A100-80GB-SXM", None),
    ("a100_40gb", "A100-40GB-SXM", None),
    ("a100-sxm4-40gb", "A100-40GB-SXM", None),
    (
        "nvidia a100",
        "A100-80GB-SXM",
        "the source says only 'A100' (40 or 80 GB not stated); planned on "
        "A100-80GB-SXM, same 312 TFLOP/s BF16 peak as the 40 GB part",
    ),
    ("a10g", "A10G", None),
    ("l4 24gb", "L4", None),
    ("v100-sxm2 16gb", "V100-16GB", None),
    ("rtx 4090", "RTX-4090", None),
)

# Sources whose framework the planner names (training.framework sets that framework's documented
# defaults).
FRAMEWORK_BY_SOURCE: dict[str, Framework] = {
    "pytorch/torchtitan": Framework.torchtitan,
    "NVIDIA/NeMo": Framework.megatron,  # NeMo 1.x/2.x runs Megatron-Core
    "NVIDIA-NeMo/Megatron-Bridge": Framework.megatron,
    "NVIDIA/Megatron-LM": Framework.megatron,
    "Lightning-AI/litgpt": Framework.litgpt,
    # TRL SFTTrainer is a Trainer
    "philschmid/deep-learning-pytorch-huggingface": Framework.hf_trainer,
    "huggingface/transformers": Framework.hf_trainer,
    "pytorch/torchtune": Framework.torchtune,
    # Answer.AI's train.py runs transformers models with PEFT-style adapters and bitsandbytes under
    # its own PyTorch FSDP loop: the Hugging Face stack without the Trainer; hf_trainer is the
    # nearest profile.
    "AnswerDotAI/fsdp_qlora": Framework.hf_trainer,
    # The Hugging Face blog's FSDP-vs-DeepSpeed runs go through Accelerate with a transformers
    # model.
    "huggingface/blog": Framework.hf_trainer,
    # PyTorch-native stacks that run their own module tree (no transformers model, no hooks or
    # wrappers per module): Composer/llm-foundry's MPT and nanoGPT's GPT-2 loop. torchtitan is the
    # planner's PyTorch-native profile; its defaults (FSDP, selective recompute) never apply here,
    # since every case sets sharding and checkpointing itself. LLMs-from-scratch stays on the
    # default: its loss runs outside the compiled model, which the torchtitan profile's
    # compiled-loss memory would misstate.
    "mosaicml/llm-foundry": Framework.torchtitan,
    "databricks.com": Framework.torchtitan,
    "karpathy/nanoGPT": Framework.torchtitan,
    # OLMo-core: FSDP2 over its own transformer blocks; InternLM's 2023 trainer: its own model code
    # (flash-attention and apex kernels) under its own loop and ZeRO-1 optimizer.
    "allenai/OLMo-core": Framework.torchtitan,
    "InternLM/InternLM": Framework.torchtitan,
    # IBM's fms-fsdp: PyTorch FSDP over foundation-model-stack's own Llama modules, its own loop.
    "foundation-model-stack/fms-fsdp": Framework.torchtitan,
    # flash-attention's training/: its own GPT module tree (fused kernels) under PyTorch Lightning.
    "Dao-AILab/flash-attention": Framework.torchtitan,
}

# Where a case leaves the LoRA rank and targets unpublished, the framework's default, with where it
# is defined.
LORA_DEFAULT_BY_SOURCE: dict[str, tuple[int, str, str]] = {
    # NeMo 1.x examples/nlp/language_modeling/tuning/conf/megatron_gpt_finetuning_config.yaml,
    # lora_tuning: target_modules ['attention_qkv'] (Megatron's fused q/k/v projection), adapter_dim
    # 32, adapter_dropout 0.0.
    "NVIDIA/NeMo": (
        32,
        "q,k,v",
        "NeMo's megatron_gpt_finetuning_config.yaml: target_modules ['attention_qkv'], "
        "adapter_dim 32, adapter_dropout 0.0",
    ),
}

# Where a case leaves activation checkpointing null, the framework's default, with where it is
# defined.
RECOMPUTE_DEFAULT_OFF: dict[str, str] = {
    # megatron/training/arguments.py: `--recompute-granularity` default=None (no recompute unless
    # asked); NeMo and Megatron-Bridge pass the recipe's value through to Megatron-Core.
    "NVIDIA/NeMo": "Megatron-Core recomputes nothing unless asked (--recompute-granularity "
    "default None)",
    "NVIDIA-NeMo/Megatron-Bridge": "Megatron-Core recomputes nothing unless asked "
    "(--recompute-granularity default None)",
    "NVIDIA/Megatron-LM": "--recompute-granularity default None",
    # nemo_automodel/components/distributed/config.py: FSDP2Config.activation_checkpointing = False.
    "NVIDIA-NeMo/Automodel": "AutoModel's FSDP2Config.activation_checkpointing defaults to False",
}


# published_runs.json names each run's stack in words ("hf_trainer (TRL SFT + Accelerate)", "NeMo
# 24.09 (Megatron-core)"): the first prefix found picks the planner's profile. Stacks with no
# profile of their own (Composer, nanoGPT) keep the default, as llm-foundry's and
# LLMs-from-scratch's runs do.
FRAMEWORK_WORDS: tuple[tuple[str, Framework], ...] = (
    ("hf_trainer", Framework.hf_trainer),
    ("universal-llm-trainer", Framework.hf_trainer),  # its own loop over transformers models
    ("xtuner", Framework.deepspeed),  # mmengine + DeepSpeed over transformers models
    ("nemo", Framework.megatron),
    ("megatron", Framework.megatron),
    ("lit-gpt", Framework.litgpt),
)


def _framework_named(words: str) -> Framework | None:
    text = words.lower()
    return next((fw for prefix, fw in FRAMEWORK_WORDS if text.startswith(prefix)), None)


@dataclass(frozen=True)
class Built:
    """A case and the request that plans it, or the reason it cannot be planned."""

    case: dict[str, Any]
    request: PlanRequest | None
    reason: str | None = None
    assumed: tuple[str, ...] = field(default=())
    tokens: float | None = None  # trained tokens, for wall-time cases

    @property
    def id(self) -> str:
        return str(self.case["id"])

    @property
    def metric(self) -> str:
        return str(self.case["metric"])


def _gpu(case: dict[str, Any], assumed: list[str]) -> str:
    # published_runs.json names the catalog GPU itself
    if case["other_settings"].get("gpu_catalog_id"):
        return str(case["other_settings"]["gpu_catalog_id"])
    name = case["other_settings"]["gpu"].lower()
    for needle, gpu, note in GPU_NAMES:
        if needle in name:
            if note:
                assumed.append(note)
            return gpu
    raise NotPlanned(f"GPU '{case['other_settings']['gpu']}' is not in the catalog")


def _method(case: dict[str, Any]) -> Method:
    text = case["method"].lower()
    if text == "qlora":
        return Method.qlora
    if text == "lora":
        return Method.lora
    if "full" in text:
        return Method.full
    raise NotPlanned(f"method '{case['method']}' is not full, LoRA or QLoRA")


def _precision(case: dict[str, Any], assumed: list[str]) -> Precision:
    """The planner's precision for the case's words; FP8 wins over bf16 ('bf16 mixed + Float8
    linears')."""
    text = case["precision"].lower()
    if text.startswith("not stated"):
        raise NotPlanned("precision not published")
    if "nvfp4" in text:
        raise NotPlanned("NVFP4 precision has no planner equivalent (its lowest is FP8)")
    if "fp8" in text or ("float8" in text and "no float8" not in text):
        return Precision.fp8
    if "fsdp mixed_precision pure" in text:
        # Composer's FSDP PURE casts the parameters for compute and keeps the sharded fp32 master:
        # amp in the planner's terms (16-bit compute, 32-bit master and states).
        assumed.append(
            "Composer FSDP 'PURE' mixed precision keeps fp32 master weights: planned as amp_bf16"
        )
        return Precision.amp_bf16
    if (
        "bf16-true" in text
        or "pure" in text
        or "amp_training false" in text
        or "states in bf16" in text
    ):
        return Precision.pure_bf16
    if "fp16" in text:
        return Precision.amp_fp16
    if "bf16" in text:
        return Precision.amp_bf16
    if text.startswith("fp32"):
        return Precision.fp32
    raise NotPlanned(f"precision '{case['precision']}' has no planner equivalent")


def _optimizer(case: dict[str, Any], method: Method) -> Optimizer:
    text = case["optimizer"].lower()
    if "paged" in text:
        return Optimizer.paged_adamw_32bit
    if "8bit" in text:
        return Optimizer.adamw_8bit
    if text.startswith("lion"):
        return Optimizer.lion
    # AdamW, Adam, decoupled AdamW, FusedAdam, Megatron's distributed Adam, adamw_hf/_torch
    if "adam" in text:
        return Optimizer.adamw
    raise NotPlanned(f"optimizer '{case['optimizer']}' has no planner equivalent")


def _sharding(case: dict[str, Any], assumed: list[str]) -> tuple[Sharding, Offload]:
    text = case["zero_stage_or_fsdp"].lower()
    gpus = int(case["n_gpus"])
    if gpus == 1 or text.startswith("none"):
        return Sharding.none, Offload.none
    if "zero-3" in text:
        return Sharding.zero3, Offload.none
    if "hybrid sharding (hsdp" in text:
        # full sharding within a node, replicas across nodes (fms-fsdp's HSDP)
        return Sharding.hsdp, Offload.none
    if "fsdp" in text and "fsdp column 0" not in text:
        return Sharding.fsdp, (Offload.optimizer_and_params if "offload" in text else Offload.none)
    if "zero (stage not stated" in text and "zero-3 assumed" in text:
        assumed.append("ZeRO stage not published: ZeRO-3, as the case notes infer")
        return Sharding.zero3, Offload.none
    if (
        "distributed optimizer (use_distributed_optimizer=true" in text
        or "megatron distributed optimizer" in text
    ):
        # Megatron's distributed optimizer shards the optimizer states
        return Sharding.zero1, Offload.none
    if "distributed optimizer not stated" in text:
        # NeMo's Megatron recipes use the distributed fused Adam; the table does not say so.
        assumed.append("Megatron distributed optimizer assumed (zero1): the table does not say")
        return Sharding.zero1, Offload.none
    if "zeroredundancyoptimizer" in text:
        # PyTorch's ZeroRedundancyOptimizer under DDP: optimizer states sharded (ZeRO-1)
        return Sharding.zero1, Offload.none
    if "ddp" in text:
        return Sharding.none, Offload.none
    raise NotPlanned(f"sharding '{case['zero_stage_or_fsdp']}' has no planner equivalent")


def _checkpointing(case: dict[str, Any], assumed: list[str]) -> bool | str:
    value = case["grad_ckpt"]
    if value is None:
        source = source_of(case)
        notes = case["other_settings"].get("notes") or ""
        if "no recompute set" in notes or source in RECOMPUTE_DEFAULT_OFF:
            assumed.append(
                "activation checkpointing not stated: off, "
                + RECOMPUTE_DEFAULT_OFF.get(source, "the recipe sets none")
            )
            return False
        raise NotPlanned("activation checkpointing not published")
    return "selective" if value == "selective" else bool(value)


def _lora(case: dict[str, Any], method: Method, assumed: list[str]) -> dict[str, Any]:
    if method is Method.full:
        return {}
    lora = case["other_settings"].get("lora") or {}
    out: dict[str, Any] = {}
    rank = lora.get("r")
    if isinstance(rank, str):
        match = re.match(r"\d+", rank)
        rank = int(match.group()) if match else None
        assumed.append(
            f"LoRA rank {rank} is the framework's class default, not restated by the source"
        )
    if rank is None and source_of(case) in LORA_DEFAULT_BY_SOURCE:
        default_rank, default_targets, where = LORA_DEFAULT_BY_SOURCE[source_of(case)]
        assumed.append(
            f"LoRA rank and targets not published: the framework's default, rank {default_rank} on "
            f"{default_targets} ({where})"
        )
        return {"lora_rank": default_rank, "lora_targets": default_targets}
    if rank is None:
        assumed.append(
            "LoRA rank and targets not published: the planner's defaults (rank 16, all linear "
            "layers)"
        )
        return out
    out["lora_rank"] = int(rank)
    notes = case["other_settings"].get("notes", "")
    dropout = re.search(r"LoRA[^.;]*?dropout (0\.\d+)", notes) or re.search(
        r"alpha=\d+, dropout (0\.\d+)", notes
    )
    if dropout:
        out["lora_dropout"] = float(dropout.group(1))
    elif isinstance(lora.get("dropout"), (int, float)):
        # The run's own LoRA block states it (ms-swift's and universal-llm-trainer's lora_dropout
        # 0.05): PEFT then saves each adapter's dropped-out input for backward
        # (activations._linear_inputs).
        out["lora_dropout"] = float(lora["dropout"])
    targets = lora.get("planner_targets", lora.get("targets"))
    if (
        isinstance(targets, list)
        and targets
        and targets != ["query", "value"]
        and all(str(t).endswith("_proj") for t in targets)
    ):
        out["lora_targets"] = list(targets)
    elif targets == ["query", "value"]:  # litgpt's names for the q and v projections
        out["lora_targets"] = "q,v"
    elif targets == ["linear_qkv"]:  # Megatron-Core's fused q/k/v projection
        out["lora_targets"] = "q,k,v"
    elif isinstance(targets, str) and ("all-linear" in targets or "all *_proj" in targets):
        out["lora_targets"] = "all-linear"
        if "lm_head" in targets:
            assumed.append(
                "lm_head and embed_tokens are also trained in full (PEFT modules_to_save); the "
                "planner cannot express that and plans adapters only"
            )
    else:
        raise NotPlanned(f"LoRA targets {targets!r} have no planner equivalent")
    return out


def _virtual_stages(notes: str) -> int:
    """Megatron's interleaved pipeline chunks, written 'VP=5' or 'VP (virtual pipeline) = 5' in the
    notes."""
    match = re.search(r"VP(?: \(virtual pipeline\))?\s*=\s*(\d+)", notes)
    return int(match.group(1)) if match else 1


def wall_time_tokens(case: dict[str, Any]) -> tuple[float, str]:
    """Trained tokens behind a wall-time case, from what its notes give; NotPlanned when they give
    none."""
    notes = case["other_settings"].get("notes") or ""
    if "262,144 tokens" in notes:  # HF perf doc: 512 sequences × 512 tokens, one epoch (stated)
        return 262_144.0, "262,144 tokens (512 × 512, stated)"
    if "5.54M tokens in every packed row" in notes and "No packing" not in notes:
        return (
            5.54e6,
            "5.54M tokens (derived in the case notes from steps × batch × 1024, not published)",
        )
    # published_runs.json states the count (notes say how it is known)
    if case["other_settings"].get("tokens"):
        return float(case["other_settings"]["tokens"]), "trained tokens as the case states them"
    # Answer.AI fsdp_qlora: 1,024 dummy samples × 2,048 tokens (stated)
    if "2,097,152 tokens trained" in notes:
        return 2_097_152.0, "2,097,152 tokens (1,024 full-length samples × 2,048, stated)"
    raise NotPlanned("wall time without a published token count")


def build(case: dict[str, Any]) -> Built:
    """The request the case describes, or the reason it cannot be one."""
    assumed: list[str] = []
    try:
        request, tokens = _request(case, assumed)
    except NotPlanned as exc:
        return Built(case, None, str(exc), tuple(assumed))
    return Built(case, request, None, tuple(assumed), tokens)


def _bitsandbytes_before(stated: str | None, version: tuple[int, ...]) -> bool:
    """Whether the bitsandbytes version a case states (other_settings.bitsandbytes, "0.41.1 (...)")
    is older than `version`; False where the case states none (the planner's default is today's
    bitsandbytes)."""
    if not stated:
        return False
    numbers = re.match(r"(\d+)\.(\d+)\.(\d+)", stated)
    if numbers is None:
        raise ValueError(f"bitsandbytes version {stated!r} does not start with major.minor.patch")
    return tuple(int(n) for n in numbers.groups()) < version


def _request(case: dict[str, Any], assumed: list[str]) -> tuple[PlanRequest, float | None]:
    other = case["other_settings"]
    notes = other.get("notes") or ""
    source = source_of(case)
    if case["micro_batch"] is None:
        raise NotPlanned("micro-batch not published")
    gpu = _gpu(case, assumed)
    method = _method(case)
    precision = _precision(case, assumed)
    sharding, offload = _sharding(case, assumed)
    tokens: float | None = None
    if case["metric"] in ("wall_time_s", "gpu_hours"):
        tokens, said = wall_time_tokens(case)
        assumed.append(said)
    n = int(case["n_gpus"])
    tp, pp, cp = int(other.get("tp") or 1), int(other.get("pp") or 1), int(other.get("cp") or 1)
    if n % (tp * pp * cp):
        raise NotPlanned(f"{n} GPUs is not a multiple of tp × pp × cp = {tp * pp * cp}")
    training: dict[str, Any] = {
        "method": method.value,
        "precision": precision.value,
        "optimizer": _optimizer(case, method).value,
        "sharding": sharding.value,
        "offload": offload.value,
        "gradient_checkpointing": _checkpointing(case, assumed),
        "micro_batch_size": int(case["micro_batch"]),
        "tensor_parallel": tp,
        "pipeline_parallel": pp,
        "context_parallel": cp,
        **_lora(case, method, assumed),
    }
    if training["optimizer"] == Optimizer.adamw.value and (kernel := optimizer_kernel(case)):
        training["optimizer_kernel"] = kernel
    if "no gradient clipping" in str(other.get("notes", "")).lower():
        training["gradient_clipping"] = False
    if bucket := gradient_bucket(case):
        training["gradient_bucket_elements"] = bucket
    if dtype := gradient_reduce_dtype(case):
        training["gradient_reduce_dtype"] = dtype
    if sharding is Sharding.zero1 and any(
        name in case["zero_stage_or_fsdp"].lower()
        for name in ("bf16_optimizer", "zeroredundancyoptimizer", "hybridzerooptimizer")
    ):
        # DeepSpeed's BF16_Optimizer, PyTorch's ZeroRedundancyOptimizer (under DDP) and InternLM's
        # HybridZeroOptimizer all-reduce the whole gradient, then each replica steps its share and
        # sends its parameters out
        training["gradients_all_reduced"] = True
    if pp > 1:
        training["pipeline_virtual_stages"] = int(other.get("vp") or _virtual_stages(notes))
        # an uneven split the source states (BLOOM: 5 layers on the first and last of 12 stages)
        for end in ("first", "last"):
            if stated := other.get(f"pipeline_{end}_stage_layers"):
                training[f"pipeline_{end}_stage_layers"] = int(stated)
    if tp > 1 and ("sequence_parallel" in notes or other.get("sequence_parallel")):
        training["sequence_parallel"] = True
    if other.get("global_batch"):
        training["global_batch_size"] = max(int(other["global_batch"]), int(case["micro_batch"]))
    if other.get("torch_compile") is not None:
        training["compile"] = bool(other["torch_compile"])
    framework = FRAMEWORK_BY_SOURCE.get(source) or _framework_named(
        str(other.get("framework") or "")
    )
    if framework is not None:
        training["framework"] = framework.value
    attention = str(other.get("attention") or "").lower()
    if attention.startswith(("flash", "sdpa", "eager")):
        training["attention"] = attention.split()[0].split("(")[0]
    elif "flash" in notes.lower() and "no flash" not in notes.lower():
        training["attention"] = "flash"
    elif "sdpa" in notes.lower():
        training["attention"] = "sdpa"
    if "liger" in notes.lower() and "no liger" not in notes.lower():
        training["cross_entropy"] = "fused"
    if (
        method is Method.qlora
        and "bnb.nf4" in case["precision"]
        and "nf4-dq" not in case["precision"]
    ):
        # litgpt --quantize bnb.nf4 (bnb.nf4-dq is the double-quantized one)
        training["double_quant"] = False
    if method is Method.qlora and _bitsandbytes_before(other.get("bitsandbytes"), (0, 43, 2)):
        # MatMul4Bit kept (A, B) until bitsandbytes PR #1270
        training["quantized_inputs_kept"] = True
    if case["model"]["name"].lower().startswith("bert"):
        assumed.append(
            "BERT is an encoder with a classification head; planned as a decoder with an LM head"
        )
    per_node = nvlink_domain(case, assumed) or int(other.get("gpus_per_node") or min(8, n))
    if n % per_node:
        raise NotPlanned(f"{n} GPUs do not fill nodes of {per_node}")
    request = PlanRequest.model_validate(
        {
            "model": model_config(case),
            "data": {
                "tokens": tokens or THROUGHPUT_TOKENS,
                "seq_len": int(case["seq_len"]),
                "packing": True,
            },
            "training": training,
            "hardware": {
                "gpu": gpu,
                "gpus_per_node": per_node,
                "nodes": n // per_node,
                **({"interconnect": other["interconnect"]} if other.get("interconnect") else {}),
                # a fabric speed the source states (BLOOM's paper: 4 × 100 Gbit/s Omni-Path a node)
                **(
                    {"inter_node_gbps": float(other["inter_node_gbps"])}
                    if other.get("inter_node_gbps")
                    else {}
                ),
            },
            "assumptions": {
                "restart_minutes": 0.0,
                # a stack that reduces gradients only after its last backward (DeepSpeed's pipeline
                # engine) hides none of it
                **(
                    {"comm_overlap": float(other["comm_overlap"])}
                    if other.get("comm_overlap") is not None
                    else {}
                ),
            },
        }
    )
    return request, tokens
