"""The two torch checks across nodes in one torchrun launch: dist_sanity.py, then
allreduce_bench.py, in the same processes, so torchrun (a rendezvous of every node, then a Python
start per rank) starts once per node, not twice: on three nodes the second start was 22.8 s of the
probe.

Each script runs as itself (``runpy``), with its own arguments, in one process group: the first
``init_process_group`` makes it (with the sanity check's backend and timeout, the benchmark's being
the same backend), the benchmark's finds it made, and it is destroyed once, at the end. (Destroying
it and making a new one through torchrun's store raced at the end: one rank could leave the second
group's closing barrier before the other had reached it, and its node's torchrun then reported the
other rank failed.) Between the two, every rank prints the line "__tuneplan_phase allreduce", so the
caller can tell the check's output from the benchmark's. A failed sanity check ends the launch
without the benchmark (its exit status says so). Usage: torchrun ... cluster_torch.py --sanity
[dist_sanity.py's options] --bench [allreduce_bench.py's options]
"""

import os
import runpy
import sys

PHASE = "__tuneplan_phase allreduce"


def run(script, args):
    """Run a sibling script as __main__ with ``args``; its exit status (None or 0: success)."""
    sys.argv = [script, *args]
    try:
        runpy.run_path(
            os.path.join(os.path.dirname(os.path.abspath(__file__)), script), run_name="__main__"
        )
    except SystemExit as exc:
        return exc.code
    return 0


def one_group(dist):
    """Make ``init_process_group`` a no-op once a group exists and ``destroy_process_group`` one
    until the end; returns the real destroy."""
    init, destroy = dist.init_process_group, dist.destroy_process_group

    def init_once(*args, **kwargs):
        if not dist.is_initialized():
            init(*args, **kwargs)

    dist.init_process_group = init_once
    dist.destroy_process_group = lambda *args, **kwargs: None
    return destroy


def main():
    argv = sys.argv[1:]
    if "--sanity" not in argv or "--bench" not in argv:
        sys.stderr.write("usage: cluster_torch.py --sanity [options] --bench [options]\n")
        return 2
    import torch.distributed as dist

    destroy = one_group(dist)
    cut = argv.index("--bench")
    try:
        status = run("dist_sanity.py", argv[argv.index("--sanity") + 1 : cut])
        if status not in (0, None):
            return status
        sys.stdout.flush()
        os.write(1, (PHASE + "\n").encode("utf-8"))
        return run("allreduce_bench.py", argv[cut + 1 :])
    finally:
        if dist.is_initialized():
            destroy()


def exit_now(status):
    """End the process as ``sys.exit(status)`` would, but without Python's teardown: once the group
    is destroyed and the output flushed there is nothing left to release, and a rank's teardown with
    torch loaded took about a second on every node while the whole launch waited for it."""
    if isinstance(status, str):
        sys.stderr.write(status + "\n")
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status or 0)


if __name__ == "__main__":
    exit_now(main())
