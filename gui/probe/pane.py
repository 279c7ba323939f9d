"""The Probe place: pick a host or a cluster, connect, run a suite with live charts, read the
verdict, look back.

The pane wires its parts and runs: the widgets are ``control_column``'s (left) and
``result_tabs``' (right), the connection is ``target_connection``'s, every event is drawn by
``run_display`` (what each means on screen is worked out in ``run_feed``), and the exports live in
``exports``. Long work never runs here: connecting and the suite run on the executor
(``gui/workers.py``) and the runner's events come back on the GUI thread one by one. Stop sets the
runner's cancel event, so the runner kills the remote process group, removes its temp dir and still
reports how the run ended. A cluster target (a host group) runs ``run_cluster``; each node's own
events go to the node table, the cluster's steps to the rest.

Signals: ``apply_to_plan(object)`` a PlanRequest with measured figures applied (the main window
routes it to the wizard); ``message(str)`` a line for the status bar.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QSplitter, QVBoxLayout, QWidget

from core import probes
from core.planner import PlanRequest
from core.probes import HostGroup, HostProfile, ProbeStore, mark_stale_runs
from core.validation import validation_message
from gui.probe import backend
from gui.probe.compare import CompareDialog
from gui.probe.connection import Connector
from gui.probe.control_column import ControlColumn
from gui.probe.exports import RunExports
from gui.probe.history_banner import HistoryBanner
from gui.probe.hosts import Target, connection_text, host_label, local_profile
from gui.probe.result_tabs import LIVE, SCORECARD, ResultTabs
from gui.probe.run_display import RunDisplay
from gui.probe.run_feed import CLUSTER_GPU_NOTE, PROGRESS_STEPS, live_title, stored_title
from gui.probe.scorecard_view import verdict_value
from gui.probe.target_connection import TargetConnection
from gui.probe.window_close import OnWindowClose
from gui.workers import Executor, Job, ThreadExecutor

if TYPE_CHECKING:
    from core.probes import Scorecard, StoredRun, Transport

STOP_GRACE_MS = 30_000


class ProbePane(QWidget):
    """Hosts and suite on the left with the event log; live charts, scorecard and history in tabs.

    ``run_suite``, ``run_cluster`` and ``make_options`` default to the real runner (tests pass a
    replay); the store is used on the GUI thread for hosts and history and handed to the worker for
    the run (it serialises writes).
    """

    apply_to_plan = Signal(object)
    message = Signal(str)

    def __init__(
        self,
        executor: Executor,
        store: ProbeStore,
        *,
        run_suite: backend.RunSuite | None = None,
        run_cluster: backend.RunCluster | None = None,
        make_options: backend.MakeOptions | None = None,
        known_hosts_file: Path | None = None,
        ssh_config: Path | None = None,
        transport_options: dict[str, Any] | None = None,
        plan_request_source: Callable[[], PlanRequest | None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setAccessibleName("Probe")
        self.executor, self.store = executor, store
        self.exports = RunExports(store, executor, self, self._set_status)
        self.run_suite = run_suite or backend.run_suite
        self.run_cluster = run_cluster or backend.run_cluster
        self.make_options = make_options or backend.make_options
        self.plan_request_source = plan_request_source
        # "Probe this machine": connect, then start the quick suite
        self._start_when_connected = False
        self.cancel_event: threading.Event | None = None
        self.job: Job | None = None
        self.running = False
        self.run_id: int | None = None
        self.shown_run: int | None = None
        # whose run the tabs show: cleared when another host is selected
        self.shown_host: str | None = None
        self.compare_dialog: CompareDialog | None = None
        # the window it is in closes: stop and disconnect
        self.close_hook = OnWindowClose(self, self.shutdown)

        self.connector = Connector(
            executor,
            self,
            known_hosts_file=known_hosts_file,
            ssh_config=ssh_config,
            transport_options=transport_options,
        )
        self.link = TargetConnection(self.connector, lambda: self.hosts.current())
        self.link.connected.connect(self._connected)
        self.link.failed.connect(self._connect_failed)
        self.connector.status.connect(self._set_status)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.history_banner = HistoryBanner()
        outer.addWidget(self.history_banner)
        root = QHBoxLayout()
        outer.addLayout(root, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        root.addWidget(splitter)
        splitter.addWidget(self._left_panel(store))
        splitter.addWidget(self._right_panel())
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([330, 950])
        self.display = RunDisplay(
            self.run_charts, self.node_table, self.log, self.scorecard_view, self.progress, self.eta
        )

        self.redraw_timer = self.gpu_charts.timer  # one ≤ 20 Hz timer repaints every chart
        self.redraw_timer.timeout.connect(self.run_charts.redraw_points)
        self.progress_timer = QTimer(self)
        self.progress_timer.setInterval(500)
        self.progress_timer.timeout.connect(self.display.update_progress)
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
        """The pane the app shows: the user's probe history (in memory, and saying so, when the file
        cannot be used), the real runner; runs a killed tuneplan left 'running' are marked
        interrupted first."""
        store = ProbeStore.open_or_memory()
        stale = mark_stale_runs(store)  # core.probes.history.leases
        pane = cls(executor or ThreadExecutor(), store, **kwargs)
        pane.check_history()
        if stale:
            pane._set_status(
                f"{len(stale)} earlier run{'s' if len(stale) > 1 else ''} stopped without an end "
                "(its tuneplan was killed): marked interrupted, samples kept"
            )
        return pane

    def check_history(self) -> None:
        """Show the store's notice (a damaged file moved aside) or fault (history not kept) in the
        banner and the status; called at start and after each run event, since a file can fail
        mid-run."""
        text = self.history_banner.show_store(self.store)
        if text:
            self._set_status(text)

    # ---- layout

    def _left_panel(self, store: ProbeStore) -> ControlColumn:
        column = ControlColumn(store)
        self.hosts, self.status, self.suite = column.hosts, column.status, column.suite
        self.log, self.progress, self.eta = column.log, column.progress, column.eta
        self.probe_here_button = column.probe_here_button
        for button, slot in (
            (column.probe_here_button, self.probe_this_machine),
            (column.connect_button, self.connect_selected),
            (column.disconnect_button, self.disconnect_host),
            (column.start_button, self.start),
            (column.stop_button, self.stop),
        ):
            button.clicked.connect(lambda _c=False, s=slot: s())
        self.connect_button = column.connect_button
        self.disconnect_button = column.disconnect_button
        self.start_button, self.stop_button = column.start_button, column.stop_button
        return column

    def _right_panel(self) -> ResultTabs:
        tabs = self.tabs = ResultTabs(self.store, self.export_pdf, self.export_json)
        self.run_charts, self.node_table = tabs.run_charts, tabs.node_table
        self.scorecard_view = tabs.scorecard_view
        self.showing, self.gpu_charts = self.run_charts.showing, self.run_charts.gpu_charts
        self.point_charts = self.run_charts.point_charts
        self.export_pdf_button = tabs.export_pdf_button
        self.export_json_button = tabs.export_json_button
        self.scorecard_view.apply_requested.connect(self.apply_measured)
        self.history = tabs.history
        self.history.reopen.connect(self.reopen)
        self.history.compare.connect(self.compare)
        self.history.export_pdf.connect(lambda run_id: self.export_pdf(run_id=run_id))
        self.history.export_json.connect(lambda run_id: self.export_json(run_id=run_id))
        return tabs

    # ---- state

    @property
    def scorecard(self) -> Scorecard | None:
        """The verdict of the run shown (None: no run, or one that gave no scorecard)."""
        return self.display.scorecard

    @property
    def connected(self) -> bool:
        """A host's transport, or every node of a cluster, is connected."""
        return self.link.is_open

    @property
    def transport(self) -> Transport | None:
        """A single host's transport (None for a cluster: its nodes are ``link.nodes``)."""
        return self.link.transport

    @property
    def connected_profile(self) -> Target | None:
        return self.link.profile

    def _enable(self) -> None:
        connected, busy = self.connected, self.link.busy
        same_host = (
            connected
            and self.connected_profile is not None
            and self.connected_profile.name == self.hosts.current().name
        )
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
        # a cluster's nodes keep their own paths
        host = profile if isinstance(profile, HostProfile) else None
        self.suite.for_host(host)
        self.history.show_host(
            host_label(profile), also=profile.hosts if isinstance(profile, HostGroup) else ()
        )
        # another host's progress, status and verdict say nothing about this one
        if not self.running:
            self.progress.setValue(0)
            self.eta.setText("")
            self._set_status(
                connection_text(profile, self.connected_profile if self.connected else None)
            )
            if self.shown_host not in (None, host_label(profile)):
                self.display.reset()
                self.showing.setText("")
                self.shown_run = self.shown_host = None
            # no run on screen: name the host selected now, not the one before it
            if self.shown_host is None:
                self.scorecard_view.no_verdict_yet(profile.name)
        self._enable()

    # ---- connection

    def connect_selected(self) -> None:
        profile = self.hosts.current()
        self.disconnect_host()
        self.link.open(profile, self.store.hosts())
        self._enable()

    def _connected(self, line: str) -> None:
        profile, single = self.link.profile, self.link.transport is not None
        self._set_status(
            connection_text(profile if single and profile else self.hosts.current(), profile)
        )
        self.log.add("info", line)
        self._enable()
        if self._start_when_connected and single:
            self._start_when_connected = False
            self.start()

    def probe_this_machine(self) -> None:
        """One click for a first look: select this machine, connect (no SSH) and run the quick
        suite."""
        if self.running:
            return self._set_status("A run is in progress: stop it first")
        self.hosts.refresh(select=local_profile().name)
        self.suite.set_choice("quick")
        self._start_when_connected = True
        self.connect_selected()

    def _connect_failed(self, reason: str) -> None:
        self._start_when_connected = False
        self._set_status(f"Not connected: {reason}")
        self.log.add("error", f"connection failed: {reason}")
        self._enable()

    def disconnect_host(self) -> None:
        if self.link.close():
            self._set_status("Not connected")
        self._enable()

    # ---- running

    def start(self) -> bool:
        """Run the chosen suite on the connected host; False (with a status line) when it cannot
        start."""
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
        self.display.reset()
        self.running, self.run_id, self.shown_host = True, None, host_label(self.connected_profile)
        self.showing.setText(f"Live: {choice.label} suite on {self.connected_profile.name}")
        cancel = self.cancel_event = threading.Event()
        transport, store, label, run = (
            self.transport,
            self.store,
            host_label(self.connected_profile),
            self.run_suite,
        )
        plan = self.plan_request_source and self.plan_request_source()
        nodes, run_cluster = (
            [(host_label(p), node) for p, node in self.link.nodes],
            self.run_cluster,
        )
        if transport is None:  # a cluster: every node's own suite, then the steps between nodes
            self.node_table.start([name for name, _t in nodes])
            self.gpu_charts.say_empty(CLUSTER_GPU_NOTE)  # the cluster's row samples no GPU itself
            events = backend.relay(
                lambda: run_cluster(backend.cluster_nodes(nodes), options, store, cancel, label),
                cancel,
            )
        else:
            events = backend.relay(
                lambda: run(transport, backend.with_step(options, plan), store, cancel, label),
                cancel,
            )
        self.log.add("info", f"starting the {choice.label} suite on {self.connected_profile.name}")
        self.gpu_charts.start()
        self.progress_timer.start()
        self._enable()
        self.job = self.executor.stream(
            events,
            self._on_event,
            lambda _v: self._on_run_done(cancel),
            lambda exc: self._on_run_error(exc, cancel),
        )
        return True

    def stop(self) -> None:
        """Ask the runner to cancel; if it has not ended after STOP_GRACE_MS the relay is
        dropped."""
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

    # ---- events (GUI thread)

    def _on_event(self, event: object) -> None:
        match event:
            case probes.RunStarted():
                self.run_id = event.run_id
                host = self.connected_profile.name if self.connected_profile else "the host"
                self.showing.setText(live_title(self.run_id, host, event.facts))
                self.display.started(event)
            case probes.RunFinished():
                self._run_finished(event)
            case _:
                self.display.show_event(event)
        if self.store.fault is not None:
            self.check_history()

    def _run_finished(self, event: probes.RunFinished) -> None:
        self.display.finished(event)
        self.run_id = self.shown_run = event.run_id
        self.shown_host = (
            host_label(self.connected_profile) if self.connected_profile is not None else None
        )
        self._finish_run(event.status)
        if self.scorecard is not None:
            self.tabs.setCurrentIndex(SCORECARD)

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
        verdict = (
            f" · {verdict_value(self.scorecard) or 'no verdict'}"
            if self.scorecard is not None
            else ""
        )
        self.eta.setText(f"Run {status}{verdict}")
        self.log.add("info" if status == "completed" else "warning", f"run {status}")
        self._set_status(
            f"Run {self.run_id if self.run_id is not None else ''} {status}{verdict}".replace(
                "  ", " "
            )
        )
        self.history.refresh()
        self._enable()

    def _on_run_done(self, cancel: threading.Event) -> None:
        """A run's stream ends a moment after its RunFinished (its threads are joined), by when the
        next run may have started: ``cancel`` names the run, and only the one running now is ended
        by it."""
        # this run's stream ended without RunFinished
        if self.running and cancel is self.cancel_event:
            self._finish_run("cancelled" if cancel.is_set() else "interrupted")

    def _on_run_error(self, exc: BaseException, cancel: threading.Event) -> None:
        if cancel is self.cancel_event:
            self.log.add("error", f"the run stopped: {exc}")
            self._finish_run("failed")

    # ---- scorecard, history, export

    def apply_measured(self) -> PlanRequest | None:
        """Put the measured TFLOP/s and busbw into the plan and emit ``apply_to_plan``."""
        new, notes, status = backend.measured_plan(self.display.evidence, self.plan_request_source)
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
        self.display.show_stored(run)
        self.run_id = self.shown_run = run_id
        self.shown_host = run.summary.host
        self.showing.setText(stored_title(run_id, run.summary))
        self.tabs.setCurrentIndex(LIVE)
        self._enable()
        self._set_status(f"Reopened run {run_id}")
        return run

    def compare(self, a_id: int, b_id: int) -> CompareDialog | None:
        try:
            dialog = CompareDialog.of_runs(
                self.store.load_run(a_id), self.store.load_run(b_id), self
            )
        except KeyError as exc:
            self._set_status(str(exc.args[0]))
            return None
        self.compare_dialog = dialog
        dialog.show()
        return dialog

    def export_json(self, path: Path | None = None, run_id: int | None = None) -> Path | None:
        """Write the run shown (or ``run_id``) as JSON; None when nothing was written (the status
        says why)."""
        return self.exports.export_json(run_id if run_id is not None else self.shown_run, path)

    def export_pdf(
        self,
        path: Path | None = None,
        run_id: int | None = None,
        on_done: Callable[[int], None] | None = None,
    ) -> None:
        """Write the readiness report of the run shown (or ``run_id``) as a PDF, rendered on a
        worker."""
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
