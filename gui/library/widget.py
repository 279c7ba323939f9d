"""The library list: saved plans with open, rename, duplicate, delete (undoable), compare, import,
export.

Store calls are short and run on the GUI thread, the thread that opened the SQLite connection;
planning an imported request runs on the executor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.library import PlanRecord, PlanStore, StoreError, request_to_dict
from core.output_file import format_of, write_file
from core.planner import PlanRequest, RequestFileError, read_request_file
from core.validation import validation_message
from gui.forms import button_row, chosen_path, make_error_label, show_problem, suggested_path
from gui.library.compare import CompareDialog
from gui.table_model import PAYLOAD_ROLE, Row, RowsModel, make_table
from gui.workers import Executor

if TYPE_CHECKING:
    from core.planner import Analysis

UNDO_SECONDS = 10


class _DeleteCommand(QUndoCommand):
    """Deleting plans (all or none, one transaction), undoable. An undo the store refuses (a full
    disk) keeps the deleted plans here and the command undoable: the stack is stepped back over it,
    and the sentence says why."""

    def __init__(self, library: LibraryWidget, plan_ids: list[int]) -> None:
        super().__init__("delete plans" if len(plan_ids) > 1 else "delete plan")
        self.library, self.plan_ids = library, plan_ids
        self.records: tuple[PlanRecord, ...] = ()
        # the last undo restored nothing: the next redo only steps the stack back
        self.undo_failed = False

    def redo(self) -> None:
        if self.undo_failed:  # the plans are still deleted and still held here
            self.undo_failed = False
            return
        try:
            self.records = self.library.store.delete_all(self.plan_ids)
        # the plans stay; the sentence says why (a full disk, a lock…)
        except (StoreError, KeyError) as exc:
            self.records = ()
            self.library.report_error(str(exc).strip("'\""))
            return
        self.setText(f"delete “{self.records[0].name}”" if len(self.records) == 1 else self.text())
        self.library.refresh()

    def undo(self) -> None:
        if not self.records:
            return
        try:
            # their own ids, or new ones
            self.plan_ids = list(self.library.store.restore_all(self.records))
        except StoreError as exc:
            self.undo_failed = True
            self.library.undo_refused(self, str(exc))
            return
        self.library.unrestored.discard(self)
        self.library.refresh()
        self.library.select_ids(self.plan_ids)


class LibraryWidget(QWidget):
    """Signals: ``open_requested(object)`` a PlanRecord to show in the wizard (the window asks first
    when that would discard unsaved edits); ``renamed(int, str)`` a plan's id and new name, so a
    window showing that plan follows; ``message(str)`` for the status bar."""

    open_requested = Signal(object)
    renamed = Signal(int, str)
    message = Signal(str)

    def __init__(self, store: PlanStore, executor: Executor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store, self.executor = store, executor
        self.setAccessibleName("Library")
        self.undo_stack = QUndoStack(self)
        # deletes the user undid and the store refused to undo
        self.unrestored: set[_DeleteCommand] = set()
        self.compare_dialog: CompareDialog | None = None
        layout = QVBoxLayout(self)
        self.notice = QLabel(store.notice or "")
        self.notice.setAccessibleName("Library notice")
        self.notice.setWordWrap(True)
        self.notice.setVisible(bool(store.notice))
        layout.addWidget(self.notice)
        self.error = make_error_label("Library")
        layout.addWidget(self.error)
        buttons, self.buttons = button_row(
            [
                ("open", "Open", self.open_selected),
                ("rename", "Rename…", self.rename_selected),
                ("duplicate", "Duplicate", self.duplicate_selected),
                ("delete", "Delete", self.delete_selected),
                ("compare", "Compare two", self.compare_selected),
                ("import", "Import JSON…", self.import_json),
                ("export", "Export JSON…", self.export_selected),
            ]
        )
        layout.addLayout(buttons)
        self.model = RowsModel(["name", "model", "method", "GPU", "cost", "time", "updated"], self)
        self.table = make_table(self.model, "Saved plans")
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.doubleClicked.connect(lambda _i: self.open_selected())
        layout.addWidget(self.table, 1)
        self.undo_bar = self._undo_bar()
        layout.addWidget(self.undo_bar)
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.timeout.connect(self.undo_bar.hide)
        undo = self.undo_stack.createUndoAction(self, "Undo")
        undo.setShortcut(QKeySequence.StandardKey.Undo)
        redo = self.undo_stack.createRedoAction(self, "Redo")
        redo.setShortcut(QKeySequence.StandardKey.Redo)
        self.addActions([undo, redo])
        delete = QAction("Delete plan", self)
        delete.setShortcut(QKeySequence.StandardKey.Delete)
        delete.triggered.connect(self.delete_selected)
        self.addAction(delete)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._enable())
        self.refresh()

    def _undo_bar(self) -> QFrame:
        bar = QFrame()
        bar.setFrameShape(QFrame.Shape.StyledPanel)
        bar.setAccessibleName("Undo bar")
        row = QHBoxLayout(bar)
        self.undo_label = QLabel()
        self.undo_button = QPushButton("Undo")
        self.undo_button.setAccessibleName("Undo delete")
        self.undo_button.clicked.connect(self.undo)
        row.addWidget(self.undo_label, 1)
        row.addWidget(self.undo_button)
        bar.hide()
        return bar

    # ---- list

    def refresh(self) -> None:
        selected = set(self.selected_ids())
        self.model.set_rows(
            [
                Row(
                    r.cells(),
                    sort=[r.name.lower(), r.model, r.method, r.gpu, r.cost_usd, r.hours, r.updated],
                    payload=r.id,
                )
                for r in self.store.list()
            ]
        )
        view_model = self.table.model()
        for row in range(view_model.rowCount()):
            if view_model.index(row, 0).data(PAYLOAD_ROLE) in selected:
                self.table.selectRow(row)
        self._enable()

    def _enable(self) -> None:
        n = len(self.selected_ids())
        for key in ("open", "rename", "duplicate", "delete", "export"):
            self.buttons[key].setEnabled(n == 1 or (key == "delete" and n >= 1))
        self.buttons["compare"].setEnabled(n == 2)

    def selected_ids(self) -> list[int]:
        selection = self.table.selectionModel()
        return [int(i.data(PAYLOAD_ROLE)) for i in selection.selectedRows()] if selection else []

    def select_ids(self, ids: list[int]) -> None:
        self.table.clearSelection()
        view_model = self.table.model()
        mode = self.table.selectionMode()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row in range(view_model.rowCount()):
            if view_model.index(row, 0).data(PAYLOAD_ROLE) in ids:
                self.table.selectRow(row)
        self.table.setSelectionMode(mode)

    def _say(self, message: str = "", error: str = "") -> None:
        self.error.setText(error)
        self.error.setVisible(bool(error))
        if message:
            self.message.emit(message)

    def report_error(self, text: str) -> None:
        """A store sentence (the plan library could not be written, and why) shown under the
        list."""
        self._say(error=text)

    def _one(self) -> int | None:
        ids = self.selected_ids()
        if len(ids) != 1:
            self._say(error="select one plan first")
            return None
        return ids[0]

    # ---- actions

    def open_selected(self) -> None:
        plan_id = self._one()
        if plan_id is not None:
            self.open_requested.emit(self.store.get(plan_id))

    def rename_selected(self, name: str | None = None) -> None:
        plan_id = self._one()
        if plan_id is None:
            return
        if name is None:
            text, ok = QInputDialog.getText(
                self, "Rename plan", "Name", text=self.store.get(plan_id).name
            )
            if not ok:
                return
            name = text
        try:
            self.store.rename(plan_id, name)
        except (ValueError, KeyError, StoreError) as exc:
            self._say(error=str(exc).strip("'\""))
            return
        self._say(f"Renamed to “{name.strip()}”.")
        self.refresh()
        self.renamed.emit(plan_id, name.strip())

    def duplicate_selected(self) -> None:
        plan_id = self._one()
        if plan_id is not None:
            try:
                new_id = self.store.duplicate(plan_id)
            except StoreError as exc:
                self._say(error=str(exc))
                return
            self.refresh()
            self.select_ids([new_id])
            self._say("Duplicated.")

    def delete_selected(self) -> None:
        ids = self.selected_ids()
        if not ids:
            self._say(error="select a plan to delete")
            return
        names = [self.store.get(i).name for i in ids]
        self.undo_stack.push(_DeleteCommand(self, ids))
        shown = f"“{names[0]}”" if len(names) == 1 else f"{len(names)} plans"
        self.undo_label.setText(f"Deleted {shown}.")
        self.undo_bar.show()
        self._undo_timer.start(UNDO_SECONDS * 1000)
        self._say(error="")

    def undo(self) -> None:
        self.undo_bar.hide()
        self.undo_stack.undo()

    def undo_refused(self, command: _DeleteCommand, why: str) -> None:
        """An undo the store could not write: said, the Undo bar kept until it succeeds, and the
        stack stepped back over the delete once this undo has returned (QUndoStack moves its index
        after the command's undo), so Undo, Ctrl+Z and the bar try again and Redo does not delete
        plans that are not there."""
        self._undo_timer.stop()
        self.undo_bar.show()
        self.unrestored.add(command)
        plans = len(command.records)
        kept = "The deleted plan is" if plans == 1 else f"The {plans} deleted plans are"
        self._say(error=f"Undo failed: {why.rstrip('.')}. {kept} kept here: press Undo again.")
        QTimer.singleShot(0, self.undo_stack.redo)

    def may_close(self) -> bool:
        """Before the window closes: True unless plans the user asked back (an undo the store
        refused) would be lost. They are tried once more (there may be room now); if the store still
        refuses, the user chooses to keep the window open (the default: make room, press Undo) or to
        close without them."""
        why = ""
        for command in list(self.unrestored):
            try:
                self.store.restore_all(command.records)
            except StoreError as exc:
                why = str(exc)
                continue
            self.unrestored.discard(command)
        if not self.unrestored:
            return True
        plans = sum(len(command.records) for command in self.unrestored)
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Deleted plans not restored",
            f"{plans} plan{'s' if plans > 1 else ''} you asked back with Undo could not be written "
            f"back: {why}",
            parent=self,
        )
        box.setInformativeText(
            "Closing now loses them. Keep the window open, make room and press Undo again?"
        )
        keep = box.addButton("Keep the window open", QMessageBox.ButtonRole.RejectRole)
        box.addButton("Close and lose them", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(keep)
        box.exec()
        return box.clickedButton() is not keep

    def compare_selected(self) -> CompareDialog | None:
        ids = self.selected_ids()
        if len(ids) != 2:
            self._say(error="select exactly two plans to compare")
            return None
        a, b = (self.store.get(i) for i in sorted(ids))
        self.compare_dialog = CompareDialog(a, b, self)
        self.compare_dialog.show()
        return self.compare_dialog

    def export_selected(self, path: Path | None = None) -> Path | None:
        """Write the selected plan's request as JSON (the `tuneplan plan REQUEST.json` format)."""
        plan_id = self._one()
        if plan_id is None:
            return None
        record = self.store.get(plan_id)
        path = chosen_path(
            self,
            path,
            "Export plan request",
            suggested_path(record.name, ".json"),
            "JSON (*.json)",
            save=True,
        )
        if path is None:
            return None
        try:
            request = request_to_dict(PlanRequest.model_validate(record.request))
        except ValidationError:
            request = record.request
        try:
            format_of(path, {".json": "json"})
            write_file(path, json.dumps(request, indent=2) + "\n")
        except OSError as exc:
            self._say(error=str(exc))
            return None
        self._say(f"Exported “{record.name}” to {path}.")
        return path

    def import_json(self, path: Path | None = None) -> None:
        """Read a plan request, plan it on the executor, and save it under the file's name."""
        path = chosen_path(self, path, "Import plan request", "", "JSON (*.json)", save=False)
        if path is None:
            return
        try:
            raw = read_request_file(path)
            request = PlanRequest.model_validate(raw)
        except ValidationError as exc:
            show_problem(
                self,
                "Cannot import plan request",
                f"{path.name} is not a valid plan request: {validation_message(exc)}",
            )
            return
        except RequestFileError as exc:
            show_problem(self, "Cannot import plan request", str(exc))
            return
        # what the file sets, as the window saves it
        stem, as_set = path.stem, request_to_dict(request)

        def saved(analysis: Analysis) -> None:
            self._save_import(stem, as_set, analysis)

        def failed(exc: BaseException) -> None:
            self._save_import(stem, as_set, None, str(exc))

        def plan() -> Analysis:
            from core.planner import analyse  # on the worker: the planner is not loaded at start

            return analyse(request)

        self.executor.submit(plan, saved, failed)

    def _save_import(
        self, name: str, raw: dict[str, Any], analysis: Analysis | None, problem: str = ""
    ) -> None:
        try:
            new_id = self.store.save(name, raw, analysis.result if analysis else None)
        except StoreError as exc:
            self._say(error=str(exc))
            return
        self.refresh()
        self.select_ids([new_id])
        self._say(f"Imported “{name}”" + (f" (not planned: {problem})" if problem else "") + ".")
