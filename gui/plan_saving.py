"""The plan leaving the wizard: saved to the library under a name, or exported as a JSON or PDF
file.

It stands apart from the window's frame (places, menus, the library's opening) because it is one
subject with its own rules: Save updates the library plan the wizard shows, under the name it has in
the library now; a plan not in the library yet, and "Save as new…", ask for a name, and a name
another plan has is only reused when the user says to replace that plan. A plan is saved or exported
only once it is computed, and the PDF is rendered on a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QInputDialog, QMainWindow, QMessageBox

from core.library import PlanStore, StoreError, request_to_dict
from core.output_file import format_of, write_file
from gui.forms import chosen_path, said, suggested_path
from gui.wizard.wizard import PlanWizard
from gui.workers import Executor


class PlanSaving:
    """Save and export for `window`'s wizard; `store` opens the library when first asked (see
    MainWindow)."""

    def __init__(
        self,
        window: QMainWindow,
        wizard: PlanWizard,
        executor: Executor,
        store: Callable[[], PlanStore],
        refresh_library: Callable[[], None],
    ) -> None:
        self.window, self.wizard, self.executor = window, wizard, executor
        self.store, self.refresh_library = store, refresh_library

    def say(self, text: str, ms: int = 8000) -> None:
        self.window.statusBar().showMessage(text, ms)

    def ready(self, done: str) -> bool:
        """Whether the plan can be saved or exported now; if not, the status bar says why in one
        sentence."""
        state = self.wizard.state
        if state.request is None:
            self.say(f"Not {done}: the plan has errors, shown in red on its pages; fix them first")
        elif state.busy or state.analysis is None:
            self.say(f"Not {done} yet: the plan is still being computed; try again in a moment")
        else:
            return True
        return False

    def save_plan(self) -> int | None:
        """Save to the library and return the plan's id (None: not saved, and the status bar says
        why).

        A plan opened from the library is updated under the name it has there now, so a rename made
        in the library meanwhile stays; a plan not in the library (new, from a file, deleted since)
        is saved as new.
        """
        if not self.ready("saved"):
            return None
        plan_id = self.wizard.plan_id
        try:
            name = self.store().get(plan_id).name if plan_id is not None else None
        except KeyError:
            name = None
        if plan_id is None or name is None:
            return self.save_as_new()
        return self._write(name, plan_id)

    def save_as_new(self, name: str | None = None) -> int | None:
        """Save as a new library plan under a name the user types (``name``: the first answer, no
        dialog).

        The name proposed comes from the model, the method and the GPUs; a name another plan has
        replaces that plan only when the user says so.
        """
        if not self.ready("saved"):
            return None
        chosen = self._choose_name(name)
        if chosen is None:
            self.say("Not saved: no name was chosen")
            return None
        return self._write(*chosen)

    def plan_label(self) -> str:
        """'llama-3.1-8b lora on 8× H100-SXM': what the plan is, for a plan that has no name yet."""
        from core.planner import hardware_label  # loaded by the plan being saved

        analysis = self.wizard.state.analysis
        assert analysis is not None
        r = analysis.result
        return f"{r.model_name} {r.request.training.method.value} on {hardware_label(r.hardware)}"

    def _proposed_name(self) -> str:
        """The plan's label, with ' (2)' and up when the library already has that name."""
        base = self.plan_label()
        taken = {record.name for record in self.store().list()}
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base} ({n})"
        return name

    def _plan_named(self, name: str) -> int | None:
        return next((record.id for record in self.store().list() if record.name == name), None)

    def _choose_name(self, typed: str | None) -> tuple[str, int | None] | None:
        """A name for the plan, and the id of the plan of that name it replaces (None: it is a new
        one); None when the user cancelled. Asks again after an empty name or a name taken and not
        to be replaced."""
        label, proposal = "Name of the new plan in the library:", self._proposed_name()
        while True:
            if typed is None:
                text, ok = QInputDialog.getText(
                    self.window, "Save as new plan", label, text=proposal
                )
                if not ok:
                    return None
                typed = text
            name, typed = typed.strip(), None
            if not name:
                label = "The plan name is empty: type at least one character."
                continue
            other = self._plan_named(name)
            if other is None or self._confirm_replace(name):
                return name, other
            label, proposal = f"“{name}” is the name of another plan; type a different name:", name

    def _confirm_replace(self, name: str) -> bool:
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Save as new plan",
            f"A plan named “{name}” is already in the library.",
            parent=self.window,
        )
        box.setInformativeText("Replace it with this plan, or choose another name?")
        replace = box.addButton("Replace", QMessageBox.ButtonRole.DestructiveRole)
        other = box.addButton("Choose another name", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(other)
        box.exec()
        return box.clickedButton() is replace

    def _write(self, name: str, plan_id: int | None) -> int | None:
        state = self.wizard.state
        analysis, request = state.analysis, state.request
        assert analysis is not None and request is not None
        try:
            saved = self.store().save(
                name, request_to_dict(request), analysis.result, plan_id=plan_id
            )
        except StoreError as exc:  # the plan stays in the wizard, with its unsaved mark
            self.say(f"Not saved: {exc}", 15000)
            return None
        self.wizard.mark_saved(saved, name)
        self.refresh_library()
        self.say(f"Saved “{name}” to the library")
        return saved

    def _export_path(self, suffix: str) -> str:
        """The file an export proposes: the plan's name in the library (or its file's), else what it
        is, in the user's documents folder."""
        return suggested_path(self.wizard.plan_name or self.plan_label(), suffix)

    def export_json(self, path: Path | None = None) -> Path | None:
        if not self.ready("exported"):
            return None
        analysis = self.wizard.state.analysis
        assert analysis is not None
        path = chosen_path(
            self.window,
            path,
            "Export plan JSON",
            self._export_path(".json"),
            "JSON (*.json)",
            save=True,
        )
        if path is None:
            return None
        try:
            format_of(path, {".json": "json"})
            write_file(path, analysis.result.model_dump_json(indent=2) + "\n")
        except OSError as exc:
            self.say(said(exc), 10000)
            return None
        self.say(f"Exported {path}")
        return path

    def export_pdf(self, path: Path | None = None) -> None:
        """Render the report on a worker (painting on a QPdfWriter is allowed off the GUI
        thread)."""
        if not self.ready("exported"):
            return
        analysis = self.wizard.state.analysis
        assert analysis is not None
        path = chosen_path(
            self.window, path, "Export PDF", self._export_path(".pdf"), "PDF (*.pdf)", save=True
        )
        if path is None:
            return
        from core.planner import build_report
        from gui.pdf import render_report

        report = build_report(analysis, name=self.wizard.plan_name)
        target = path
        status = self.window.statusBar()
        status.showMessage(f"Writing {target}…")
        self.executor.submit(
            lambda: render_report(report, target),
            lambda pages: status.showMessage(f"Exported {target} ({pages} pages)", 8000),
            lambda exc: status.showMessage(f"PDF export failed: {exc}", 10000),
        )
