"""Which probes to run: the quick or full suite, or a custom set; burn length; data and checkpoint
paths.

The selection is a plain value (:class:`SuiteChoice`) so the pane can build the runner's options
from it and tests can set it without clicking.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QRadioButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.probes import PROBE_NAMES, SUITES, HostProfile

DEFAULT_BURN_MIN = 10
PROBE_TITLES = {
    "inventory": "Inventory (GPUs, PCIe, NICs, filesystems)",
    "gpu_metrics": "GPU live metrics",
    "health": "Health (ECC, remapped rows, Xid)",
    "compute": "Compute (matmul TFLOP/s)",
    "collectives": "Collectives (all_reduce busbw)",
    "storage": "Storage (fio at the paths below)",
    "distributed": "Distributed environment (torchrun)",
    "burn": "Stability burn",
    "step": "Training step (one layer of the plan)",
}


@dataclass(frozen=True)
class SuiteChoice:
    """``suite`` is "quick", "full", or the probe names of a custom set, in run order."""

    suite: str | tuple[str, ...]
    burn_seconds: int
    data_path: str | None
    checkpoint_path: str | None
    # the selected host's interpreter (its Add/Edit host form); None: looked for
    python: str | None = None

    @property
    def probes(self) -> tuple[str, ...]:
        return SUITES[self.suite] if isinstance(self.suite, str) else self.suite

    @property
    def label(self) -> str:
        return self.suite if isinstance(self.suite, str) else ",".join(self.suite)


class SuitePicker(QGroupBox):
    """Signals: ``changed()`` whenever the choice changes."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Probe suite", parent)
        self.setAccessibleName("Probe suite")
        self.python: str | None = None  # the selected host's, set by for_host
        layout = QVBoxLayout(self)
        modes = QHBoxLayout()
        self.group = QButtonGroup(self)
        self.mode_buttons: dict[str, QRadioButton] = {}
        for key, text, tip in (
            ("quick", "Quick", "About a minute: inventory, health, compute, network, storage"),
            ("full", "Full", "Quick plus the stability burn"),
            ("custom", "Custom", "Pick the probes"),
        ):
            button = QRadioButton(text)
            button.setToolTip(tip)
            button.setAccessibleName(f"{text} suite")
            self.group.addButton(button)
            self.mode_buttons[key] = button
            modes.addWidget(button)
        modes.addStretch(1)
        self.mode_buttons["quick"].setChecked(True)
        layout.addLayout(modes)
        grid = QGridLayout()
        self.checks: dict[str, QCheckBox] = {}
        for i, name in enumerate(PROBE_NAMES):
            title = PROBE_TITLES.get(name, name)
            # the name alone on the box, what it measures in its tooltip: two columns of the whole
            # titles were wider than the hosts' side of the pane and cut ('Inventory (GPUs, PCIe,
            # NICs,')
            box = QCheckBox(title.split(" (")[0])
            box.setToolTip(title)
            # as wide as its box and name, so all of it answers a click: stretched to the grid's
            # column, a short name left an empty right part that looks like the box and ignores
            # clicks
            box.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
            box.setAccessibleName(f"Probe {name}")
            box.setChecked(name in SUITES["quick"])
            box.toggled.connect(lambda _on: self._changed())
            self.checks[name] = box
            grid.addWidget(box, i // 2, i % 2)
        layout.addLayout(grid)
        form = QFormLayout()
        self.burn = QDoubleSpinBox()
        self.burn.setAccessibleName("Burn duration")
        self.burn.setDecimals(1)
        self.burn.setRange(0.1, 240.0)
        self.burn.setValue(DEFAULT_BURN_MIN)
        self.burn.setSuffix(" min")
        self.burn.valueChanged.connect(lambda _v: self._changed())
        form.addRow("Burn duration", self.burn)
        self.data_path = QLineEdit()
        self.data_path.setAccessibleName("Data path")
        self.data_path.setPlaceholderText(
            "where the training data will live, e.g. /data (default: a temp dir)"
        )
        self.checkpoint_path = QLineEdit()
        self.checkpoint_path.setAccessibleName("Checkpoint path")
        self.checkpoint_path.setPlaceholderText(
            "where checkpoints will be written, e.g. /checkpoints"
        )
        for edit in (self.data_path, self.checkpoint_path):
            edit.textChanged.connect(lambda _t: self._changed())
        form.addRow("Data path", self.data_path)
        form.addRow("Checkpoint path", self.checkpoint_path)
        layout.addLayout(form)
        self.group.buttonToggled.connect(lambda _b, _on: self._changed())
        self._changed()

    @property
    def mode(self) -> str:
        return next(k for k, b in self.mode_buttons.items() if b.isChecked())

    def _changed(self) -> None:
        mode = self.mode
        for name, box in self.checks.items():
            box.setEnabled(mode == "custom")
            if mode != "custom":
                box.blockSignals(True)
                box.setChecked(name in SUITES[mode])
                box.blockSignals(False)
        self.burn.setEnabled("burn" in self.choice().probes)
        self.changed.emit()

    def choice(self) -> SuiteChoice:
        mode = self.mode
        suite: str | tuple[str, ...] = (
            mode
            if mode != "custom"
            else tuple(name for name in PROBE_NAMES if self.checks[name].isChecked())
        )
        return SuiteChoice(
            suite=suite,
            burn_seconds=round(self.burn.value() * 60),
            data_path=self.data_path.text().strip() or None,
            checkpoint_path=self.checkpoint_path.text().strip() or None,
            python=self.python,
        )

    def for_host(self, host: HostProfile | None) -> None:
        """The selected host's paths and Python (a cluster, ``None``, keeps none: its nodes have
        their own)."""
        self.python = host.python if host is not None else None
        self.set_choice(
            self.choice().suite,
            data_path=host.data_path or "" if host else "",
            checkpoint_path=host.checkpoint_path or "" if host else "",
        )

    def set_choice(
        self,
        suite: str | tuple[str, ...],
        burn_seconds: int | None = None,
        data_path: str | None = None,
        checkpoint_path: str | None = None,
    ) -> None:
        """Select a suite by name or a custom list of probe names (unknown names raise
        ValueError)."""
        if isinstance(suite, str):
            if suite not in SUITES:
                raise ValueError(
                    f"suite '{suite}' is unknown; allowed: {', '.join(SUITES)} or a list of probes"
                )
            self.mode_buttons[suite].setChecked(True)
        else:
            unknown = [n for n in suite if n not in PROBE_NAMES]
            if unknown:
                raise ValueError(
                    f"probe '{unknown[0]}' is unknown; allowed: {', '.join(PROBE_NAMES)}"
                )
            self.mode_buttons["custom"].setChecked(True)
            for name, box in self.checks.items():
                box.setChecked(name in suite)
        if burn_seconds is not None:
            self.burn.setValue(max(0.1, burn_seconds / 60))
        if data_path is not None:
            self.data_path.setText(data_path)
        if checkpoint_path is not None:
            self.checkpoint_path.setText(checkpoint_path)
        self._changed()
