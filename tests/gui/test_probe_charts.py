"""Live charts: the ring buffer, per-GPU history, and charts fed with real gpu-burn samples, painted
only by the redraw timer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.probes.history.store import ProbeStore
from core.probes.run.replay import burn_metrics
from core.probes.samples import GpuMetric
from gui.probe.decimate import peak_decimate
from gui.probe.gpu_history import CHANNEL, METRICS, GpuHistory
from gui.probe.live_charts import MAX_REDRAW_HZ, LiveGpuCharts
from gui.probe.point_charts import PointChart, SizeAxis, fmt_size
from gui.probe.ring import RingBuffer


def test_ring_keeps_the_newest_samples_contiguous():
    ring = RingBuffer(channels=2, capacity=4)
    ring.extend([0, 1, 2], [[10, 11, 12], [20, 21, 22]])
    t, v = ring.last()
    assert t.tolist() == [0, 1, 2] and v[0].tolist() == [10, 11, 12]
    ring.extend([3, 4, 5], [[13, 14, 15], [23, 24, 25]])  # wraps: 0 and 1 fall out
    t, v = ring.last()
    assert t.tolist() == [2, 3, 4, 5]
    assert v[1].tolist() == [22, 23, 24, 25]
    assert len(ring) == 4 and ring.written == 6
    # a view, not a copy: the redraw hands pyqtgraph the buffer itself
    assert t.base is not None and np.shares_memory(t, ring._t)
    t2, _v2 = ring.last(2)
    assert t2.tolist() == [4, 5]
    t3, _v3 = ring.since(3.5)
    assert t3.tolist() == [4, 5]


def test_ring_batch_larger_than_capacity_keeps_the_tail():
    ring = RingBuffer(channels=1, capacity=3)
    ring.extend(range(10), [list(range(100, 110))])
    t, v = ring.last()
    assert t.tolist() == [7, 8, 9] and v[0].tolist() == [107, 108, 109]
    assert ring.written == 10


def test_ring_rejects_mismatched_shapes():
    ring = RingBuffer(channels=2, capacity=3)
    with pytest.raises(ValueError, match="samples per channel"):
        ring.extend([0, 1], [[1, 2, 3], [4, 5, 6]])


def test_history_holds_an_hour_at_10_hz_and_restarts_stay_ascending():
    history = GpuHistory()
    assert history.capacity == 36000
    history.add([GpuMetric(t=t, gpu=0, power_w=100.0) for t in (0.0, 0.1, 0.2)])
    # the stream restarted at 0
    history.add([GpuMetric(t=t, gpu=0, power_w=200.0) for t in (0.0, 0.1)])
    t, values = history.rings[0].last()
    assert np.all(np.diff(t) > 0)
    assert values[3].tolist() == [100.0, 100.0, 100.0, 200.0, 200.0]


def test_history_loads_a_stored_runs_samples_in_time_order(tmp_path):
    store = ProbeStore(tmp_path / "probes.db")
    run_id = store.start_run("box", "replay", ["burn"])
    burn = burn_metrics()
    # out of order
    store.add_samples(run_id, [*burn[3:], *burn[:3], GpuMetric(t=0.5, gpu=1, power_w=50.0)])
    table = store.load_run(run_id).samples
    store.close()
    history = GpuHistory()
    assert history.load_table(table) == 7
    assert history.gpus == [0, 1]
    t, values = history.rings[0].last()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert values[CHANNEL["power_w"]].tolist() == pytest.approx(
        [631.95, 631.0, 634.0, 633.0, 634.0, 636.0]
    )
    # MiB → GiB, as the charts show
    assert values[CHANNEL["mem_used_bytes"], 0] == pytest.approx(19818 / 1024)
    # the store keeps no memory-controller column
    assert np.isnan(values[CHANNEL["mem_util_pct"]]).all()


def test_charts_receive_real_burn_samples_but_paint_only_on_the_timer(qtbot):
    charts = LiveGpuCharts()
    qtbot.addWidget(charts)
    charts.add_metrics(burn_metrics())
    power = charts.plots["power_w"].curve(0)
    assert power.getOriginalDataset()[1] is None or len(power.getOriginalDataset()[1]) == 0
    assert charts.redraws == 0
    assert charts.redraw()
    x, y = power.getOriginalDataset()
    assert list(y) == pytest.approx([631.95, 631.0, 634.0, 633.0, 634.0, 636.0])
    assert list(x) == [-5.0, -4.0, -3.0, -2.0, -1.0, 0.0]  # seconds before the newest sample
    temp = charts.plots["temp_c"].curve(0).getOriginalDataset()[1]
    assert list(temp) == [59.0, 63.0, 63.0, 64.0, 64.0, 65.0]
    mem = charts.plots["mem_used_bytes"].curve(0).getOriginalDataset()[1]
    assert mem[0] == pytest.approx(19818 / 1024)  # 19818 MiB in GiB; dmon prints no memory in bytes
    assert all(math.isnan(v) for v in mem[1:])
    assert charts.latest("sm_clock_mhz", 0) == 1980.0
    assert not charts.redraw()  # nothing new: no repaint
    cell = charts.now.item(0, 3)
    assert cell is not None and cell.text() == "636"


def test_redraw_timer_is_at_most_20_hz_and_curves_downsample_and_clip(qtbot):
    charts = LiveGpuCharts(redraw_hz=60)
    qtbot.addWidget(charts)
    assert MAX_REDRAW_HZ == 20
    assert charts.timer.interval() >= 50
    charts.add_metrics(burn_metrics())
    with qtbot.waitSignal(charts.redrawn, timeout=2000):
        charts.start()
    charts.stop()
    curve = charts.plots["util_pct"].curve(0)
    assert curve.opts["downsampleMethod"] == "peak" and curve.opts["autoDownsample"]
    assert curve.opts["clipToView"]


def test_time_window_stays_fixed_and_only_the_visible_part_is_handed_over(qtbot):
    charts = LiveGpuCharts()
    qtbot.addWidget(charts)
    charts.resize(1500, 700)
    charts.show()
    charts.add_metrics(
        [GpuMetric(t=float(t), gpu=g, util_pct=50.0) for t in range(0, 600) for g in (0, 1)]
    )
    charts.redraw()
    assert charts.plots["util_pct"].getPlotItem().viewRange()[0] == pytest.approx([-300, 0])
    x, _y = charts.plots["util_pct"].curve(1).getOriginalDataset()
    # samples 299 … 599 s: the last five minutes
    assert x[0] == -300.0 and x[-1] == 0.0 and len(x) == 301
    charts.add_metrics([GpuMetric(t=600.0, gpu=g, util_pct=50.0) for g in (0, 1)])
    charts.redraw()
    # did not move
    assert charts.plots["util_pct"].getPlotItem().viewRange()[0] == pytest.approx([-300, 0])
    charts.window_box.setCurrentIndex(charts.window_box.findText("whole run"))
    x, _y = charts.plots["util_pct"].curve(1).getOriginalDataset()
    assert x[0] == -600.0 and len(x) == 601
    assert charts.plots["util_pct"].getPlotItem().viewRange()[0] == pytest.approx([-600, 0])


def test_y_axis_starts_at_zero_and_only_grows_to_round_values(qtbot):
    charts = LiveGpuCharts()
    qtbot.addWidget(charts)
    charts.add_metrics(burn_metrics())
    charts.redraw()
    power = charts.plots["power_w"]
    # the highest power read is 636 W; ×1.05 = 667.8 W, rounded up to 1, 2, 2.5 or 5 × 10^k: 1000
    assert power.y_top == 1000.0
    assert charts.plots["util_pct"].y_top == 100.0  # a percentage keeps its fixed range
    charts.add_metrics([GpuMetric(t=6.0, gpu=0, power_w=100.0)])
    charts.redraw()
    assert power.y_top == 1000.0  # a lower value does not shrink it
    charts.add_metrics([GpuMetric(t=7.0, gpu=0, power_w=1200.0)])
    charts.redraw()
    assert power.y_top == 2000.0
    low, high = power.getPlotItem().viewRange()[1]
    assert low <= 0.0 and high >= 2000.0


def test_timer_frames_spread_over_ticks_and_are_paced(qtbot):
    charts = LiveGpuCharts(shown=[s.field for s in METRICS])
    qtbot.addWidget(charts)
    charts.add_metrics(burn_metrics())
    charts._on_timer()  # starts a frame: the first two plots
    assert charts.plots["mem_used_bytes"].curves and not charts.plots["temp_c"].curves
    assert charts.redraws == 0
    charts._on_timer()
    charts._on_timer()
    assert charts.redraws == 0
    charts._on_timer()  # eight plots in four ticks
    assert charts.redraws == 1 and all(p.curves for p in charts.plots.values())
    qtbot.wait(120)  # more than two 20 Hz ticks
    charts.add_metrics([GpuMetric(t=6.0, gpu=0, power_w=600.0)])
    width = max(p.getPlotItem().getViewBox().width() for p in charts.plots.values())
    # a pixel column of the 5-minute window takes longer
    assert charts.frame_gap() >= 300 / width > 0.12
    charts._on_timer()
    assert charts._frame is None and charts.redraws == 1  # paced: nothing drawn yet
    charts.pace = False
    assert charts.frame_gap() == pytest.approx(0.05)
    charts._on_timer()
    assert charts._frame is not None


def test_peak_decimation_keeps_each_bins_extremes():
    x = np.arange(10, dtype=float)
    values = np.array([[0, 5, 1, 1, 9, 2, 3, np.nan, 4, 4]], dtype=float)
    out_x, out_v = peak_decimate(x, values, columns=2)  # 10 samples, 2 columns: bins of 5
    assert out_x.tolist() == [0, 0, 5, 5]
    assert out_v.tolist() == [[0, 9, 2, 4]]  # NaN ignored inside a bin
    same_x, same_v = peak_decimate(x, values, columns=5)  # 10 ≤ 2 × 5: unchanged
    assert same_x is x and same_v is values
    out_x, _ = peak_decimate(np.arange(7, dtype=float), np.zeros((1, 7)), columns=3)
    assert out_x.tolist() == [1, 1, 4, 4]  # bins of 3 counted from the newest: sample 0 is left out


def test_busbw_chart_uses_log_size_axis(qtbot):
    chart = PointChart("NCCL", "size", "GB/s", log_x=True)
    qtbot.addWidget(chart)
    chart.add("busbw", 8.0, 0.0)
    chart.add("busbw", 17179869184.0, 487.26)
    chart.add("busbw", 0.0, 1.0)  # no log of 0: dropped
    assert chart.redraw()
    assert chart.points("busbw") == [(8.0, 0.0), (17179869184.0, 487.26)]
    axis = chart.getPlotItem().getAxis("bottom")
    assert isinstance(axis, SizeAxis)
    assert (
        fmt_size(17179869184) == "16 GiB" and fmt_size(8) == "8 B" and fmt_size(1536) == "1.5 KiB"
    )
    assert axis.tickStrings([math.log10(1024)], 1.0, 1.0) == ["1 KiB"]


def test_a_cleared_point_chart_forgets_the_last_run_s_axes(qtbot):
    """A new run's storage and compute charts used to keep the previous run's ranges and unit until
    its own points came, so an empty chart read as if it had figures up to 3,000 MB/s, or in
    GFLOP/s."""
    chart = PointChart("Compute", "run time (s)", "TFLOP/s", small_unit=("GFLOP/s", 1e3))
    qtbot.addWidget(chart)
    chart.add("cpu", 40.0, 0.17)  # a CPU's 170 GFLOP/s: the axis switches to GFLOP/s
    chart.redraw()
    item = chart.getPlotItem()
    assert item.getAxis("left").labelText == "GFLOP/s"
    chart.clear_points()
    assert item.getAxis("left").labelText == "TFLOP/s"
    (x0, x1), (y0, y1) = item.viewRange()
    assert (x0, x1, y0, y1) == (0.0, 1.0, 0.0, 1.0)


def test_a_long_failure_cause_wraps_and_does_not_widen_the_charts(qtbot):
    # A failed GPU-metrics step says its cause (up to 300 characters,
    # core.probes.checks.base.short_error) in the status line: the line wraps, so the narrowest the
    # charts can be stays what a short reason allows (unwrapped, the sentence alone held the window
    # 1,743 pixels wide).
    short, long = LiveGpuCharts(), LiveGpuCharts()
    qtbot.addWidget(short)
    qtbot.addWidget(long)
    short.say_empty("skipped: no GPU")
    cause = (
        "gpu_metrics failed: RuntimeError: " + "Numpy is not available in the host's Python " * 7
    )[:300]
    long.say_empty(cause)
    assert long.status.text() == f"No GPU samples: {cause}"
    assert long.status.minimumSizeHint().width() < 300
    assert long.minimumSizeHint().width() <= short.minimumSizeHint().width() + 50
