"""What the pane shows of a run, without a window: progress and ETA, outcome and throttling lines,
titles."""

from __future__ import annotations

from core.probes.checks.base import HostFacts
from core.probes.evidence import ProbeOutcome, ProbeStatus
from core.probes.history.records import RunSummary
from core.probes.samples import GpuMetric
from gui.probe.run_feed import (
    PROGRESS_STEPS,
    RunProgress,
    ThrottleWatch,
    chart_notes,
    first_clause,
    fmt_duration,
    gpu_chart_note,
    live_title,
    outcome_lines,
    stored_title,
)


def test_progress_counts_finished_probes_and_the_running_ones_share_of_its_eta():
    progress = RunProgress()
    assert progress.at(10.0) is None  # nothing started yet
    assert progress.start("inventory", 1, 4, None, now=0.0) == (
        "info",
        "probe inventory started (1 of 4)",
    )
    assert progress.at(5.0) == (0, "inventory (1/4) · 0:05")
    progress.finish()
    assert progress.at(6.0) == (PROGRESS_STEPS // 4, None)  # finished: the ETA line stays as it was
    progress.start("burn", 2, 4, 100.0, now=10.0)
    assert progress.at(60.0) == (375, "burn (2/4) · 0:50 of about 1:40, ~0:50 left")
    # past its ETA the probe stays just short of done, and nothing is left
    value, text = progress.at(400.0) or (0, None)
    assert (
        value == int(PROGRESS_STEPS * 1.99 / 4) and text is not None and text.endswith("~0:00 left")
    )
    progress.reset()
    assert progress.at(0.0) is None and progress.finished == 0


def test_progress_keeps_the_runners_index_within_the_suite():
    progress = RunProgress()
    assert progress.start("odd", 9, 3, 0.0, now=0.0) == ("info", "probe odd started (3 of 3)")
    assert progress.probe is not None and progress.probe.eta is None  # an ETA of 0 s is no estimate
    assert progress.start("none", 0, 0, None, now=0.0) == ("info", "probe none started (1 of 1)")


def test_outcome_lines_say_how_a_probe_ended():
    ok = ProbeOutcome(
        name="storage", status=ProbeStatus.ok, started=100.0, ended=165.0, warnings=["slow disk"]
    )
    assert outcome_lines(ok) == [
        ("info", "probe storage ok after 1:05"),
        ("warning", "storage: slow disk"),
    ]
    failed = ProbeOutcome(
        name="burn", status=ProbeStatus.failed, started=0.0, ended=1.0, error="no gpu-burn"
    )
    assert outcome_lines(failed) == [("error", "probe burn failed after 0:01: no gpu-burn")]
    lost = ProbeOutcome(
        name="health", status=ProbeStatus.interrupted, started=0.0, ended=1.0, error="EOF"
    )
    assert outcome_lines(lost) == [("error", "connection lost during health: EOF")]


def test_throttle_watch_reports_reasons_once_and_when_they_clear():
    watch = ThrottleWatch()
    slow = GpuMetric(t=1.0, gpu=0, clocks_event_reasons=["sw_thermal_slowdown", "gpu_idle"])
    assert watch.lines([slow]) == [
        ("warning", "GPU 0: clocks held back (sw_thermal_slowdown) at 1.0 s")
    ]
    assert watch.lines([slow.model_copy(update={"t": 2.0})]) == []
    assert watch.lines([GpuMetric(t=3.0, gpu=0)]) == [
        ("info", "GPU 0: sw_thermal_slowdown cleared at 3.0 s")
    ]


def test_titles_name_the_run_host_and_gpus():
    assert live_title(7, "box", None) == "Live: run 7 on box"
    assert (
        live_title(7, "box", HostFacts(gpu_lines=["GPU 0: H100"]))
        == "Live: run 7 on box, 1 NVIDIA GPU"
    )
    assert live_title(7, "box", HostFacts()) == "Live: run 7 on box, no NVIDIA GPU found"
    summary = RunSummary(id=3, host="box", suite="quick", started=0.0, status="completed")
    assert stored_title(3, summary) == "Run 3 on box, — (quick, completed)"
    assert fmt_duration(3725.0) == "1:02:05" and fmt_duration(None) == "—"


def test_an_empty_chart_is_told_why():
    torch = (
        "torch is not installed in the host's Python (/usr/bin/python3), so the all_reduce "
        "benchmark cannot run"
    )
    skipped = ProbeOutcome(
        name="collectives", status=ProbeStatus.skipped, started=0.0, ended=0.0, error=torch
    )
    assert chart_notes(["inventory", "collectives"], [skipped], ended=False) == {
        "busbw": "skipped: torch is not installed in the host's Python",
        "throughput": "not measured: storage is not in this suite",
        "iops": "not measured: storage is not in this suite",
    }
    # a probe still to come gets no note until the run has ended without it
    assert "throughput" not in chart_notes(["storage"], [], ended=False)
    assert (
        chart_notes(["storage"], [], ended=True)["iops"]
        == "not measured: the run ended before storage"
    )
    no_gpu = ProbeOutcome(
        name="storage",
        status=ProbeStatus.failed,
        started=0.0,
        ended=0.0,
        error="no NVIDIA GPU found (nvidia-smi is not installed on the host)",
    )
    assert chart_notes(["storage"], [no_gpu], ended=True)["throughput"] == "failed: no GPU"
    assert (
        gpu_chart_note(False) == "skipped: no GPU"
        and gpu_chart_note(True) is None
        and gpu_chart_note(None) is None
    )
    assert (
        first_clause("fio could not write /data: Permission denied.") == "fio could not write /data"
    )


def test_inter_node_busbw_has_its_own_legend_entry_and_waits_for_allreduce():
    from gui.probe.run_feed import route_point

    assert route_point("busbw", 1 << 20, "inter-node", 3.0) == (
        "busbw",
        "busbw inter-node",
        1 << 20,
    )
    # a single host's, as before
    assert route_point("busbw", 1 << 20, "", 3.0) == ("busbw", "busbw", 1 << 20)
    steps = ["nodes", "agreement", "rendezvous", "distributed", "allreduce"]
    # the all_reduce sweep is still to come
    assert "busbw" not in chart_notes(steps, [], ended=False)
    assert (
        chart_notes(steps, [], ended=True)["busbw"]
        == "not measured: the run ended before allreduce"
    )
    assert (
        chart_notes(["inventory"], [], ended=False)["busbw"]
        == "not measured: collectives is not in this suite"
    )
