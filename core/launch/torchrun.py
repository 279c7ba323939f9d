"""`torchrun`: the ``torchrun`` command line for each node, as one shell script that picks its line by rank.

Flags are torch.distributed.run's (``torchrun --help``; torch/distributed/run.py ``get_args_parser``): a single
node runs ``--standalone``; several use the c10d rendezvous on node 0 (``--rdzv-backend c10d
--rdzv-endpoint $MASTER_ADDR:$MASTER_PORT``, port 29500 unless MASTER_PORT says), which assigns ranks itself,
so ``--node-rank`` only keeps the order stable. torchrun launches processes; the sharding, batch and precision
live in the training script's own config (``--format deepspeed`` / ``accelerate`` / ``torchtune``), so this
format refuses nothing.
"""

from __future__ import annotations

import shlex

from core.launch import emit
from core.launch.plan_view import LaunchPlan

FILE = "torchrun.sh"
PORT = 29500  # torchrun's default --master-port


def command(p: LaunchPlan, node_rank: int, endpoint: str = "$MASTER_ADDR:$MASTER_PORT") -> list[str]:
    """One node's torchrun arguments up to the training script (which the caller appends)."""
    if p.nodes == 1:
        return ["torchrun", "--standalone", "--nnodes=1", f"--nproc-per-node={p.gpus_per_node}"]
    return ["torchrun", f"--nnodes={p.nodes}", f"--nproc-per-node={p.gpus_per_node}", f"--node-rank={node_rank}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", f"--rdzv-id={p.name_slug}"]


def quoted(args: list[str]) -> str:
    """Arguments joined for a shell; variables ($MASTER_ADDR, $SLURM_JOB_ID) stay expandable."""
    return " ".join(f'"{a}"' if "$" in a else shlex.quote(a) for a in args)


def files(p: LaunchPlan) -> dict[str, str]:
    lines = ["#!/usr/bin/env bash", *emit.comment_lines(p.header_lines()), "#",
             "# Run this on every node with NODE_RANK set (0 on the node whose address is MASTER_ADDR);",
             "# arguments after the script name go to the training script (TRAIN_SCRIPT, default train.py).",
             "set -euo pipefail", 'TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"']
    if p.nodes == 1:
        lines.append(f'{quoted(command(p, 0))} "$TRAIN_SCRIPT" "$@"')
    else:
        lines += [': "${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}"',
                  f'MASTER_PORT="${{MASTER_PORT:-{PORT}}}"',
                  ': "${NODE_RANK:?set NODE_RANK to the rank of this node, 0 to ' + str(p.nodes - 1) + '}"',
                  'case "$NODE_RANK" in']
        for rank in range(p.nodes):
            lines.append(f'  {rank}) exec {quoted(command(p, rank))} "$TRAIN_SCRIPT" "$@" ;;')
        lines += [f'  *) echo "NODE_RANK must be 0 to {p.nodes - 1}" >&2; exit 2 ;;', "esac"]
    return {FILE: "\n".join(lines) + "\n"}
