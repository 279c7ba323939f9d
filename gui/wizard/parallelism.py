"""The Hardware page's "Advanced parallelism" group: tensor, pipeline and context parallel and
sequence parallel.

These live under ``training`` in the request, but they say how the job is laid out on the GPUs, so
the person sets them beside the GPU counts. The group starts collapsed: most fine-tuning runs are
data parallel (with or without ZeRO/FSDP) and never touch them, and four more fields would push the
search table out of sight.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from gui.wizard.fields import CheckField, FieldBox, TextField
from gui.wizard.state import PlanState

PARALLELISM_PATHS = (
    "training.tensor_parallel",
    "training.pipeline_parallel",
    "training.context_parallel",
    "training.sequence_parallel",
)
TITLE = "Advanced parallelism"


class Collapsible(QWidget):
    """A header button with an arrow that shows or hides the body under it; collapsed until
    clicked."""

    def __init__(self, title: str) -> None:
        super().__init__()
        self.toggle = QToolButton()
        self.toggle.setText(title)
        self.toggle.setAccessibleName(title)
        self.toggle.setCheckable(True)
        self.toggle.setChecked(False)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setAutoRaise(True)
        self.toggle.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.toggle.toggled.connect(self.set_expanded)
        self.body = QWidget()
        self.body.setAccessibleName(f"{title} fields")
        self.body.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.toggle)
        layout.addWidget(self.body)

    def set_expanded(self, expanded: bool) -> None:
        if self.toggle.isChecked() != expanded:
            self.toggle.setChecked(expanded)  # toggled comes back here once
            return
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.body.setVisible(expanded)

    def is_expanded(self) -> bool:
        return self.body.isVisibleTo(self)


class ParallelismGroup(Collapsible):
    """The four fields, each bound to its request path; ``add`` registers them with the page
    (errors, Next)."""

    def __init__(self, state: PlanState, add: Callable[[FieldBox], FieldBox]) -> None:
        super().__init__(TITLE)
        self.tensor = TextField(
            state,
            "training.tensor_parallel",
            hint="GPUs that split each layer's matrices "
            "(Megatron-style); keep it within a node's NVLink",
        )
        self.pipeline = TextField(
            state,
            "training.pipeline_parallel",
            hint="stages the layers are cut into; "
            "the pipeline bubble idles GPUs at each step's start and end",
        )
        self.context = TextField(
            state,
            "training.context_parallel",
            hint="GPUs that split each sequence (ring "
            "attention): for sequences too long for one GPU",
        )
        self.sequence = CheckField(
            state,
            "training.sequence_parallel",
            hint="with tensor parallel 2 or more: norms and dropout sharded along the sequence too",
        )
        grid = QGridLayout(self.body)
        grid.setContentsMargins(12, 0, 0, 0)
        for i, field in enumerate((self.tensor, self.pipeline, self.context, self.sequence)):
            grid.addWidget(add(field), 0, i)
            grid.setColumnStretch(i, 1)
        # A value typed earlier (or loaded from a file) is not hidden: the group opens when one is
        # set.
        self.state = state
        state.replaced.connect(self._open_when_set)
        self._open_when_set()

    def _open_when_set(self) -> None:
        if any(self.state.get(path) not in (None, 1, "1", False) for path in PARALLELISM_PATHS):
            self.set_expanded(True)
