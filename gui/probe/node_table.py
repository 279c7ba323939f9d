"""The per-node view of a cluster run: one row a node with the probe it is on, its state and its
verdict.

A cluster run streams each node's own single-host run as ``NodeEvent``s (core.probes.cluster.run),
all nodes in parallel; the pane's charts and progress follow the cluster's own steps, so this small
table is where a person sees that one node is still on its burn while another is done, or that a
node failed and why. ``NodeProgress`` works out the rows from the events without Qt; ``NodeTable``
only shows them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.probes import (
    LogEvent,
    NodeEvent,
    NodeReport,
    ProbeFinished,
    ProbeStarted,
    RunFinished,
    RunStarted,
)
from gui.probe.run_feed import LogLine
from gui.table_model import Row, RowsModel, make_table

HEADER = ["node", "current probe", "state", "verdict"]
WAITING = "waiting"
MAX_TABLE_HEIGHT = 160  # about four rows; more nodes scroll


@dataclass
class NodeRow:
    node: str
    probe: str = "—"
    state: str = WAITING
    verdict: str = "—"
    run_id: int | None = None
    done: int = 0  # the node's probes finished, of ``total``
    total: int = 0


class NodeProgress:
    """Each node's row, updated event by event (no Qt); nodes appear in the order they were
    announced."""

    def __init__(self) -> None:
        self.rows: dict[str, NodeRow] = {}

    def reset(self, nodes: Sequence[str]) -> None:
        self.rows = {node: NodeRow(node) for node in nodes}

    def add(self, event: NodeEvent) -> list[LogLine]:
        """Update the node's row; return the event-log lines the event is worth (a node's run
        starting and ending, its warnings and errors), each naming the node."""
        row = self.rows.setdefault(event.node, NodeRow(event.node))
        inner, node = event.event, event.node
        match inner:
            case RunStarted():
                row.state, row.run_id = "running", inner.run_id
                return [("info", f"node {node}: run {inner.run_id} started")]
            case ProbeStarted():
                row.probe, row.state = f"{inner.name} ({inner.index}/{inner.total})", "running"
                row.done, row.total = max(row.done, inner.index - 1), inner.total
            case ProbeFinished():
                row.probe = f"{inner.outcome.name}: {inner.outcome.status.value}"
                row.done = min(row.done + 1, row.total)
            case LogEvent() if inner.level != "info":
                return [(inner.level, f"node {node}: {inner.message}")]
            case RunFinished():
                row.state, row.run_id, row.probe = inner.status, inner.run_id, "—"
                row.done = row.total = max(row.total, 1)
                verdict = inner.scorecard.verdict if inner.scorecard is not None else None
                row.verdict = verdict.value if verdict is not None else "no verdict"
                level = "info" if inner.status == "completed" else "warning"
                return [(level, f"node {node}: run {inner.run_id} {inner.status} · {row.verdict}")]
        return []

    def fraction(self) -> float:
        """How far the nodes' own suites have got together (0 to 1): the share of the cluster's
        first step."""
        if not self.rows:
            return 0.0
        return sum(r.done / r.total for r in self.rows.values() if r.total) / len(self.rows)

    def show_reports(self, reports: Sequence[NodeReport]) -> None:
        """A reopened cluster run: each node as it ended, from the cluster's evidence."""
        self.rows = {
            r.node: NodeRow(
                r.node,
                probe=r.error or "—",
                state=r.state,
                verdict=r.verdict or "—",
                run_id=r.run_id,
            )
            for r in reports
        }

    def table_rows(self) -> list[Row]:
        return [Row([r.node, r.probe, r.state, r.verdict]) for r in self.rows.values()]


class NodeTable(QWidget):
    """The Live tab's node table, shown only while a cluster run (or a reopened one) is on
    screen."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Cluster nodes")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel("Nodes")
        layout.addWidget(self.title)
        self.progress = NodeProgress()
        self.model = RowsModel(HEADER, self)
        self.table = make_table(self.model, "Cluster nodes", sortable=False)
        layout.addWidget(self.table)
        self.setVisible(False)

    def start(self, nodes: Sequence[str]) -> None:
        """A cluster run begins on ``nodes``: every node waiting."""
        self.progress.reset(nodes)
        self.title.setText(f"Nodes: {len(nodes)}")
        self._show()
        self.setVisible(True)

    def add(self, event: NodeEvent) -> list[LogLine]:
        lines = self.progress.add(event)
        self._show()
        return lines

    def show_reports(self, reports: Sequence[NodeReport]) -> None:
        self.progress.show_reports(reports)
        self.title.setText(f"Nodes: {len(reports)}")
        self._show()
        self.setVisible(bool(reports))

    def clear(self) -> None:
        self.progress.reset([])
        self._show()
        self.setVisible(False)

    def _show(self) -> None:
        self.model.set_rows(self.progress.table_rows())
        self._fit_height()

    def _fit_height(self) -> None:
        """As tall as its rows, up to MAX_TABLE_HEIGHT: two nodes leave the charts below the room,
        many scroll."""
        table = self.table
        rows = sum(table.rowHeight(r) for r in range(self.model.rowCount()))
        scrollbar = table.horizontalScrollBar()
        wanted = (
            table.horizontalHeader().sizeHint().height()
            + rows
            + 2 * table.frameWidth()
            + (scrollbar.sizeHint().height() if scrollbar.isVisible() else 0)
        )
        table.setFixedHeight(min(MAX_TABLE_HEIGHT, wanted))

    def cells(self) -> list[list[str]]:
        """Every cell's text, row by row, as shown."""
        return [list(row.cells) for row in self.model.rows()]


def with_nodes(nodes: NodeTable, charts: QWidget) -> QWidget:
    """The Live tab: the node table (shown for cluster runs only) above the run's charts."""
    tab = QWidget()
    layout = QVBoxLayout(tab)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(nodes)
    layout.addWidget(charts, 1)
    return tab
