"""Hardware page: the planner's search (sortable table, time-vs-cost with the Pareto front,
scaling)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QPushButton, QSplitter

from core.catalog import load_catalog, network_node_gbps, network_text
from core.planner import Candidate
from core.units import fmt_bytes, fmt_hours, fmt_usd
from gui.charts import ChartView
from gui.table_model import Row, RowsModel, make_table, selected_payload
from gui.wizard import choices
from gui.wizard.fields import ComboField, FieldBox, TextField, set_enabled
from gui.wizard.page import PlanPage
from gui.wizard.parallelism import PARALLELISM_PATHS, ParallelismGroup
from gui.wizard.state import PlanState

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis

AUTO = ""


def grouped(candidates: list[Candidate]) -> list[Candidate]:
    """The search's ranking, grouped by GPU type: each type's rows together, the type with the best
    row first."""
    first: dict[str, int] = {}
    for i, c in enumerate(candidates):
        first.setdefault(c.gpu, i)
    return sorted(candidates, key=lambda c: first[c.gpu])


def groups_text(candidates: list[Candidate], chosen_gpu: str | None) -> str:
    """What the table holds, in words: how many configurations of which GPU types."""
    if not candidates:
        return ""
    counts: dict[str, int] = {}
    for c in candidates:
        counts[c.gpu] = counts.get(c.gpu, 0) + 1
    n = len(candidates)
    rows = f"{n} configuration{'s' if n != 1 else ''}"
    if chosen_gpu is not None and list(counts) == [chosen_gpu]:
        return f"{rows} of {chosen_gpu}, the GPU you chose (choose Automatic to compare GPU types)"
    types = ", ".join(f"{gpu} ({k})" for gpu, k in counts.items())
    return f"{rows} on {len(counts)} GPU type{'s' if len(counts) != 1 else ''}: {types}"


def candidate_row(c: Candidate) -> Row:
    from core.planner import candidate_label  # loaded with the plan the candidates come from

    return Row(
        cells=[
            candidate_label(c),
            str(c.micro_batch_size),
            "yes" if c.gradient_checkpointing else "no",
            fmt_bytes(c.memory_per_gpu),
            fmt_hours(c.hours),
            fmt_usd(c.cost_usd),
            c.provider or "—",
            "★" if c.pareto else "",
            c.why,
        ],
        sort=[
            c.gpu,
            c.micro_batch_size,
            c.gradient_checkpointing,
            c.memory_per_gpu,
            c.hours,
            c.cost_usd,
            c.provider or "",
            c.pareto,
            c.why,
        ],
        payload=c,
        highlight={7} if c.pareto else set(),
    )


class GpuChoice(FieldBox):
    """GPU combo: 'Automatic' removes the hardware section so the planner searches."""

    def __init__(self, state: PlanState) -> None:
        self.combo = QComboBox()
        self.combo.addItem("Automatic (search the catalog)", AUTO)
        for gpu in load_catalog().gpus.values():
            self.combo.addItem(f"{gpu.id} — {gpu.memory_bytes / 1e9:.0f} GB", gpu.id)
        super().__init__(
            state,
            "hardware.gpu",
            self.combo,
            title="GPU",
            hint="Automatic lets the planner pick the cheapest configuration that fits",
            error_paths=("hardware",),
        )
        self.combo.activated.connect(self._chosen)
        self.refresh()

    def _chosen(self, index: int) -> None:
        gpu = self.combo.itemData(index)
        if gpu == AUTO:
            self.state.set_section("hardware", None)
        else:
            self.state.set("hardware.gpu", gpu)

    def refresh(self) -> None:
        i = self.combo.findData(self.state.get("hardware.gpu") or AUTO)
        self.combo.setCurrentIndex(max(i, 0))


def _count(value: object, default: int = 1) -> int:
    try:
        return max(int(str(value)), 1)
    except ValueError:
        return default


class NetworkChoice(ComboField):
    """Inter-node network; empty means the typical network of the chosen GPU's class, and the hint
    says which."""

    def __init__(self, state: PlanState) -> None:
        super().__init__(state, "hardware.interconnect", choices.interconnect_options(), default="")

    def hint_for(self, value: str) -> str:
        gpu = self.state.get("hardware.gpu")
        if not gpu:
            return "with Automatic hardware the planner assumes each GPU class's typical network"
        per_node = _count(self.state.get("hardware.gpus_per_node"))
        return network_text(
            value, str(gpu), per_node, load_catalog(), choices.INTERCONNECT.get(value, value)
        )


class HardwarePage(PlanPage):
    prefixes = ("hardware", "search", *PARALLELISM_PATHS)
    needs_analysis = True

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state,
            "Hardware",
            "Configurations that fit, ranked; pick one to carry it forward, or let "
            "the planner choose.",
        )
        self.chosen = QLabel()
        self.chosen.setAccessibleName("Planned hardware")
        self.chosen.setWordWrap(True)
        self.pin(self.chosen)
        manual = QGridLayout()
        self.gpu = self.add_field(GpuChoice(state))
        self.per_node = self.add_field(TextField(state, "hardware.gpus_per_node"))
        self.nodes = self.add_field(TextField(state, "hardware.nodes"))
        self.network = self.add_field(NetworkChoice(state))
        self.bandwidth = self.add_field(
            TextField(
                state,
                "hardware.inter_node_gbps",
                title="Inter-node bandwidth (Gbit/s per node)",
                hint="what the node's NICs give together, e.g. 3200 for 8 × 400G",
            )
        )
        self.busbw = self.add_field(
            TextField(
                state,
                "hardware.intra_node_busbw_gbs",
                title="Measured intra-node busbw (GB/s)",
                hint="from an NCCL all-reduce on this box (the Probe "
                "place measures it); replaces the NVLink/PCIe figure",
                placeholder="catalog link figure",
            )
        )
        self.matmul = self.add_field(
            TextField(
                state,
                "hardware.matmul_tflops",
                title="Measured matmul TFLOP/s",
                hint="from a probe's GPU matmul; empty: the published achievable matmul efficiency",
                placeholder="published efficiency",
            )
        )
        self.objective = self.add_field(
            ComboField(
                state,
                "search.objective",
                choices.literal_options(choices.OBJECTIVE),
                {
                    "cost": "the cheapest configuration that fits",
                    "time": "the fastest one, whatever it costs",
                    "cost_under_deadline": "the cheapest one that finishes within the deadline",
                },
            )
        )
        self.deadline = self.add_field(
            TextField(
                state, "search.deadline_hours", hint="only with “lowest cost within a deadline”"
            )
        )
        self.max_gpus = self.add_field(
            TextField(state, "search.max_gpus", hint="the search never uses more GPUs than this")
        )
        for i, field in enumerate(
            (
                self.gpu,
                self.per_node,
                self.nodes,
                self.network,
                self.bandwidth,
                self.busbw,
                self.matmul,
                self.objective,
                self.deadline,
                self.max_gpus,
            )
        ):
            manual.addWidget(field, i // 3, i % 3)
        for column in range(3):
            manual.setColumnStretch(column, 1)
        self.body.addLayout(manual)
        self.parallelism = ParallelismGroup(state, self.add_field)
        self.body.addWidget(self.parallelism)
        self.groups = QLabel()
        self.groups.setAccessibleName("Hardware candidates summary")
        self.groups.setWordWrap(True)
        self.body.addWidget(self.groups)
        self.model = RowsModel(
            [
                "configuration",
                "micro-batch",
                "recompute",
                "memory/GPU",
                "time",
                "cost",
                "provider",
                "Pareto",
                "why",
            ],
            self,
        )
        self.table = make_table(self.model, "Hardware candidates")
        self.table.setMinimumHeight(220)
        self.table.doubleClicked.connect(lambda _index: self.use_selected())
        self.body.addWidget(self.table, 2)
        buttons = QHBoxLayout()
        self.use_button = QPushButton("Use selected configuration")
        self.use_button.setAccessibleName("Use selected configuration")
        self.use_button.clicked.connect(self.use_selected)
        self.auto_button = QPushButton("Let the planner choose")
        self.auto_button.setAccessibleName("Let the planner choose")
        self.auto_button.clicked.connect(lambda: self.state.set_section("hardware", None))
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.auto_button)
        buttons.addStretch(1)
        self.body.addLayout(buttons)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.pareto = ChartView("Time versus cost chart")
        self.scaling = ChartView("Scaling chart")
        split.addWidget(self.pareto)
        split.addWidget(self.scaling)
        split.setMinimumHeight(280)
        self.body.addWidget(split, 2)
        state.edited.connect(self._enable_counts)
        state.replaced.connect(self._enable_counts)
        self._enable_counts()

    def _enable_counts(self) -> None:
        """Counts and network belong to a chosen GPU; with Automatic the search picks them (text is
        kept)."""
        manual = self.state.get("hardware") is not None
        for field in (
            self.per_node,
            self.nodes,
            self.network,
            self.bandwidth,
            self.busbw,
            self.matmul,
        ):
            set_enabled(field.editor, manual)
        set_enabled(
            self.deadline.editor, self.state.get("search.objective") == "cost_under_deadline"
        )
        self.network.set_hint(self.network.hint_for(self.network.value() or ""))
        gpu = self.state.get("hardware.gpu")
        per_node = _count(self.state.get("hardware.gpus_per_node"))
        gbps = (
            network_node_gbps(
                self.state.get("hardware.interconnect"), str(gpu), per_node, load_catalog()
            )
            if gpu
            else None
        )
        placeholder = f"{gbps:g} (assumed)" if gbps else ""
        if placeholder != self.bandwidth.edit.placeholderText():
            self.bandwidth.edit.setPlaceholderText(placeholder)

    def use_selected(self) -> None:
        """Carry the selected candidate forward: its hardware and the training choices it was ranked
        with."""
        c = selected_payload(self.table)
        if isinstance(c, Candidate):
            self.use_candidate(c)

    def use_candidate(self, c: Candidate) -> None:
        hardware: dict[str, Any] = {
            "gpu": c.gpu,
            "gpus_per_node": c.gpus_per_node,
            "nodes": c.nodes,
        }
        before = self.state.get("hardware") or {}
        # figures of that GPU's box, meaningless on another
        measured = ("intra_node_busbw_gbs", "matmul_tflops")
        kept = ("interconnect", "inter_node_gbps") + (
            measured if before.get("gpu") == c.gpu else ()
        )
        # the cluster's network, as typed
        hardware.update({k: before[k] for k in kept if k in before})
        recompute: bool | str = c.gradient_checkpointing
        if recompute and self.state.get("training.gradient_checkpointing") == "selective":
            # a candidate says only on or off: on keeps the person's selective recompute
            recompute = "selective"
        self.state.update_many(
            {
                "training.sharding": c.sharding.value,
                "training.micro_batch_size": c.micro_batch_size,
                "training.gradient_checkpointing": recompute,
            },
            {"hardware": hardware},
        )

    def show_analysis(self, analysis: Analysis) -> None:
        # Loaded by the plan that arrived
        from core.planner import (
            grown_batch_warning,
            hardware_label,
            not_fit_text,
            pareto_chart,
            scaling_chart,
        )

        r, f = analysis.result, analysis.figures
        t = r.request.training
        how = "you chose" if self.state.get("hardware") is not None else "the planner chose"
        notes = [f.search_note] if f.search_note else []
        # the search's count changed the batch: said where the count is chosen
        grown = grown_batch_warning(r)
        reasons = [*f.overrides.values(), *([grown] if grown else [])]
        notes += [escape(why[0].upper() + why[1:]) + "." for why in reasons]
        # a plan that cannot run shows no price, only that, by how much and what would
        verdict = not_fit_text(r)
        outcome = (
            f", {fmt_hours(r.time.hours)}, {fmt_usd(r.cost.total_usd)}."
            if verdict is None
            else f".<br><b>{escape(verdict)}</b>"
        )
        settings = [
            (f"{t.sharding.value}", "sharding"),
            (f"micro-batch {t.micro_batch_size}", "micro_batch_size"),
        ]
        # searched hardware: "the planner chose" says it all
        picked = [
            text
            for text, name in settings
            if self.state.get(f"training.{name}") is None and self.state.get("hardware") is not None
        ]
        kept = [text for text, name in settings if text not in picked]
        said = ", ".join(
            [*kept, *([" and ".join(picked) + " chosen by the planner"] if picked else [])]
        )
        self.chosen.setText(
            f"<b>Planned on {hardware_label(r.hardware)}</b> ({how}): {said}{outcome}"
            + "".join(f"<br>{n}" for n in notes)
        )
        self.groups.setText(
            groups_text(f.candidates, r.hardware.gpu if self.state.get("hardware") else None)
        )
        self.model.set_rows([candidate_row(c) for c in grouped(f.candidates)])
        if f.candidates:
            self.pareto.show_scatter(pareto_chart(f))
        else:
            self.pareto.clear_chart(f.search_note or "no configuration in the catalog fits")
        if f.scaling:
            self.scaling.show_line(scaling_chart(f.scaling))
        else:
            self.scaling.clear_chart("no scaling curve")

    def clear_analysis(self) -> None:
        self.chosen.setText("")
        self.groups.setText("")
        self.model.set_rows([])
        self.pareto.clear_chart("no plan")
        self.scaling.clear_chart("no plan")
