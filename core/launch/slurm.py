"""`slurm`: an sbatch script that runs torchrun on every allocated node, sized and timed from the
plan.

One task per node (``--ntasks-per-node=1``) runs torchrun with ``--nproc-per-node`` GPUs; node 0 of
the allocation is the rendezvous host (the first line of ``scontrol show hostnames
"$SLURM_JOB_NODELIST"``, the pattern of Slurm's and PyTorch's multi-node examples, read with ``sed
-n 1p``: their ``head -n 1`` can kill scontrol with SIGPIPE, which ``set -o pipefail`` turns into
the job's end); ``srun --kill-on-bad-exit=1`` ends the whole step when one node fails, so a dead
rank does not leave the others waiting on a collective until the time limit.

What each directive says, and why:

- ``--time``: the plan's wall time (``result.time.hours``, checkpoint writes and expected restarts
  included) × `TIME_MARGIN`, rounded up to whole minutes (``HH:MM:SS``, or ``D-HH:MM:SS`` from a day
  on). A plan longer than a day gets a header note: partitions cap a job's time (MaxTime), and a
  longer request pends forever.
- ``--exclusive`` and ``--mem=0`` when the plan fills its nodes (several nodes, or `WHOLE_NODE_GPUS`
  or more GPUs): a training node is the job's alone, with all its memory (CPU offload keeps the
  optimizer in host RAM; data loading and checkpoint staging use it too), whatever DefMemPerCPU a
  cluster sets. A plan of fewer GPUs on one node shares it: holding a whole 8-GPU node for one GPU
  would idle the other seven.
- ``--cpus-per-task``: `CPUS_PER_GPU` × GPUs is only what a node must have at least; the torchrun
  task is given every CPU the job holds on its node on the srun line
  (``--cpus-per-task=$SLURM_CPUS_ON_NODE``: all of an exclusive node). srun must be told: Slurm
  22.05 to 23.02 stopped passing the job's ``--cpus-per-task`` to srun (Slurm
  CHANGELOG/slurm-22.05.md, undone in 23.11), and without it the task and its eight workers may be
  bound to one CPU.
- ``--signal=B:USR1@SECONDS``: USR1 goes to the batch shell alone (``B:``; sbatch(1): by default
  only the steps get it), `signal_lead_s` before the limit. The shell's trap passes it to the srun
  step, srun forwards USR1 to every task (src/srun/signals.c: SIGUSR1 is one of the signals srun
  forwards; TERM and INT would end the tasks instead), and torchrun, told to handle USR1
  (``PET_SIGNALS_TO_HANDLE``, the environment form of torch >= 2.9's ``--signals-to-handle``,
  pytorch#160690), sends it to each worker and gives them ``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` seconds
  before SIGKILL (torch/distributed/elastic/agent/server/api.py ``run``: a handled signal is a death
  signal, forwarded to the workers, never a restart). A training script that saves on USR1 loses
  nothing (it should end its save with a barrier: the first node whose torchrun exits makes srun end
  the others); one that does not handle it is stopped there and resumes from its last periodic
  checkpoint. An older torchrun ignores the variable and ends at USR1 without a last save, which is
  the same fallback. Signalling the batch shell rather than the steps is what lets the script act
  after the step ends: requeue a spot job, or say how to resume.
- A spot plan asks Slurm to requeue the job (``--requeue``: after a preemption or a node failure
  Slurm does it; at the time limit the script does, ``scontrol requeue``, which slurmctld refuses
  for a job without the flag: job_mgr.c ``_job_requeue_op``) and appends to its log across restarts
  (``--open-mode=append``). Every plan exports ``RESUME=1``, so the training script resumes from the
  newest checkpoint in ``$CHECKPOINT_DIR``.

Only tuneplan's own words, numbers and the plan's slug reach shell code; the header's user text goes
through ``emit.comment_lines``.
"""

from __future__ import annotations

import math

from core.launch import emit
from core.launch.plan_view import LaunchPlan
from core.launch.torchrun import PORT, checkpoint_lines, export, network_lines, quoted

FILE = "train.sbatch"

# The planner's wall time is an estimate from modelled throughput and MFU: a run that comes out 25 %
# slower than planned should still end inside its allocation rather than be killed at the limit.
TIME_MARGIN = 1.25
# CPUs a node must have per GPU for the job to run there: 4 is the smallest CPU-to-GPU ratio of
# common GPU machines (AWS g4dn/g5/g6.xlarge and GCP g2-standard-4: 4 vCPUs, 1 GPU; 8-GPU nodes have
# 12 to 32 per GPU), so the request never rules out a node; the task gets all of its exclusive
# node's CPUs anyway.
CPUS_PER_GPU = 4
# An HGX/DGX-class node's GPUs: a one-node plan of this many fills its node and asks for it whole.
WHOLE_NODE_GPUS = 8
# After USR1, what the workers may need before torchrun kills them: finish the step under way, then
# write a checkpoint, counted twice because the write time is the planner's estimate from storage
# bandwidth, plus a minute.
SAVE_SLACK_S = 60
# From the workers' end to the job's: torchrun and srun stopping, and for a spot job `scontrol
# requeue`.
STOP_S = 120
# sbatch(1): sig_time must be an integer between 0 and 65535.
SIGNAL_MAX_S = 65535
SIGNALS_TO_HANDLE = "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1"  # torchrun's default four, and USR1


def save_grace_s(p: LaunchPlan) -> int:
    """Seconds the workers get after USR1 to save before torchrun sends SIGKILL."""
    return math.ceil(
        p.result.compute.step_time_s + 2 * p.result.checkpoint.write_seconds + SAVE_SLACK_S
    )


def signal_lead_s(p: LaunchPlan) -> int:
    """Seconds before the time limit that USR1 comes: the workers' grace and the job's stopping."""
    return min(SIGNAL_MAX_S, save_grace_s(p) + STOP_S)


def _margin_minutes(p: LaunchPlan) -> int:
    return math.ceil(p.result.time.hours * 60 * TIME_MARGIN - 1e-9)


def time_limit_minutes(p: LaunchPlan) -> int:
    """The plan's hours × `TIME_MARGIN` in whole minutes, and at least twice the signal's lead, so a
    short plan still runs as long before USR1 as it is given to stop."""
    return max(_margin_minutes(p), 2 * math.ceil(signal_lead_s(p) / 60), 1)


def slurm_time(minutes: int) -> str:
    """Minutes as sbatch's ``--time``: ``HH:MM:SS`` under a day, ``D-HH:MM:SS`` from a day on."""
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return f"{days}-{hours:02d}:{mins:02d}:00" if days else f"{hours:02d}:{mins:02d}:00"


def torchrun_args(p: LaunchPlan) -> list[str]:
    """The torchrun arguments of the srun line (the batch shell expands the variables)."""
    return [
        "torchrun",
        "--nnodes=$SLURM_NNODES",
        f"--nproc-per-node={p.gpus_per_node}",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT",
        "--rdzv-id=$SLURM_JOB_ID",
    ]


def cpus_per_task(p: LaunchPlan) -> int:
    """The CPUs a node must have for the job (`CPUS_PER_GPU` per GPU); srun then gives the task all
    it holds."""
    return CPUS_PER_GPU * p.gpus_per_node


def whole_nodes(p: LaunchPlan) -> bool:
    """The plan fills its nodes, so it asks for them exclusively and with all their memory."""
    return p.nodes > 1 or p.gpus_per_node >= WHOLE_NODE_GPUS


def directives(p: LaunchPlan) -> list[str]:
    flags = [
        f"--job-name=tuneplan-{p.name_slug}",
        f"--nodes={p.nodes}",
        "--ntasks-per-node=1",
        f"--gpus-per-node={p.gpus_per_node}",
        f"--cpus-per-task={cpus_per_task(p)}",
        *(["--exclusive", "--mem=0"] if whole_nodes(p) else []),
        f"--time={slurm_time(time_limit_minutes(p))}",
        f"--signal=B:USR1@{signal_lead_s(p)}",
        "--output=%x-%j.out",
    ]
    if p.spot:
        flags += ["--requeue", "--open-mode=append"]
    return [f"#SBATCH {flag}" for flag in flags]


def notes(p: LaunchPlan) -> list[str]:
    """The comment block under the header: how to submit, and why the directives say what they
    say."""
    minutes = time_limit_minutes(p)
    lead = signal_lead_s(p)
    out = [
        "Submit: sbatch train.sbatch [training script arguments]; TRAIN_SCRIPT defaults to "
        "train.py.",
        f"--time {slurm_time(minutes)}: the plan's {p.result.time.hours:.2f} h × {TIME_MARGIN} "
        "margin, "
        + (
            "rounded up to whole minutes."
            if minutes == _margin_minutes(p)
            else f"raised to twice the {lead} s the job is given to stop before its limit."
        ),
    ]
    if minutes > 24 * 60:
        out += [
            "That is more than a day: partitions often cap a job's time (MaxTime: sinfo -o '%P "
            "%l'), and a job asking for more pends with reason PartitionTimeLimit.",
            "Then set --time to the cap: the run checkpoints before it and "
            + (
                "goes back in the queue itself (--requeue)."
                if p.spot
                else "resumes from CHECKPOINT_DIR when submitted again (RESUME=1)."
            ),
        ]
    if not whole_nodes(p):
        out.append(
            f"No --exclusive: {p.gpus_per_node} GPU(s) share a node with other jobs; add --mem if "
            "the "
            "cluster's default memory per CPU is too little for loading the model."
        )
    out += [
        f"--cpus-per-task: the least a node must have ({CPUS_PER_GPU} per GPU); the torchrun task "
        "gets every CPU "
        "the job holds on its node (srun --cpus-per-task=$SLURM_CPUS_ON_NODE).",
        f"--signal: USR1 comes {lead} s before the limit; the workers get {save_grace_s(p)} s of "
        "it to save "
        "(a step, twice the planned checkpoint write, a minute), then "
        + (
            "the job requeues itself and resumes."
            if p.spot
            else "the job ends; submit it again to resume."
        ),
    ]
    if p.spot and p.checkpoint_tier.value in ("local_nvme", "block"):
        out += [
            "A requeued job may start on other nodes: checkpoints on each node's local disk do "
            "not follow it;",
            "point CHECKPOINT_DIR at shared storage to resume after a preemption.",
        ]
    return emit.comment_lines(out)


def stop_lines(p: LaunchPlan) -> list[str]:
    """After the training step: what the job does when USR1 stopped it."""
    if p.spot:
        then = [
            '  echo "tuneplan: time limit near; requeueing job $SLURM_JOB_ID to resume from '
            '$CHECKPOINT_DIR" >&2',
            '  scontrol requeue "$SLURM_JOB_ID"',
            "  exit 0",
        ]
    else:
        then = [
            '  echo "tuneplan: stopped before the time limit; submit again to resume from '
            '$CHECKPOINT_DIR" >&2'
        ]
    return ['if [ "$stop_requested" = 1 ]; then', *then, "fi", 'exit "$status"']


def files(p: LaunchPlan) -> dict[str, str]:
    srun = (
        f'srun --kill-on-bad-exit=1 --cpus-per-task="${{SLURM_CPUS_ON_NODE:-{cpus_per_task(p)}}}"'
    )
    lines = [
        "#!/bin/bash",
        *directives(p),
        *emit.comment_lines(p.header_lines()),
        "#",
        *notes(p),
        "set -euo pipefail",
        'TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"',
        *checkpoint_lines(p),
        *emit.comment_lines(
            [
                "torchrun passes USR1 on to the workers (torch 2.9 and later) and gives them this "
                "many seconds to save before SIGKILL."
            ]
        ),
        export("PET_SIGNALS_TO_HANDLE", SIGNALS_TO_HANDLE),
        export("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", save_grace_s(p)),
        *network_lines(p),
        *emit.comment_lines(
            [
                "The first node hosts the rendezvous. sed, not head: head stops reading after one "
                "line, and under pipefail a scontrol killed by SIGPIPE would end the job."
            ]
        ),
        'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)"',
        "export MASTER_ADDR",
        f'MASTER_PORT="${{MASTER_PORT:-{PORT}}}"',
        'srun --ntasks-per-node=1 mkdir -p "$CHECKPOINT_DIR"',
        *emit.comment_lines(
            [
                "USR1 (--signal) comes to this shell alone: pass it to the step (srun forwards it "
                "to every node's torchrun) and remember it."
            ]
        ),
        "stop_requested=0",
        'step=""',
        """trap 'stop_requested=1; if [ -n "$step" ]; then kill -USR1 "$step" 2>/dev/null || """
        """true; fi' USR1""",
        f'{srun} {quoted(torchrun_args(p))} "$TRAIN_SCRIPT" "$@" &',
        "step=$!",
        *emit.comment_lines(
            ["wait returns early when the trap runs; wait again until the step has ended."]
        ),
        "status=0",
        'wait "$step" || status=$?',
        'while kill -0 "$step" 2>/dev/null; do',
        "  status=0",
        '  wait "$step" || status=$?',
        "done",
        *stop_lines(p),
    ]
    return {FILE: "\n".join(lines) + "\n"}
