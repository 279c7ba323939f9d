"""Live per-GPU charts that repaint from a timer, never per sample (DESIGN §7, STYLE habit 5).

Samples go into `GpuHistory` ring buffers as events arrive; a QTimer (at most 20 Hz) hands each
curve a contiguous view of the visible window with ``setData``. Curves use peak downsampling and
clip to view, with width-1 opaque pens, so an hour of 10 Hz history for eight GPUs stays cheap to
draw.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGraphicsItem,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.probes import GpuMetric
from gui.colors import gpu_color, palette_colors
from gui.probe.decimate import peak_decimate
from gui.probe.gpu_history import CHANNEL, DEFAULT_SHOWN, METRICS, GpuHistory, MetricSpec
from gui.probe.point_charts import ChartNote
from gui.probe.ring import FloatArray
from gui.probe.staged import StagedWidgets

MAX_REDRAW_HZ = 20.0
# Pacing: a redraw is worth doing when the newest sample has moved the curves by a pixel column
# (window ÷ plot width), but at least every MAX_STALE_S; and a frame never takes more than
# 1/LOAD_GUARD of the thread.
MAX_STALE_S = 1.0
LOAD_GUARD = 3.0
# the newest-value table changes text at most once a second (text layout is costly)
TABLE_PERIOD_S = 1.0
Y_PADDING = 0.05  # a curve at 100 % stays off the frame
# a curve with fewer points than this also gets dots: one sample alone draws no line
SPARSE_POINTS = 60
# a timer tick updates at most this many plots: a frame of 8 spreads over four ticks
PLOTS_PER_TICK = 2
WINDOWS: tuple[tuple[str, float | None], ...] = (
    ("last minute", 60.0),
    ("last 5 minutes", 300.0),
    ("last 15 minutes", 900.0),
    ("last hour", 3600.0),
    ("whole run", None),
)


def nice_ceiling(value: float) -> float:
    """The next 1, 2, 2.5 or 5 × 10^k at or above ``value`` (a y-axis top that does not move for
    small rises)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(value))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= value)


class MetricPlot(pg.PlotWidget):
    """One metric, one curve per GPU.

    Both axes stay still while samples stream in, so pyqtgraph never re-lays out their text (the
    costliest part of a frame): x is seconds before the newest sample over a fixed window, and y
    starts at 0 with a top that only grows (to a round value) when a sample exceeds it. Axes are
    cached as pixmaps.
    """

    def __init__(self, spec: MetricSpec, parent: QWidget | None = None) -> None:
        background, foreground = palette_colors()
        super().__init__(parent=parent, background=background)
        self.spec, self._fg = spec, foreground
        self.setAccessibleName(f"{spec.title} chart")
        self.setMinimumHeight(140)
        title = f"{spec.title} ({spec.unit})"
        # the title is drawn inside the plot, where it would be cut off in a narrower chart
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance(title) + 48)
        # after super().__init__: the plot item exists
        self.note = ChartNote(self, f"{spec.title} chart")
        item = self.getPlotItem()
        for axis in ("left", "bottom"):
            item.getAxis(axis).setPen(pg.mkPen(foreground))
            item.getAxis(axis).setTextPen(pg.mkPen(foreground))
            item.getAxis(axis).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        item.setTitle(title, color=foreground, size="9pt")
        item.setLabel("bottom", "s before the newest sample", **{"font-size": "8pt"})
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setMenuEnabled(False)
        item.setMouseEnabled(x=False, y=False)
        item.hideButtons()
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        item.enableAutoRange(enable=False)
        self.fixed_top = spec.y_range is not None
        self.y_top = spec.y_range[1] if spec.y_range is not None else 1.0
        item.setYRange(0.0, self.y_top, padding=Y_PADDING)
        self.x_span: tuple[float, float] | None = None
        self.curves: dict[int, pg.PlotDataItem] = {}
        self.paint_cost = 0.0  # seconds the last paint of this plot took

    def paintEvent(self, event: QPaintEvent) -> None:
        started = time.perf_counter()
        super().paintEvent(event)
        self.paint_cost = time.perf_counter() - started

    def curve(self, gpu: int) -> pg.PlotDataItem:
        found = self.curves.get(gpu)
        if found is None:
            pen = pg.mkPen(gpu_color(gpu, self._fg), width=1)
            # connect="auto": pyqtgraph breaks the line at NaN (a missing value) only when the data
            # has one
            found = self.getPlotItem().plot([], [], pen=pen, name=f"GPU {gpu}", connect="auto")
            self.curves[gpu] = found
        return found

    def fit_top(self, peak: float) -> None:
        """Raise the y-axis top to a round value above ``peak`` (never lowers it while
        streaming)."""
        if self.fixed_top or not math.isfinite(peak) or peak <= self.y_top:
            return
        self.y_top = nice_ceiling(peak * 1.05)
        self.getPlotItem().setYRange(0.0, self.y_top, padding=Y_PADDING)

    def reset_top(self) -> None:
        if not self.fixed_top:
            self.y_top = 1.0
            self.getPlotItem().setYRange(0.0, self.y_top, padding=Y_PADDING)

    def set_x_span(self, left: float, right: float) -> None:
        if self.x_span != (left, right):
            self.x_span = (left, right)
            self.getPlotItem().setXRange(left, right, padding=0)

    def clear_curves(self) -> None:
        for curve in self.curves.values():
            self.getPlotItem().removeItem(curve)
        self.curves.clear()
        self.reset_top()


class GpuNowTable(QTableWidget):
    """The newest value of every shown metric per GPU: the one-glance view nvitop and gpustat users
    like."""

    def __init__(self, specs: Sequence[MetricSpec], parent: QWidget | None = None) -> None:
        super().__init__(0, len(specs), parent)
        self.specs = list(specs)
        self.setAccessibleName("Latest GPU values")
        self.setHorizontalHeaderLabels([s.short for s in specs])
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.setMinimumHeight(140)

    def update_values(self, rows: dict[int, list[float]]) -> None:
        gpus = sorted(rows)
        if self.rowCount() != len(gpus):
            self.setRowCount(len(gpus))
        self.setVerticalHeaderLabels([f"GPU {g}" for g in gpus])
        for r, gpu in enumerate(gpus):
            for c, value in enumerate(rows[gpu]):
                text = (
                    "—"
                    if value != value
                    else f"{value:,.0f}"
                    if abs(value) >= 10
                    else f"{value:.1f}"
                )
                item = self.item(r, c)
                if item is None:
                    item = QTableWidgetItem()
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                    self.setItem(r, c, item)
                if item.text() != text:
                    item.setText(text)


@dataclass
class _Frame:
    """One redraw's data, drawn a few plots per timer tick."""

    curves: dict[int, tuple[FloatArray, FloatArray]]
    peaks: FloatArray
    end: float
    span: float
    full: bool
    todo: list[int]
    cost: float


class LiveGpuCharts(QWidget):
    """Charts of GPU metrics fed by :meth:`add_metrics`; repainted by a timer while :meth:`start`
    ed.

    The timer ticks at ≤ 20 Hz and updates at most ``PLOTS_PER_TICK`` plots per tick, so no tick
    holds the GUI thread for a whole frame. It starts a new frame only when there are new samples
    and it is worth it (``pace``): when the newest sample has moved the curves by about a pixel
    column (5 minutes over 500 px is 0.6 s), at least once a second, and never so often that drawing
    takes more than a third of the GUI thread (the last frame's ``setData`` and paint times decide).
    Data rate and paint rate stay decoupled, as in Friture.

    Signals: ``redrawn(float)`` seconds the last redraw took (for benchmarks and tests).
    """

    redrawn = Signal(float)

    def __init__(
        self,
        shown: Sequence[str] = DEFAULT_SHOWN,
        redraw_hz: float = MAX_REDRAW_HZ,
        history: GpuHistory | None = None,
        columns: int = 3,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setAccessibleName("Live GPU charts")
        self.history = history or GpuHistory()
        self.window_s: float | None = 300.0
        self._drawn_version = -1
        self._drawn_written: dict[int, int] = {}
        self._frame: _Frame | None = None
        self._table_at = 0.0
        self.redraws = 0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.status = QLabel("No GPU samples yet")
        self.status.setAccessibleName("GPU sample status")
        # a failed step's cause may be long: it wraps, the window does not widen
        self.status.setWordWrap(True)
        top.addWidget(self.status, 1)
        top.addWidget(QLabel("Show"))
        self.window_box = QComboBox()
        self.window_box.setAccessibleName("Chart time window")
        for label, seconds in WINDOWS:
            self.window_box.addItem(label, seconds)
        self.window_box.setCurrentIndex(1)
        self.window_box.currentIndexChanged.connect(self._window_changed)
        top.addWidget(self.window_box)
        layout.addLayout(top)
        grid = QGridLayout()
        unknown = [name for name in shown if name not in CHANNEL]
        if unknown:
            raise ValueError(
                f"shown metric '{unknown[0]}' is unknown; allowed: {', '.join(CHANNEL)}"
            )

        def make(name: str) -> MetricPlot:
            plot = MetricPlot(METRICS[CHANNEL[name]])
            index = list(shown).index(name)
            grid.addWidget(plot, index // columns, index % columns)
            return plot

        # made one per event-loop turn once shown (gui.probe.staged): ~20 ms each
        self.plots: StagedWidgets[MetricPlot] = StagedWidgets(shown, make)
        self.now = GpuNowTable([METRICS[CHANNEL[n]] for n in shown])
        grid.addWidget(self.now, len(shown) // columns, len(shown) % columns)
        layout.addLayout(grid, 1)
        self.timer = QTimer(self)
        self.timer.setInterval(round(1000 / min(max(redraw_hz, 0.5), MAX_REDRAW_HZ)))
        self.timer.timeout.connect(self._on_timer)
        self.pace = True
        self._last_draw = 0.0
        self._last_cost = 0.0

    # ---- data in

    def add_metrics(self, metrics: Iterable[GpuMetric]) -> int:
        """Store a batch; nothing is painted until the next timer tick (or :meth:`redraw`)."""
        return self.history.add(metrics)

    def clear(self) -> None:
        self.history.clear()
        for plot in self.plots.values():
            plot.clear_curves()
            plot.note.say(None)
        self.status.setText("No GPU samples yet")
        self.now.setRowCount(0)
        self._drawn_written.clear()
        self._frame = None
        self._drawn_version = -1

    def say_empty(self, reason: str) -> None:
        """Why there are no GPU samples ("skipped: no GPU"), on every chart and in the status line;
        ignored once samples have arrived."""
        if self.history.samples:
            return
        self.status.setText(f"No GPU samples: {reason}")
        self.plots.make_all()
        for plot in self.plots.values():
            plot.note.say(reason)

    # ---- painting

    def start(self) -> None:
        self.plots.make_all()
        self.timer.start()

    def stop(self) -> None:
        """Stop the timer after one last redraw, so the final samples show."""
        self.timer.stop()
        self.redraw()

    def frame_gap(self) -> float:
        """Seconds the timer waits after a frame before starting the next one (see the class
        docstring)."""
        gap = self.timer.interval() / 1000
        if not self.pace:
            return gap
        columns = max(
            (p.getPlotItem().getViewBox().width() for p in self.plots.values()), default=0.0
        )
        span = self.window_s
        if span is None:
            end, first = self.history.latest_t, self.history.first_t
            span = (end - first) if end is not None and first is not None else 0.0
        pixel = span / columns if columns > 0 else 0.0
        paint = sum(p.paint_cost for p in self.plots.values())
        return max(gap, min(pixel, MAX_STALE_S), LOAD_GUARD * (self._last_cost + paint))

    def _on_timer(self) -> None:
        """Continue the frame in progress, or start one when there is news and pacing allows."""
        if self._frame is not None:
            self._draw_chunk(self._frame, PLOTS_PER_TICK)
        elif (
            self.history.version != self._drawn_version
            and time.monotonic() - self._last_draw >= self.frame_gap()
        ):
            frame = self._prepare()
            if frame is not None:
                self._draw_chunk(frame, PLOTS_PER_TICK)

    def _window_changed(self, _index: int) -> None:
        self.window_s = self.window_box.currentData()
        self._drawn_version = -1
        self.redraw()

    def redraw(self) -> bool:
        """Draw every plot now (a no-op when nothing changed); True when it drew. The timer draws
        the same frames a few plots per tick instead, so no tick holds the GUI thread for a whole
        frame."""
        if self._frame is not None:
            self._draw_chunk(self._frame, len(self.plots))
        frame = self._prepare()
        if frame is None:
            return False
        self._draw_chunk(frame, len(self.plots))
        return True

    def _prepare(self) -> _Frame | None:
        """Decimated copies of every GPU's visible window (x = seconds before the newest sample),
        the new samples' peaks for the y axes; the rings may move on while the frame is drawn."""
        history = self.history
        if history.version == self._drawn_version:
            return None
        self.plots.make_all()
        started = time.perf_counter()
        end = history.latest_t
        if end is None:
            self._drawn_version = history.version
            return None
        # first draw, new window or cleared: rescan every visible sample
        full = self._drawn_version == -1
        start = end - self.window_s if self.window_s is not None else None
        first = end
        channels = [CHANNEL[name] for name in self.plots]
        columns = max(
            64, max(int(p.getPlotItem().getViewBox().width()) for p in self.plots.values())
        )
        peaks = np.full(len(channels), -np.inf)
        curves: dict[int, tuple[FloatArray, FloatArray]] = {}
        for gpu in history.gpus:
            ring = history.rings[gpu]
            t, values = ring.since(start) if start is not None else ring.last()
            if t.shape[0]:
                first = min(first, float(t[0]))
            curves[gpu] = peak_decimate(t - end, values[channels], columns)
            fresh = (
                t.shape[0]
                if full
                else min(ring.written - self._drawn_written.get(gpu, 0), t.shape[0])
            )
            if fresh > 0:
                with np.errstate(all="ignore"):
                    block = values[channels, -fresh:]
                    peaks = np.fmax(
                        peaks, np.nanmax(np.where(np.isnan(block), -np.inf, block), axis=1)
                    )
            self._drawn_written[gpu] = ring.written
        span = self.window_s if self.window_s is not None else max(end - first, 1.0)
        self._drawn_version = history.version
        self._frame = _Frame(
            curves,
            peaks,
            end,
            span,
            full,
            list(range(len(self.plots))),
            time.perf_counter() - started,
        )
        return self._frame

    def _draw_chunk(self, frame: _Frame, count: int) -> None:
        started = time.perf_counter()
        plots = list(self.plots.values())
        for _ in range(min(count, len(frame.todo))):
            i = frame.todo.pop(0)
            plot = plots[i]
            for gpu, (x, shown) in frame.curves.items():
                curve = plot.curve(gpu)
                sparse = x.shape[0] < SPARSE_POINTS
                if sparse != curve.property("sparse"):
                    curve.setProperty("sparse", sparse)
                    curve.setSymbol("o" if sparse else None)
                    curve.setSymbolSize(4)
                    curve.setSymbolPen(None)
                    curve.setSymbolBrush(curve.opts["pen"].color())
                curve.setData(x, shown[i])
            if frame.full:
                plot.reset_top()
            plot.fit_top(float(frame.peaks[i]))
            plot.set_x_span(-frame.span, 0.0)
        frame.cost += time.perf_counter() - started
        if not frame.todo:
            self._finish(frame)

    def _finish(self, frame: _Frame) -> None:
        history = self.history
        self._frame = None
        for plot in self.plots.values():  # samples arrived: no reason to give any more
            if plot.note.isVisible():
                plot.note.say(None)
        now = time.monotonic()
        if frame.full or now - self._table_at >= TABLE_PERIOD_S:
            self._table_at = now
            channels = [CHANNEL[name] for name in self.plots]
            self.now.update_values(
                {
                    gpu: [float(v) for v in history.rings[gpu].last(1)[1][channels, 0]]
                    for gpu in history.gpus
                }
            )
        gpus = history.gpus
        self.status.setText(
            f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} · {history.samples:,} samples · "
            f"newest at {frame.end:,.1f} s (x axis: seconds before it)"
        )
        self.redraws += 1
        self._last_draw = now
        self._last_cost = frame.cost
        self.redrawn.emit(frame.cost)

    def latest(self, metric: str, gpu: int) -> float | None:
        """The newest stored value of ``metric`` for ``gpu`` in chart units (for the summary line
        and tests)."""
        ring = self.history.rings.get(gpu)
        if ring is None or not len(ring):
            return None
        _t, values = ring.last(1)
        return float(values[CHANNEL[metric], 0])
