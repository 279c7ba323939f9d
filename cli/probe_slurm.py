"""`tuneplan probe --slurm LOGIN [--nodes N] [--partition P]`: a Slurm allocation probed as one
cluster.

tuneplan connects to the login node only (SSH with the same host-key rules as any target, or this
machine with ``--local``), asks Slurm for N nodes (core.probes.transport.slurm.SlurmAllocation), and
runs the cluster probe (cli.probe_cluster.run_and_report) on them, each compute node reached through
``srun`` steps: no SSH to a compute node is needed. The allocation is cancelled on the way out
whatever happened (completed, failed, Ctrl-C), which ends every step still running on every node.
Exit codes as for a cluster of hosts; a Slurm that refuses the allocation (no Slurm, unknown
partition, too few nodes, the queue wait too long) is exit 1 with one sentence.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TYPE_CHECKING, Any

from cli.common import EXIT_ERROR, EXIT_USAGE
from cli.probe_common import EXIT_CANCELLED, ProbeExit, connect, sigint_cancels

# loaded when a Slurm probe runs: `tuneplan plan` builds the probe parser without them
if TYPE_CHECKING:
    from core.probes import RunOptions

DEFAULT_NODES = 2
DEFAULT_TIME_LIMIT_MIN = 60


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The Slurm flags of `tuneplan probe` (called from cli.probe.register)."""
    p.add_argument(
        "--slurm",
        nargs="?",
        const="",
        default=None,
        metavar="LOGIN",
        help="probe a Slurm allocation as one cluster: connect to the login node LOGIN "
        "([user@]host[:port] or an ssh alias; with --local, this machine), allocate --nodes nodes "
        "with salloc and run every probe on them through srun",
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=DEFAULT_NODES,
        metavar="N",
        help=f"with --slurm: how many nodes to allocate (default {DEFAULT_NODES})",
    )
    p.add_argument(
        "--partition",
        metavar="P",
        help="with --slurm: the partition to allocate in (default: Slurm's default partition)",
    )
    p.add_argument(
        "--salloc-arg",
        action="append",
        default=[],
        metavar="OPTION",
        help="with --slurm: one more salloc option the site requires, written with '=' "
        "(--salloc-arg=--account=proj, --salloc-arg=--qos=debug); repeat for several",
    )
    p.add_argument(
        "--slurm-time",
        type=int,
        default=DEFAULT_TIME_LIMIT_MIN,
        metavar="MIN",
        help="with --slurm: the allocation's time limit in minutes (default "
        f"{DEFAULT_TIME_LIMIT_MIN})",
    )


def check_slurm_flags(args: argparse.Namespace) -> None:
    """`ProbeExit` (usage) with one sentence when the Slurm flags do not make a Slurm run, or are
    given without --slurm."""
    if args.slurm is None:
        given = [
            flag
            for flag, value in (
                ("--partition", args.partition),
                ("--nodes", args.nodes != DEFAULT_NODES),
                ("--salloc-arg", args.salloc_arg),
                ("--slurm-time", args.slurm_time != DEFAULT_TIME_LIMIT_MIN),
            )
            if value
        ]
        if given:
            raise ProbeExit(EXIT_USAGE, f"{', '.join(given)} only applies to --slurm LOGIN")
        return
    if args.targets:
        raise ProbeExit(
            EXIT_USAGE,
            f"--slurm takes the login node as its value; TARGET '{args.targets[0]}' cannot be "
            f"given with it",
        )
    if bool(args.slurm.strip()) == bool(args.local):
        raise ProbeExit(
            EXIT_USAGE,
            "--slurm needs a login node (--slurm LOGIN) or --local, not both"
            if args.local
            else "--slurm needs a login node: --slurm LOGIN, or --local --slurm for this machine",
        )
    if args.nodes < 2:
        raise ProbeExit(
            EXIT_USAGE,
            f"--nodes {args.nodes}: a cluster run needs 2 nodes or more; probe one node "
            f"as a single host",
        )
    if args.slurm_time < 1:
        raise ProbeExit(EXIT_USAGE, f"--slurm-time {args.slurm_time} must be 1 minute or more")
    from core.probes import salloc_command

    try:
        salloc_command(args.nodes, args.partition, args.slurm_time, extra_args=args.salloc_arg)
    except ValueError as exc:
        raise ProbeExit(EXIT_USAGE, str(exc)) from None


def probe_slurm(args: argparse.Namespace, options: RunOptions) -> int:
    """Connect to the login node, allocate, run the cluster probe on the allocation, release it."""
    from cli.probe_cluster import open_history, run_and_report
    from core.probes import AllocationCancelled, ClusterNode, SlurmAllocation, SlurmError

    check_slurm_flags(args)
    store, progress = open_history(args)
    login, login_label = connect(args, args.slurm.strip() or None)  # --local: this machine
    login_name = "this machine" if args.local else login_label
    allocation = SlurmAllocation(login)
    try:
        cancel = threading.Event()
        where = f" in partition '{args.partition}'" if args.partition else ""
        progress.say(f"asking Slurm on {login_name} for {args.nodes} nodes{where}")
        try:
            with sigint_cancels(
                cancel, lambda m: print(f"tuneplan: {m}", file=sys.stderr, flush=True)
            ):
                names = allocation.allocate(
                    args.nodes,
                    args.partition,
                    args.slurm_time,
                    extra_args=args.salloc_arg,
                    cancel=cancel,
                )
        except AllocationCancelled as exc:
            print(f"tuneplan: {exc}", file=sys.stderr)
            return EXIT_CANCELLED
        except SlurmError as exc:
            raise ProbeExit(EXIT_ERROR, str(exc)) from None
        job = allocation.job_id
        assert job is not None
        progress.say(f"Slurm job {job}: {', '.join(names)}")
        nodes: list[Any] = [
            ClusterNode(
                label=name,
                transport=allocation.transport(name),
                address=allocation.addresses.get(name),
            )
            for name in names
        ]
        label = args.name or f"Slurm at {login_name}" + (
            f", partition {args.partition}" if args.partition else ""
        )
        return run_and_report(nodes, options, store, label, args.json, progress, slurm_job=job)
    finally:
        allocation.release()
        login.close()


__all__ = ["add_arguments", "check_slurm_flags", "probe_slurm"]
