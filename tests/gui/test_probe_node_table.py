"""A cluster run's node rows worked out from each node's own events (no window): the probe a node is
on, how its run ended with its verdict, the log lines that name the node, and a reopened run's nodes
from its evidence.

The events are built by hand as a node's run streams them (core.probes.run.events), wrapped as
run_cluster wraps them.
"""

from __future__ import annotations

from core.probes.cluster.evidence import NodeReport
from core.probes.cluster.run import NodeEvent
from core.probes.evidence import ProbeEvidence, ProbeOutcome, ProbeStatus, Scorecard, Verdict
from core.probes.run.events import LogEvent, ProbeFinished, ProbeStarted, RunFinished, RunStarted
from gui.probe.node_table import MAX_TABLE_HEIGHT, NodeProgress, NodeTable


def cells(progress: NodeProgress) -> list[list[str]]:
    return [row.cells for row in progress.table_rows()]


def test_each_node_row_follows_that_nodes_own_run():
    progress = NodeProgress()
    progress.reset(["a", "b"])
    assert cells(progress) == [["a", "—", "waiting", "—"], ["b", "—", "waiting", "—"]]
    assert progress.add(
        NodeEvent(t=0.1, node="b", event=RunStarted(run_id=7, host="b", probes=["inventory"]))
    ) == [("info", "node b: run 7 started")]
    progress.add(NodeEvent(t=0.2, node="b", event=ProbeStarted(name="inventory", index=1, total=2)))
    assert cells(progress)[1] == ["b", "inventory (1/2)", "running", "—"]
    outcome = ProbeOutcome(name="inventory", status=ProbeStatus.ok, started=0.0, ended=1.0)
    assert progress.add(NodeEvent(t=1.0, node="b", event=ProbeFinished(outcome=outcome))) == []
    assert cells(progress)[1] == ["b", "inventory: ok", "running", "—"]
    assert progress.add(
        NodeEvent(t=1.1, node="b", event=LogEvent(level="warning", message="GPU 0 is at 91 °C"))
    ) == [("warning", "node b: GPU 0 is at 91 °C")]
    card = Scorecard(verdict=Verdict.not_ready, checks=[], summary="NOT READY: one check failed")
    finished = RunFinished(run_id=7, evidence=ProbeEvidence(), scorecard=card, status="incomplete")
    assert progress.add(NodeEvent(t=2.0, node="b", event=finished)) == [
        ("warning", "node b: run 7 incomplete · NOT READY")
    ]
    assert cells(progress) == [["a", "—", "waiting", "—"], ["b", "—", "incomplete", "NOT READY"]]


def test_a_reopened_cluster_run_shows_its_nodes_as_they_ended():
    progress = NodeProgress()
    progress.show_reports(
        [
            NodeReport(node="a", run_id=2, state="completed", verdict="READY"),
            NodeReport(node="b", state="unreachable", error="node 'b' refused the connection"),
        ]
    )
    assert cells(progress) == [
        ["a", "—", "completed", "READY"],
        ["b", "node 'b' refused the connection", "unreachable", "—"],
    ]


def test_the_table_is_as_tall_as_its_rows_and_scrolls_past_four(qtbot):
    table = NodeTable()
    qtbot.addWidget(table)
    table.resize(900, 400)
    table.start(["a", "b"])
    qtbot.waitUntil(table.isVisible, timeout=2000)
    view = table.table
    two = view.height()
    every_row = view.horizontalHeader().height() + view.rowHeight(0) + view.rowHeight(1)
    assert every_row <= two < every_row + 12  # both rows shown whole, no blank rows under them
    assert view.verticalScrollBar().maximum() == 0
    table.start([f"node-{i}" for i in range(12)])
    assert view.height() == MAX_TABLE_HEIGHT  # twelve nodes: capped, the rest scroll
    qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > 0, timeout=2000)
