"""all_reduce bandwidth with torch.distributed, printed in nccl-tests' format (so one parser reads
both).

Run under torchrun: NCCL on CUDA GPUs (one rank per GPU), gloo on CPUs. For each message size it
times `iters` all_reduces of float32 after `warmup` ones, on every rank; the reported time is the
slowest rank's mean. algbw = bytes / time / 1e9 and busbw = algbw * 2(n-1)/n, as nccl-tests define
them for all_reduce (nccl-tests doc/PERFORMANCE.md). torch has no out-of-place all_reduce, so the
"out-of-place" columns time a copy into a second buffer followed by the in-place all_reduce. #wrong
counts elements that differ from the exact sum after one checked all_reduce of (rank + 1) values.
Usage: torchrun --standalone --nproc-per-node N allreduce_bench.py [--min-bytes B] [--max-bytes B]
       [--factor F] [--iters N] [--warmup N] [--backend auto|nccl|gloo] [--timeout S]
"""

import argparse
import datetime
import os
import socket
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--min-bytes", type=int, default=4096)
    parser.add_argument("--max-bytes", type=int, default=16 << 20)
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    parser.add_argument("--timeout", type=float, default=120.0)
    return parser.parse_args()


def timed(dist, torch, fn, iters, device):
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / iters


def main():
    args = parse_args()
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = args.backend in ("auto", "nccl") and torch.cuda.is_available()
    backend = "nccl" if use_cuda else "gloo"
    if args.backend == "nccl" and not use_cuda:
        print("NCCL needs CUDA, which this Python cannot use", file=sys.stderr)
        return 2
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    name = torch.cuda.get_device_name(device) if use_cuda else "cpu"
    info = [None] * world
    dist.all_gather_object(info, (rank, os.getpid(), socket.gethostname(), local_rank, name))
    sizes = []
    size = max(4, args.min_bytes // 4 * 4)
    while size <= args.max_bytes:
        sizes.append(size)
        size *= max(2, args.factor)
    if rank == 0:
        print(
            f"# tuneplan allreduce_bench: torch {torch.__version__} torch.distributed backend "
            f"{backend}"
        )
        print(
            f"# nThread 1 nGpus 1 minBytes {sizes[0]} maxBytes {sizes[-1]} step: "
            f"{args.factor}(factor) warmup iters: {args.warmup} iters: {args.iters} agg iters: 1 "
            "validation: 1 graph: 0"
        )
        print("#\n# Using devices")
        for r, pid, host, local, dev_name in info:
            print(
                f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10s} device {local:2d} "
                f"[{'cuda' if use_cuda else 'cpu'}] {dev_name}"
            )
        print("#")
        print(
            "#                                                              out-of-place"
            "                       in-place          "
        )
        print(
            "#       size         count      type   redop    root     time   algbw   busbw #wrong"
            "     time   algbw   busbw #wrong"
        )
        print(
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
            "     (us)  (GB/s)  (GB/s)       "
        )
        sys.stdout.flush()
    factor = 2.0 * (world - 1) / world
    busbws = []
    for size in sizes:
        count = size // 4
        src = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
        buf = torch.empty_like(src)

        def out_of_place(src=src, buf=buf):
            buf.copy_(src)
            dist.all_reduce(buf)

        def in_place(buf=buf):
            dist.all_reduce(buf)

        for _ in range(args.warmup):
            out_of_place()
        times = []
        for fn in (out_of_place, in_place):
            elapsed = torch.tensor(
                [timed(dist, torch, fn, args.iters, device)], dtype=torch.float64, device=device
            )
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            times.append(float(elapsed.item()))
        buf.copy_(src)
        dist.all_reduce(buf)
        expected = world * (world + 1) / 2.0
        wrong = torch.tensor(
            [int((buf != expected).sum().item())], dtype=torch.int64, device=device
        )
        dist.all_reduce(wrong)
        if rank == 0:
            cells = []
            for seconds in times:
                algbw = size / seconds / 1e9
                busbw = algbw * factor
                busbws.append(busbw)
                cells.append(
                    f"{seconds * 1e6:8.1f}  {algbw:6.2f}  {busbw:6.2f}  {int(wrong.item()):6d}"
                )
            print(f"{size:12d}  {count:12d}     float     sum      -1  {cells[0]}  {cells[1]}")
            sys.stdout.flush()
    if rank == 0:
        print("# Out of bounds values : 0 OK")
        print(f"# Avg bus bandwidth    : {sum(busbws) / max(1, len(busbws)):.4f} ")
        print("#")
        sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
