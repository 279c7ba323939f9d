"""The Probe place as an engineer uses it: probe this GPU-less machine and read a true verdict, a
run that measured nothing, switching hosts, comparing two runs and reading the charts.

Every step is a click or a key sent to what has the focus; the expectations are what is on screen.
"""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt

from core.probes.evidence import HostInventory, ProbeEvidence, StorageResult
from core.probes.history.records import HostProfile
from core.probes.history.store import ProbeStore
from core.probes.run.replay import ReplayRunner
from core.probes.scorecard import score
from gui.probe.pane import ProbePane
from gui.workers import InlineExecutor
from tests.gui.probe_driver import (
    click,
    click_host,
    click_row,
    click_tab,
    pick_probes,
    run_and_wait,
    show_pane,
    table_cells,
)

needs_gpu_less_host = pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None,
    reason="this machine has nvidia-smi: the GPU-less verdict cannot be seen",
)


# --------------------------------------------------------------------------- probing this GPU-less
# machine


@needs_gpu_less_host
def test_probing_this_gpu_less_machine_reads_not_ready_for_gpu_training(
    qtbot, probe_store, tmp_path, threads
):
    pane = show_pane(qtbot, probe_store, tmp_path, threads)
    click_host(qtbot, pane, "This machine")
    click(qtbot, pane.connect_button)
    pick_probes(qtbot, pane, "inventory", "health", "compute")
    run_and_wait(qtbot, pane)
    view = pane.scorecard_view
    assert pane.tabs.tabText(pane.tabs.currentIndex()) == "Scorecard"
    assert view.banner.text() == "NOT READY for GPU training: no NVIDIA GPU found."
    assert "#c62828" in view.banner.styleSheet()  # the NOT READY red
    rows = {cells[1]: cells for cells in table_cells(view.table)}
    assert rows["GPU count and model"][0] == "FAIL"
    assert rows["GPU count and model"][2] == "no NVIDIA GPU found"
    # still shown
    for name in ("Whole GPUs (no MIG)", "PCIe link", "ECC errors", "Xid errors since boot"):
        assert rows[name][0] == "INFO" and rows[name][2] == "no NVIDIA GPU found"
    # a CPU's matmul, in the unit that reads: not "0.1 TFLOP/s"
    matmul = rows["Matmul TFLOP/s"][2]
    assert matmul.endswith(" GFLOP/s") and "TFLOP/s" not in matmul
    assert pane.eta.text() == "Run completed · NOT READY"
    # nothing a plan could use: the button is off and says why, beside it and in its tooltip
    reason = "Nothing to apply to a plan: no NVIDIA GPU found on this host."
    assert not view.apply_button.isEnabled()
    assert view.apply_button.toolTip() == reason and view.apply_note.text() == reason
    # the Live tab: empty charts say why
    click_tab(qtbot, pane.tabs, "Live")
    for plot in pane.gpu_charts.plots.values():
        assert plot.note.isVisible() and plot.note.text() == "skipped: no GPU"
    assert pane.gpu_charts.status.text() == "No GPU samples: skipped: no GPU"
    busbw = pane.point_charts["busbw"]
    assert (
        busbw.note.isVisible()
        and busbw.note.text() == "not measured: collectives is not in this suite"
    )
    compute = pane.point_charts["compute"]
    assert compute.isVisible() and not compute.note.isVisible()
    assert compute.getPlotItem().getAxis("left").labelText == "GFLOP/s"


@needs_gpu_less_host
def test_a_run_that_measured_nothing_has_no_verdict_and_says_why(
    qtbot, probe_store, tmp_path, threads
):
    pane = show_pane(qtbot, probe_store, tmp_path, threads)
    click(qtbot, pane.connect_button)
    pick_probes(qtbot, pane, "gpu_metrics")
    run_and_wait(qtbot, pane)
    view = pane.scorecard_view
    assert view.banner.text() == (
        "No verdict: no probe produced any evidence to grade (gpu_metrics skipped: no "
        "NVIDIA GPU found (nvidia-smi is not installed on the host))."
    )
    assert "#6b6b6b" in view.banner.styleSheet()  # grey: neither READY nor NOT READY
    assert "READY" not in view.banner.text()
    assert view.model.rowCount() == 0 and view.counts.text() == "" and view.detail.text() == ""
    assert pane.eta.text() == "Run completed · no verdict"
    assert not view.apply_button.isEnabled()
    assert view.apply_note.text() == (
        "Nothing to apply to a plan: this run measured no GPU model, GPU matmul or "
        "multi-GPU all-reduce."
    )
    click_tab(qtbot, pane.tabs, "History")
    assert table_cells(pane.history.table)[0][5] == "—"  # the history's verdict column: none


# --------------------------------------------------------------------------- switching hosts


def test_selecting_another_host_clears_the_last_runs_status_progress_and_verdict(
    qtbot, probe_store, tmp_path
):
    probe_store.save_host(HostProfile(name="gpu-box", target="ubuntu@10.0.0.5"))
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    pane.hosts.refresh()
    click_host(qtbot, pane, "This machine")
    click(qtbot, pane.connect_button)
    run_and_wait(qtbot, pane)
    assert pane.progress.value() == pane.progress.maximum()
    assert pane.eta.text().startswith("Run completed · ")
    assert pane.scorecard_view.banner.text().startswith("NOT READY")  # the replayed H100's verdict
    click_host(qtbot, pane, "gpu-box")
    assert pane.progress.value() == 0 and pane.progress.text() == "0%"
    assert pane.eta.text() == ""
    assert pane.status.text() == "Not connected to gpu-box (still connected to This machine)"
    assert (
        pane.scorecard_view.banner.text()
        == "No verdict yet for gpu-box: run a suite or reopen a past run."
    )
    assert (
        pane.scorecard_view.model.rowCount() == 0
        and not pane.scorecard_view.apply_button.isEnabled()
    )
    assert pane.showing.text() == "" and pane.gpu_charts.history.samples == 0
    assert not pane.start_button.isEnabled() and pane.connect_button.isEnabled()
    click_host(qtbot, pane, "This machine")
    assert pane.status.text() == "Ready to probe this machine"
    assert (
        pane.scorecard_view.banner.text()
        == "No verdict yet for This machine: run a suite or reopen a past run."
    )
    assert pane.start_button.isEnabled()
    click_tab(qtbot, pane.tabs, "History")
    assert len(pane.history.runs()) == 1  # the run is still there, to reopen


# --------------------------------------------------------------------------- comparing runs


def stored_run(store: ProbeStore, storage: StorageResult) -> int:
    evidence = ProbeEvidence(inventory=HostInventory(hostname="box"), storage=[storage])
    run_id = store.start_run("This machine", "storage", ["storage"])
    store.finish_run(run_id, "completed", evidence=evidence, scorecard=score(evidence))
    return run_id


def compare_first_two(qtbot, pane: ProbePane):
    click_tab(qtbot, pane.tabs, "History")
    click_row(qtbot, pane.history.table, 0)
    click_row(qtbot, pane.history.table, 1, Qt.KeyboardModifier.ControlModifier)
    click(qtbot, pane.history.buttons["compare"])
    dialog = pane.compare_dialog
    assert dialog is not None and dialog.isVisible()
    rows = {r.cells[1]: r for r in dialog.rows}
    return dialog, rows


def test_compare_matches_storage_checks_by_role_not_by_the_scratch_directory(
    qtbot, probe_store, tmp_path
):
    # the runner's random work directories
    for path in ("/tmp/tuneplan.k3j9xq2m", "/tmp/tuneplan.p0w7ze1c"):
        stored_run(
            probe_store, StorageResult(path=path, role="scratch", tool="fio", rand_read_p99_ms=0.4)
        )
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    dialog, rows = compare_first_two(qtbot, pane)
    latency = rows["Random-read latency, scratch"]
    assert latency.cells[2] == latency.cells[4] == "PASS" and latency.cells[7] == ""
    assert not any(r.cells[7].startswith("only in") for r in dialog.rows)
    assert dialog.summary.text() == f"0 of {len(dialog.rows)} checks differ"
    dialog.close()


def test_compare_names_a_data_path_that_changed_between_runs(qtbot, probe_store, tmp_path):
    stored_run(
        probe_store, StorageResult(path="/data", role="data", tool="fio", rand_read_p99_ms=0.4)
    )
    stored_run(
        probe_store,
        StorageResult(path="/mnt/nfs/data", role="data", tool="fio", rand_read_p99_ms=6.0),
    )
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    dialog, rows = compare_first_two(qtbot, pane)
    latency = rows["Random-read latency, data"]
    assert (latency.cells[2], latency.cells[4]) == ("PASS", "WARN")
    assert latency.cells[7] == "status, path, measured"
    assert latency.tooltips[1] == "A: /data\nB: /mnt/nfs/data"
    dialog.close()


# --------------------------------------------------------------------------- reading the charts


def test_chart_titles_and_legends_sit_outside_the_plot_and_are_never_cut(
    qtbot, probe_store, tmp_path
):
    pane = show_pane(
        qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner(), size=(1100, 760)
    )
    click(qtbot, pane.connect_button)
    pick_probes(qtbot, pane, "inventory", "health", "collectives", "storage", "burn")
    run_and_wait(qtbot, pane)
    click_tab(qtbot, pane.tabs, "Live")
    qtbot.wait(50)
    assert pane.point_charts["busbw"].legend_entries() == ["busbw"]
    assert pane.point_charts["iops"].legend_entries() == ["data randread"]
    # one entry wraps as a whole
    assert "data&nbsp;randread" in pane.point_charts["iops"].legend.text()
    for key in ("busbw", "iops"):
        chart = pane.point_charts[key]
        plot, legend, title = (
            chart.plot.geometry(),
            chart.legend.geometry(),
            chart.title_label.geometry(),
        )
        # under the plot, not on its points
        assert chart.legend.isVisible() and legend.top() >= plot.bottom()
        assert title.bottom() <= plot.top()
        for label in (chart.title_label, chart.legend):  # every wrapped line has room
            assert label.height() >= label.heightForWidth(label.width()), label.accessibleName()
    for live in pane.gpu_charts.plots.values():  # a live chart is never narrower than its title
        text = f"{live.spec.title} ({live.spec.unit})"
        assert live.width() >= live.fontMetrics().horizontalAdvance(text) + 24, text
