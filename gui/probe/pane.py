"""The Probe place: pick a host or a cluster, connect, run a suite with live charts, read the verdict, look back.

Long work never runs here: connecting and the suite run on the executor (``gui/workers.py``), and the
runner's events come back on the GUI thread one by one, matched on their type here; what each one means on
screen (chart, log lines, progress and ETA) is worked out in ``run_feed``, and the exports live in ``exports``.
Events only append to buffers; one QTimer (≤ 20 Hz) repaints the charts. Stop sets the runner's cancel event,
so the runner kills the remote process group, removes its temp dir and still reports how the run ended.
A cluster target (a host group) connects each node as that host alone would (``cluster_connect``) and runs
``run_cluster``; each node's own events go to the node table (``node_table``), the cluster's steps to the rest.

Signals: ``apply_to_plan(object)`` a PlanRequest with measured figures applied (the main window routes it
to the wizard); ``message(str)`` a line for the status bar.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core import probes
from core.catalog import load_catalog
from core.planner import PlanRequest
from core.probes import HostGroup, HostProfile, ProbeStore, explain_no_verdict, mark_stale_runs, nothing_to_apply
from core.validation import validation_message
from gui.probe import backend
from gui.probe.cluster_connect import ClusterConnector, ConnectedNode, close_nodes, member_profiles
from gui.probe.compare import CompareDialog
from gui.probe.connection import Connector, connect_spec
from gui.probe.event_log import EventLog
from gui.probe.exports import RunExports, export_buttons
from gui.probe.history import HistoryView
from gui.probe.history_banner import HistoryBanner
from gui.probe.hosts import HostList, Target, connection_text, host_label, local_profile
from gui.probe.node_table import NodeTable, with_nodes
from gui.probe.run_charts import RunCharts
from gui.probe.run_feed import (
    CLUSTER_GPU_NOTE,
    PROGRESS_STEPS,
    LogLine,
    RunProgress,
    ThrottleWatch,
    live_title,
    outcome_lines,
    stored_title,
)
from gui.probe.scorecard_view import ScorecardView, verdict_value
from gui.probe.suite_picker import SuitePicker
from gui.probe.window_close import OnWindowClose
from gui.workers import Executor, Job, ThreadExecutor

if TYPE_CHECKING:
    from core.probes import ProbeEvidence, ProbeOutcome, Scorecard, StoredRun, Transport

STOP_GRACE_MS = 30_000


class ProbePane(QWidget):
    """Hosts and suite on the left with the event log; live charts, scorecard and history in tabs.

    ``run_suite``, ``run_cluster`` and ``make_options`` default to the real runner (tests pass a replay); the
    store is used on the GUI thread for hosts and history and handed to the worker for the run (it serialises
    writes).
    """

    apply_to_plan = Signal(object)
    message = Signal(str)

    def __init__(self, executor: Executor, store: ProbeStore, *, run_suite: backend.RunSuite | None = None,
                 run_cluster: backend.RunCluster | None = None,
                 make_options: backend.MakeOptions | None = None, known_hosts_file: Path | None = None,
                 ssh_config: Path | None = None, transport_options: dict[str, Any] | None = None,
                 plan_request_source: Callable[[], PlanRequest | None] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Probe")
        self.executor, self.store = executor, store
        self.exports = RunExports(store, executor, self, self._set_status)
        self.run_suite, self.run_cluster = run_suite or backend.run_suite, run_cluster or backend.run_cluster
        self.make_options = make_options or backend.make_options
        self.plan_request_source = plan_request_source
        self.transport: Transport | None = None
        self.cluster_nodes: list[ConnectedNode] = []  # a connected cluster target's nodes, in its order
        self.connected_profile: Target | None = None
        self._pending_profile: Target | None = None
        self._start_when_connected = False  # "Probe this machine": connect, then start the quick suite
        self.cancel_event: threading.Event | None = None
        self.job: Job | None = None
        self.running = False
        self.run_id: int | None = None
        self.evidence: ProbeEvidence | None = None
        self.scorecard: Scorecard | None = None
        self.outcomes: list[ProbeOutcome] = []
        self.run_probes: list[str] = []
        self.shown_run: int | None = None
        self.shown_host: str | None = None  # whose run the tabs show: cleared when another host is selected
        self.compare_dialog: CompareDialog | None = None
        self.throttle = ThrottleWatch()
        self.run_progress = RunProgress()
        self.close_hook = OnWindowClose(self, self.shutdown)  # the window it is in closes: stop and disconnect

        self.connector = Connector(executor, self, known_hosts_file=known_hosts_file, ssh_config=ssh_config,
                                   transport_options=transport_options)
        self.connector.connected.connect(self._connected)
        self.connector.failed.connect(self._connect_failed)
        self.connector.status.connect(self._set_status)
        self.cluster = ClusterConnector(self.connector)  # after the pane's own slots: see _connected
        self.cluster.connected.connect(self._cluster_connected)
        self.cluster.failed.connect(self._connect_failed)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.history_banner = HistoryBanner()
        outer.addWidget(self.history_banner)
        root = QHBoxLayout()
        outer.addLayout(root, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        root.addWidget(splitter)
        splitter.addWidget(self._left_panel())
        splitter.addWidget(self._right_panel())
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([330, 950])

        self.redraw_timer = self.gpu_charts.timer  # one ≤ 20 Hz timer repaints every chart
        self.redraw_timer.timeout.connect(self.run_charts.redraw_points)
        self.progress_timer = QTimer(self)
        self.progress_timer.setInterval(500)
        self.progress_timer.timeout.connect(self._update_progress)
        self.stop_timer = QTimer(self)
        self.stop_timer.setSingleShot(True)
        self.stop_timer.setInterval(STOP_GRACE_MS)
        self.stop_timer.timeout.connect(self._force_stop)
        self.hosts.selected.connect(self._host_selected)
        self.hosts.message.connect(self.message)
        self._host_selected(self.hosts.current())
        self._enable()

    @classmethod
    def create_default(cls, executor: Executor | None = None, **kwargs: Any) -> ProbePane:
        """The pane the app shows: the user's probe history (in memory, and saying so, when the file cannot be
        used), the real runner; runs a killed tuneplan left 'running' are marked interrupted first."""
        store = ProbeStore.open_or_memory()
        stale = mark_stale_runs(store)  # core.probes.history.leases
        pane = cls(executor or ThreadExecutor(), store, **kwargs)
        pane.check_history()
        if stale:
            pane._set_status(f"{len(stale)} earlier run{'s' if len(stale) > 1 else ''} stopped without an end "
                             "(its tuneplan was killed): marked interrupted, samples kept")
        return pane

    def check_history(self) -> None:
        """Show the store's notice (a damaged file moved aside) or fault (history not kept) in the banner and the
        status; called at start and after each run event, since a file can fail mid-run."""
        text = self.history_banner.show_store(self.store)
        if text:
            self._set_status(text)

    # ---- layout

    def _left_panel(self) -> QWidget:
        panel = QWidget()
        panel.setMaximumWidth(420)
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(4, 4, 4, 4)
        self.probe_here_button = QPushButton("Probe this machine (quick suite)")  # no SSH, nothing to set up
        self.probe_here_button.setAccessibleName("Probe this machine")
        self.probe_here_button.clicked.connect(lambda _c=False: self.probe_this_machine())
        layout.addWidget(self.probe_here_button)
        self.hosts = HostList(self.store)
        layout.addWidget(self.hosts, 1)
        row = QHBoxLayout()
        self.connect_button = QPushButton("Connect")
        self.connect_button.setAccessibleName("Connect")
        self.connect_button.clicked.connect(lambda _c=False: self.connect_selected())
        self.disconnect_button = QPushButton("Disconnect")
        self.disconnect_button.setAccessibleName("Disconnect")
        self.disconnect_button.clicked.connect(lambda _c=False: self.disconnect_host())
        row.addWidget(self.connect_button)
        row.addWidget(self.disconnect_button)
        layout.addLayout(row)
        self.status = QLabel("Not connected")
        self.status.setAccessibleName("Connection status")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.suite = SuitePicker()
        layout.addWidget(self.suite)
        row = QHBoxLayout()
        self.start_button = QPushButton("Start")
        self.start_button.setAccessibleName("Start probe run")
        self.start_button.clicked.connect(lambda _c=False: self.start())
        self.stop_button = QPushButton("Stop")
        self.stop_button.setAccessibleName("Stop probe run")
        self.stop_button.clicked.connect(lambda _c=False: self.stop())
        row.addWidget(self.start_button)
        row.addWidget(self.stop_button)
        layout.addLayout(row)
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Run progress")
        self.progress.setRange(0, PROGRESS_STEPS)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        layout.addWidget(self.progress)
        self.eta = QLabel("")
        self.eta.setAccessibleName("Run ETA")
        self.eta.setWordWrap(True)
        layout.addWidget(self.eta)
        self.log = EventLog()  # beside the tabs, so events stay in view on the scorecard and history too
        layout.addWidget(self.log, 2)
        return panel

    def _right_panel(self) -> QWidget:
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Probe views")
        self.run_charts, self.node_table = RunCharts(), NodeTable()
        self.showing, self.gpu_charts = self.run_charts.showing, self.run_charts.gpu_charts
        self.point_charts = self.run_charts.point_charts
        self.tabs.addTab(with_nodes(self.node_table, self.run_charts), "Live")
        self.scorecard_view = ScorecardView()
        self.scorecard_view.apply_requested.connect(self.apply_measured)
        score_tab = QWidget()
        score_layout = QVBoxLayout(score_tab)
        score_layout.addWidget(self.scorecard_view, 1)
        row, self.export_pdf_button, self.export_json_button = export_buttons(self.export_pdf, self.export_json)
        score_layout.addLayout(row)
        self.tabs.addTab(score_tab, "Scorecard")
        self.history = HistoryView(self.store)
        self.history.reopen.connect(self.reopen)
        self.history.compare.connect(self.compare)
        self.history.export_pdf.connect(lambda run_id: self.export_pdf(run_id=run_id))
        self.history.export_json.connect(lambda run_id: self.export_json(run_id=run_id))
        self.tabs.addTab(self.history, "History")
        return self.tabs

    # ---- state

    @property
    def connected(self) -> bool:
        """A host's transport, or every node of a cluster, is connected."""
        return self.transport is not None or bool(self.cluster_nodes)

    def _enable(self) -> None:
        connected, busy = self.connected, self.connector.busy or self.cluster.busy
        same_host = connected and self.connected_profile is not None and \
            self.connected_profile.name == self.hosts.current().name
        self.connect_button.setEnabled(not self.running and not busy and not same_host)
        self.disconnect_button.setEnabled(connected and not self.running)
        self.start_button.setEnabled(bool(same_host) and not self.running)
        self.stop_button.setEnabled(self.running)
        self.probe_here_button.setEnabled(not self.running and not busy)
        self.hosts.setEnabled(not self.running)
        self.suite.setEnabled(not self.running)
        has_run = self.shown_run is not None
        self.export_pdf_button.setEnabled(has_run and not self.running)
        self.export_json_button.setEnabled(has_run and not self.running)

    def _set_status(self, text: str) -> None:
        self.status.setText(text)
        self.message.emit(text)

    def _host_selected(self, profile: Target) -> None:
        host = profile if isinstance(profile, HostProfile) else None  # a cluster's nodes keep their own paths
        self.suite.for_host(host)
        self.history.show_host(host_label(profile), also=profile.hosts if isinstance(profile, HostGroup) else ())
        if not self.running:  # another host's progress, status and verdict say nothing about this one
            self.progress.setValue(0)
            self.eta.setText("")
            self._set_status(connection_text(profile, self.connected_profile if self.connected else None))
            if self.shown_host not in (None, host_label(profile)):
                self._reset_view()
                self.showing.setText("")
                self.shown_run = self.shown_host = None
            if self.shown_host is None:  # no run on screen: name the host selected now, not the one before it
                self.scorecard_view.no_verdict_yet(profile.name)
        self._enable()

    # ---- connection

    def connect_selected(self) -> None:
        profile = self.hosts.current()
        self.disconnect_host()
        self._pending_profile = profile
        if isinstance(profile, HostGroup):
            try:
                self.cluster.connect_group(member_profiles(profile, self.store.hosts()))
            except ValueError as exc:
                self._connect_failed(str(exc))
        else:
            self.connector.connect_to(connect_spec(profile))
        self._enable()

    def _cluster_connected(self, nodes: list[ConnectedNode]) -> None:
        self.cluster_nodes, self.connected_profile = nodes, self._pending_profile
        self._set_status(connection_text(self.hosts.current(), self.connected_profile))
        self.log.add("info", f"connected to the cluster's nodes: {', '.join(p.name for p, _t in nodes)}")
        self._enable()

    def _connected(self, transport: Transport) -> None:
        if self.cluster.busy:  # a node of a cluster being connected: ClusterConnector takes it
            return
        self.transport = transport
        self.connected_profile = self._pending_profile or self.hosts.current()
        if isinstance(self.connected_profile, HostProfile) and self.connected_profile.local:
            self._set_status("Ready to probe this machine")
        else:
            self._set_status(f"Connected to {self.connected_profile.name}")
        self.log.add("info", f"connected to {self.connected_profile.name} ({getattr(transport, 'description', '')})")
        self._enable()
        if self._start_when_connected:
            self._start_when_connected = False
            self.start()

    def probe_this_machine(self) -> None:
        """One click for a first look: select this machine, connect (no SSH) and run the quick suite."""
        if self.running:
            return self._set_status("A run is in progress: stop it first")
        self.hosts.refresh(select=local_profile().name)
        self.suite.set_choice("quick")
        self._start_when_connected = True
        self.connect_selected()

    def _connect_failed(self, reason: str) -> None:
        if self.cluster.busy:  # one node failed: ClusterConnector closes the others and names it
            return
        self._start_when_connected = False
        self._set_status(f"Not connected: {reason}")
        self.log.add("error", f"connection failed: {reason}")
        self._enable()

    def disconnect_host(self) -> None:
        transport, self.transport, self.connected_profile = self.transport, None, None
        nodes, self.cluster_nodes = self.cluster_nodes, []
        close_nodes(nodes)
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()
        if transport is not None or nodes:
            self._set_status("Not connected")
        self._enable()

    # ---- running

    def start(self) -> bool:
        """Run the chosen suite on the connected host; False (with a status line) when it cannot start."""
        if self.running or not self.connected or self.connected_profile is None:
            self._set_status("Connect to the host first")
            return False
        choice = self.suite.choice()
        if not choice.probes:
            self._set_status("Pick at least one probe")
            return False
        try:
            options = self.make_options(choice)
        except ValidationError as exc:  # the runner's options say which field is wrong and why
            self._set_status(f"Cannot start: {validation_message(exc, words=True)}")
            return False
        except ValueError as exc:
            self._set_status(f"Cannot start: {exc}")
            return False
        self._reset_view()
        self.running, self.run_id, self.shown_host = True, None, host_label(self.connected_profile)
        self.showing.setText(f"Live: {choice.label} suite on {self.connected_profile.name}")
        cancel = self.cancel_event = threading.Event()
        transport, store, label, run = self.transport, self.store, host_label(self.connected_profile), self.run_suite
        plan = self.plan_request_source and self.plan_request_source()
        nodes, run_cluster = [(host_label(p), node) for p, node in self.cluster_nodes], self.run_cluster
        if transport is None:  # a cluster: every node's own suite, then the steps between nodes
            self.node_table.start([name for name, _t in nodes])
            self.gpu_charts.say_empty(CLUSTER_GPU_NOTE)  # the cluster's row samples no GPU itself
            events = backend.relay(lambda: run_cluster(backend.cluster_nodes(nodes), options, store, cancel, label),
                                   cancel)
        else:
            events = backend.relay(lambda: run(transport, backend.with_step(options, plan), store, cancel, label),
                                   cancel)
        self.log.add("info", f"starting the {choice.label} suite on {self.connected_profile.name}")
        self.gpu_charts.start()
        self.progress_timer.start()
        self._enable()
        self.job = self.executor.stream(events, self._on_event, lambda _v: self._on_run_done(cancel),
                                        lambda exc: self._on_run_error(exc, cancel))
        return True

    def stop(self) -> None:
        """Ask the runner to cancel; if it has not ended after STOP_GRACE_MS the relay is dropped."""
        if not self.running or self.cancel_event is None:
            return
        self.cancel_event.set()
        self.stop_button.setEnabled(False)
        self.eta.setText("Stopping: killing the remote processes and removing the temp dir…")
        self.log.add("warning", "stop requested")
        self.stop_timer.start()

    def _force_stop(self) -> None:
        if self.running and self.job is not None:
            self.job.cancel()
            self.log.add("error", "the runner did not stop in time; its events are no longer shown")
            self._finish_run("cancelled")

    def _reset_view(self) -> None:
        self.run_charts.clear()
        self.node_table.clear()
        self.log.clear()
        self.scorecard_view.show_scorecard(None, "Running…")
        self.scorecard_view.set_apply_reason("Nothing to apply to a plan until the run ends.")
        self.evidence, self.scorecard, self.outcomes, self.run_probes = None, None, [], []
        self.throttle.clear()
        self.run_progress.reset()
        self.progress.setValue(0)
        self.eta.setText("")

    # ---- events (GUI thread)

    def _on_event(self, event: object) -> None:
        match event:
            case probes.RunStarted():
                self.run_id, self.run_probes = event.run_id, list(event.probes)
                host = self.connected_profile.name if self.connected_profile else "the host"
                self.showing.setText(live_title(self.run_id, host, event.facts))
                self._note_empty_charts(event.facts.nvidia if event.facts is not None else None, ended=False)
            case probes.ProbeStarted():
                self.log.add(*self.run_progress.start(event.name, event.index, event.total, event.eta_s,
                                                      time.monotonic()))
                self._update_progress()
            case probes.MetricsBatch():
                self.gpu_charts.add_metrics(event.metrics)
                self._add_lines(self.throttle.lines(event.metrics))
            case probes.SeriesPoint():
                self.run_charts.add_point(event.series, event.x, event.y, event.label, event.t)
            case probes.LogEvent():
                self.log.add(event.level, event.message)
            case probes.ProbeFinished():
                self.outcomes.append(event.outcome)
                self.run_progress.finish()
                self._add_lines(outcome_lines(event.outcome))
                self._update_progress()
                self._note_empty_charts(None, ended=False)
            case probes.RunFinished():
                self._run_finished(event)
            case probes.NodeEvent():
                self._add_lines(self.node_table.add(event))
                self.run_progress.running_share(self.node_table.progress.fraction())
                self._update_progress()
        if self.store.fault is not None:
            self.check_history()

    def _add_lines(self, lines: list[LogLine]) -> None:
        for level, text in lines:
            self.log.add(level, text)

    def _run_finished(self, event: probes.RunFinished) -> None:
        status = event.status
        card = explain_no_verdict(event.scorecard, self.outcomes, status) if event.scorecard is not None else None
        self.run_id, self.evidence, self.scorecard = event.run_id, event.evidence, card
        self.scorecard_view.show_scorecard(self.scorecard, f"No verdict: the run ended {status}.")
        self.scorecard_view.set_apply_reason(nothing_to_apply(self.evidence, load_catalog()))
        self._note_empty_charts(None, ended=True)
        self.shown_run = self.run_id
        self.shown_host = host_label(self.connected_profile) if self.connected_profile is not None else None
        self._finish_run(status)
        if self.scorecard is not None:
            self.tabs.setCurrentIndex(1)

    def _finish_run(self, status: str) -> None:
        if not self.running:
            return
        self.running = False
        self.stop_timer.stop()
        self.progress_timer.stop()
        self.gpu_charts.stop()
        self.run_charts.redraw_points()
        if status == "completed":
            self.progress.setValue(PROGRESS_STEPS)
        verdict = f" · {verdict_value(self.scorecard) or 'no verdict'}" if self.scorecard is not None else ""
        self.eta.setText(f"Run {status}{verdict}")
        self.log.add("info" if status == "completed" else "warning", f"run {status}")
        self._set_status(f"Run {self.run_id if self.run_id is not None else ''} {status}{verdict}".replace("  ", " "))
        self.history.refresh()
        self._enable()

    def _on_run_done(self, cancel: threading.Event) -> None:
        """A run's stream ends a moment after its RunFinished (its threads are joined), by when the next run may
        have started: ``cancel`` names the run, and only the one running now is ended by it."""
        if self.running and cancel is self.cancel_event:  # this run's stream ended without RunFinished
            self._finish_run("cancelled" if cancel.is_set() else "interrupted")

    def _on_run_error(self, exc: BaseException, cancel: threading.Event) -> None:
        if cancel is self.cancel_event:
            self.log.add("error", f"the run stopped: {exc}")
            self._finish_run("failed")

    # ---- progress

    def _update_progress(self) -> None:
        shown = self.run_progress.at(time.monotonic())
        if shown is None:
            return
        value, text = shown
        self.progress.setValue(value)
        if text is not None:
            self.eta.setText(text)

    def _note_empty_charts(self, gpus: bool | None, ended: bool) -> None:
        self.run_charts.note_empty(gpus, self.run_probes, self.outcomes, ended)

    # ---- scorecard, history, export

    def apply_measured(self) -> PlanRequest | None:
        """Put the measured TFLOP/s and busbw into the plan and emit ``apply_to_plan``."""
        new, notes, status = backend.measured_plan(self.evidence, self.plan_request_source)
        for note in notes:
            self.log.add("info", f"plan: {note}")
        if new is not None:
            self.apply_to_plan.emit(new)
        self._set_status(status)
        return new

    def reopen(self, run_id: int) -> StoredRun | None:
        """Show a stored run: its GPU samples, chart points, events and scorecard."""
        if self.running:
            self._set_status("Stop the current run before reopening another")
            return None
        try:
            run = self.store.load_run(run_id)
        except KeyError as exc:
            self._set_status(str(exc.args[0]))
            return None
        self._reset_view()
        self.node_table.show_reports(run.evidence.cluster.nodes if run.evidence and run.evidence.cluster else [])
        self.gpu_charts.history.load_table(run.samples)
        self.gpu_charts.redraw()
        for point in run.series:
            self.run_charts.add_point(point.series, point.x, point.y, point.label, point.t)
        self.run_charts.redraw_points()
        for ev in run.events:
            self.log.add(ev.level, ev.message, when=run.summary.started + ev.t)
        card = backend.stored_scorecard(run)
        self.evidence, self.scorecard, self.outcomes = run.evidence, card, list(run.outcomes)
        self.run_probes = list(run.summary.probes)
        self.scorecard_view.show_scorecard(card, f"No verdict: the run ended {run.summary.status}.")
        self.scorecard_view.set_apply_reason(nothing_to_apply(run.evidence, load_catalog()))
        inventory = run.evidence.inventory if run.evidence is not None else None
        self._note_empty_charts(None if inventory is None else inventory.nvidia is not None, ended=True)
        self.run_id = self.shown_run = run_id
        self.shown_host = run.summary.host
        self.showing.setText(stored_title(run_id, run.summary))
        self.progress.setValue(PROGRESS_STEPS if run.summary.status == "completed" else 0)
        self.tabs.setCurrentIndex(0)
        self._enable()
        self._set_status(f"Reopened run {run_id}")
        return run

    def compare(self, a_id: int, b_id: int) -> CompareDialog | None:
        try:
            dialog = CompareDialog.of_runs(self.store.load_run(a_id), self.store.load_run(b_id), self)
        except KeyError as exc:
            self._set_status(str(exc.args[0]))
            return None
        self.compare_dialog = dialog
        dialog.show()
        return dialog

    def export_json(self, path: Path | None = None, run_id: int | None = None) -> Path | None:
        """Write the run shown (or ``run_id``) as JSON; None when nothing was written (the status says why)."""
        return self.exports.export_json(run_id if run_id is not None else self.shown_run, path)

    def export_pdf(self, path: Path | None = None, run_id: int | None = None,
                   on_done: Callable[[int], None] | None = None) -> None:
        """Write the readiness report of the run shown (or ``run_id``) as a PDF, rendered on a worker."""
        self.exports.export_pdf(run_id if run_id is not None else self.shown_run, path, on_done)

    # ---- shutdown

    def shutdown(self) -> None:
        """Cancel a run, answer open prompts and drop the connection (the window is closing)."""
        if self.cancel_event is not None:
            self.cancel_event.set()
        self.gpu_charts.timer.stop()
        self.progress_timer.stop()
        self.connector.close()
        self.disconnect_host()
