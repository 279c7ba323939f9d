"""`run_cluster`: probe several hosts as one cluster — every node's own suite in parallel, then the
steps that need them all — streaming typed events and persisting everything as it arrives.

Why this shape: a node's own figures (its GPUs, health, storage) are exactly a single-host run's, so
each node gets an ordinary run (core.probes.run.runner.start_worker) with a row of its own in the
history, and all of them run at once on their own threads. The cluster run is one more row, whose
evidence holds only what needs several nodes (core.probes.cluster.evidence); its worker
(core.probes.cluster.worker) starts when every node's run has ended, because torchrun across the
nodes would otherwise compete with the nodes' own benchmarks. Every run reports through one queue
and `core.probes.run.run_queue.drain` persists them all from the thread iterating this generator, so
the store is written from one thread, as everywhere else.

Cancel (the ``cancel`` event, or closing the generator) halts every node's run and the cluster
steps; each kills its remote process groups and removes its work directories on its node.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from core.probes.checks.base import HostFacts
from core.probes.cluster.agreement import node_facts
from core.probes.cluster.evidence import ClusterEvidence, NodeReport
from core.probes.cluster.worker import CLUSTER_STEPS, ClusterWorker
from core.probes.evidence import ProbeEvidence, ProbeStatus
from core.probes.history.leases import mark_stale_runs, take_lease
from core.probes.history.store import ProbeStore
from core.probes.run.events import (
    LogEvent,
    ProbeFinished,
    ProbeStarted,
    RunEvent,
    RunFinished,
    RunStarted,
)
from core.probes.run.options import RunOptions
from core.probes.run.run_queue import Queue, Writer, drain
from core.probes.run.runner import start_worker
from core.probes.transport.base import Transport


@dataclass
class ClusterNode:
    """One host of the cluster: the label its own run is filed under and a connected transport."""

    label: str
    transport: Transport
    # where the other nodes reach it; None: found on the node (core.probes.cluster.session)
    address: str | None = None


class NodeEvent(BaseModel):
    """One event of one node's own run, tagged with the node."""

    kind: Literal["node"] = "node"
    t: float = Field(0.0, description="seconds since the cluster run started")
    node: str
    event: RunEvent


def check_nodes(nodes: list[ClusterNode]) -> None:
    """ValueError with one sentence when the nodes cannot make a cluster run."""
    if len(nodes) < 2:
        raise ValueError("a cluster run needs at least two hosts; probe a single host on its own")
    labels = [n.label for n in nodes]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"host '{repeated[0]}' is named twice; name each node of the cluster once")


class _NodeTracker:
    """What the generator learns about each node from its run's events, for the cluster evidence."""

    def __init__(self, cluster: ClusterEvidence) -> None:
        self.cluster = cluster
        self.facts: dict[str, HostFacts] = {}

    def see(self, node: str, event: RunEvent) -> None:
        report = self.cluster.node(node)
        assert report is not None
        if isinstance(event, RunStarted):
            self.facts[node] = event.facts or HostFacts()
        elif (
            isinstance(event, ProbeFinished)
            and report.error is None
            and event.outcome.status in (ProbeStatus.lost, ProbeStatus.interrupted)
        ):
            report.error = f"the connection was lost during {event.outcome.name}"
        elif (
            isinstance(event, LogEvent)
            and event.level == "error"
            and report.error is None
            and event.message.startswith(("connection lost", "could not reconnect"))
        ):
            report.error = event.message
        elif isinstance(event, RunFinished):
            report.state = event.status
            card = event.scorecard
            report.verdict = (
                card.verdict.value if card is not None and card.verdict is not None else None
            )
            report.facts = node_facts(event.evidence, self.facts.get(node))
            if event.status == "failed" and report.error is None:
                report.error = "its run failed (see its own run)"


def run_cluster(
    nodes: list[ClusterNode],
    options: RunOptions,
    store: ProbeStore,
    cancel: threading.Event,
    label: str,
    *,
    slurm_job: str | None = None,
) -> Iterator[RunEvent | NodeEvent]:
    """Yield the cluster run's `RunStarted`, every node's events as `NodeEvent`, the cluster steps'
    events and last the cluster run's `RunFinished` (see the module docstring). ValueError before
    starting when the nodes or the options are not valid."""
    check_nodes(nodes)
    options.probe_names()
    mark_stale_runs(store)
    t0 = time.monotonic()
    out: Queue = queue.Queue()
    halt = threading.Event()
    cluster_id = store.start_run(
        label,
        f"cluster {options.suite_label}",
        list(CLUSTER_STEPS),
        options.model_dump(mode="json"),
        started=time.time(),
    )
    take_lease(store, cluster_id)
    writers = {cluster_id: Writer(store, cluster_id, label)}
    cluster = ClusterEvidence(slurm_job=slurm_job)
    tracker = _NodeTracker(cluster)
    worker: ClusterWorker | None = None
    nodes_started = time.time()
    try:
        for opening in (
            RunStarted(run_id=cluster_id, host=label, probes=list(CLUSTER_STEPS)),
            ProbeStarted(name="nodes", index=1, total=len(CLUSTER_STEPS)),
        ):
            writers[cluster_id].persist(opening)
            yield opening
        node_of: dict[int, str] = {}
        threads = []
        for node in nodes:
            writer, thread = start_worker(node.transport, options, store, out, halt, node.label, t0)
            writers[writer.run_id] = writer
            node_of[writer.run_id] = node.label
            threads.append(thread)
            cluster.nodes.append(
                NodeReport(
                    node=node.label, run_id=writer.run_id, state="running", address=node.address
                )
            )
        for run_id, event in drain(out, writers, threads, cancel, halt, until=set(node_of)):
            tracker.see(node_of[run_id], event)
            yield NodeEvent(t=round(time.monotonic() - t0, 3), node=node_of[run_id], event=event)
        if cancel.is_set():
            halt.set()
        worker = ClusterWorker(
            {n.label: n.transport for n in nodes},
            tracker.facts,
            cluster,
            options,
            halt,
            out,
            cluster_id,
            t0,
            addresses={n.label: n.address for n in nodes},
            slurm_job=slurm_job,
        )
        thread = threading.Thread(
            target=worker.main,
            args=(nodes_started,),
            name=f"tuneplan-cluster-{cluster_id}",
            daemon=True,
        )
        thread.start()
        for _run_id, event in drain(out, writers, [thread], cancel, halt, until={cluster_id}):
            yield event
    finally:
        if worker is None or not worker.finished:
            halt.set()
            writers[cluster_id].persist(
                RunFinished(
                    t=round(time.monotonic() - t0, 3),
                    run_id=cluster_id,
                    evidence=ProbeEvidence(cluster=cluster),
                    status="cancelled",
                )
            )


__all__ = ["CLUSTER_STEPS", "ClusterNode", "NodeEvent", "check_nodes", "run_cluster"]
