"""Where one optimizer step's time goes: seconds and share per kind of work, and the achieved MFU.

The rows and their words come from ``core.planner.report_time`` (``step_rows``), the same the PDF's
Time section prints, so the window and the report agree. A kind of work that takes no time is not
shown: seven rows of "0 s" would hide the two that matter. The rows are made when the first plan is
shown: the report module comes with the planner, which loads with that plan, not when the window is
built.
"""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QProgressBar, QVBoxLayout

from core.planner import ComputeResult

TITLE = "Time per optimizer step"


class StepBreakdownView(QGroupBox):
    """A line with the step time, throughput and achieved MFU; under it one row per kind of work
    that takes time: its name, seconds, share of the step and a bar of that share."""

    def __init__(self) -> None:
        super().__init__(TITLE)
        self.setAccessibleName(TITLE)
        column = QVBoxLayout(self)
        self.summary = QLabel()
        self.summary.setAccessibleName("Step time")
        self.summary.setWordWrap(True)
        column.addWidget(self.summary)
        self.mfu = QLabel()
        self.mfu.setAccessibleName("Achieved MFU")
        self.mfu.setWordWrap(True)
        self.mfu.setToolTip(
            "model FLOPs (6N + causal attention, no recomputation) per second over the whole step, "
            "divided by the GPUs' peak"
        )
        column.addWidget(self.mfu)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(12)
        self.header: list[QLabel] = []
        self.rows: dict[str, tuple[QLabel, QLabel, QLabel, QProgressBar]] = {}
        column.addLayout(self.grid)
        self.empty = QLabel("The step model gives no breakdown for this plan.")
        self.empty.setAccessibleName("Step breakdown note")
        column.addWidget(self.empty)
        self.clear()

    def _make_rows(self) -> None:
        """The header and one hidden row per kind of work, in the order the step runs them
        (once)."""
        from core.planner import STEP_HEADER, STEP_PARTS

        self.header = [QLabel(f"<b>{text}</b>") for text in STEP_HEADER]
        for i, label in enumerate(self.header):
            self.grid.addWidget(label, 0, i)
            label.hide()
        for r, (_key, name) in enumerate(STEP_PARTS, start=1):
            seconds, share = QLabel(), QLabel()
            label = QLabel(name)
            bar = QProgressBar()
            bar.setRange(0, 1000)
            bar.setTextVisible(False)
            bar.setMaximumHeight(10)
            bar.setAccessibleName(f"{name} share")
            seconds.setAccessibleName(f"{name} seconds")
            share.setAccessibleName(f"{name} share of the step")
            for c, widget in enumerate((label, seconds, share, bar)):
                self.grid.addWidget(widget, r, c)
                widget.hide()
            self.rows[name] = (label, seconds, share, bar)
        self.grid.setColumnStretch(3, 1)

    def show_compute(self, compute: ComputeResult, wall: str | None = None) -> None:
        """Show one plan's step; the rows with time, in the order the step runs them; `wall`, what
        the whole wall time is made of (report.wall_time_parts), under the step's line."""
        # with the plan
        from core.planner import measured_step_text, share_text, step_rows, step_seconds

        if not self.rows:
            self._make_rows()
        measured = measured_step_text(compute)
        self.summary.setText(
            f"{step_seconds(compute.step_time_s)} per optimizer step of "
            f"{compute.tokens_per_step:,} tokens · {compute.tokens_per_second:,.0f} tokens/s"
            + (f"\nStep {measured}" if measured else "")
            + (f"\nWall time: {wall}" if wall else "")
        )
        hfu = f"; hardware-FLOPs utilisation (HFU) {compute.hfu:.0%}" if compute.hfu > 0 else ""
        self.mfu.setText(f"Achieved MFU (model-FLOPs utilisation): {compute.mfu:.0%}{hfu}")
        shown = {name: (v, share) for name, v, share in step_rows(compute)}
        for name, (label, seconds, share_label, bar) in self.rows.items():
            if name in shown:
                v, share = shown[name]
                seconds.setText(step_seconds(v))
                share_label.setText(share_text(share))
                bar.setValue(round(min(max(share, 0.0), 1.0) * 1000))
            for widget in (label, seconds, share_label, bar):
                widget.setVisible(name in shown)
        for label in self.header:
            label.setVisible(bool(shown))
        self.empty.setVisible(not shown)

    def shown_rows(self) -> list[tuple[str, str, str]]:
        """What the rows on screen say: (name, seconds, share), top to bottom."""
        return [
            (label.text(), seconds.text(), share.text())
            for label, seconds, share, _bar in self.rows.values()
            if label.isVisibleTo(self)
        ]

    def clear(self) -> None:
        self.summary.setText("")
        self.mfu.setText("")
        for widgets in self.rows.values():
            for widget in widgets:
                widget.hide()
        for label in self.header:
            label.hide()
        self.empty.hide()
