"""Past runs of the selected host (for a cluster, its own runs and its nodes'): reopen one (charts,
events and scorecard from the store), compare two runs, or compare with a run of another host, and
export a run.

Store reads are short and run on the GUI thread; a run's samples come back as NumPy columns in one
query.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal, SignalInstance
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from core.probes import ProbeStore, RunSummary
from gui.forms import button_row
from gui.probe.run_feed import fmt_duration, fmt_time
from gui.table_model import PAYLOAD_ROLE, Row, RowsModel, make_table

HEADER = ["run", "host", "started", "suite", "status", "verdict", "duration"]


def run_row(run: RunSummary) -> Row:
    duration = (run.ended - run.started) if run.ended else None
    return Row(
        [
            str(run.id),
            run.host,
            fmt_time(run.started),
            run.suite,
            run.status,
            run.verdict or "—",
            fmt_duration(duration),
        ],
        sort=[run.id, run.host, run.started, run.suite, run.status, run.verdict or "", duration],
        payload=run,
    )


def selected_runs(view: QAbstractItemView) -> list[RunSummary]:
    model = view.selectionModel()
    rows = sorted(model.selectedRows(), key=lambda i: i.row()) if model is not None else []
    return [r.data(PAYLOAD_ROLE) for r in rows if isinstance(r.data(PAYLOAD_ROLE), RunSummary)]


class RunPicker(QDialog):
    """Pick one run from every host's history (to compare with a run of another host)."""

    def __init__(self, runs: list[RunSummary], exclude: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare with…")
        self.setAccessibleName("Pick a run to compare with")
        self.resize(760, 420)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Pick the run to compare with (any host):"))
        self.model = RowsModel(HEADER, self)
        self.model.set_rows([run_row(r) for r in runs if r.id != exclude])
        self.table = make_table(self.model, "All runs")
        self.table.doubleClicked.connect(lambda _i: self.accept())
        layout.addWidget(self.table, 1)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def choose(self, run_id: int) -> None:
        for row in range(self.table.model().rowCount()):
            run = self.table.model().index(row, 0).data(PAYLOAD_ROLE)
            if run.id == run_id:
                self.table.selectRow(row)
                return
        raise KeyError(f"run {run_id} is not in the list")

    def chosen(self) -> RunSummary | None:
        runs = selected_runs(self.table)
        return runs[0] if runs else None


class HistoryView(QWidget):
    """Signals: ``reopen(int)`` run id to show; ``compare(int, int)`` two run ids;
    ``export_pdf(int)``, ``export_json(int)`` a run to export; ``picking(object)`` the RunPicker
    just opened (tests use it)."""

    reopen = Signal(int)
    compare = Signal(int, int)
    export_pdf = Signal(int)
    export_json = Signal(int)
    picking = Signal(object)

    def __init__(self, store: ProbeStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.host: str | None = None
        self.also: list[str] = []  # a cluster's nodes, whose runs are listed with the cluster's
        self.setAccessibleName("Run history")
        layout = QVBoxLayout(self)
        self.title = QLabel("Past runs")
        self.title.setAccessibleName("History title")
        layout.addWidget(self.title)
        row, self.buttons = button_row(
            [
                ("reopen", "Reopen", self._reopen),
                ("compare", "Compare two", self._compare_two),
                ("other", "Compare with another host…", self._compare_other),
                ("pdf", "Export PDF…", lambda: self._export(self.export_pdf)),
                ("json", "Export JSON…", lambda: self._export(self.export_json)),
            ]
        )
        layout.addLayout(row)
        self.model = RowsModel(HEADER, self)
        self.table = make_table(self.model, "Past runs of this host")
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.doubleClicked.connect(lambda _i: self._reopen())
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._enable())
        layout.addWidget(self.table, 1)
        self.picker: RunPicker | None = None
        self._enable()

    def show_host(self, host: str | None, also: Sequence[str] = ()) -> None:
        """List the runs of ``host``; for a cluster, ``also`` names its nodes, whose own runs are
        listed too."""
        self.host, self.also = host, list(also)
        self.refresh()

    def refresh(self) -> None:
        runs = self.store.runs_for_host(self.host) if self.host else []
        for node in self.also:
            runs += self.store.runs_for_host(node)
        runs.sort(key=lambda r: (r.started, r.id), reverse=True)
        self.model.set_rows([run_row(r) for r in runs])
        nodes = f" and its nodes {', '.join(self.also)}" if self.also else ""
        self.title.setText(
            f"Past runs of {self.host}{nodes}: {len(runs)}" if self.host else "Past runs"
        )
        self._enable()

    def runs(self) -> list[RunSummary]:
        return [self.model.row(i).payload for i in range(self.model.rowCount())]

    def select_ids(self, ids: list[int]) -> None:
        self.table.clearSelection()
        model = self.table.model()
        selection = self.table.selectionModel()
        for row in range(model.rowCount()):
            if model.index(row, 0).data(PAYLOAD_ROLE).id in ids:
                selection.select(
                    model.index(row, 0),
                    selection.SelectionFlag.Select | selection.SelectionFlag.Rows,
                )
        self._enable()

    def selected(self) -> list[RunSummary]:
        return selected_runs(self.table)

    def _enable(self) -> None:
        n = len(self.selected())
        for key in ("reopen", "other", "pdf", "json"):
            self.buttons[key].setEnabled(n == 1)
        self.buttons["compare"].setEnabled(n == 2)

    def _reopen(self) -> None:
        runs = self.selected()
        if len(runs) == 1:
            self.reopen.emit(runs[0].id)

    def _compare_two(self) -> None:
        runs = self.selected()
        if len(runs) == 2:
            older, newer = sorted(runs, key=lambda r: (r.started, r.id))
            self.compare.emit(older.id, newer.id)

    def _compare_other(self) -> None:
        runs = self.selected()
        if len(runs) != 1:
            return
        first = runs[0]
        picker = RunPicker(self.store.runs(), first.id, self)
        self.picker = picker

        def finished(result: int) -> None:
            self.picker = None
            other = picker.chosen()
            if result == int(QDialog.DialogCode.Accepted) and other is not None:
                self.compare.emit(first.id, other.id)
            picker.deleteLater()

        picker.finished.connect(finished)
        picker.open()
        self.picking.emit(picker)

    def _export(self, signal: SignalInstance) -> None:
        runs = self.selected()
        if len(runs) == 1:
            signal.emit(runs[0].id)
