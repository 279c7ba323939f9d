"""torch.distributed sanity check, run under torchrun on the probed host.

Every rank prints one line "TUNEPLAN_RANK <json>" with the environment torchrun gave it (RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, host, pid, NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME)
and what its all_reduce returned; rank 0 then prints "TUNEPLAN_DIST <json>" with the verdict. The
checks are exact: the sum of (rank + 1) over all ranks must be n(n+1)/2 in every element, and the
sum of ones must be the world size (stas00 torch-distributed-gpu-test.py does the latter). A barrier
with a short timeout catches hangs. Usage: torchrun --standalone --nproc-per-node N dist_sanity.py
[--backend auto|nccl|gloo] [--timeout S]
"""

import argparse
import datetime
import json
import os
import socket
import sys

ENV_KEYS = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "NCCL_IB_HCA",
    "CUDA_VISIBLE_DEVICES",
)


def emit(line):
    """One write() per line: lines of several ranks sharing a pipe then never interleave
    (PIPE_BUF)."""
    sys.stdout.flush()
    os.write(1, (line + "\n").encode("utf-8"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    import torch
    import torch.distributed as dist

    env = {key: os.environ.get(key) for key in ENV_KEYS}
    local_rank = int(env["LOCAL_RANK"] or 0)
    use_cuda = args.backend in ("auto", "nccl") and torch.cuda.is_available()
    backend = "nccl" if use_cuda else "gloo"
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    values = torch.full((1024,), float(rank + 1), dtype=torch.float32, device=device)
    dist.all_reduce(values)
    expected = world * (world + 1) / 2.0
    ones = torch.ones(1, dtype=torch.float32, device=device)
    dist.all_reduce(ones)
    ok = bool((values == expected).all().item()) and float(ones.item()) == float(world)
    dist.barrier()
    record = {
        "rank": rank,
        "world_size": world,
        "backend": backend,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "device": str(device),
        "env": env,
        "sum_first": float(values[0].item()),
        "expected": expected,
        "ones": float(ones.item()),
        "ok": ok,
    }
    emit("TUNEPLAN_RANK " + json.dumps(record))
    flags = torch.tensor([1 if ok else 0], dtype=torch.int64, device=device)
    dist.all_reduce(flags)
    if rank == 0:
        summary = {
            "backend": backend,
            "world_size": world,
            "ranks_ok": int(flags.item()),
            "all_reduce_ok": int(flags.item()) == world,
            "torch": torch.__version__,
        }
        emit("TUNEPLAN_DIST " + json.dumps(summary))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
