"""Read a DeepSpeed config back with DeepSpeed's own parser and print what it found, as JSON.

Run as a subprocess (``python tests/core/ds_readback.py CONFIG DP``) so that DeepSpeed's process
group and its CPU accelerator stay out of the test process. ``DeepSpeedConfig`` takes the
data-parallel size from an ``mpu`` (the Megatron-style interface DeepSpeed documents for model
parallelism) once ``deepspeed.comm`` is initialised; a one-process gloo group stands in for the
cluster, and the mpu says how many data-parallel replicas the cluster has, so DeepSpeed checks
train_batch_size == micro × accumulation × dp itself. DeepSpeed's shared-memory all-reduce kernel
(``build_shm_op``) is JIT-compiled with a C++ toolchain at init; it speeds collectives and has
nothing to do with parsing a config, so it is left unbuilt.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

os.environ["DS_ACCELERATOR"] = "cpu"


class DataParallelOnly:
    """The mpu DeepSpeed asks for the data-parallel world size (deepspeed/runtime/config.py)."""

    def __init__(self, dp: int) -> None:
        self.dp = dp

    def get_data_parallel_world_size(self) -> int:
        return self.dp

    def get_data_parallel_rank(self) -> int:
        return 0

    def get_model_parallel_world_size(self) -> int:
        return 1


def _device(offload: Any) -> str | None:
    """The offload device DeepSpeed parsed ('cpu', 'nvme'), or None with no offload section."""
    if offload is None:
        return None
    device = offload.device
    return str(getattr(device, "value", device))


def main(path: str, dp: int) -> None:
    import torch.distributed as tdist

    setattr(importlib.import_module("deepspeed.comm.torch"), "build_shm_op", lambda: None)  # noqa: B010
    import deepspeed.comm as dist
    from deepspeed.runtime.config import DeepSpeedConfig

    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    dist.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)
    try:
        c = DeepSpeedConfig(path, mpu=DataParallelOnly(dp))
    # DeepSpeed's own refusal, e.g. the batch arithmetic
    except (AssertionError, ValueError) as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return
    z = c.zero_config
    print(
        json.dumps(
            {
                "world_size": c.world_size,
                "train_batch_size": c.train_batch_size,
                "micro": c.train_micro_batch_size_per_gpu,
                "accumulation": c.gradient_accumulation_steps,
                "stage": int(c.zero_optimization_stage),
                "offload_optimizer": _device(z.offload_optimizer),
                "offload_param": _device(z.offload_param),
                "bf16": bool(c.bfloat16_config.enabled),
                "fp16": bool(c.float16_config.enabled),
                "overlap_comm": bool(z.overlap_comm),
                "reduce_bucket_size": int(z.reduce_bucket_size),
                "optimizer": c.optimizer_name,
                "optimizer_params": c.optimizer_params,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
