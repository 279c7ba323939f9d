"""Cluster probing end to end over real SSH between network namespaces (tests/integration/netns.py).

Each "node" is a network namespace on this machine with its own address, host name and sshd;
tuneplan probes two and three of them as one cluster, through `tuneplan probe HOST1 HOST2 ...` run
as a subprocess and through `run_cluster` itself. torchrun's c10d rendezvous and gloo all_reduce
then really cross the namespaces' network stacks (CPU torch, two ranks per node). The faults are
real too: a node's sshd and its sessions killed mid-run, a node whose sessions are frozen with
SIGSTOP (it hangs), SIGINT to the CLI. What is left afterwards is read from ``ip netns pids`` and
each node's TMPDIR, not from the app's own account. Expected figures come from the harness (the
nodes' names and addresses) and from nccl-tests' definition of bus bandwidth (busbw = algbw *
2(n-1)/n for all_reduce, nccl-tests doc/PERFORMANCE.md), never from the code under test.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.probes.checks.base import HostFacts, ProbeCallbacks, ProbeContext
from core.probes.cluster.agreement import clock_offset
from core.probes.cluster.evidence import ClusterEvidence
from core.probes.cluster.run import CLUSTER_STEPS, ClusterNode, NodeEvent, run_cluster
from core.probes.cluster.session import NodeSession
from core.probes.evidence import ProbeEvidence
from core.probes.history.records import StoredRun
from core.probes.history.store import ProbeStore
from core.probes.run.events import (
    LogEvent,
    ProbeFinished,
    ProbeStarted,
    RunEvent,
    RunFinished,
    RunStarted,
    SeriesPoint,
)
from core.probes.run.options import ProbeTimeouts, RunOptions
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

try:
    from tests.integration.netns import NetnsCluster, Node
    from tests.integration.sshd import SshdServer
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from netns import NetnsCluster, Node  # type: ignore[no-redef]
    from sshd import SshdServer  # type: ignore[no-redef]

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
# CPU torch: one gloo rank per node (core.probes.cluster.torchrun_steps.plan_node_launch)
RANKS_PER_NODE = 1
NODE_SUITE = "inventory"  # the quickest node suite: the cluster steps are what is under test
SWEEP_MAX_BYTES = 1 << 14  # a short inter-node all_reduce sweep (4 KiB and 16 KiB)
CLI_LIMIT_S = 150.0


@pytest.fixture(autouse=True)
def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def target(node: Node) -> str:
    return f"{node.sshd.user}@{node.address}"


def cli_args(cluster: NetnsCluster, db: Path, *more: str) -> list[str]:
    return [
        "probe",
        *(target(n) for n in cluster.nodes),
        "-i",
        str(cluster.client_key_path),
        "--known-hosts",
        str(cluster.known_hosts_path),
        "--db",
        str(db),
        "--python",
        sys.executable,
        "--suite",
        NODE_SUITE,
        *more,
    ]


def start_cli(args: list[str]) -> subprocess.Popen[str]:
    """`python -m cli probe ...` as a terminal would start it (its own process, its own signals)."""
    return subprocess.Popen(
        [sys.executable, "-m", "cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "SSH_AUTH_SOCK": ""},
    )


def finish_cli(
    client: subprocess.Popen[str], within_s: float = CLI_LIMIT_S
) -> tuple[int, str, str]:
    try:
        out, err = client.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:
        client.kill()
        out, err = client.communicate(timeout=10)
        raise AssertionError(
            f"the CLI did not end within {within_s:.0f} s; stderr: {err[-3000:]}"
        ) from None
    return client.returncode, out, err


def transports(
    cluster: NetnsCluster, tmp_path: Path, made: list[SshTransport]
) -> list[ClusterNode]:
    nodes = []
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
            user_known_hosts_file=tmp_path / "absent",
            allow_agent=False,
            look_for_keys=False,
            connect_timeout=5,
        )
        made.append(transport)
        transport.connect()
        nodes.append(ClusterNode(label=target(node), transport=transport))
    return nodes


@pytest.fixture
def ssh_nodes(tmp_path: Path) -> Iterator[Callable[[NetnsCluster], list[ClusterNode]]]:
    made: list[SshTransport] = []
    yield lambda cluster: transports(cluster, tmp_path, made)
    for transport in made:
        transport.close()


def options(**timeouts: float) -> RunOptions:
    return RunOptions(
        suite=NODE_SUITE,
        python=sys.executable,
        collective_max_bytes=SWEEP_MAX_BYTES,
        timeouts=ProbeTimeouts(**timeouts),
    )


def cluster_evidence(run: StoredRun | RunFinished) -> ClusterEvidence:
    assert run.evidence is not None and run.evidence.cluster is not None, (
        "the cluster run has no cluster evidence"
    )
    return run.evidence.cluster


def log_lines(events: list[RunEvent | NodeEvent]) -> str:
    """The cluster run's own log and step outcomes, for an assertion's message."""
    lines = []
    for e in events:
        if isinstance(e, LogEvent):
            lines.append(f"{e.t:6.1f} {e.level}: {e.message}")
        elif isinstance(e, ProbeFinished):
            lines.append(
                f"{e.t:6.1f} {e.outcome.name}: {e.outcome.status.value} {e.outcome.error or ''}"
            )
    return "\n".join(lines)


def torch_processes(node: Node) -> list[str]:
    """python / torchrun processes in the node's namespace: what a run must not leave behind."""
    return [c for c in node.commands() if "python" in c or "torch" in c]


def wait_for(
    condition: Callable[[], bool],
    within_s: float,
    what: str,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    end = time.monotonic() + within_s
    while time.monotonic() < end and alive():
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {within_s:.0f} s")


def inter_node_torchrun_everywhere(cluster: NetnsCluster) -> bool:
    """A torchrun with a c10d rendezvous runs in every node's namespace: the step between nodes is
    under way."""
    return all(any("--rdzv" in c or "--nnodes" in c for c in n.commands()) for n in cluster.nodes)


def assert_nothing_left(nodes: list[Node], within_s: float = 10.0) -> None:
    end = time.monotonic() + within_s
    while time.monotonic() < end and any(torch_processes(n) or n.work_dirs() for n in nodes):
        time.sleep(0.1)
    assert {n.name: torch_processes(n) for n in nodes} == {n.name: [] for n in nodes}
    assert {n.name: n.work_dirs() for n in nodes} == {n.name: [] for n in nodes}


def assert_runs_across_the_nodes(evidence: ClusterEvidence, cluster: NetnsCluster) -> None:
    """The distributed sanity check ran one process group over every node, each rank on its node."""
    nnodes = len(cluster.nodes)
    distributed = evidence.distributed
    assert distributed is not None and distributed.error is None, distributed
    assert distributed.backend == "gloo" and distributed.all_reduce_ok is True
    assert (distributed.nnodes, distributed.nproc_per_node) == (nnodes, RANKS_PER_NODE)
    assert distributed.world_size == nnodes * RANKS_PER_NODE == len(distributed.ranks)
    assert sorted(int(r["RANK"]) for r in distributed.ranks) == list(range(nnodes * RANKS_PER_NODE))
    hosts = [r["host"] for r in distributed.ranks]
    assert {h: hosts.count(h) for h in hosts} == {n.name: RANKS_PER_NODE for n in cluster.nodes}
    assert evidence.rendezvous is not None and evidence.rendezvous.ok
    assert evidence.rendezvous.host in (cluster.nodes[0].address, cluster.nodes[0].name)
    assert {n.node: n.address for n in evidence.nodes} == {
        target(n): n.address for n in cluster.nodes
    }
    # The namespaces share this machine's clock: any offset measured is the measurement's own error.
    offsets = {n.node: n.facts.clock_offset_s for n in evidence.nodes}
    assert all(o is not None and abs(o) < 1.0 for o in offsets.values()), offsets
    sweep = evidence.allreduce
    assert sweep is not None and sweep.error is None and sweep.world_size == nnodes * RANKS_PER_NODE
    assert (
        sweep.collective is not None and sweep.collective.rows and sweep.collective.wrong_total == 0
    )
    factor = 2 * (sweep.world_size - 1) / sweep.world_size  # nccl-tests PERFORMANCE.md, all_reduce
    for row in sweep.collective.rows:
        timing = row.in_place
        assert (
            timing is not None
            and timing.time_us
            and timing.time_us > 0
            and timing.algbw_gbps is not None
        )
        assert timing.busbw_gbps is not None and timing.wrong == 0
        # GB/s printed to 0.01: algbw = bytes / time, busbw = algbw * 2(n-1)/n
        assert timing.algbw_gbps == pytest.approx(
            row.size_bytes / (timing.time_us * 1e3), abs=0.006
        )
        assert timing.busbw_gbps == pytest.approx(timing.algbw_gbps * factor, abs=0.015)


# -- two and three nodes, completed
# ---------------------------------------------------------------------------


def test_two_nodes_through_the_cli(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    cluster = netns_cluster_factory(2)
    db = tmp_path / "probes.db"
    code, out, err = finish_cli(start_cli(cli_args(cluster, db, "--json")))
    assert code == 0, err[-3000:]
    doc = json.loads(out)
    assert doc["status"] == "completed"
    evidence = ClusterEvidence.model_validate(doc["evidence"]["cluster"])
    assert_runs_across_the_nodes(evidence, cluster)
    store = ProbeStore(db)
    try:
        cluster_row = store.load_run(doc["run_id"])
        assert cluster_evidence(cluster_row) == evidence
        assert any(p.series == "busbw" and p.label == "inter-node" for p in cluster_row.series)
        for node in evidence.nodes:
            assert node.state == "completed" and node.run_id is not None
            own = store.load_run(node.run_id)
            assert (own.summary.host, own.summary.status) == (node.node, "completed")
            assert own.evidence is not None and own.evidence.inventory is not None
            assert own.evidence.inventory.hostname == cluster.node(node.address or "").name
    finally:
        store.close()
    assert_nothing_left(cluster.nodes)


def test_three_nodes_through_run_cluster(
    netns_cluster_factory: Callable[[int], NetnsCluster],
    ssh_nodes: Callable[[NetnsCluster], list[ClusterNode]],
    tmp_path: Path,
    need_torch: None,
) -> None:
    cluster = netns_cluster_factory(3)
    store = ProbeStore(tmp_path / "probes.db")
    try:
        events = list(
            run_cluster(ssh_nodes(cluster), options(), store, threading.Event(), "three nodes")
        )
        first, last = events[0], events[-1]
        assert (
            isinstance(first, RunStarted)
            and first.host == "three nodes"
            and first.probes == list(CLUSTER_STEPS)
        )
        assert isinstance(last, RunFinished) and last.status == "completed", last
        # Every node's own run streamed, start to end, tagged with the node.
        by_node: dict[str, list[RunEvent]] = {}
        for event in events:
            if isinstance(event, NodeEvent):
                by_node.setdefault(event.node, []).append(event.event)
        assert sorted(by_node) == sorted(target(n) for n in cluster.nodes)
        for node_events in by_node.values():
            assert isinstance(node_events[0], RunStarted) and isinstance(
                node_events[-1], RunFinished
            )
            assert node_events[-1].status == "completed"
        points = [e for e in events if isinstance(e, SeriesPoint) and e.series == "busbw"]
        assert points and {p.label for p in points} == {"inter-node"}
        evidence = cluster_evidence(last)
        assert_runs_across_the_nodes(evidence, cluster)
        sweep = evidence.allreduce.collective if evidence.allreduce is not None else None
        assert sweep is not None and {int(p.x) for p in points} >= {
            r.size_bytes for r in sweep.rows
        }
        stored = store.load_run(last.run_id)
        assert stored.summary.status == "completed" and cluster_evidence(stored) == evidence
        assert sorted(
            store.load_run(n.run_id).summary.host for n in evidence.nodes if n.run_id
        ) == sorted(by_node)
    finally:
        store.close()
    assert_nothing_left(cluster.nodes)


# -- faults
# --------------------------------------------------------------------------------------------------


def test_a_node_whose_sshd_stops_mid_run_is_named_and_the_rest_is_kept(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    cluster = netns_cluster_factory(2)
    kept, lost = cluster.nodes
    db = tmp_path / "probes.db"
    client = start_cli(cli_args(cluster, db, "--json"))
    try:
        wait_for(
            lambda: inter_node_torchrun_everywhere(cluster),
            90,
            "the inter-node torchrun",
            alive=lambda: client.poll() is None,
        )
        lost.sshd.stop()  # the server, its connections and what they started: the node is gone
    finally:
        code, out, err = finish_cli(client)
    assert code == 6, err[-3000:]
    assert target(lost) in err
    doc = json.loads(out)
    assert doc["status"] in ("incomplete", "interrupted")
    evidence = ClusterEvidence.model_validate(doc["evidence"]["cluster"])
    assert list(evidence.failed_nodes) == [target(lost)]
    assert evidence.distributed is not None and evidence.distributed.failed_node == target(lost)
    assert evidence.allreduce is None  # one node left: nothing crosses a network any more
    store = ProbeStore(db)
    try:
        for node in evidence.nodes:
            assert node.run_id is not None, node
            own = store.load_run(node.run_id)
            # every node's own run is kept
            assert own.evidence is not None and own.evidence.inventory is not None
    finally:
        store.close()
    assert_nothing_left([kept])


def test_a_node_whose_connection_drops_mid_step_has_its_torchrun_ended_and_its_directory_removed(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    cluster = netns_cluster_factory(2)
    dropped = cluster.nodes[1]
    db = tmp_path / "probes.db"
    client = start_cli(cli_args(cluster, db, "--json"))
    try:
        wait_for(
            lambda: inter_node_torchrun_everywhere(cluster),
            90,
            "the inter-node torchrun",
            alive=lambda: client.poll() is None,
        )
        # A network drop: the node's SSH connections die, its sshd still listens, and the commands
        # they started (its torchrun) run on, as a dropped connection leaves them.
        assert dropped.sshd.kill_connections() >= 1
    finally:
        code, out, err = finish_cli(client)
    assert code == 6, err[-3000:]
    evidence = ClusterEvidence.model_validate(json.loads(out)["evidence"]["cluster"])
    assert list(evidence.failed_nodes) == [target(dropped)]
    # Ended when its step was abandoned, before tuneplan exited: not minutes later, and no work
    # directory left for the next run to remove from under a running torchrun.
    assert_nothing_left(cluster.nodes, within_s=0)


# sitecustomize.py: a rank that stops at a size
SWEEP_CUT = Path(__file__).resolve().parent / "sweep_cut"
# the CLI's gloo sweep: 4 KiB to 16 MiB, each 4 times the last
CPU_SWEEP_KIB = [4, 16, 64, 256, 1024, 4096, 16384]


def busbw_points(db: Path) -> int:
    """The inter-node busbw chart points the running CLI has stored so far (its history is a WAL
    SQLite file)."""
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return int(
                conn.execute("SELECT COUNT(*) FROM series WHERE series = 'busbw'").fetchone()[0]
            )
    except sqlite3.Error:
        return 0  # not created yet


def test_a_node_dropped_mid_sweep_leaves_it_partial_ungraded_and_the_run_incomplete(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    """Node 2's rank stops at the sweep's third size (64 KiB; sitecustomize.py), then its SSH
    sessions die, as in a network drop: the sweep holds 4 and 16 KiB only. It must be named partial
    and never graded, the run INCOMPLETE (exit 6), and the dropped node's torchrun and work
    directory gone once it answers again."""
    cluster = netns_cluster_factory(2)
    dropped = cluster.nodes[1]
    marker = tmp_path / "cut"
    dropped.restart_sshd_with(
        PYTHONPATH=str(SWEEP_CUT),
        TUNEPLAN_TEST_CUT_AT=str(64 << 10),
        TUNEPLAN_TEST_CUT_MARKER=str(marker),
    )
    db = tmp_path / "probes.db"
    client = start_cli(cli_args(cluster, db, "--json"))
    try:
        # The rank stopped at 64 KiB, and the rows of 4 and 16 KiB reached the client (their chart
        # points are in the history): then the drop.
        wait_for(
            lambda: marker.exists() and busbw_points(db) == 2,
            120,
            "the rank's stop at 64 KiB",
            alive=lambda: client.poll() is None,
        )
        # its torchrun runs on, as a dropped connection leaves it
        assert dropped.sshd.kill_connections() >= 1
    finally:
        code, out, err = finish_cli(client)
    assert code == 6, err[-3000:]
    doc = json.loads(out)
    assert doc["status"] == "incomplete"
    evidence = ClusterEvidence.model_validate(doc["evidence"]["cluster"])
    assert list(evidence.failed_nodes) == [target(dropped)]
    sweep = evidence.allreduce.collective if evidence.allreduce is not None else None
    assert sweep is not None and [r.size_bytes >> 10 for r in sweep.rows] == CPU_SWEEP_KIB[:2]
    cut = (
        "2 of 7 message sizes, up to 16 KiB (64 KiB, 256 KiB, 1 MiB, 4 MiB and 16 MiB not reached)"
    )
    assert cut in doc["evidence"]["partial"]["allreduce"]
    checks = {c["name"]: c for c in doc["scorecard"]["checks"]}
    busbw = checks["All-reduce busbw between nodes"]
    assert busbw["status"] == "INFO" and busbw["measured"].startswith("partial: ")
    assert busbw["reason"] == f"not graded: the sweep was cut after {cut}"
    assert checks["allreduce: not measured"]["measured"].startswith("partial: ")
    assert doc["scorecard"]["verdict"] != "READY"
    assert_nothing_left(cluster.nodes, within_s=0)


def test_a_rank_that_ends_between_two_sizes_leaves_the_sweep_partial_and_the_run_incomplete(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    """Node 2's rank ends (exit 3) at 64 KiB while its node keeps answering: no node failed, yet the
    sweep is cut, so the run is still INCOMPLETE (exit 6), saying why, and nothing is left on either
    node."""
    cluster = netns_cluster_factory(2)
    cluster.nodes[1].restart_sshd_with(
        PYTHONPATH=str(SWEEP_CUT),
        TUNEPLAN_TEST_CUT_AT=str(64 << 10),
        TUNEPLAN_TEST_CUT_EXIT="1",
        TUNEPLAN_TEST_CUT_MARKER=str(tmp_path / "cut"),
    )
    code, out, err = finish_cli(start_cli(cli_args(cluster, tmp_path / "probes.db", "--json")))
    assert code == 6, err[-3000:]
    doc = json.loads(out)
    evidence = ClusterEvidence.model_validate(doc["evidence"]["cluster"])
    assert doc["status"] == "incomplete" and evidence.failed_nodes == {}
    cut = (
        "2 of 7 message sizes, up to 16 KiB (64 KiB, 256 KiB, 1 MiB, 4 MiB and 16 MiB not reached)"
    )
    assert cut in err and cut in doc["evidence"]["partial"]["allreduce"]
    assert {c["name"]: c["status"] for c in doc["scorecard"]["checks"]}[
        "All-reduce busbw between nodes"
    ] == "INFO"
    # The nodes have no GPU, so each is NOT READY on its own card; the unmeasured step is named
    # after that.
    assert doc["scorecard"]["summary"].endswith("; and allreduce was not measured.")
    assert_nothing_left(cluster.nodes)


def test_a_node_that_hangs_ends_the_run_in_bounded_time_naming_it(
    netns_cluster_factory: Callable[[int], NetnsCluster],
    ssh_nodes: Callable[[NetnsCluster], list[ClusterNode]],
    tmp_path: Path,
    need_torch: None,
) -> None:
    cluster = netns_cluster_factory(3)
    hung = cluster.nodes[2]
    store = ProbeStore(tmp_path / "probes.db")
    limits = {"command_s": 10.0, "distributed_s": 15.0, "collectives_s": 30.0, "cleanup_s": 10.0}
    events: list[RunEvent | NodeEvent] = []
    frozen_at: list[float] = []

    def freeze_once_started(event: RunEvent | NodeEvent) -> None:
        if not frozen_at and isinstance(event, ProbeStarted) and event.name == "distributed":
            wait_for(lambda: inter_node_torchrun_everywhere(cluster), 30, "the inter-node torchrun")
            hung.freeze()
            frozen_at.append(time.monotonic())

    try:
        for event in run_cluster(
            ssh_nodes(cluster), options(**limits), store, threading.Event(), "hang"
        ):
            events.append(event)
            freeze_once_started(event)
    finally:
        store.close()
    assert frozen_at, "the distributed step never started"
    elapsed = time.monotonic() - frozen_at[0]
    bound = (
        limits["distributed_s"]
        + limits["collectives_s"]
        + 2 * limits["cleanup_s"]
        + limits["command_s"]
    )
    assert elapsed < bound, f"the run took {elapsed:.0f} s after the hang (bound {bound:.0f} s)"
    last = events[-1]
    assert isinstance(last, RunFinished) and last.status == "incomplete", log_lines(events)
    evidence = cluster_evidence(last)
    assert list(evidence.failed_nodes) == [target(hung)], log_lines(events)
    assert evidence.distributed is not None and evidence.distributed.failed_node == target(hung)
    # The steps after the hang go on with the two nodes left: the all_reduce sweep between them is
    # kept.
    rest = [target(n) for n in cluster.nodes[:2]]
    assert evidence.allreduce is not None and evidence.allreduce.nodes == rest, log_lines(events)
    assert evidence.allreduce.collective is not None and evidence.allreduce.collective.rows
    assert_nothing_left(cluster.nodes[:2])


def test_cancel_mid_run_leaves_nothing_on_any_node(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    cluster = netns_cluster_factory(2)
    db = tmp_path / "probes.db"
    client = start_cli(cli_args(cluster, db))
    try:
        wait_for(
            lambda: inter_node_torchrun_everywhere(cluster),
            90,
            "the inter-node torchrun",
            alive=lambda: client.poll() is None,
        )
        client.send_signal(signal.SIGINT)
    finally:
        code, _, err = finish_cli(client, within_s=60)
    assert code == 130, err[-3000:]
    assert_nothing_left(cluster.nodes)
    store = ProbeStore(db)
    try:
        runs = store.runs()
    finally:
        store.close()
    node_targets = {target(n) for n in cluster.nodes}
    # the cluster row
    assert [r.status for r in runs if r.host not in node_targets] == ["cancelled"]
    assert {
        r.host: r.status in ("completed", "cancelled") for r in runs if r.host in node_targets
    } == dict.fromkeys(node_targets, True)


# -- the clocks
# ---------------------------------------------------------------------------------------------


def test_a_slow_shell_start_is_not_taken_for_clock_skew(
    sshd_factory: Callable[..., SshdServer], tmp_path: Path
) -> None:
    """A host whose every command starts 2 s late (sshd's ForceCommand sleeps first, as a ~/.bashrc
    running ``pyenv init`` does on a loaded host) must not read as a node clock 1 s off: the server
    is this machine, so the true offset is 0. Reading ``date`` against the midpoint of the whole
    command said +1.3 s here."""
    server = sshd_factory(extra_config='ForceCommand sleep 2; exec bash -c "$SSH_ORIGINAL_COMMAND"')
    transport = server.connected_transport(tmp_path)
    try:
        ctx = ProbeContext(
            transport=transport,
            options=RunOptions(),
            workdir="/nonexistent",
            facts=HostFacts(),
            evidence=ProbeEvidence(),
            cancel=threading.Event(),
            callbacks=ProbeCallbacks(
                log=lambda *_: None, point=lambda *_: None, raw=lambda *_: None
            ),
            clock=time.monotonic,
            resources=ROOT / "resources" / "probes",
        )
        started = time.monotonic()
        offset, text = clock_offset(
            NodeSession(node=server.target, transport=transport, facts=HostFacts(), ctx=ctx),
            timeout=30,
        )
        assert time.monotonic() - started >= 2.0, (
            "the shell did not start slowly: the test tests nothing"
        )
    finally:
        transport.close()
    assert offset is not None and abs(offset) < 0.5, (offset, text)
