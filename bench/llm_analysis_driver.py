"""llm-analysis 0.2.2 on the published runs it can express; runs inside .venv-llm-analysis, never
imports tuneplan.

Reads a JSON list of runs (bench/calibrate_compare.py: run_spec) on stdin and prints {run id: figure
in the run's unit}. The mapping is the one docs/formulas.md states (after PUBLISHED_RUNS.md):
ModelConfig from the shape, its built-in GPU configs where they exist, else a GPUConfig with the
datasheet's dense BF16 peak; w16a16e16 (FP8 runs w8a8e16); fp32 master weights under mixed
precision, 2-byte master for pure bf16; FSDP/ZeRO-3/HSDP → ZeRO 3, ZeRO-2 → 2, ZeRO-1 → 1, none → 0;
tp/pp from the run, dp = GPUs ÷ (tp·pp); full checkpointing → FULL, selective → SELECTIVE, none →
NONE; flash attention unless eager; flops_efficiency 0.5, hbm_memory_efficiency 0.9. A run it
refuses (an assertion, a shape it cannot split) is left out of its column.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
from typing import Any

from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
from llm_analysis.config import (
    DtypeConfig,
    GPUConfig,
    ModelConfig,
    ParallelismConfig,
    get_gpu_config_by_name,
)

BUILT_IN = {
    "A100-80GB-SXM": "a100-sxm-80gb",
    "A100-40GB-SXM": "a100-sxm-40gb",
    "H100-SXM": "h100-sxm-80gb",
    "A10G": "a10g-pcie-24gb",
    "V100-16GB": "v100-sxm-16gb",
}
ZERO = {
    "fsdp": DSZeRO.STAGE_3,
    "zero3": DSZeRO.STAGE_3,
    "hsdp": DSZeRO.STAGE_3,
    "zero2": DSZeRO.STAGE_2,
    "zero1": DSZeRO.STAGE_1,
    "none": DSZeRO.NONE,
}
RECOMPUTE = {
    "True": ActivationRecomputation.FULL,
    "selective": ActivationRecomputation.SELECTIVE,
    "False": ActivationRecomputation.NONE,
}


def gpu_config(run: dict[str, Any]) -> Any:
    if run["gpu"] in BUILT_IN:
        return get_gpu_config_by_name(BUILT_IN[run["gpu"]])
    return GPUConfig(
        name=run["gpu"],
        mem_per_GPU_in_GB=run["gpu_memory_gb"],
        hbm_bandwidth_in_GB_per_sec=run["hbm_gbs"],
        intra_node_bandwidth_in_GB_per_sec=run["intra_gbs"],
        intra_node_min_message_latency=8e-6,
        peak_fp16_TFLOPS=run["peak_bf16_tflops"],
        inter_node_bandwidth_in_GB_per_sec=run["inter_gbs"],
    )


def tokens_per_s_per_gpu(run: dict[str, Any]) -> float:
    model = ModelConfig(
        name="run",
        num_layers=run["layers"],
        n_head=run["heads"],
        hidden_dim=run["hidden"],
        vocab_size=run["vocab"],
        max_seq_len=run["seq_len"],
        num_key_value_heads=run["kv_heads"],
        ffn_embed_dim=run["intermediate"],
        expansion_ratio=run["intermediate"] / run["hidden"],
    )
    fp8 = run["precision"] == "fp8"
    dtype = DtypeConfig(
        name="w8a8e16" if fp8 else "w16a16e16",
        weight_bits=8 if fp8 else 16,
        activation_bits=8 if fp8 else 16,
        embedding_bits=16,
    )
    mp = run["tp"] * run["pp"]
    parallel = ParallelismConfig(
        tp_size=run["tp"], pp_size=run["pp"], dp_size=max(run["gpus"] // mp, 1)
    )
    analysis = LLMAnalysis(
        model, gpu_config(run), dtype, parallel, flops_efficiency=0.5, hbm_memory_efficiency=0.9
    )
    dp = max(run["gpus"] // mp, 1)
    global_batch = run["global_batch"] or run["micro_batch"] * dp
    pure = run["precision"] == "pure_bf16"
    summary = analysis.training(
        batch_size_per_gpu=run["micro_batch"],
        global_batch_size=max(global_batch, run["micro_batch"] * dp),
        seq_len=run["seq_len"],
        activation_recomputation=RECOMPUTE[run["checkpointing"]],
        ds_zero=ZERO.get(run["sharding"], DSZeRO.NONE),
        master_weights_dtype_bytes=2 if pure else 4,
        other_op_bytes=2 if pure else None,
        flash_attn=run["attention"] != "eager",
        mlp_gated_linear_units=run["gated"],
    )
    tokens = summary["global_batch_size"] * summary["seq_len"]
    return float(tokens / summary["latency_per_iter"] / run["gpus"])


def figure(run: dict[str, Any]) -> float:
    """The run's metric from llm-analysis's tokens/s per GPU."""
    per_gpu = tokens_per_s_per_gpu(run)
    metric = run["metric"]
    if metric == "tokens_per_s_per_gpu":
        return per_gpu
    if metric == "tokens_per_s_total":
        return per_gpu * run["gpus"]
    if metric == "wall_time_s":
        return float(run["tokens"] / (per_gpu * run["gpus"]))
    if metric == "gpu_hours":
        return float(run["tokens"] / per_gpu / 3600)
    raise ValueError(f"no comparator figure for {metric}")


def main() -> None:
    logging.disable(logging.CRITICAL)
    out = {}
    for run in json.load(sys.stdin):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                out[run["id"]] = figure(run)
        except (AssertionError, ValueError, ZeroDivisionError, KeyError):
            continue
    print(json.dumps(out))


if __name__ == "__main__":
    main()
