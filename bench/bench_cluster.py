"""What probing a cluster costs over probing one host, and how fast a cluster run reloads.

The reload is of a 3-node run, from the history.

    python -m bench.bench_cluster [--nodes 3] [--runs 3] [--suite inventory]
                                  [--write docs/performance.md]

Needs root (it makes network namespaces): the nodes are those of the cluster tests
(tests/integration/netns.py), a namespace each with its own address, host name and sshd, all on this
machine. *One node* is `run_suite` of the suite over SSH to the first node; *cluster* is
`run_cluster` of the same suite on every node plus the steps between nodes (rendezvous check,
torchrun c10d sanity check, inter-node all_reduce sweep up to 64 KiB; the GPU and InfiniBand steps
skip here). Each is the median wall time of --runs runs over already connected transports, so SSH
handshakes are not counted. The cluster time is also split: until the last node's own run finished,
and the steps between nodes after. *Reload* opens the history file afresh and times
`ProbeStore.load_run` of the cluster row and of its node rows (median of 20). Every node shares this
machine's CPUs, so the cluster figure is an upper bound of what separate hosts would take: 3 nodes'
suites compete for the same cores here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench import perf_doc
from core.probes.cluster.run import ClusterNode, NodeEvent, run_cluster
from core.probes.history.store import ProbeStore
from core.probes.run.events import ProbeFinished, RunFinished
from core.probes.run.options import RunOptions
from core.probes.run.runner import run_suite
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget
from tests.integration.netns import NetnsCluster, find_missing_privileges

SECTION_TITLE = "## Cluster probe"
SWEEP_MAX_BYTES = 1 << 16
RELOADS = 20


@dataclass
class Result:
    nodes: int
    suite: str
    single_s: list[float]
    cluster_s: list[float]
    two_nodes_s: list[float]  # the same cluster run on the first two nodes only
    cluster_nodes_phase_s: list[float]  # until the last node's own run finished
    cluster_row_load_s: float
    node_rows_load_s: float
    node_rows: int
    cluster_status: str
    # each cluster step that ran (not skipped) -> its seconds in each run
    step_s: dict[str, list[float]]
    torch_start_cpu_s: float  # CPU seconds of the two interpreters torchrun starts on a node


def connect(cluster: NetnsCluster, known_absent: Path) -> list[SshTransport]:
    out = []
    for node in cluster.nodes:
        transport = SshTransport(
            SshTarget(
                host=node.address,
                port=22,
                user=node.sshd.user,
                identity_files=[str(cluster.client_key_path)],
                identities_only=True,
            ),
            known_hosts_file=cluster.known_hosts_path,
            user_known_hosts_file=known_absent,
            allow_agent=False,
            look_for_keys=False,
            connect_timeout=5,
        )
        transport.connect()
        out.append(transport)
    return out


def run(nodes: int, runs: int, suite: str) -> Result:
    options = RunOptions(
        suite=suite,
        python=sys.executable,
        collective_max_bytes=SWEEP_MAX_BYTES,
        fio_size=16 << 20,
        fio_runtime_s=1.0,
        small_files=100,
    )
    with tempfile.TemporaryDirectory(prefix="tuneplan-bench-") as tmp:
        cluster = NetnsCluster(workdir=Path(tmp) / "nodes", count=nodes)
        transports: list[SshTransport] = []
        try:
            cluster.start()
            transports = connect(cluster, Path(tmp) / "absent")
            store = ProbeStore(Path(tmp) / "probes.db")
            single, whole, node_phase, two = [], [], [], []
            steps: dict[str, list[float]] = {}
            last: RunFinished | None = None
            for _ in range(runs):
                t0 = time.perf_counter()
                for _event in run_suite(
                    transports[0], options, store, threading.Event(), "one node"
                ):
                    pass
                single.append(time.perf_counter() - t0)
                members = [
                    ClusterNode(label=f"{n.sshd.user}@{n.address}", transport=t)
                    for n, t in zip(cluster.nodes, transports, strict=True)
                ]
                t0 = time.perf_counter()
                for _step in run_cluster(
                    members[:2], options, store, threading.Event(), "bench two nodes"
                ):
                    pass
                two.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                nodes_done = t0
                for event in run_cluster(
                    members, options, store, threading.Event(), "bench cluster"
                ):
                    if isinstance(event, NodeEvent) and isinstance(event.event, RunFinished):
                        nodes_done = time.perf_counter()
                    if (
                        isinstance(event, ProbeFinished)
                        and event.outcome.status.value == "ok"
                        and event.outcome.name != "nodes"
                    ):
                        steps.setdefault(event.outcome.name, []).append(
                            event.outcome.ended - event.outcome.started
                        )
                    if isinstance(event, RunFinished):
                        last = event
                whole.append(time.perf_counter() - t0)
                node_phase.append(nodes_done - t0)
            store.close()
            assert last is not None and last.evidence.cluster is not None, (
                "the cluster run did not finish"
            )
            node_ids = [n.run_id for n in last.evidence.cluster.nodes if n.run_id is not None]
            cluster_load, nodes_load = reload_times(Path(tmp) / "probes.db", last.run_id, node_ids)
        finally:
            for transport in transports:
                transport.close()
            problems = cluster.teardown()
            if problems:
                print("teardown: " + "; ".join(problems), file=sys.stderr)
    return Result(
        nodes=nodes,
        suite=suite,
        single_s=single,
        cluster_s=whole,
        two_nodes_s=two,
        cluster_nodes_phase_s=node_phase,
        cluster_row_load_s=cluster_load,
        node_rows_load_s=nodes_load,
        node_rows=len(node_ids),
        cluster_status=last.status,
        step_s=steps,
        torch_start_cpu_s=torch_start_cpu(),
    )


def torch_start_cpu(runs: int = 3) -> float:
    """Median CPU seconds (user + system) of the two interpreters torchrun starts on a node before
    any check runs: its agent (`import torch.distributed.run`) and a rank (`import
    torch.distributed`). This is the floor of the distributed step on nodes that share this
    machine's cores."""
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for module in ("torch.distributed.run", "torch.distributed"):
            subprocess.run([sys.executable, "-c", f"import {module}"], check=True, timeout=300)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(times)


def reload_times(path: Path, cluster_id: int, node_ids: list[int]) -> tuple[float, float]:
    """Median seconds to load the cluster row, and all its node rows, from a freshly opened history
    file."""
    cluster_times, node_times = [], []
    for _ in range(RELOADS):
        store = ProbeStore(path)
        t0 = time.perf_counter()
        store.load_run(cluster_id)
        cluster_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for run_id in node_ids:
            store.load_run(run_id)
        node_times.append(time.perf_counter() - t0)
        store.close()
    return statistics.median(cluster_times), statistics.median(node_times)


def figures(r: Result) -> dict[str, float]:
    single, whole, phase, two = (
        statistics.median(v)
        for v in (r.single_s, r.cluster_s, r.cluster_nodes_phase_s, r.two_nodes_s)
    )
    cores = len(os.sched_getaffinity(0))
    return {
        "single": single,
        "cluster": whole,
        "nodes_phase": phase,
        "between": whole - phase,
        "ratio": whole / single,
        "reload": r.cluster_row_load_s + r.node_rows_load_s,
        "two": two,
        "per_extra_node": (whole - two) / (r.nodes - 2) if r.nodes > 2 else float("nan"),
        "cores": cores,
        "torch_floor": r.nodes * r.torch_start_cpu_s / min(cores, r.nodes),
    }


GOAL_PER_NODE = 0.25  # issue 25: each extra node adds less than a quarter of one node's time


def verdict(ratio: float, goal: float) -> str:
    return "within" if ratio <= goal else "over"


def report_text(r: Result) -> str:
    f = figures(r)
    goal = 1 + GOAL_PER_NODE * (r.nodes - 1)
    return "\n".join(
        [
            f"suite '{r.suite}', median of {len(r.single_s)} runs; cluster run status: "
            f"{r.cluster_status}",
            f"one node:          {f['single']:.2f} s",
            f"2-node cluster:    {f['two']:.2f} s ({f['two'] / f['single']:.2f}x one node)",
            f"{r.nodes}-node cluster:    {f['cluster']:.2f} s ({f['ratio']:.2f}x one node, goal "
            f"{goal:.2f}x: {verdict(f['ratio'], goal)})",
            f"  each node past two: +{f['per_extra_node']:.2f} s "
            f"({f['per_extra_node'] / f['single']:.0%} of one node, goal {GOAL_PER_NODE:.0%}: "
            f"{verdict(f['per_extra_node'] / f['single'], GOAL_PER_NODE)})",
            f"  nodes' own runs: {f['nodes_phase']:.2f} s ({f['nodes_phase'] / f['single']:.2f}x "
            "one node)",
            f"  between nodes:   {f['between']:.2f} s: "
            + ", ".join(f"{name} {statistics.median(v):.2f} s" for name, v in r.step_s.items()),
            f"torchrun's start: {r.torch_start_cpu_s:.2f} s of CPU a node; {r.nodes} nodes on "
            f"{f['cores']} cores: >= {f['torch_floor']:.2f} s",
            f"reload: cluster row {r.cluster_row_load_s * 1e3:.1f} ms, its {r.node_rows} node rows "
            f"{r.node_rows_load_s * 1e3:.1f} ms, together {f['reload'] * 1e3:.1f} ms",
        ]
    )


def section_markdown(r: Result, runs: int, day: dt.date, m: dict[str, str]) -> str:
    f = figures(r)
    goal = 1 + GOAL_PER_NODE * (r.nodes - 1)
    extra = f["per_extra_node"] / f["single"]
    return "\n".join(
        [
            SECTION_TITLE,
            "",
            f"Measured {day.isoformat()} with `python -m bench.bench_cluster --nodes {r.nodes} "
            f"--runs {runs} --suite {r.suite}` (as root: the nodes are network namespaces with an "
            f"sshd each, tests/integration/netns.py) on {m['cpu']}, {m['cores']}, Python "
            f"{m['python']}, {m['os']}; load {m['load']}. Median wall time of {runs} runs over "
            f"connected SSH transports; the {r.nodes} nodes share this machine's cores, so their "
            "own runs compete for them and the cluster figures are an upper bound of separate "
            "hosts'. The 2-node run is the same cluster run on the first two nodes, so the "
            "difference is what one more node costs. One torchrun launch per node serves the "
            "distributed and allreduce steps (cluster_torch.py: the sanity check, then the sweep, "
            "in the same processes), so the distributed row holds both and the allreduce row only "
            "reads what it left. What each node does on its own in the steps (work directories, "
            "uploads, route and clock reads, removal) runs on every node at once. The GPU and "
            "InfiniBand steps skip here (no nccl-tests, perftest or DCGM).",
            "",
            "| case | measured | vs one node | goal | verdict |",
            "|---|---:|---:|---:|---|",
            f"| one node: `run_suite` ({r.suite}) over SSH | {f['single']:.2f} s | 1× | — | — |",
            f"| 2-node cluster: `run_cluster`, whole run | {f['two']:.2f} s | "
            f"{f['two'] / f['single']:.2f}× | — | — |",
            f"| {r.nodes}-node cluster: `run_cluster`, whole run | {f['cluster']:.2f} s | "
            f"{f['ratio']:.2f}× | {goal:.2f}× | {verdict(f['ratio'], goal)} |",
            f"| each node past two (({r.nodes}-node − 2-node) / {r.nodes - 2}) | "
            f"+{f['per_extra_node']:.2f} s | +{extra:.0%} | +{GOAL_PER_NODE:.0%} | "
            f"{verdict(extra, GOAL_PER_NODE)} |",
            f"| of the {r.nodes}-node run: the nodes' own runs (in parallel) | "
            f"{f['nodes_phase']:.2f} s | {f['nodes_phase'] / f['single']:.2f}× | — | — |",
            f"| of the {r.nodes}-node run: the steps between nodes | {f['between']:.2f} s | — | — "
            "| — |",
            *(
                f"| — {name} | {statistics.median(v):.2f} s | — | — | — |"
                for name, v in r.step_s.items()
            ),
            "| torchrun's start on one node, CPU (agent + rank import torch) | "
            f"{r.torch_start_cpu_s:.2f} s | {r.torch_start_cpu_s / f['single']:.2f}× | — | — |",
            f"| reload the cluster row, `load_run` | {r.cluster_row_load_s * 1e3:.1f} ms | — | — "
            "| — |",
            f"| reload its {r.node_rows} node rows, `load_run` each | "
            f"{r.node_rows_load_s * 1e3:.1f} ms | — | — | — |",
            "",
            "Why the whole-run goal is out of reach on this machine: the steps between nodes "
            "start torchrun on every node, and its agent and rank each import torch, "
            f"{r.torch_start_cpu_s:.2f} s of CPU per node here. {r.nodes} nodes on {f['cores']} "
            f"cores need at least {f['torch_floor']:.2f} s for that alone, "
            f"{f['torch_floor'] / f['single']:.2f}× one node's whole {r.suite} run, before any "
            "check runs; a single "
            "host's run has no such step. On separate hosts the starts overlap, but one start "
            "still takes longer than a single node's inventory run. What one more node adds here "
            "is CPU time too: its torchrun start and its "
            f"own suite run on the {f['cores']} cores the first two nodes already fill; every "
            "wait a node adds (its "
            "work directory, uploads, route and clock reads, torchrun's launch) overlaps the "
            "others'.",
            "",
            "Before: each step started torchrun on every node, 8.25 s and 8.21 s of a 29.91 s "
            "run, 8.29× one node; with one launch per node, 33.67 s, 6.51× one node (load 3.61); "
            "the per-node steps then still ran one node after another and each rank's teardown "
            "after its output held every launch about a second.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_cluster", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--suite", default="inventory")
    parser.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help=f"(re)write the '{SECTION_TITLE}' section of FILE",
    )
    args = parser.parse_args(argv)
    if args.nodes < 2 or args.runs < 1:
        parser.error("--nodes must be at least 2 and --runs at least 1")
    missing = find_missing_privileges()
    if missing:
        print(f"cannot make the nodes: {missing}", file=sys.stderr)
        return 1
    at_start = perf_doc.machine()  # the load average before our own processes add to it
    result = run(args.nodes, args.runs, args.suite)
    print(report_text(result))
    if args.write:
        section = section_markdown(result, args.runs, dt.date.today(), at_start)
        perf_doc.write_section(args.write, SECTION_TITLE, section)
        print(f"\nwrote the '{SECTION_TITLE}' section of {args.write}")
    return 0 if result.cluster_status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
