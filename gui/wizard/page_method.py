"""Method page: how the model is trained, each choice with the one-line tradeoff it makes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QBoxLayout, QGridLayout, QLabel

from core.planner import (
    OVERRIDABLE,
    Attention,
    CrossEntropy,
    Framework,
    Method,
    Offload,
    Optimizer,
    Precision,
    Sharding,
)
from gui.wizard import choices
from gui.wizard.fields import (
    DEFAULT,
    PLANNER,
    UNSET,
    CheckField,
    ComboField,
    FieldBox,
    TextField,
    display,
    enum_options,
    set_enabled,
)
from gui.wizard.page import PlanPage
from gui.wizard.parallelism import PARALLELISM_PATHS
from gui.wizard.state import PlanState

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis

METHOD_HINTS = {
    "full": "updates every weight: best quality headroom, needs gradients and optimizer states "
    "for all of them",
    "lora": "trains small adapters on a frozen 16-bit base: a fraction of the memory, close to "
    "full quality",
    "qlora": "LoRA on a 4-bit (NF4) base: fits the largest models on the fewest GPUs, slower steps",
}
PRECISION_HINTS = {
    "amp_bf16": "bf16 compute with fp32 master weights and states: the safe default, 16 bytes per "
    "parameter",
    "pure_bf16": "weights, gradients and states in bf16: half the memory, needs care "
    "(Kahan/stochastic rounding)",
    "amp_fp16": "fp16 with loss scaling: for GPUs without bf16 (V100, T4)",
    "fp32": "full precision: twice the memory and far slower on tensor cores",
    "fp8": "fp8 matmuls (Hopper and newer): faster, with scaling recipes to keep it stable",
}
OPTIMIZER_HINTS = {
    "adamw": "two fp32 states per parameter: the reference, the most memory",
    "adamw_8bit": "8-bit states (bitsandbytes): a quarter of AdamW's state memory, usually the "
    "same quality",
    "paged_adamw_8bit": "8-bit states that can spill to CPU RAM under pressure: avoids "
    "out-of-memory spikes",
    "paged_adamw_32bit": "fp32 states that can spill to CPU RAM under pressure",
    "sgd": "no state at all: least memory, rarely converges as well for transformers",
    "sgd_momentum": "one state per parameter: half of AdamW",
    "adafactor": "factored second moments: tiny state, sometimes less stable",
    "lion": "one state per parameter (momentum): half of AdamW",
}
SHARDING_HINTS = {
    "none": "DDP: every GPU holds everything; simplest and fastest when it fits",
    "zero1": "ZeRO-1 shards optimizer states across GPUs",
    "zero2": "ZeRO-2 shards optimizer states and gradients: little extra communication",
    "zero3": "ZeRO-3 shards weights too: the most memory saved, an all-gather per layer per step",
    "fsdp": "PyTorch FSDP full shard (like ZeRO-3)",
    "hsdp": "shard inside a node, replicate across nodes: less inter-node traffic; needs 2+ nodes",
}
OFFLOAD_HINTS = {
    "none": "everything stays in GPU memory",
    "optimizer": "optimizer states and step on the CPU: frees GPU memory, steps wait on PCIe and "
    "CPU",
    "optimizer_and_params": "weights too (ZeRO-3 / FSDP only): the largest models on few GPUs, "
    "much slower",
}
ZERO_ACCOUNTING_HINTS = {
    "deepspeed": "with ZeRO sharding, counts DeepSpeed's own buffers too (an fp32 gradient "
    "partition)",
    "paper": "with ZeRO sharding, the ZeRO paper's model: 2 + 2 + K = 12 bytes per parameter, no "
    "extra buffers",
}
ATTENTION_HINTS = {
    "flash": "FlashAttention: no sequence² buffer, the fastest on supported GPUs",
    "sdpa": "PyTorch scaled-dot-product attention: memory-efficient kernels where available",
    "eager": "plain attention: keeps the sequence² scores, only for debugging or unsupported "
    "models",
}

CHECKPOINTING_HINTS = {
    "false": "every activation kept for the backward pass: the fastest step, the most memory",
    "selective": "only the attention core is recomputed (Korthikanti et al. 2022): most of the "
    "saving, a few percent more compute",
    "true": "only each layer's input kept, the layer recomputed in backward: the least memory, "
    "about a third more compute",
}
CROSS_ENTROPY_HINTS = {
    "standard": "the whole logits tensor, upcast to fp32 for the loss (transformers' default): "
    "large at big vocabularies",
    "chunked": "16-bit logits kept, the fp32 loss computed a chunk at a time: no fp32 copy of the "
    "logits",
    "fused": "fused linear cross-entropy (Liger, Apple CCE): the logits are never materialised "
    "whole",
}
CHECKPOINTING_VALUES: dict[str, bool | str] = {
    "false": False,
    "selective": "selective",
    "true": True,
}
FRAMEWORK_HINT = "sets the framework's documented defaults; fields you set win"


def checkpointing_choice(value: object) -> str | None:
    """The combo entry for a request value: true/false (or what pydantic reads as one) or
    "selective"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip().lower()
    if text == "selective":
        return "selective"
    if text in ("true", "1", "yes", "on", "t", "y"):
        return "true"
    if text in ("false", "0", "no", "off", "f", "n"):
        return "false"
    return None


class CheckpointingChoice(ComboField):
    """Gradient checkpointing as off / selective / full, written as false / "selective" / true: the
    request's values, so a file saved here reads the same in the CLI."""

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state,
            "training.gradient_checkpointing",
            list(choices.CHECKPOINTING.items()),
            CHECKPOINTING_HINTS,
            default="true",
            automatic=PLANNER,
        )

    def _chosen(self, index: int) -> None:
        value = str(self.combo.itemData(index))
        self.state.set(self.path, None if value == UNSET else CHECKPOINTING_VALUES[value])
        self.set_hint(self.hint_for(self._unset_value() if value == UNSET else value))

    def refresh(self) -> None:
        raw = self.state.get(self.path)
        value = UNSET if raw is None else checkpointing_choice(raw)
        # a value pydantic rejects: the error under the field says so, the combo stays
        if value is None:
            return
        i = self.combo.findData(value)
        if i >= 0 and i != self.combo.currentIndex():
            self.combo.setCurrentIndex(i)
        self.set_hint(self.hint_for(self._unset_value() if value == UNSET else value))


class MethodPage(PlanPage):
    prefixes = ("training", "assumptions.zero_accounting")
    elsewhere = PARALLELISM_PATHS  # training settings the Hardware page shows and judges

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state, "Method", "How the model is trained; each choice shows what it trades."
        )
        self.method = ComboField(
            state, "training.method", enum_options(Method, choices.METHOD), METHOD_HINTS
        )
        self.rank = TextField(
            state,
            "training.lora_rank",
            hint="higher rank: more adapter parameters and capacity; 8–64 is usual",
            placeholder="16",
        )
        self.targets = TextField(
            state,
            "training.lora_targets",
            hint="all-linear adapts every matrix (better, larger); attention adapts q,k,v,o only",
        )
        self.micro_batch = TextField(
            state,
            "training.micro_batch_size",
            hint="sequences per GPU per forward pass: larger is faster until memory runs out",
            placeholder=PLANNER,
        )
        fields = [
            self.method,
            ComboField(
                state,
                "training.framework",
                enum_options(Framework, choices.FRAMEWORK),
                dict.fromkeys((f.value for f in Framework), FRAMEWORK_HINT),
            ),
            self.rank,
            self.targets,
            ComboField(
                state,
                "training.precision",
                enum_options(Precision, choices.PRECISION),
                PRECISION_HINTS,
                automatic=DEFAULT,
            ),
            ComboField(
                state,
                "training.optimizer",
                enum_options(Optimizer, choices.OPTIMIZER),
                OPTIMIZER_HINTS,
            ),
            ComboField(
                state,
                "training.sharding",
                enum_options(Sharding, choices.SHARDING),
                SHARDING_HINTS,
                automatic=PLANNER,
            ),
            ComboField(
                state, "training.offload", enum_options(Offload, choices.OFFLOAD), OFFLOAD_HINTS
            ),
            ComboField(
                state,
                "training.attention",
                enum_options(Attention, choices.ATTENTION),
                ATTENTION_HINTS,
            ),
            ComboField(
                state,
                "training.cross_entropy",
                enum_options(CrossEntropy, choices.CROSS_ENTROPY),
                CROSS_ENTROPY_HINTS,
                automatic=DEFAULT,
            ),
            CheckpointingChoice(state),
            CheckField(
                state,
                "training.activation_offload",
                hint="checkpointed layer inputs wait in host memory: "
                "less GPU memory, each step moves them over PCIe and back",
            ),
            self.micro_batch,
            TextField(
                state,
                "training.global_batch_size",
                hint="sequences per optimizer step; the rest is gradient accumulation",
                placeholder="about 256k tokens",
            ),
            CheckField(
                state,
                "training.compile",
                hint="fuses elementwise kernels: fewer launches and fewer memory-bound passes",
            ),
            CheckField(
                state,
                "training.optimizer_in_backward",
                hint="step each parameter during backward and "
                "free its gradient: no full gradient buffer (single-GPU style)",
            ),
            ComboField(
                state,
                "assumptions.zero_accounting",
                choices.literal_options(choices.ZERO_ACCOUNTING),
                ZERO_ACCOUNTING_HINTS,
                title="ZeRO memory accounting",
            ),
        ]
        grid = QGridLayout()
        for i, field in enumerate(fields):
            grid.addWidget(self.add_field(field), i // 2, i % 2)
        self.body.addLayout(grid)
        self.body.addStretch(1)
        self.search_notes = {f"training.{name}": self._search_note(name) for name in OVERRIDABLE}
        self._typed_rank = ""
        state.edited.connect(self._method_rules)
        state.replaced.connect(self._method_rules)
        self._method_rules()

    def _search_note(self, name: str) -> QLabel:
        """A line under the setting, shown when the hardware search changed what the user set
        there."""
        field: FieldBox = next(f for f in self.fields if f.path == f"training.{name}")
        note = QLabel()
        note.setAccessibleName(f"{field.title} search note")
        note.setWordWrap(True)
        note.hide()
        layout = field.layout()
        assert isinstance(layout, QBoxLayout)
        layout.insertWidget(2, note)  # under the editor, above its hint
        return note

    def show_analysis(self, analysis: Analysis) -> None:
        for path, note in self.search_notes.items():
            text = analysis.figures.overrides.get(path, "")
            if text != note.text():
                note.setText(text)
                note.setVisible(bool(text))
        self._show_in_effect(analysis)

    def clear_analysis(self) -> None:
        for note in self.search_notes.values():
            note.setText("")
            note.hide()
        for field in self.fields:
            if isinstance(field, ComboField | CheckField):
                field.show_in_effect(None)
        self.micro_batch.edit.setPlaceholderText(PLANNER)

    def _show_in_effect(self, analysis: Analysis) -> None:
        """Each field the request leaves out shows what the plan runs with, and who chose it: the
        planner (the settings its search chooses), the framework's recipe, or the default."""
        from core.planner import PROFILES  # loaded with the plan that is being shown

        ran = analysis.result.request.training
        recipe = PROFILES[ran.framework]
        for field in self.fields:
            name = field.path.removeprefix("training.")
            if field.path == name or not isinstance(field, ComboField | CheckField):
                continue
            value = getattr(ran, name)
            if isinstance(field, CheckField):
                field.show_in_effect(bool(value))
                continue
            who = (
                f"{choices.FRAMEWORK.get(ran.framework.value, ran.framework.value)}'s recipe"
                if name in recipe
                else PLANNER
                if name in OVERRIDABLE
                else DEFAULT
            )
            field.show_in_effect(
                (
                    checkpointing_choice(value) or ""
                    if name == "gradient_checkpointing"
                    else display(value),
                    who,
                )
            )
        self.micro_batch.edit.setPlaceholderText(f"{ran.micro_batch_size} — {PLANNER}")

    def _method_rules(self) -> None:
        """LoRA fields only mean something for lora/qlora: disable them for a full fine-tune, keep
        the text."""
        lora = (self.state.get("training.method") or "lora") != "full"
        set_enabled(self.rank.edit, lora)
        set_enabled(self.targets.edit, lora)
        if not lora and self.state.get("training.lora_rank") is not None:
            self._typed_rank = str(self.state.get("training.lora_rank"))
            self.state.set("training.lora_rank", None)
        elif lora and self._typed_rank and self.state.get("training.lora_rank") is None:
            rank, self._typed_rank = self._typed_rank, ""
            self.state.set("training.lora_rank", rank)
            self.rank.refresh()
