"""Data page: how many tokens, how often, how long each sequence; shows sizes and tokens per
step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFormLayout, QGridLayout, QLabel, QWidget

from core.planner import tier_figures
from core.units import fmt_bytes, fmt_count, fmt_usd
from gui.wizard.fields import CheckField, TextField
from gui.wizard.page import PlanPage
from gui.wizard.state import PlanState

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis


def figure_label(name: str) -> QLabel:
    label = QLabel("—")
    label.setAccessibleName(name)
    return label


class DataPage(PlanPage):
    prefixes = ("data",)

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state,
            "Data",
            "The dataset: tokens per epoch (2e8, 200M, 1.5B), epochs and sequence length.",
        )
        grid = QGridLayout()
        fields = [
            TextField(
                state,
                "data.tokens",
                hint="tokens in one pass over the data; 2e8, 200M and 1.5B all work",
            ),
            TextField(state, "data.epochs", hint="more epochs train longer on the same data"),
            TextField(
                state,
                "data.seq_len",
                hint="longer sequences need more activation memory per sample",
            ),
            CheckField(
                state,
                "data.packing",
                hint="packing joins samples into full sequences: no padding waste",
            ),
            TextField(
                state,
                "data.padding_fraction",
                hint="only when not packing: the share of each sequence that is padding",
            ),
            TextField(
                state, "data.bytes_per_token", hint="about 4 for English text with a BPE tokenizer"
            ),
            TextField(
                state,
                "data.file_count",
                hint="how many files the raw data is stored as; many small files "
                "mean many object-storage requests",
                placeholder="not known: ~50 KB documents assumed",
            ),
        ]
        for i, field in enumerate(fields):
            grid.addWidget(self.add_field(field), i // 2, i % 2)
        self.body.addLayout(grid)
        figures = QWidget()
        form = QFormLayout(figures)
        self.raw_size = figure_label("Dataset size, raw text")
        self.tokenized_size = figure_label("Dataset size, tokenized")
        self.tokens_per_step = figure_label("Tokens per step")
        self.steps = figure_label("Optimizer steps")
        self.reads = figure_label("Object storage reads")
        self.reads.setWordWrap(True)
        self.throughput = figure_label("Read throughput")
        self.throughput.setWordWrap(True)
        form.addRow("Raw text", self.raw_size)
        form.addRow("Tokenized", self.tokenized_size)
        form.addRow("Tokens per step", self.tokens_per_step)
        form.addRow("Optimizer steps", self.steps)
        form.addRow("Object storage reads", self.reads)
        form.addRow("Read throughput", self.throughput)
        self.body.addWidget(figures)
        self.body.addStretch(1)

    def show_analysis(self, analysis: Analysis) -> None:
        r = analysis.result
        self.raw_size.setText(fmt_bytes(r.storage.dataset_raw_bytes))
        self.tokenized_size.setText(fmt_bytes(r.storage.dataset_tokenized_bytes))
        self.tokens_per_step.setText(
            f"{r.compute.tokens_per_step:,} ({fmt_count(r.compute.tokens_per_step)})"
        )
        self.steps.setText(f"{r.compute.steps:,}")
        st = r.storage
        self.reads.setText(
            f"{st.packed_requests:,} GETs as packed shards ({fmt_usd(st.packed_request_usd)}) vs "
            f"{st.unpacked_requests:,} as the raw files ({fmt_usd(st.unpacked_request_usd)})"
        )
        tier = tier_figures(r.request.assumptions.data_tier).title
        self.throughput.setText(
            f"the GPUs need {fmt_bytes(st.read_bytes_per_s_needed)}/s; {tier} gives about "
            f"{fmt_bytes(st.tier_read_bytes_per_s)}/s"
        )

    def clear_analysis(self) -> None:
        for label in (
            self.raw_size,
            self.tokenized_size,
            self.tokens_per_step,
            self.steps,
            self.reads,
            self.throughput,
        ):
            label.setText("—")
