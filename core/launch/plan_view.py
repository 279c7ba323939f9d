"""The planned run as the launch formats need it: world size, batch arithmetic, paths, and the
header.

Every format reads the same numbers from here, so a DeepSpeed JSON and an sbatch script written from
one plan cannot disagree about the micro-batch or the accumulation. The arithmetic is the planner's
own (``core.planner.speed.step.evaluate``): dp = GPUs ÷ (tp · pp · cp)
(``core.planner.model.parallel.data_parallel``) and gradient accumulation = ⌈global batch ÷
(micro-batch × dp)⌉, so the batch a launch file runs is micro × accumulation × dp, which equals the
planned global batch whenever it divides evenly.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from importlib import metadata

from core.catalog.records import PricingMode, StorageTier
from core.launch.emit import one_line
from core.planner.model.parallel import data_parallel
from core.planner.request import Method, Offload, Precision, Sharding, TrainingSpec
from core.planner.result import PlanResult
from core.planner.speed.step import accumulation_steps, global_batch
from core.units import fmt_bytes, fmt_hours


class LaunchError(ValueError):
    """A plan setting the chosen format cannot express: one sentence naming the setting and the way
    out."""


# Where each storage tier's checkpoints go on the machines. These are conventions (heuristic), not
# vendor figures: a local NVMe is usually mounted under /mnt or /scratch by the image, a parallel or
# network file system under a shared path, object storage through a bucket mounted by the launcher
# (SkyPilot) or written with the framework's own remote-path support. Users change the one
# CHECKPOINT_DIR variable each file sets.
CHECKPOINT_DIRS: dict[StorageTier, str] = {
    StorageTier.local_nvme: "/mnt/local_nvme/checkpoints",
    StorageTier.parallel_fs: "/shared/checkpoints",
    StorageTier.block: "/mnt/block/checkpoints",
    StorageTier.nfs: "/shared/checkpoints",
    StorageTier.object: "/checkpoints",  # the bucket's mount point (SkyPilot file_mounts)
}


def tuneplan_version() -> str:
    """The installed tuneplan's version (a source checkout that was never installed says so)."""
    try:
        return metadata.version("tuneplan")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def slug(text: str) -> str:
    """A name a scheduler, a bucket and a file system all accept: lowercase letters, digits and
    dashes."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:48] or "plan"


@dataclass(frozen=True)
class LaunchPlan:
    """What a launch file is written from: the plan's request and result, with the derived run
    settings."""

    result: PlanResult
    name: str
    date: dt.date

    @property
    def name_slug(self) -> str:
        return slug(self.name)

    @property
    def training(self) -> TrainingSpec:
        return self.result.request.training

    @property
    def nodes(self) -> int:
        return self.result.hardware.nodes

    @property
    def gpus_per_node(self) -> int:
        return self.result.hardware.gpus_per_node

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def data_parallel(self) -> int:
        return int(data_parallel(self.world_size, self.training))

    @property
    def micro_batch(self) -> int:
        return self.training.micro_batch_size

    @property
    def planned_global_batch(self) -> int:
        """Sequences per optimizer step as planned (the request's, else the planner's default, grown
        to dp × micro-batch when more replicas run than it feeds)."""
        return int(
            global_batch(self.training, self.result.request.data.seq_len, self.data_parallel)
        )

    @property
    def accumulation(self) -> int:
        """⌈global ÷ (micro × dp)⌉, at least 1: the planner's own rounding
        (core/planner/speed/step.py)."""
        return int(
            accumulation_steps(self.planned_global_batch, self.micro_batch, self.data_parallel)
        )

    @property
    def global_batch(self) -> int:
        """The batch the launch files run: micro × accumulation × dp (DeepSpeed asserts exactly
        this)."""
        return self.micro_batch * self.accumulation * self.data_parallel

    @property
    def seq_len(self) -> int:
        return self.result.request.data.seq_len

    @property
    def zero_stage(self) -> int:
        """DeepSpeed's ZeRO stage for the plan's sharding (0 for DDP); FSDP and HSDP are not ZeRO
        stages."""
        return {Sharding.none: 0, Sharding.zero1: 1, Sharding.zero2: 2, Sharding.zero3: 3}[
            self.training.sharding
        ]

    @property
    def offload_optimizer(self) -> bool:
        return self.training.offload is not Offload.none

    @property
    def offload_params(self) -> bool:
        return self.training.offload is Offload.optimizer_and_params

    @property
    def spot(self) -> bool:
        return self.result.request.pricing.mode is PricingMode.spot

    @property
    def checkpoint_tier(self) -> StorageTier:
        return self.result.request.assumptions.checkpoint_tier

    @property
    def checkpoint_dir(self) -> str:
        return CHECKPOINT_DIRS[self.checkpoint_tier]

    @property
    def save_steps(self) -> int:
        """Optimizer steps between checkpoints: the planned interval ÷ the planned step time, at
        least 1."""
        step_s = self.result.compute.step_time_s
        interval_s = self.result.checkpoint.interval_minutes * 60.0
        if step_s <= 0:
            return 1
        return max(1, min(self.result.compute.steps or 1, int(interval_s // step_s)))

    @property
    def checkpoints_kept(self) -> int:
        """The plan's number of hot checkpoints (``assumptions.checkpoints_kept``): the number every
        format keeps."""
        return self.result.request.assumptions.checkpoints_kept

    def checkpoint_env(self, directory: str | None = None) -> dict[str, str]:
        """What a launched training script reads to checkpoint and resume as planned: the folder
        (`directory`, else the plan's tier's), the interval in optimizer steps, the kept count, and
        RESUME=1 (start from the newest checkpoint there when one exists). torchrun.sh and
        train.sbatch export these, SkyPilot sets them as envs."""
        return {
            "CHECKPOINT_DIR": directory or self.checkpoint_dir,
            "SAVE_STEPS": str(self.save_steps),
            "SAVE_TOTAL_LIMIT": str(self.checkpoints_kept),
            "RESUME": "1",
        }

    @property
    def lora(self) -> bool:
        return self.training.method is not Method.full

    @property
    def bf16(self) -> bool:
        return self.training.precision in (Precision.amp_bf16, Precision.pure_bf16)

    def header_lines(self, checkpoint_dir: str | None = None) -> list[str]:
        """The lines each file starts with: plan, version, date, and what the run should show if it
        matches; `checkpoint_dir` where the format puts checkpoints elsewhere than the tier's folder
        (a mounted claim).

        The plan's and the model's names are the user's (or a downloaded config's) text: they are
        made one line here, and each format writes these lines through ``emit.comment_lines``, which
        does so again.
        """
        r = self.result
        t = self.training
        batch = (
            f"micro-batch {self.micro_batch} × accumulation {self.accumulation} × "
            f"{self.data_parallel} data-parallel = {self.global_batch} sequences per step"
        )
        if self.global_batch != self.planned_global_batch:
            batch += f" (planned {self.planned_global_batch}; rounded up as the planner does)"
        layout = f"tp {t.tensor_parallel}, pp {t.pipeline_parallel}, cp {t.context_parallel}"
        ends = [
            f"{n} stage {k} layers"
            for n, k in (
                ("first", t.pipeline_first_stage_layers),
                ("last", t.pipeline_last_stage_layers),
            )
            if k is not None
        ]
        if ends and t.pipeline_parallel > 1:
            layout += f" ({', '.join(ends)})"
        return [
            f"tuneplan launch file for plan '{one_line(self.name)}' ({one_line(r.model_name)}, "
            f"{t.method.value})",
            f"written by tuneplan {tuneplan_version()} on {self.date.isoformat()}",
            f"hardware: {self.nodes} node(s) × {self.gpus_per_node} {r.hardware.gpu} = "
            f"{self.world_size} GPUs; sharding {t.sharding.value}, offload {t.offload.value}, "
            f"{layout}; precision {t.precision.value}",
            f"batch: {batch}; sequence length {self.seq_len}",
            f"expect: {fmt_bytes(r.memory.per_gpu.total)} per GPU reserved (nvidia-smi), "
            f"{fmt_bytes(r.memory.allocated_peak)} allocated peak; "
            f"{r.compute.tokens_per_second:,.0f} tokens/s; {r.compute.step_time_s:.2f} s per "
            f"step; {fmt_hours(r.time.hours)} for {r.compute.steps} steps",
            f"checkpoints: every {self.save_steps} steps (~{r.checkpoint.interval_minutes:.0f} "
            f"min) to {checkpoint_dir or self.checkpoint_dir} ({self.checkpoint_tier.value})",
        ]
