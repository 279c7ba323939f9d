"""llm-analysis 0.2.2 as a comparator beside the planner: the same runs, driven as PUBLISHED_RUNS.md
says.

llm-analysis lives in its own virtual environment (.venv-llm-analysis, `python -m venv
.venv-llm-analysis && .venv-llm-analysis/bin/pip install llm-analysis==0.2.2`): it pins its own
dependencies, and the planner must not depend on it. bench/llm_analysis_driver.py runs there, reads
the runs as JSON on stdin and prints its tokens/s per GPU for each run it can express (no LoRA or
QLoRA). Without that environment the column stays empty and the tables say so.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.calibrate_cases import Built
from bench.calibrate_model import model_config
from core.catalog import GPU, Catalog, network
from core.planner.speed import kernels

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv-llm-analysis" / "bin" / "python"
DRIVER = ROOT / "bench" / "llm_analysis_driver.py"
TIMEOUT_S = 600


def expressible(built: Built) -> bool:
    """llm-analysis models full training only: LoRA and QLoRA runs are left out of its column."""
    return built.request is not None and built.request.training.method.value == "full"


def run_spec(built: Built, catalog: Catalog) -> dict[str, Any]:
    """What the driver needs of one run: the shape, GPU, layout and settings (PUBLISHED_RUNS.md's
    mapping)."""
    req = built.request
    assert req is not None and req.hardware is not None
    t, case = req.training, built.case
    # the shape as the planner reads it, its defaults (KV heads, the 4h MLP) included
    config = model_config(case)
    return {
        "id": built.id,
        "metric": built.metric,
        "tokens": built.tokens,
        "hidden": config["hidden_size"],
        "layers": config["num_hidden_layers"],
        "heads": config["num_attention_heads"],
        "kv_heads": config["num_key_value_heads"],
        "vocab": config["vocab_size"],
        "intermediate": config["intermediate_size"],
        "gated": config["hidden_act"] != "gelu",
        "gpu": req.hardware.gpu,
        "gpus": req.hardware.gpus,
        "gpus_per_node": req.hardware.gpus_per_node,
        "precision": t.precision.value,
        "sharding": t.sharding.value,
        "tp": t.tensor_parallel,
        "pp": t.pipeline_parallel,
        "micro_batch": t.micro_batch_size,
        "seq_len": req.data.seq_len,
        "global_batch": t.global_batch_size,
        "checkpointing": str(t.gradient_checkpointing),
        "attention": t.attention.value,
        **_gpu_figures(catalog.gpu(req.hardware.gpu), req.hardware.gpus_per_node),
    }


def _gpu_figures(gpu: GPU, per_node: int) -> dict[str, float]:
    """The datasheet figures a custom GPUConfig needs, for GPUs llm-analysis has no config of
    (catalog values)."""
    return {
        "peak_bf16_tflops": gpu.bf16_tflops or gpu.peak_tflops("amp_fp16"),
        "gpu_memory_gb": gpu.memory_bytes / 1e9,
        "hbm_gbs": kernels.hbm_bytes_per_s(gpu) / 1e9,
        "intra_gbs": network.intra_node_gbs(gpu, max(per_node, 2)),
        "inter_gbs": network.typical_gpu_net_gbps(gpu.intra_node_link, gpu.architecture, per_node)
        / 8,
    }


def figures(runs: Sequence[Built], catalog: Catalog) -> dict[str, float]:
    """Run id → llm-analysis's figure in the run's unit, for the runs it can express ({} without its
    venv)."""
    specs = [run_spec(b, catalog) for b in runs if expressible(b)]
    if not specs or not VENV_PYTHON.exists():
        return {}
    done = subprocess.run(
        [str(VENV_PYTHON), str(DRIVER)],
        input=json.dumps(specs),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"llm-analysis driver failed: {done.stderr.strip()[-2000:]}")
    out: dict[str, float] = json.loads(done.stdout)
    return out
