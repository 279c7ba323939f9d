"""The Probe pane end to end with the GPU replayed: hosts, connect to this machine, run, live
charts, stop, scorecard, history (reopen, compare), apply to plan and export."""

from __future__ import annotations

import json
import stat
import time
import unicodedata
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDialogButtonBox, QMessageBox

from core.planner.request import PlanRequest
from core.probes.evidence import Check, CheckStatus, Scorecard, Verdict
from core.probes.history.records import HostProfile
from core.probes.history.store import ProbeStore
from core.probes.run.events import MetricsBatch
from core.probes.run.replay import ReplayRunner, replay_evidence, replay_scorecard
from core.probes.samples import GpuMetric
from core.probes.transport.local import LocalTransport
from gui.probe.compare import compare_rows
from gui.probe.hosts import LOCAL_NAME
from gui.probe.pane import ProbePane
from gui.probe.prompts import Prompter
from gui.probe.run_feed import PROGRESS_STEPS, route_point
from gui.probe.suite_picker import SuiteChoice
from gui.workers import InlineExecutor, ThreadExecutor


def make_pane(qtbot, store, tmp_path, runner=None, executor=None):
    pane = ProbePane(
        executor or InlineExecutor(),
        store,
        run_suite=runner or ReplayRunner(),
        make_options=lambda choice: choice,
        known_hosts_file=tmp_path / "known_hosts",
    )
    qtbot.addWidget(pane)
    pane.resize(1280, 900)
    pane.show()
    return pane


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def connect_local(qtbot, pane):
    pane.hosts.select(LOCAL_NAME)
    click(qtbot, pane.connect_button)
    assert isinstance(pane.transport, LocalTransport)
    assert pane.start_button.isEnabled()


def test_this_machine_run_streams_into_charts_and_ends_with_the_scorecard(
    qtbot, probe_store, tmp_path
):
    runner = ReplayRunner()
    pane = make_pane(qtbot, probe_store, tmp_path, runner)
    assert not pane.start_button.isEnabled()  # not connected yet
    connect_local(qtbot, pane)
    pane.suite.set_choice(("inventory", "storage"), data_path=str(tmp_path))
    click(qtbot, pane.start_button)
    choice = runner.calls[0]["options"]
    assert isinstance(choice, SuiteChoice) and choice.suite == ("inventory", "storage")
    assert choice.data_path == str(tmp_path)
    assert runner.calls[0]["host"] == LOCAL_NAME
    # live charts: the last dmon power reading and the last busbw row of the sweep, read from the
    # fixtures
    pane.gpu_charts.redraw()
    assert pane.gpu_charts.latest("power_w", 0) == 636.0
    assert pane.gpu_charts.latest("temp_c", 0) == 65.0
    busbw = pane.point_charts["busbw"].points("busbw")
    assert len(busbw) == 32 and busbw[-1] == (17179869184.0, 487.26)
    assert len(pane.point_charts["iops"].points("data randread")) == 1
    assert ("warning", "GPU 0: replayed burn") in pane.log.lines()
    # the verdict
    card = pane.scorecard
    assert card is not None
    assert pane.scorecard_view.banner.text().startswith(card.verdict.value)
    assert pane.scorecard_view.model.rowCount() == len(card.checks)
    assert pane.tabs.currentIndex() == 1
    assert pane.progress.value() == PROGRESS_STEPS
    assert not pane.running and pane.start_button.isEnabled() and not pane.stop_button.isEnabled()
    # the run is in the history of this host
    assert [r.id for r in pane.history.runs()] == [pane.run_id]
    assert pane.history.runs()[0].status == "completed"


def test_status_cells_are_coloured_by_status(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    card = Scorecard(
        verdict=Verdict.not_ready,
        summary="NOT READY: one check failed.",
        checks=[
            Check(
                area="health",
                name="Xid",
                status=CheckStatus.fail,
                measured="Xid 79",
                expected="none",
                source="NVIDIA Xid catalog",
                reason="GPU fell off the bus",
            ),
            Check(
                area="storage",
                name="Free space",
                status=CheckStatus.passed,
                measured="40 % used",
                expected="< 80 % used",
                source="stas00",
                reason="plenty of room",
            ),
        ],
    )
    pane.scorecard_view.show_scorecard(card)
    model = pane.scorecard_view.model
    assert pane.scorecard_view.statuses() == {"Xid": "FAIL", "Free space": "PASS"}
    assert model.index(0, 0).data(Qt.ItemDataRole.BackgroundRole).color().name() == "#c62828"
    assert model.index(1, 0).data(Qt.ItemDataRole.BackgroundRole).color().name() == "#2e7d32"
    assert model.index(0, 4).data() == "GPU fell off the bus"
    # the worst check is selected and spelled out under the table
    assert pane.scorecard_view.detail.text() == (
        "Xid — FAIL. Measured: Xid 79. Expected: none. Source: NVIDIA Xid "
        "catalog. GPU fell off the bus"
    )
    assert "NOT READY" in pane.scorecard_view.banner.text()
    assert "#c62828" in pane.scorecard_view.banner.styleSheet()


def test_stop_cancels_a_run_mid_burn(qtbot, probe_store, tmp_path):
    runner = ReplayRunner(hold="burn", hold_s=30.0)
    executor = ThreadExecutor()
    pane = make_pane(qtbot, probe_store, tmp_path, runner, executor)
    try:
        connect_local(qtbot, pane)
        click(qtbot, pane.start_button)
        progress = pane.display.run_progress
        qtbot.waitUntil(
            lambda: progress.probe is not None and progress.probe.name == "burn", timeout=10000
        )
        assert pane.running and pane.stop_button.isEnabled()
        qtbot.waitUntil(
            lambda: "30 s" in pane.eta.text() or "0:30" in pane.eta.text(), timeout=5000
        )
        click(qtbot, pane.stop_button)
        qtbot.waitUntil(lambda: not pane.running, timeout=10000)
        assert runner.cancel_seen.is_set()
        assert pane.eta.text() == "Run cancelled"
        assert pane.history.runs()[0].status == "cancelled"
        assert pane.scorecard is None and "cancelled" in pane.scorecard_view.banner.text()
        assert ("warning", "stop requested") in pane.log.lines()
    finally:
        assert executor.stop_all(5000)


class SlowToEnd(ReplayRunner):
    """The replay held at its burn until stopped, whose stream ends a while after its RunFinished,
    as a real run's does while it joins a worker thread slow to stop
    (core.probes.run.run_queue.drain waits up to 5 s for each)."""

    def __init__(self, linger_s: float) -> None:
        super().__init__(hold="burn", hold_s=30.0)
        self.linger_s = linger_s

    def __call__(self, *args, **kwargs):
        yield from super().__call__(*args, **kwargs)
        time.sleep(self.linger_s)


def test_a_run_started_as_the_last_one_ends_is_not_ended_by_the_last_ones_stream(
    qtbot, probe_store, tmp_path, threads
):
    """Stop, then Start at once: the stopped run's stream ending a moment later used to end the new
    run on screen ("Run interrupted", Start enabled again) while it went on."""
    pane = make_pane(qtbot, probe_store, tmp_path, SlowToEnd(linger_s=1.5), threads)

    def at_burn() -> bool:
        return pane.running and pane.eta.text().startswith("burn (")

    connect_local(qtbot, pane)
    click(qtbot, pane.start_button)
    qtbot.waitUntil(at_burn, timeout=10000)
    click(qtbot, pane.stop_button)
    qtbot.waitUntil(lambda: pane.eta.text() == "Run cancelled", timeout=10000)
    qtbot.wait(200)  # read it, then start again
    click(qtbot, pane.start_button)
    qtbot.waitUntil(at_burn, timeout=10000)
    qtbot.waitUntil(lambda: threads.active == 1, timeout=5000)  # the stopped run's stream has ended
    qtbot.wait(100)
    assert at_burn(), (pane.eta.text(), pane.log.lines()[-4:])
    assert pane.stop_button.isEnabled() and not pane.start_button.isEnabled()
    click(qtbot, pane.stop_button)
    qtbot.waitUntil(lambda: pane.eta.text() == "Run cancelled", timeout=10000)
    assert [r.status for r in probe_store.runs()] == ["cancelled", "cancelled"]


def test_throttling_in_the_samples_is_logged(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    pane._on_event(
        MetricsBatch(metrics=[GpuMetric(t=1.0, gpu=3, clocks_event_reasons=["hw_slowdown"])])
    )
    pane._on_event(MetricsBatch(metrics=[GpuMetric(t=2.0, gpu=3, clocks_event_reasons=[])]))
    assert pane.log.lines() == [
        ("error", "GPU 3: clocks held back (hw_slowdown) at 1.0 s"),
        ("info", "GPU 3: hw_slowdown cleared at 2.0 s"),
    ]


def test_history_reopens_a_run_from_the_store(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    connect_local(qtbot, pane)
    click(qtbot, pane.start_button)
    first = pane.run_id
    pane.gpu_charts.clear()
    pane.log.clear()
    pane.tabs.setCurrentIndex(2)
    pane.history.select_ids([first])
    click(qtbot, pane.history.buttons["reopen"])
    assert pane.shown_run == first and pane.tabs.currentIndex() == 0
    x, y = pane.gpu_charts.plots["power_w"].curve(0).getOriginalDataset()
    assert list(y) == pytest.approx([631.95, 631.0, 634.0, 633.0, 634.0, 636.0])
    assert list(x) == [-5.0, -4.0, -3.0, -2.0, -1.0, 0.0]
    assert pane.point_charts["busbw"].points("busbw")[-1] == (17179869184.0, 487.26)
    assert ("warning", "GPU 0: replayed burn") in pane.log.lines()
    assert pane.scorecard_view.model.rowCount() == len(pane.scorecard.checks)
    assert f"Run {first} on {LOCAL_NAME}" in pane.showing.text()


def test_compare_two_runs_and_two_hosts(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    connect_local(qtbot, pane)
    click(qtbot, pane.start_button)
    click(qtbot, pane.start_button)
    ids = [r.id for r in pane.history.runs()]
    assert len(ids) == 2
    pane.history.select_ids(ids)
    assert pane.history.buttons["compare"].isEnabled()
    click(qtbot, pane.history.buttons["compare"])
    dialog = pane.compare_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.summary.text() == f"0 of {len(pane.scorecard.checks)} checks differ"
    dialog.close()
    # another host's run in the history, with one check that differs
    other_card = replay_scorecard(replay_evidence())
    changed = other_card.checks[0].model_copy(
        update={"status": CheckStatus.fail, "measured": "broken"}
    )
    other_card = other_card.model_copy(update={"checks": [changed, *other_card.checks[1:]]})
    other = probe_store.start_run("gpu-box-2", "quick", ["inventory"])
    probe_store.finish_run(other, "completed", evidence=replay_evidence(), scorecard=other_card)
    pane.history.select_ids([ids[0]])
    with qtbot.waitSignal(pane.history.picking, timeout=2000) as opened:
        click(qtbot, pane.history.buttons["other"])
    picker = opened.args[0]
    picker.choose(other)
    picker.accept()
    dialog = pane.compare_dialog
    assert dialog is not None
    assert (
        dialog.windowTitle() == f"Compare {LOCAL_NAME} · run {ids[0]} with gpu-box-2 · run {other}"
    )
    assert dialog.summary.text() == f"1 of {len(other_card.checks)} checks differ"
    first = dialog.rows[0]
    assert first.cells[4] == "FAIL" and first.cells[5] == "broken"
    assert first.cells[7] == "status, measured" and {3, 5, 7} <= first.highlight


def test_compare_rows_align_by_check_and_mark_missing_ones():
    def card(*checks):
        return Scorecard(verdict=Verdict.ready, summary="", checks=list(checks))

    def check(name, status, measured):
        return Check(
            area="network",
            name=name,
            status=status,
            measured=measured,
            expected="≥ 90 %",
            source="nccl-tests",
            reason="",
        )

    rows = compare_rows(
        card(
            check("busbw", CheckStatus.passed, "480 GB/s"), check("GDR", CheckStatus.passed, "on")
        ),
        card(
            check("IB ports", CheckStatus.fail, "2 down"),
            check("busbw", CheckStatus.warn, "400 GB/s"),
        ),
    )
    assert [r.cells[1] for r in rows] == ["busbw", "GDR", "IB ports"]
    assert rows[0].cells[2:6] == ["PASS", "480 GB/s", "WARN", "400 GB/s"]
    assert rows[0].cells[7] == "status, measured"
    assert rows[1].cells[7] == "only in A" and rows[1].cells[4] == "—"
    assert rows[2].cells[7] == "only in B" and rows[2].cells[2] == "—"


def test_apply_to_plan_emits_a_plan_request(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    connect_local(qtbot, pane)
    click(qtbot, pane.start_button)
    assert pane.scorecard_view.apply_button.isEnabled()
    with qtbot.waitSignal(pane.apply_to_plan, timeout=2000) as applied:
        click(qtbot, pane.scorecard_view.apply_button)
    request = applied.args[0]
    assert isinstance(request, PlanRequest)
    # the default plan names no hardware: the probed box (one "NVIDIA H100 80GB HBM3") becomes it
    assert request.hardware is not None and request.hardware.gpu.startswith("H100")
    assert any(line[1].startswith("plan: ") for line in pane.log.lines())


def test_export_json_and_pdf(qtbot, probe_store, tmp_path):
    from pypdf import PdfReader

    pane = make_pane(qtbot, probe_store, tmp_path)
    assert not pane.export_json_button.isEnabled()
    connect_local(qtbot, pane)
    click(qtbot, pane.start_button)
    path = pane.export_json(tmp_path / "run.json")
    assert path is not None
    data = json.loads(path.read_text())
    assert data["scorecard"]["verdict"] == pane.scorecard.verdict.value
    assert data["evidence"]["inventory"]["hostname"] == "h100-burn"
    pages: list[int] = []
    pane.export_pdf(tmp_path / "run.pdf", on_done=pages.append)
    assert pages and pages[0] >= 1
    raw = "".join(p.extract_text() for p in PdfReader(tmp_path / "run.pdf").pages)
    text = " ".join(unicodedata.normalize("NFKC", raw).split())
    assert f"{pane.scorecard.verdict.value}:" in text
    assert f"GPU node readiness: {LOCAL_NAME}" in text
    # like the probe history they come from (0600), the exports name the host: only their owner may
    # read them
    assert {oct(stat.S_IMODE((tmp_path / n).stat().st_mode)) for n in ("run.json", "run.pdf")} == {
        oct(0o600)
    }
    assert pane.export_json(tmp_path / "missing" / "run.json") is None
    assert "Cannot write" in pane.status.text()


def test_hosts_add_edit_remove_without_secrets(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    hosts = pane.hosts
    assert [p.name for p in hosts.profiles()] == [LOCAL_NAME]
    assert not hosts.buttons["remove"].isEnabled()
    click(qtbot, hosts.buttons["add"])
    dialog = hosts.dialog
    assert dialog is not None
    save = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    assert dialog.error.text() == ""  # nothing typed yet: nothing wrong yet
    qtbot.keyClicks(dialog.name, "lambda-1")
    qtbot.keyClicks(dialog.target, "ubuntu@10.0.0.5:99999")
    assert not save.isEnabled() and "port '99999'" in dialog.error.text()
    dialog.target.clear()
    qtbot.keyClicks(dialog.target, "ubuntu@10.0.0.5:2222")
    dialog.identity.setText("~/.ssh/id_ed25519")
    dialog.data_path.setText("/data")
    assert save.isEnabled()
    click(qtbot, save)
    saved = probe_store.host("lambda-1")
    assert saved == HostProfile(
        name="lambda-1",
        target="ubuntu@10.0.0.5:2222",
        identity_file="~/.ssh/id_ed25519",
        data_path="/data",
    )
    assert hosts.current().name == "lambda-1"
    assert pane.suite.data_path.text() == "/data"  # the profile's path goes into the suite picker
    assert pane.history.host == "lambda-1"
    # edit: rename keeps one profile
    click(qtbot, hosts.buttons["edit"])
    hosts.dialog.name.setText("lambda-a")
    click(qtbot, hosts.dialog.buttons.button(QDialogButtonBox.StandardButton.Save))
    assert [p.name for p in probe_store.hosts()] == ["lambda-a"]
    # remove, after a confirmation
    with qtbot.waitSignal(hosts.editing, timeout=2000) as asked:
        click(qtbot, hosts.buttons["remove"])
    box = asked.args[0]
    assert isinstance(box, QMessageBox)
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    assert probe_store.hosts() == []
    assert hosts.current().name == LOCAL_NAME


def test_local_entry_edits_keep_it_local(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    click(qtbot, pane.hosts.buttons["edit"])
    dialog = pane.hosts.dialog
    assert dialog.name.isReadOnly() and not dialog.target.isEnabled()
    dialog.checkpoint_path.setText("/ckpt")
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Save))
    assert probe_store.hosts() == [
        HostProfile(name=LOCAL_NAME, target="local", local=True, checkpoint_path="/ckpt")
    ]
    assert [p.name for p in pane.hosts.profiles()] == [LOCAL_NAME]


def test_start_needs_a_connection_and_a_probe(qtbot, probe_store, tmp_path):
    runner = ReplayRunner()
    pane = make_pane(qtbot, probe_store, tmp_path, runner)
    assert not pane.start()
    assert pane.status.text() == "Connect to the host first"
    connect_local(qtbot, pane)
    pane.suite.set_choice(())
    assert not pane.start()
    assert pane.status.text() == "Pick at least one probe"
    assert runner.calls == []
    with pytest.raises(ValueError, match="probe 'gpu' is unknown; allowed: inventory"):
        pane.suite.set_choice(("gpu",))


def test_suite_picker_quick_full_custom(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    picker = pane.suite
    assert picker.choice().suite == "quick" and not picker.burn.isEnabled()
    click(qtbot, picker.mode_buttons["full"])
    assert picker.choice().suite == "full" and picker.burn.isEnabled()
    assert picker.choice().burn_seconds == 600  # 10 minutes by default
    assert picker.checks["burn"].isChecked() and not picker.checks["burn"].isEnabled()
    click(qtbot, picker.mode_buttons["custom"])
    picker.checks["health"].setChecked(False)
    assert "health" not in picker.choice().probes and picker.checks["health"].isEnabled()


def test_series_routing():
    assert route_point("busbw", 8.0, "nccl-tests", 3.0) == ("busbw", "busbw", 8.0)
    assert route_point("fio_iops", 12.0, "data randread", 12.0) == ("iops", "data randread", 12.0)
    assert route_point("fio_write", 9.0, "checkpoint seqwrite", 9.0) == (
        "throughput",
        "checkpoint seqwrite",
        9.0,
    )
    # matmul gives the device index as x; it is drawn at the time it was measured, next to the burn
    assert route_point("compute_tflops", 1.0, "cuda 1", 42.5) == ("compute", "matmul cuda 1", 42.5)
    assert route_point("tflops", 300.0, "cuda 1", 300.0) == ("compute", "burn cuda 1", 300.0)
    assert route_point("cpu_temp", 5.0, "cpu", 5.0) == ("cpu", "CPU °C", 5.0)


def test_passphrase_prompt_is_asked_and_not_kept(qtbot):
    prompter = Prompter()

    def answer(dialog):
        def type_and_accept():
            dialog.setTextValue("s3cret")
            dialog.accept()

        QTimer.singleShot(0, type_and_accept)

    prompter.shown.connect(answer)
    assert prompter.passphrase("Passphrase for key /k: ") == "s3cret"
    assert prompter.asked_count == 1
    assert not hasattr(prompter, "answer")
    prompter.close()
    assert prompter.password("Password: ") is None  # closed: nothing is asked any more
    assert prompter.asked_count == 1


def test_connect_failure_is_reported(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    probe_store.save_host(HostProfile(name="bad", target="user@bad host"))
    pane.hosts.refresh(select="bad")
    click(qtbot, pane.connect_button)
    assert pane.transport is None
    assert pane.status.text().startswith("Not connected: host 'bad host'")
    assert pane.log.lines()[-1][0] == "error"


def test_closing_the_window_cancels_the_run(qtbot, probe_store, tmp_path):
    pane = make_pane(qtbot, probe_store, tmp_path)
    connect_local(qtbot, pane)
    pane.cancel_event = None
    pane.shutdown()
    assert pane.transport is None and not pane.gpu_charts.timer.isActive()


def test_store_path_default_is_not_touched(qtbot, probe_store, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    pane = ProbePane.create_default(InlineExecutor())
    qtbot.addWidget(pane)
    assert pane.store.path == tmp_path / "xdg" / "tuneplan" / "probes.db"
    pane.store.close()


@pytest.mark.integration
@pytest.mark.slow
def test_real_runner_on_this_machine_runs_a_short_custom_suite(qtbot, probe_store, tmp_path):
    """The real runner over LocalTransport: inventory and fio storage at a temp path (no GPU
    here)."""
    import shutil

    from gui.probe import backend

    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")

    def short(choice):
        return backend.make_options(choice).model_copy(
            update={"fio_runtime_s": 1.0, "fio_size": 16 << 20, "small_files": 50}
        )

    executor = ThreadExecutor()
    pane = ProbePane(
        executor, probe_store, make_options=short, known_hosts_file=tmp_path / "known_hosts"
    )
    qtbot.addWidget(pane)
    pane.show()
    try:
        connect_local(qtbot, pane)
        pane.suite.set_choice(("inventory", "storage"), data_path=str(tmp_path))
        click(qtbot, pane.start_button)
        assert pane.running
        qtbot.waitUntil(lambda: not pane.running, timeout=120000)
        assert pane.eta.text().startswith("Run completed"), pane.log.lines()
        throughput = pane.point_charts["throughput"]
        assert throughput.series, "fio reported no read throughput while it ran"
        assert all(y > 0 for name in throughput.series for _x, y in throughput.points(name))
        assert pane.scorecard is not None
        # GPU-less: not a GPU training box, and the storage figures are graded all the same
        assert pane.scorecard_view.banner.text().startswith(
            "NOT READY for GPU training: no NVIDIA GPU found"
        )
        assert pane.scorecard_view.statuses()["GPU count and model"] == "FAIL"
        assert any(
            name.startswith("Random-read latency, data") for name in pane.scorecard_view.statuses()
        )
        run = probe_store.load_run(pane.run_id)
        assert run.summary.status == "completed" and run.summary.host == LOCAL_NAME
        assert [o.name for o in run.outcomes] == ["inventory", "storage"]
        assert run.evidence is not None and run.evidence.storage[0].path == str(tmp_path)
        # the work directory is gone
        assert run.summary.workdir and not Path(run.summary.workdir).exists()
        assert pane.gpu_charts.history.samples == 0 and "no NVIDIA GPU" in pane.showing.text()
    finally:
        assert executor.stop_all(5000)


def test_runner_options_errors_are_one_sentence(qtbot, probe_store, tmp_path):
    from gui.probe import backend

    pane = ProbePane(
        InlineExecutor(), probe_store, run_suite=ReplayRunner(), make_options=backend.make_options
    )
    qtbot.addWidget(pane)
    connect_local(qtbot, pane)
    pane.suite.set_choice(("storage",), data_path="data")
    assert not pane.start() and not pane.running
    assert pane.status.text() == (
        "Cannot start: data path: 'data' must be an absolute path on the host (starting with /)"
    )


def test_main_window_builds_the_probe_place_when_first_shown(qtbot):
    from gui.main_window import MainWindow
    from gui.probe import ProbePlace
    from tests.gui.wizard_driver import settle

    window = MainWindow.create_default()
    qtbot.addWidget(window)
    window.show()
    place = window.places["Probe"]
    # nothing imported or opened at start
    assert isinstance(place, ProbePlace) and place.pane is None
    window.show_place("Probe")
    assert place.status.isVisible() and place.status.text().startswith("Loading the probe tools")
    qtbot.waitUntil(lambda: place.pane is not None and place.pane.isVisible(), timeout=10000)
    assert place.pane is not None and not place.status.isVisible()
    assert place.pane.executor is window.executor
    assert [p.name for p in place.pane.hosts.profiles()] == [LOCAL_NAME]
    store = place.pane.store
    # a plan still waiting for its debounce would start after the close
    settle(qtbot, window.wizard.state)
    window.close()
    store.close()


def test_opening_the_window_marks_a_killed_clients_run_interrupted(qtbot, tmp_path, monkeypatch):
    """A run a killed tuneplan left 'running' (its lease names a process that has exited) is marked
    interrupted when the window opens the history, and the window says so; its samples stay."""
    import socket
    import subprocess
    import sys

    from core.probes.history.leases import Lease, take_lease

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "xdg" / "tuneplan" / "probes.db"
    store = ProbeStore(path)
    run_id = store.start_run(LOCAL_NAME, "quick", ["inventory", "storage"])
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    take_lease(store, run_id, Lease(pid=child.pid, host=socket.gethostname(), start=None))
    store.add_samples(run_id, [GpuMetric(t=0.5, gpu=0, power_w=300.0)])
    store.close()
    pane = ProbePane.create_default(InlineExecutor())
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(lambda: "marked interrupted" in pane.status.text())
    assert pane.status.text() == (
        "1 earlier run stopped without an end (its tuneplan was killed): marked "
        "interrupted, samples kept"
    )
    again = pane.store.load_run(run_id)
    assert again.summary.status == "interrupted" and len(again.samples) == 1
    pane.store.close()


def test_the_suites_checkboxes_show_whole_in_the_pane(qtbot, probe_store, tmp_path):
    # Two columns of whole titles were wider than the hosts' side of the pane: 'Inventory (GPUs,
    # PCIe, NICs,' was cut. Each box now shows its name whole, what it measures in its tooltip.
    pane = make_pane(qtbot, probe_store, tmp_path)
    qtbot.waitUntil(pane.suite.isVisible, timeout=2000)
    for name, box in pane.suite.checks.items():
        assert box.width() >= box.sizeHint().width(), (
            name,
            box.text(),
            box.width(),
            box.sizeHint().width(),
        )
        assert box.toolTip().startswith(box.text())
    assert pane.suite.checks["inventory"].toolTip() == "Inventory (GPUs, PCIe, NICs, filesystems)"
