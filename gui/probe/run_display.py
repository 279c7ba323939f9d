"""One probe run on screen, live or reopened: its figures and where each lands (charts, node table,
log, scorecard, progress and ETA).

It stands apart from the pane, which connects, starts and stops runs, because drawing a run is the
same work whether its events arrive from the runner now or are read back from the history: the pane
hands each event over on the GUI thread (or a stored run at once), and this keeps the run's
evidence, scorecard and outcomes. Events only append to buffers; the charts' own timer repaints
them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel, QProgressBar

from core import probes
from core.catalog import load_catalog
from core.probes import explain_no_verdict, nothing_to_apply
from gui.probe import backend
from gui.probe.event_log import EventLog
from gui.probe.node_table import NodeTable
from gui.probe.run_charts import RunCharts
from gui.probe.run_feed import PROGRESS_STEPS, LogLine, RunProgress, ThrottleWatch, outcome_lines
from gui.probe.scorecard_view import ScorecardView

if TYPE_CHECKING:
    from core.probes import ProbeEvidence, ProbeOutcome, Scorecard, StoredRun


class RunDisplay:
    """The run shown: its figures, drawn into the pane's widgets; :meth:`reset` before another run
    is shown."""

    def __init__(
        self,
        charts: RunCharts,
        nodes: NodeTable,
        log: EventLog,
        card: ScorecardView,
        progress: QProgressBar,
        eta: QLabel,
    ) -> None:
        self.charts, self.nodes, self.log, self.card = charts, nodes, log, card
        self.progress, self.eta = progress, eta
        self.evidence: ProbeEvidence | None = None
        self.scorecard: Scorecard | None = None
        self.outcomes: list[ProbeOutcome] = []
        self.run_probes: list[str] = []
        self.throttle = ThrottleWatch()
        self.run_progress = RunProgress()

    def reset(self) -> None:
        """Nothing shown: empty charts, node table and log, a scorecard waiting for its run."""
        self.charts.clear()
        self.nodes.clear()
        self.log.clear()
        self.card.show_scorecard(None, "Running…")
        self.card.set_apply_reason("Nothing to apply to a plan until the run ends.")
        self.evidence, self.scorecard, self.outcomes, self.run_probes = None, None, [], []
        self.throttle.clear()
        self.run_progress.reset()
        self.progress.setValue(0)
        self.eta.setText("")

    def started(self, event: probes.RunStarted) -> None:
        self.run_probes = list(event.probes)
        self.note_empty_charts(event.facts.nvidia if event.facts is not None else None, ended=False)

    def show_event(self, event: object) -> None:
        """A runner's event between the run's start and its end, drawn where it belongs."""
        match event:
            case probes.ProbeStarted():
                self.log.add(
                    *self.run_progress.start(
                        event.name, event.index, event.total, event.eta_s, time.monotonic()
                    )
                )
                self.update_progress()
            case probes.MetricsBatch():
                self.charts.gpu_charts.add_metrics(event.metrics)
                self._add_lines(self.throttle.lines(event.metrics))
            case probes.SeriesPoint():
                self.charts.add_point(event.series, event.x, event.y, event.label, event.t)
            case probes.LogEvent():
                self.log.add(event.level, event.message)
            case probes.ProbeFinished():
                self.outcomes.append(event.outcome)
                self.run_progress.finish()
                self._add_lines(outcome_lines(event.outcome))
                self.update_progress()
                self.note_empty_charts(None, ended=False)
            case probes.NodeEvent():
                self._add_lines(self.nodes.add(event))
                self.run_progress.running_share(self.nodes.progress.fraction())
                self.update_progress()

    def finished(self, event: probes.RunFinished) -> None:
        """The run's verdict (explained when there is none) and what it could apply to a plan."""
        status = event.status
        card = (
            explain_no_verdict(event.scorecard, self.outcomes, status)
            if event.scorecard is not None
            else None
        )
        self.evidence, self.scorecard = event.evidence, card
        self.card.show_scorecard(self.scorecard, f"No verdict: the run ended {status}.")
        self.card.set_apply_reason(nothing_to_apply(self.evidence, load_catalog()))
        self.note_empty_charts(None, ended=True)

    def show_stored(self, run: StoredRun) -> None:
        """A run from the history: its GPU samples, chart points, events and scorecard."""
        self.reset()
        self.nodes.show_reports(
            run.evidence.cluster.nodes if run.evidence and run.evidence.cluster else []
        )
        self.charts.gpu_charts.history.load_table(run.samples)
        self.charts.gpu_charts.redraw()
        for point in run.series:
            self.charts.add_point(point.series, point.x, point.y, point.label, point.t)
        self.charts.redraw_points()
        for ev in run.events:
            self.log.add(ev.level, ev.message, when=run.summary.started + ev.t)
        card = backend.stored_scorecard(run)
        self.evidence, self.scorecard, self.outcomes = run.evidence, card, list(run.outcomes)
        self.run_probes = list(run.summary.probes)
        self.card.show_scorecard(card, f"No verdict: the run ended {run.summary.status}.")
        self.card.set_apply_reason(nothing_to_apply(run.evidence, load_catalog()))
        inventory = run.evidence.inventory if run.evidence is not None else None
        self.note_empty_charts(
            None if inventory is None else inventory.nvidia is not None, ended=True
        )
        self.progress.setValue(PROGRESS_STEPS if run.summary.status == "completed" else 0)

    def update_progress(self) -> None:
        """The progress bar and the ETA line, from where the run is now."""
        shown = self.run_progress.at(time.monotonic())
        if shown is None:
            return
        value, text = shown
        self.progress.setValue(value)
        if text is not None:
            self.eta.setText(text)

    def note_empty_charts(self, gpus: bool | None, ended: bool) -> None:
        self.charts.note_empty(gpus, self.run_probes, self.outcomes, ended)

    def _add_lines(self, lines: list[LogLine]) -> None:
        for level, text in lines:
            self.log.add(level, text)
