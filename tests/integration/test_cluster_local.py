"""A cluster of two nodes that are both this machine (LocalTransport): the cluster run end to end
with real torchrun c10d and gloo, with nothing between the nodes but loopback. The network between
real hosts is tested over network namespaces (test_cluster_probe.py); this one runs wherever torch
is installed.

Expected figures are the issue's contract, not the code's: two nodes with one gloo rank each make a
world of two; each rank is told the interface its traffic leaves on (loopback here); the work
directories go.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from core.probes.cluster.run import ClusterNode, NodeEvent, run_cluster
from core.probes.history import ledger
from core.probes.history.store import ProbeStore
from core.probes.run.options import ProbeTimeouts, RunOptions
from core.probes.transport.base import WORKDIR_PREFIX
from core.probes.transport.local import LocalTransport


def _workdirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*")}


def _processes_in(workdirs: set[str]) -> list[str]:
    """Command lines of live processes that run inside one of the work directories."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(w in cmdline for w in workdirs) and "pytest" not in cmdline:
            found.append(cmdline)
    return found


def _options() -> RunOptions:
    return RunOptions(
        suite="inventory",
        python=sys.executable,
        collective_max_bytes=1 << 20,
        timeouts=ProbeTimeouts(distributed_s=90, collectives_s=120),
    )


def test_two_local_nodes_rendezvous_and_all_reduce_across_them(
    tmp_path: Path, need_torch: None
) -> None:
    store = ProbeStore(tmp_path / "probes.db")
    nodes = [ClusterNode("node-a", LocalTransport()), ClusterNode("node-b", LocalTransport())]
    events = list(run_cluster(nodes, _options(), store, threading.Event(), "pair"))
    finished = events[-1]
    assert finished.kind == "run_finished" and finished.status == "completed"
    cluster = finished.evidence.cluster
    assert cluster is not None
    assert [(n.node, n.state) for n in cluster.nodes] == [
        ("node-a", "completed"),
        ("node-b", "completed"),
    ]
    assert cluster.rendezvous is not None and cluster.rendezvous.reached_from == {"node-b": True}
    sanity = cluster.distributed
    assert sanity is not None and sanity.all_reduce_ok and sanity.backend == "gloo"
    assert sanity.world_size == 2 and sorted(r["RANK"] for r in sanity.ranks) == ["0", "1"]
    assert {r["ifname"] for r in sanity.ranks} == {"lo"}
    sweep = cluster.allreduce
    assert sweep is not None and sweep.collective is not None and sweep.collective.rows
    assert all(r.in_place is not None and r.in_place.wrong == 0 for r in sweep.collective.rows)
    # Every node's own run is in the history beside the cluster run, and the inter-node sweep was
    # charted live.
    hosts = {r.host for r in store.runs()}
    assert {"pair", "node-a", "node-b"} <= hosts
    assert any(
        isinstance(e, NodeEvent) and e.node == "node-b" and e.event.kind == "run_finished"
        for e in events
    )
    points = [e for e in events if e.kind == "series" and e.label == "inter-node"]
    assert points and max(points, key=lambda p: p.x).y > 0
    _assert_nothing_left(store, events)


def _assert_nothing_left(store: ProbeStore, events: Sequence[object]) -> None:
    """Every node's own work directory is gone, and the ledger of every node (where each directory a
    cluster step makes is written before it is used, and struck out only once removed) is empty."""
    node_dirs = [
        e.event.workdir
        for e in events
        if isinstance(e, NodeEvent) and e.event.kind == "run_started"
    ]
    assert len(node_dirs) == 2 and not any(os.path.exists(d) for d in node_dirs if d)
    for node in ("node-a", "node-b"):
        assert ledger.leftovers(store, node) == []


def test_cancel_during_torchrun_leaves_no_process_and_no_work_directory(
    tmp_path: Path, need_torch: None
) -> None:
    store = ProbeStore(tmp_path / "probes.db")
    before = _workdirs()
    cancel = threading.Event()
    nodes = [ClusterNode("node-a", LocalTransport()), ClusterNode("node-b", LocalTransport())]
    made: set[str] = set()
    finished = None
    events: list[object] = []
    for event in run_cluster(nodes, _options(), store, cancel, "pair"):
        events.append(event)
        made |= _workdirs() - before
        if event.kind == "probe_started" and event.name == "distributed":
            time.sleep(1.5)  # torchrun has started on both nodes
            made |= _workdirs() - before
            cancel.set()
        if event.kind == "run_finished":
            finished = event
    assert finished is not None and finished.status == "cancelled"
    outcomes = {o.name: o.status.value for o in store.load_run(finished.run_id).outcomes}
    assert outcomes["distributed"] == "cancelled" and outcomes["allreduce"] == "cancelled"
    assert made, "the cluster steps made work directories"
    deadline = time.monotonic() + 5
    while _processes_in(made) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_in(made) == []
    _assert_nothing_left(store, events)


def test_a_cluster_needs_two_distinct_hosts(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "probes.db")
    one = [ClusterNode("node-a", LocalTransport())]
    with pytest.raises(ValueError, match="at least two hosts"):
        next(run_cluster(one, _options(), store, threading.Event(), "x"))
    twice = [ClusterNode("node-a", LocalTransport()), ClusterNode("node-a", LocalTransport())]
    with pytest.raises(ValueError, match="'node-a' is named twice"):
        next(run_cluster(twice, _options(), store, threading.Event(), "x"))
