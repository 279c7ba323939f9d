"""`torchrun`: the ``torchrun`` command every node runs, as one shell script, and the environment it
exports.

Flags are torch.distributed.run's (``torchrun --help``; torch/distributed/run.py
``get_args_parser``, torch 2.13), and none is there that torchrun would ignore or already implies:

- one node runs ``--standalone``, which picks the c10d backend, a free local port and a run id
  itself ("any explicitly set values are ignored") and needs no ``--nnodes`` (its default is
  ``1:1``);
- several nodes use the c10d rendezvous at node 0 (``--rdzv-backend=c10d
  --rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT``, port 29500 unless MASTER_PORT says). The rendezvous
  numbers the nodes itself, so every node runs the same line: ``--node-rank`` is read only by the
  ``static`` backend and torch 2.13 warns that it ignores it for c10d (run.py ``config_from_args``),
  so the script writes none and needs no NODE_RANK.

The script also exports what the training script needs from the plan, since torchrun only starts it:
``CHECKPOINT_DIR``, ``SAVE_STEPS`` (the planned interval in optimizer steps, from the failure and
preemption rates: ``LaunchPlan.save_steps``), ``SAVE_TOTAL_LIMIT``
(``assumptions.checkpoints_kept``) and ``RESUME=1`` (pick up from the newest checkpoint in
CHECKPOINT_DIR when there is one). Each is ``export VAR="${VAR:-value}"``: a value already in the
environment wins.

A multi-node plan also exports the network's NCCL settings (`network_lines`), decided from these
sources:

- AWS EFA: NCCL reaches EFA only through the aws-ofi-nccl plugin (in AWS's Deep Learning AMIs and
  containers). ``FI_PROVIDER=efa`` is still written by AWS's own Slurm samples
  (aws-samples/awsome-distributed-training, 3.test_cases/pytorch/FSDP/slurm/*.sbatch) and keeps a
  plugin older than 1.6 from choosing another libfabric provider; newer plugins pick ``efa``
  themselves on EC2 (aws-ofi-nccl src/platform-aws.cpp ``PlatformAWS::init``), where it changes
  nothing. ``FI_EFA_USE_DEVICE_RDMA=1`` and ``FI_EFA_FORK_SAFE=1`` are obsolete: aws-ofi-nccl's
  doc/efa-env-var.md says not to set the first with libfabric >= 1.18 and aws-ofi-nccl >= 1.7 (RDMA
  is detected) and that the plugin sets the second itself; an RDMA flag on an EFA instance without
  RDMA (p3dn, g5) stops EFA from starting. So the first is a commented hint for old stacks only.
- InfiniBand and RoCE: NCCL finds the HCAs and GPUDirect RDMA itself (NCCL's "Environment Variables"
  page, docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, says to keep only
  system-specific settings in scripts), so ``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME`` and, for RoCE,
  ``NCCL_IB_GID_INDEX`` (chosen by NCCL itself since 2.21) are named as commented hints for clusters
  whose admins say otherwise.
- Ethernet: NCCL's TCP sockets; ``NCCL_SOCKET_IFNAME`` is the one hint (which interface to use).

torchrun launches processes; the sharding, batch and precision live in the training script's own
config (``--format deepspeed`` / ``accelerate`` / ``torchtune``), so this format refuses nothing.
Only tuneplan's own words, numbers and the plan's slug reach shell code; the header's user text goes
through ``emit.comment_lines``.
"""

from __future__ import annotations

import shlex

from core.catalog.records import Interconnect
from core.launch import emit
from core.launch.plan_view import LaunchPlan

FILE = "torchrun.sh"
PORT = 29500  # torchrun's default --master-port


def command(
    p: LaunchPlan, endpoint: str = "$MASTER_ADDR:$MASTER_PORT", run_id: str | None = None
) -> list[str]:
    """torchrun's arguments up to the training script (which the caller appends); the same on every
    node."""
    if p.nodes == 1:
        return ["torchrun", "--standalone", f"--nproc-per-node={p.gpus_per_node}"]
    return [
        "torchrun",
        f"--nnodes={p.nodes}",
        f"--nproc-per-node={p.gpus_per_node}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={endpoint}",
        f"--rdzv-id={run_id or p.name_slug}",
    ]


def quoted(args: list[str]) -> str:
    """Arguments joined for a shell; variables ($MASTER_ADDR, $SLURM_JOB_ID) stay expandable."""
    return " ".join(f'"{a}"' if "$" in a else shlex.quote(a) for a in args)


def export(name: str, value: str | int) -> str:
    """``export NAME="${NAME:-value}"``: the plan's value unless the environment already has one.
    `value` is tuneplan's own (a number or a fixed path), never the user's text."""
    return f'export {name}="${{{name}:-{value}}}"'


def checkpoint_lines(p: LaunchPlan) -> list[str]:
    """The checkpoint settings the training script reads, named and commented."""
    return [
        *emit.comment_lines(
            [
                f"Checkpoints, for the training script to read: every {p.save_steps} optimizer "
                f"steps (~{p.result.checkpoint.interval_minutes:.0f} min, the interval the plan "
                "sets from the failure" + (" and preemption" if p.spot else "") + " rates),",
                f"the newest {p.checkpoints_kept} kept, and RESUME=1: start from the newest "
                "checkpoint in CHECKPOINT_DIR "
                "when one is there (Trainer: save_steps, save_total_limit, "
                "resume_from_checkpoint).",
            ]
        ),
        *(export(name, value) for name, value in p.checkpoint_env().items()),
    ]


def network(p: LaunchPlan) -> Interconnect:
    """The network between the plan's nodes: the request's, else EFA on AWS, else InfiniBand (what
    the planner assumes for a GPU class's typical rented node: one 400G or 200G rail per GPU,
    core/catalog/network.py)."""
    named = p.result.hardware.interconnect
    if named is not None:
        return Interconnect(named)
    providers = {
        (p.result.request.pricing.provider or "").strip().lower(),
        (p.result.cost.provider or "").lower(),
    }
    return Interconnect.efa if "aws" in providers else Interconnect.infiniband


def network_lines(p: LaunchPlan) -> list[str]:
    """NCCL's environment for the plan's network between nodes (nothing for one node: no network is
    used)."""
    if p.nodes == 1:
        return []
    net = network(p)
    if net is Interconnect.efa:
        return [
            *emit.comment_lines(
                [
                    "Network: AWS EFA, through the aws-ofi-nccl plugin (AWS Deep Learning AMIs "
                    "and containers have it).",
                    "FI_PROVIDER=efa keeps libfabric on EFA; NCCL_DEBUG=INFO shows 'Selected "
                    "provider is efa' at start.",
                ]
            ),
            export("FI_PROVIDER", "efa"),
            *emit.comment_lines(
                [
                    "Only with libfabric < 1.18 or aws-ofi-nccl < 1.7 on p4d/p5 (newer ones "
                    "detect GPUDirect RDMA):",
                    "export FI_EFA_USE_DEVICE_RDMA=1",
                ]
            ),
        ]
    if net is Interconnect.ethernet:
        return emit.comment_lines(
            [
                "Network: Ethernet; NCCL uses TCP sockets. If it picks the wrong interface, name "
                "the right one:",
                "export NCCL_SOCKET_IFNAME=eth0",
            ]
        )
    name = "RoCE" if net is Interconnect.roce else "InfiniBand"
    hints = [
        f"Network: {name}; NCCL finds the HCAs and GPUDirect RDMA itself. Only if the cluster's "
        "admins say so:",
        "export NCCL_IB_HCA=mlx5           # the HCAs to use (ibv_devices lists them)",
        "export NCCL_SOCKET_IFNAME=eth0    # the IP interface for NCCL's bootstrap",
    ]
    if net is Interconnect.roce:
        hints.append(
            "export NCCL_IB_GID_INDEX=3       # NCCL 2.21 and later choose the RoCE v2 GID "
            "themselves"
        )
    return emit.comment_lines(hints)


def files(p: LaunchPlan) -> dict[str, str]:
    lines = ["#!/usr/bin/env bash", *emit.comment_lines(p.header_lines()), "#"]
    if p.nodes == 1:
        lines += emit.comment_lines(
            [
                "Run: bash torchrun.sh [training script arguments]; TRAIN_SCRIPT defaults to "
                "train.py."
            ]
        )
    else:
        lines += emit.comment_lines(
            [
                f"Run the same command on each of the {p.nodes} nodes, with MASTER_ADDR the "
                "address of one of them",
                "(it hosts the rendezvous on MASTER_PORT, 29500 unless set): bash torchrun.sh "
                "[training script arguments].",
                "torchrun numbers the nodes itself; TRAIN_SCRIPT defaults to train.py.",
            ]
        )
    lines += ["set -euo pipefail", 'TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"', *checkpoint_lines(p)]
    if p.nodes > 1:
        lines += [
            *network_lines(p),
            ': "${MASTER_ADDR:?set MASTER_ADDR to the address of the node that hosts the '
            'rendezvous}"',
            f'MASTER_PORT="${{MASTER_PORT:-{PORT}}}"',
        ]
    lines.append(f'exec {quoted(command(p))} "$TRAIN_SCRIPT" "$@"')
    return {FILE: "\n".join(lines) + "\n"}
