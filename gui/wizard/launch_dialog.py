"""The Summary page's "Export launch files…": choose formats and a folder, write the files the plan
runs with.

What the files say and which settings a format refuses is core's (``core.launch``); this dialog only
asks where and which. Writing runs on the executor (gui/workers.py): the files are small, but the
folder may be on a network mount that hangs, and the window must not. Formats that cannot express
the plan are listed with their sentence while the others are written, as ``tuneplan launch --format
all`` does. With kubernetes ticked, the request's ``launch`` settings (a Kueue queue, PyTorchJob
instead of TrainJob and JobSet) can be set here: they belong to the cluster the files are for, not
to the plan, and a queue name Kubernetes would refuse is the request's own one sentence.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.launch import FORMATS, LaunchError, Written, write_launch_files
from core.planner import LaunchSpec, PlanResult
from core.validation import validation_message
from gui.workers import Executor, error_message


class LaunchDialog(QDialog):
    """One checkbox a format plus "All formats", a folder field with "Choose…", Export and Close.

    ``message`` says what was written (or why not); ``written`` keeps the last result for the
    caller.
    """

    def __init__(
        self,
        result: PlanResult,
        executor: Executor,
        name: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export launch files")
        self.setAccessibleName("Export launch files")
        self._result = result
        self._executor = executor
        self._name = name
        self.written: Written | None = None
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Files your training stack reads, written from this plan."))
        grid = QGridLayout()
        self.all_box = QCheckBox("All formats")
        self.all_box.setAccessibleName("All formats")
        grid.addWidget(self.all_box, 0, 0, 1, 2)
        self.boxes: dict[str, QCheckBox] = {}
        for i, (fmt, what) in enumerate(FORMATS.items()):
            box = QCheckBox(fmt)
            box.setAccessibleName(fmt)
            box.setToolTip(what)
            self.boxes[fmt] = box
            grid.addWidget(box, 1 + i // 2, i % 2)
            box.toggled.connect(self._update)
        self.all_box.toggled.connect(self._all_toggled)
        layout.addLayout(grid)
        layout.addLayout(self._kubernetes_row(result))
        row = QHBoxLayout()
        row.addWidget(QLabel("Folder"))
        self.folder = QLineEdit()
        self.folder.setAccessibleName("Folder")
        self.folder.setPlaceholderText("where to write the files")
        self.folder.textChanged.connect(self._update)
        row.addWidget(self.folder, 1)
        self.choose_button = QPushButton("Choose…")
        self.choose_button.setAccessibleName("Choose folder")
        self.choose_button.clicked.connect(self._choose)
        row.addWidget(self.choose_button)
        layout.addLayout(row)
        self.message = QLabel()
        self.message.setAccessibleName("Export message")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.export_button = QPushButton("Export")
        self.export_button.setAccessibleName("Export")
        self.export_button.clicked.connect(self.export)
        self.close_button = QPushButton("Close")
        self.close_button.clicked.connect(self.reject)
        # Enter exports (the folder typed, the formats ticked); it opened the folder chooser, the
        # first button.
        for button in (self.choose_button, self.close_button):
            button.setAutoDefault(False)
        self.export_button.setDefault(True)
        buttons.addWidget(self.export_button)
        buttons.addWidget(self.close_button)
        layout.addLayout(buttons)
        self.resize(560, 320)
        self._update()

    def _kubernetes_row(self, result: PlanResult) -> QHBoxLayout:
        """The Kueue queue field and the PyTorchJob box, filled from the request, enabled with
        kubernetes."""
        spec = result.request.launch or LaunchSpec()
        row = QHBoxLayout()
        row.addWidget(QLabel("Kueue queue"))
        self.queue = QLineEdit(spec.kueue_queue or "")
        self.queue.setAccessibleName("Kueue queue")
        self.queue.setPlaceholderText("none (kubernetes only)")
        row.addWidget(self.queue, 1)
        self.pytorchjob_box = QCheckBox("PyTorchJob instead of TrainJob and JobSet")
        self.pytorchjob_box.setAccessibleName("PyTorchJob")
        self.pytorchjob_box.setChecked(spec.kubernetes_job == "pytorchjob")
        row.addWidget(self.pytorchjob_box)
        return row

    def _with_launch_settings(self) -> PlanResult:
        """The plan with the dialog's Kubernetes settings in its request (ValidationError for a bad
        queue)."""
        spec = LaunchSpec.model_validate(
            {
                "kueue_queue": self.queue.text().strip() or None,
                "kubernetes_job": "pytorchjob"
                if self.pytorchjob_box.isChecked()
                else "trainjob_and_jobset",
            }
        )
        if spec == (self._result.request.launch or LaunchSpec()):
            return self._result
        request = self._result.request.model_copy(update={"launch": spec})
        return self._result.model_copy(update={"request": request})

    def chosen(self) -> list[str]:
        return [fmt for fmt, box in self.boxes.items() if box.isChecked()]

    def _all_toggled(self, on: bool) -> None:
        for box in self.boxes.values():
            box.setChecked(on)

    def _update(self) -> None:
        chosen = self.chosen()
        self.all_box.blockSignals(True)
        self.all_box.setChecked(len(chosen) == len(self.boxes))
        self.all_box.blockSignals(False)
        self.export_button.setEnabled(bool(chosen) and bool(self.folder.text().strip()))
        kubernetes = "kubernetes" in chosen
        self.queue.setEnabled(kubernetes)
        self.pytorchjob_box.setEnabled(kubernetes)

    def _choose(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Folder for the launch files", self.folder.text() or ""
        )
        if folder:
            self.folder.setText(folder)

    def export(self) -> None:
        """Write the chosen formats into the folder on a worker; the message says what happened."""
        formats, folder = self.chosen(), self.folder.text().strip()
        if not formats or not folder:
            return
        try:
            result = self._with_launch_settings()
        except ValidationError as exc:
            self.message.setText(validation_message(exc, root="launch"))
            return
        self.export_button.setEnabled(False)
        self.message.setText("Writing…")
        name = self._name
        self._executor.submit(
            lambda: write_launch_files(
                result.request, result, formats, Path(folder), name=name, partial=True
            ),
            self._done,
            self._failed,
        )

    def _done(self, written: Written) -> None:
        self.written = written
        lines = []
        if written.paths:
            folder = written.paths[0].parent
            lines.append(
                f"Wrote {len(written.paths)} file(s) to {folder}: "
                + ", ".join(p.name for p in written.paths)
            )
        lines += [f"{fmt}: {why}" for fmt, why in written.refused.items()]
        self.message.setText("\n".join(lines) or "Nothing to write.")
        self._update()

    def _failed(self, exc: BaseException) -> None:
        self.message.setText(str(exc) if isinstance(exc, LaunchError) else error_message(exc))
        self._update()
