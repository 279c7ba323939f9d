"""`slurm`: an sbatch script that runs torchrun on every allocated node.

One task per node (``--ntasks-per-node=1``) runs torchrun with ``--nproc-per-node`` GPUs; node 0 of the
allocation is the rendezvous host (``scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1``, the
pattern of Slurm's and PyTorch's multi-node examples); ``srun --kill-on-bad-exit=1`` ends the whole step when
one node fails, so a dead rank does not leave the others waiting on a collective until the time limit. A
spot (preemptible) plan asks Slurm to requeue the job (``--requeue``) and appends to its log across restarts
(``--open-mode=append``); the training script resumes from the newest checkpoint in ``$CHECKPOINT_DIR``.
"""

from __future__ import annotations

from core.launch import emit
from core.launch.plan_view import LaunchPlan
from core.launch.torchrun import PORT, quoted

FILE = "train.sbatch"


def torchrun_args(p: LaunchPlan) -> list[str]:
    """The torchrun arguments of the srun line (variables expand on each node)."""
    return ["torchrun", '--nnodes=$SLURM_NNODES', f"--nproc-per-node={p.gpus_per_node}",
            "--rdzv-backend=c10d", "--rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT", "--rdzv-id=$SLURM_JOB_ID"]


def files(p: LaunchPlan) -> dict[str, str]:
    sbatch = [
        f"--job-name=tuneplan-{p.name_slug}",
        f"--nodes={p.nodes}",
        "--ntasks-per-node=1",
        f"--gpus-per-node={p.gpus_per_node}",
        "--output=%x-%j.out",
    ]
    if p.spot:
        sbatch += ["--requeue", "--open-mode=append"]
    lines = [
        "#!/bin/bash",
        *(f"#SBATCH {flag}" for flag in sbatch),
        *emit.comment_lines(p.header_lines()),
        "#",
        "# Submit: sbatch train.sbatch [training script arguments]; TRAIN_SCRIPT defaults to train.py.",
        *(["# A requeued job may start on other nodes: checkpoints on each node's local disk do not follow it;",
           "# point CHECKPOINT_DIR at shared storage to resume after a preemption."]
          if p.spot and p.checkpoint_tier.value in ("local_nvme", "block") else []),
        "set -euo pipefail",
        'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
        "export MASTER_ADDR",
        f'MASTER_PORT="${{MASTER_PORT:-{PORT}}}"',
        f'export CHECKPOINT_DIR="${{CHECKPOINT_DIR:-{p.checkpoint_dir}}}"',
        'TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"',
        'srun --ntasks-per-node=1 mkdir -p "$CHECKPOINT_DIR"',
        f'srun --kill-on-bad-exit=1 {quoted(torchrun_args(p))} "$TRAIN_SCRIPT" "$@"',
    ]
    return {FILE: "\n".join(lines) + "\n"}
