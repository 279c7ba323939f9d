"""The plans the launch-file tests write and read back, with what each parser must find, worked by
hand.

Expected values are arithmetic on the request, written out here, never read from tuneplan:
dp = GPUs ÷ (tp × pp × cp) and accumulation = global batch ÷ (micro-batch × dp).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.launch import Written, write_launch_files
from core.planner.plan import plan
from core.planner.request import PlanRequest

TODAY = dt.date(2026, 12, 1)


@dataclass(frozen=True)
class Case:
    name: str
    request: dict[str, Any]
    world: int
    nodes: int
    per_node: int
    dp: int
    micro: int
    accumulation: int
    global_batch: int
    stage: int | None  # ZeRO stage (None: FSDP)
    offload_optimizer: bool
    offload_params: bool
    spot: bool


def _req(
    training: dict[str, Any],
    hardware: dict[str, Any],
    preset: str = "llama-3.1-8b",
    pricing: dict[str, Any] | None = None,
) -> dict[str, Any]:
    r = {
        "model": {"preset": preset},
        "data": {"tokens": 2e8, "seq_len": 4096},
        "training": training,
        "hardware": hardware,
    }
    if pricing:
        r["pricing"] = pricing
    return r


CASES = [
    # one H100, LoRA: dp 1; accumulation 16 / (2 × 1) = 8; 2 × 8 × 1 = 16.
    Case(
        "single-gpu-lora",
        _req(
            {"method": "lora", "lora_rank": 16, "micro_batch_size": 2, "global_batch_size": 16},
            {"gpu": "H100-SXM", "gpus_per_node": 1, "nodes": 1},
        ),
        world=1,
        nodes=1,
        per_node=1,
        dp=1,
        micro=2,
        accumulation=8,
        global_batch=16,
        stage=0,
        offload_optimizer=False,
        offload_params=False,
        spot=False,
    ),
    # 8 H100 in one node, full fine-tune with FSDP: dp 8; 64 / (1 × 8) = 8.
    Case(
        "fsdp-8gpu-full",
        _req(
            {
                "method": "full",
                "sharding": "fsdp",
                "micro_batch_size": 1,
                "global_batch_size": 64,
                "gradient_checkpointing": True,
            },
            {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
        ),
        world=8,
        nodes=1,
        per_node=8,
        dp=8,
        micro=1,
        accumulation=8,
        global_batch=64,
        stage=None,
        offload_optimizer=False,
        offload_params=False,
        spot=False,
    ),
    # 2 nodes × 8 H100, 70B full with ZeRO-3 and CPU offload of states and parameters: dp 16; 128 /
    # 16 = 8.
    Case(
        "zero3-2node-offload",
        _req(
            {
                "method": "full",
                "sharding": "zero3",
                "offload": "optimizer_and_params",
                "micro_batch_size": 1,
                "global_batch_size": 128,
            },
            {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 2},
            preset="llama-3.1-70b",
        ),
        world=16,
        nodes=2,
        per_node=8,
        dp=16,
        micro=1,
        accumulation=8,
        global_batch=128,
        stage=3,
        offload_optimizer=True,
        offload_params=True,
        spot=False,
    ),
    # Spot, 2 nodes × 8 A100-80GB, LoRA with ZeRO-2 and optimizer offload: dp 16; 256 / (4 × 16) =
    # 4.
    Case(
        "spot-zero2-2node",
        _req(
            {
                "method": "lora",
                "sharding": "zero2",
                "offload": "optimizer",
                "micro_batch_size": 4,
                "global_batch_size": 256,
            },
            {"gpu": "A100-80GB-SXM", "gpus_per_node": 8, "nodes": 2},
            pricing={"provider": "aws", "mode": "spot"},
        ),
        world=16,
        nodes=2,
        per_node=8,
        dp=16,
        micro=4,
        accumulation=4,
        global_batch=256,
        stage=2,
        offload_optimizer=True,
        offload_params=False,
        spot=True,
    ),
]
IDS = [c.name for c in CASES]


def write(case: Case, fmt: str, out: Path, **training: Any) -> Written:
    """Plan the case (with `training` overrides) and write one format's files into `out`."""
    raw = dict(case.request)
    raw["training"] = {**raw["training"], **training}
    request = PlanRequest.model_validate(raw)
    return write_launch_files(request, plan(request), fmt, out, name=case.name, today=TODAY)


# Not in CASES (every format's tests run those): a spot plan longer than a day on InfiniBand, for
# the formats whose output depends on the wall time and the network (Slurm's --time in D-HH:MM:SS,
# its MaxTime note). 4 nodes × 8 H100, 70B full with ZeRO-3: dp 32; 256 / (1 × 32) = 8.
SPOT_LONG = Case(
    "spot-long-4node-ib",
    _req(
        {"method": "full", "sharding": "zero3", "micro_batch_size": 1, "global_batch_size": 256},
        {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 4, "interconnect": "infiniband"},
        preset="llama-3.1-70b",
        pricing={"provider": "lambda", "mode": "spot"},
    )
    | {"data": {"tokens": 2e9, "seq_len": 4096}},
    world=32,
    nodes=4,
    per_node=8,
    dp=32,
    micro=1,
    accumulation=8,
    global_batch=256,
    stage=3,
    offload_optimizer=False,
    offload_params=False,
    spot=True,
)
