"""`tuneplan probe HOST1 HOST2 ...`: several hosts probed as one cluster (core.probes.cluster.run).

Every host is connected first, with the same host-key rules as a single host; one that cannot be
connected ends the command before anything runs (exit 3, 4 or 5, naming it), because a cluster run
without it would not answer the question asked. Progress lines are prefixed with the node they come
from. The cluster run and each node's own run are saved in the probe history; ``--json`` prints the
cluster run's JSON with every node's run under ``node_runs``. Exit codes as for one host: 6 when a
node was lost or hung mid-run (it is named, and what the others measured is saved).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from pathlib import Path
from typing import Any

from cli.common import EXIT_ERROR
from cli.probe_common import (
    EXIT_CANCELLED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ProbeExit,
    Progress,
    connect,
    load_explained,
    mark_stale,
    render_scorecard,
    sigint_cancels,
)
from cli.table import table
from core.probes import ProbeStore, RunOptions, run_json


class ClusterProgress(Progress):
    """Node lines prefixed with the node; the cluster steps' lines as for one host."""

    def event(self, ev: Any) -> None:
        if ev.kind != "node":
            if ev.kind == "run_started":
                self.say(
                    f"probing the cluster {ev.host} (run {ev.run_id}): every node's suite, then "
                    f"{', '.join(ev.probes[1:])}"
                )
                return
            super().event(ev)
            return
        inner = ev.event
        if inner.kind == "run_started":
            self.say(f"  [{ev.node}] {', '.join(inner.probes)} (run {inner.run_id})")
        elif inner.kind == "probe_finished":
            outcome = inner.outcome
            detail = f": {outcome.error}" if outcome.error else ""
            self.say(
                f"  [{ev.node}] {outcome.name} {outcome.status.value} "
                f"({max(0.0, outcome.ended - outcome.started):.1f} s){detail}"
            )
        elif inner.kind == "log" and inner.level != "info":
            self.say(f"  [{ev.node}] ! {inner.message}")
        elif inner.kind == "run_finished":
            verdict = (
                inner.scorecard.verdict.value
                if inner.scorecard and inner.scorecard.verdict
                else "no verdict"
            )
            self.say(f"  [{ev.node}] {inner.status}: {verdict}")


def nodes_table(doc: dict[str, Any]) -> str:
    """Node, state, verdict, address and its own run, from the cluster evidence."""
    cluster = (doc.get("evidence") or {}).get("cluster") or {}
    rows = [
        [
            n["node"],
            n["state"],
            n.get("verdict") or "-",
            n.get("address") or "-",
            n.get("interface") or "-",
            str(n.get("run_id") or "-"),
        ]
        for n in cluster.get("nodes", [])
    ]
    return table(
        rows, ["node", "state", "verdict", "address", "interface", "run"], align="text", max_cell=40
    )


def open_history(args: argparse.Namespace) -> tuple[ProbeStore, ClusterProgress]:
    """The probe history (its notes said on stderr, dead clients' runs marked) and the progress
    printer."""
    store = ProbeStore.open_or_memory(Path(args.db).expanduser() if args.db else None)
    for note in (store.notice, store.fault):
        if note:
            print(f"tuneplan: {note}", file=sys.stderr, flush=True)
    progress = ClusterProgress(sys.stderr if args.json else sys.stdout)
    mark_stale(store, progress)
    return store, progress


def probe_cluster(args: argparse.Namespace, options: RunOptions) -> int:
    from core.probes import ClusterNode, check_nodes

    store, progress = open_history(args)
    label = args.name or "cluster " + " + ".join(t.strip() for t in args.targets)
    nodes: list[ClusterNode] = []
    try:
        for text in args.targets:
            transport, node_label = connect(args, text)
            nodes.append(ClusterNode(label=node_label, transport=transport))
        check_nodes(nodes)
    except ValueError as exc:
        _close(nodes)
        raise ProbeExit(2, str(exc)) from None
    except ProbeExit:
        _close(nodes)
        raise
    return run_and_report(nodes, options, store, label, args.json, progress)


def run_and_report(
    nodes: list[Any],
    options: RunOptions,
    store: ProbeStore,
    label: str,
    as_json: bool,
    progress: ClusterProgress,
    slurm_job: str | None = None,
) -> int:
    """Run the cluster (connected nodes), print the result, return the exit code; the transports are
    closed."""
    from core.probes import run_cluster

    cancel = threading.Event()
    finished: Any = None
    try:
        with sigint_cancels(cancel, lambda m: print(f"tuneplan: {m}", file=sys.stderr, flush=True)):
            for event in run_cluster(nodes, options, store, cancel, label, slurm_job=slurm_job):
                progress.event(event)
                if event.kind == "run_finished":
                    finished = event
    finally:
        _close(nodes)
    if finished is None:
        raise ProbeExit(EXIT_ERROR, "the cluster run ended without a result")
    run = load_explained(store, finished.run_id)
    doc = run_json(run)
    cluster = run.evidence.cluster if run.evidence is not None else None
    node_ids = (
        [n.run_id for n in cluster.nodes if n.run_id is not None] if cluster is not None else []
    )
    doc["node_runs"] = [run_json(load_explained(store, i)) for i in node_ids]
    store.close()
    if as_json:
        print(json.dumps(doc, indent=2, default=str))
    else:
        progress.say("")
        progress.say(nodes_table(doc))
        progress.say("")
        progress.say(render_scorecard(doc))
        if store.path is not None:
            progress.say(
                f"\nsaved as run {finished.run_id} (and node runs "
                f"{', '.join(map(str, node_ids))}) in {store.path}"
            )
    partial = run.evidence.partial if run.evidence is not None else {}
    return _exit_code(finished.status, cluster, label, finished.run_id, partial)


def _exit_code(status: str, cluster: Any, label: str, run_id: int, partial: dict[str, str]) -> int:
    if status == "completed":
        return EXIT_OK
    if status == "cancelled":
        print(
            "tuneplan: the cluster run was cancelled; what was measured is saved", file=sys.stderr
        )
        return EXIT_CANCELLED
    failed = cluster.failed_nodes if cluster is not None else {}
    if status in ("interrupted", "incomplete") and failed:
        named = "; ".join(f"{node}: {why}" for node, why in failed.items())
        kept = (
            "what was measured" if len(failed) == len(cluster.nodes) else "what the others measured"
        )
        print(
            f"tuneplan: {len(failed)} node{'s' if len(failed) > 1 else ''} of {label} did not run "
            f"to the end ({named}); {kept} is saved as run {run_id}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    # every node ran to the end, but a sweep between them was cut
    if status == "incomplete" and partial:
        print(
            f"tuneplan: the cluster run of {label} is incomplete: {'; '.join(partial.values())}; "
            f"what was measured is saved as run {run_id}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(
        f"tuneplan: the cluster run failed; see run {run_id} for what was measured", file=sys.stderr
    )
    return EXIT_ERROR


def _close(nodes: list[Any]) -> None:
    for node in nodes:
        # closing one connection must not stop closing the others
        with contextlib.suppress(Exception):
            node.transport.close()


__all__ = ["ClusterProgress", "nodes_table", "open_history", "probe_cluster", "run_and_report"]
