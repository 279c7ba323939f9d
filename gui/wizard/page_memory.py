"""Memory page: the job's memory per GPU on every catalog GPU, what fits, and how to make it fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter

from core.units import fmt_bytes
from gui.charts import ChartView
from gui.table_model import Row, RowsModel, make_table
from gui.wizard.page import PlanPage
from gui.wizard.parallelism import PARALLELISM_PATHS
from gui.wizard.state import PlanState

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis, GpuMemory

PARTS = ("weights", "gradients", "optimizer", "activations", "logits", "overhead", "total")


def gpu_row(g: GpuMemory, planned: bool) -> Row:
    """One GPU type in the fit table; a type that cannot be planned says why in the last column."""
    if g.error is not None:
        return Row(
            [g.gpu, "—", "—", fmt_bytes(g.capacity), "n/a", "—", "—", g.error],
            sort=[g.gpu, None, None, g.capacity, None, None, None, g.error],
        )
    config = g.configuration + (" (this plan)" if g.basis == "plan" else "")
    note = g.note or ("the planned configuration" if g.basis == "plan" else "")
    return Row(
        [
            g.gpu,
            config,
            fmt_bytes(g.total),
            fmt_bytes(g.capacity),
            "yes" if g.fits else "no",
            str(g.max_micro_batch),
            f"{g.max_seq_len:,}",
            note,
        ],
        sort=[
            g.gpu,
            g.gpus_per_node * g.nodes,
            g.total,
            g.capacity,
            g.fits,
            g.max_micro_batch,
            g.max_seq_len,
            note,
        ],
        highlight={0, 1} if planned else set(),
        bold=planned,
    )


class MemoryPage(PlanPage):
    prefixes = ("data", "training", "model")
    elsewhere = PARALLELISM_PATHS  # set and judged on the Hardware page, the step after this one
    needs_analysis = True

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state,
            "Memory",
            "Memory per GPU, component by component, for this job on each GPU type, "
            "at the configuration the hardware search picks for that type.",
        )
        self.headline = QLabel()
        self.headline.setAccessibleName("Memory verdict")
        self.headline.setWordWrap(True)
        self.pin(self.headline)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.chart = ChartView("Memory per GPU chart")
        self.chart.setMinimumHeight(520)
        split.addWidget(self.chart)
        self.breakdown = RowsModel(["component", "per GPU"], self)
        self.breakdown_view = make_table(self.breakdown, "Memory breakdown", sortable=False)
        self.breakdown_view.setMinimumWidth(220)
        split.addWidget(self.breakdown_view)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setSizes([900, 240])
        self.body.addWidget(split, 2)
        self.gpus = RowsModel(
            [
                "GPU",
                "configuration",
                "needs per GPU",
                "has",
                "fits",
                "max micro-batch",
                "max sequence",
                "note",
            ],
            self,
        )
        self.gpus_view = make_table(self.gpus, "Fit on each GPU")
        self.gpus_view.setMinimumHeight(300)
        self.body.addWidget(self.gpus_view, 1)
        self.suggestions = QLabel()
        self.suggestions.setAccessibleName("Suggestions")
        self.suggestions.setWordWrap(True)
        self.body.addWidget(self.suggestions)

    def show_analysis(self, analysis: Analysis) -> None:
        from core.planner import hardware_label, memory_chart  # loaded by the plan that arrived

        r, f = analysis.result, analysis.figures
        m = r.memory
        verdict = "fits" if m.fits else "does NOT fit"
        self.headline.setText(
            f"<b>{hardware_label(r.hardware)}, {r.request.training.sharding.value}: "
            f"{fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)} per GPU — {verdict}.</b> "
            f"Largest micro-batch {m.max_micro_batch} at this sequence length; longest sequence "
            f"{m.max_seq_len:,} at micro-batch 1. CPU RAM needed: {fmt_bytes(m.cpu_ram_needed)}."
        )
        self.breakdown.set_rows(
            [Row([p, fmt_bytes(getattr(m.per_gpu, p))], bold=p == "total") for p in PARTS]
        )
        self.gpus.set_rows([gpu_row(g, g.gpu == r.hardware.gpu) for g in f.memory_by_gpu])
        self.chart.show_bar(memory_chart(f))
        tips = m.suggestions
        self.suggestions.setText(
            "<b>To make it fit:</b><ul>" + "".join(f"<li>{s}</li>" for s in tips) + "</ul>"
            if tips
            else ""
        )

    def clear_analysis(self) -> None:
        self.headline.setText("")
        self.breakdown.set_rows([])
        self.gpus.set_rows([])
        self.suggestions.setText("")
        self.chart.clear_chart("no plan")
