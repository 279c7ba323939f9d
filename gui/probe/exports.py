"""The probe pane's exports of a stored run: the run as JSON and the readiness report as a PDF.

Both read the run from the probe store on the GUI thread (the store belongs to that thread); the PDF
is built and rendered on a worker. Without a path the user picks one in a save dialog. Every
outcome, success or not, is one status line handed to the pane. Both files are made 0600 before they
are written: they name the host, its addresses and its user, like the probe history (0600) they come
from.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from core.output_file import format_of, write_file
from core.probes import ProbeStore
from gui.forms import chosen_path, said, suggested_path
from gui.workers import Executor


def export_buttons(
    pdf: Callable[[], object], json_file: Callable[[], object]
) -> tuple[QHBoxLayout, QPushButton, QPushButton]:
    """The scorecard tab's "Export PDF…" and "Export JSON…" buttons, right-aligned in a row, calling
    ``pdf`` and ``json_file`` with no argument (the run shown)."""
    row = QHBoxLayout()
    row.addStretch(1)
    buttons = []
    for text, name, slot in (
        ("Export PDF…", "Export probe PDF", pdf),
        ("Export JSON…", "Export probe JSON", json_file),
    ):
        button = QPushButton(text)
        button.setAccessibleName(name)
        button.clicked.connect(lambda _c=False, s=slot: s())
        row.addWidget(button)
        buttons.append(button)
    return row, buttons[0], buttons[1]


class RunExports:
    """Exports a run of ``store``; ``parent`` owns the save dialog and ``status`` shows each
    outcome."""

    def __init__(
        self, store: ProbeStore, executor: Executor, parent: QWidget, status: Callable[[str], None]
    ) -> None:
        self.store, self.executor, self.parent = store, executor, parent
        self._set_status = status

    def _export_target(
        self, run_id: int | None, title: str, suffix: str, path: Path | None
    ) -> tuple[int, Path] | None:
        if run_id is None:
            self._set_status("No run to export: run a suite or reopen one")
            return None
        # proposed in the documents folder, as a plan's export is: not in whatever folder tuneplan
        # started from
        path = chosen_path(
            self.parent,
            path,
            title,
            suggested_path(f"probe-run-{run_id}", f".{suffix}"),
            f"{suffix.upper()} (*.{suffix})",
            save=True,
        )
        if path is None:
            return None
        return run_id, path

    def export_json(self, run_id: int | None, path: Path | None = None) -> Path | None:
        """Write the run (summary, options, outcomes, evidence, scorecard, events, samples summary)
        as JSON."""
        target = self._export_target(run_id, "Export probe JSON", "json", path)
        if target is None:
            return None
        run_id, path = target
        from core.probes import run_json

        try:
            run = self.store.load_run(run_id)
            # 0600: the export names hosts, like the probe history it comes from
            format_of(path, {".json": "json"})
            write_file(
                path,
                json.dumps(run_json(run, samples=True), indent=2, allow_nan=False) + "\n",
                mode=0o600,
            )
        except KeyError as exc:
            self._set_status(str(exc.args[0]))
            return None
        except OSError as exc:
            self._set_status(said(exc))
            return None
        except ValueError as exc:
            self._set_status(f"Cannot write {path}: {exc}")
            return None
        self._set_status(f"Exported {path}")
        return path

    def export_pdf(
        self,
        run_id: int | None,
        path: Path | None = None,
        on_done: Callable[[int], None] | None = None,
    ) -> None:
        """Read the run here (the store belongs to this thread), build and render the report on a
        worker."""
        target = self._export_target(run_id, "Export probe PDF", "pdf", path)
        if target is None:
            return
        run_id, path = target
        from core.probes import build_probe_report
        from gui.pdf import render_report

        try:
            run = self.store.load_run(run_id)
        except KeyError as exc:
            self._set_status(str(exc.args[0]))
            return
        self._set_status(f"Writing {path}…")

        def done(pages: int) -> None:
            self._set_status(f"Exported {path} ({pages} pages)")
            if on_done is not None:
                on_done(pages)

        def failed(exc: BaseException) -> None:
            self._set_status(f"PDF export failed: {exc}")

        self.executor.submit(
            lambda: render_report(build_probe_report(run), path, mode=0o600), done, failed
        )
