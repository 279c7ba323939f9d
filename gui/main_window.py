"""The main window: places (Plan, Library, and later Probe) in a sidebar, with menus, toolbar and shortcuts.

Window geometry is UI state, kept in QSettings; preferences live elsewhere. ``closeEvent`` stops every
worker (bounded wait) so no thread outlives the window.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QWidget,
)

from core.planner.analysis import hardware_label
from core.planner.report import build_report
from core.planner.request_file import RequestFileError, read_request_file
from core.planner.store import PlanRecord, PlanStore, StoreError, request_to_dict
from gui.forms import show_problem
from gui.library.widget import LibraryWidget
from gui.wizard.wizard import PlanWizard
from gui.workers import Executor, ThreadExecutor


class MainWindow(QMainWindow):
    def __init__(self, executor: Executor, store: PlanStore, settings: QSettings | None = None,
                 debounce_ms: int = 150) -> None:
        super().__init__()
        self.executor, self.store = executor, store
        self.settings = settings or QSettings()
        self.setWindowTitle("tuneplan")
        self.setAccessibleName("tuneplan main window")
        central = QWidget()
        row = QHBoxLayout(central)
        row.setContentsMargins(0, 0, 0, 0)
        self.sidebar = QListWidget()
        self.sidebar.setAccessibleName("Places")
        self.sidebar.setFixedWidth(120)
        self.stack = QStackedWidget()
        self.stack.setAccessibleName("Current place")
        row.addWidget(self.sidebar)
        row.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.sidebar.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.places: dict[str, QWidget] = {}
        self.wizard = PlanWizard(executor, debounce_ms=debounce_ms)
        self.library = LibraryWidget(store, executor)
        self.add_place("Plan", self.wizard)
        self.add_place("Library", self.library)
        self.wizard.save_requested.connect(self.save_plan)
        self.wizard.export_pdf_requested.connect(self.export_pdf)
        self.wizard.export_json_requested.connect(self.export_json)
        self.library.open_requested.connect(self.open_record)
        self.library.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self._make_actions()
        self.sidebar.setCurrentRow(0)
        self.statusBar().showMessage(store.notice or "Ready", 15000)
        if isinstance(executor, ThreadExecutor):  # a background error nobody handled shows here, not on stderr
            executor.set_report(lambda text: self.statusBar().showMessage(text, 15000))
        self._restore_geometry()

    @classmethod
    def create_default(cls) -> MainWindow:
        """The window the `tuneplan` command opens: threaded executor, library in the user data folder."""
        try:
            store = PlanStore()
        except StoreError as exc:
            QMessageBox.critical(None, "tuneplan", str(exc))
            raise SystemExit(1) from exc
        window = cls(ThreadExecutor(), store)
        from gui.probe import ProbePlace  # builds the probe pane (paramiko, pyqtgraph) when first shown

        probe = ProbePlace(window.executor, plan_request_source=lambda: window.wizard.state.request)
        probe.apply_to_plan.connect(window.apply_probe_request)
        probe.message.connect(lambda text: window.statusBar().showMessage(text, 8000))
        window.add_place("Probe", probe)
        return window

    def apply_probe_request(self, request: Any) -> None:
        """A plan request carrying a probe's measured MFU and bandwidth: open it in the wizard."""
        self.wizard.load_request(request_to_dict(request), name="with probe measurements")
        self.show_place("Plan")
        self.statusBar().showMessage("Plan updated with the probe's measured figures", 8000)

    # ---- places

    def add_place(self, name: str, widget: QWidget) -> int:
        """Add a place to the sidebar (the Probe pane arrives this way); returns its index."""
        self.places[name] = widget
        self.sidebar.addItem(name)
        index = self.stack.addWidget(widget)
        key = QKeySequence(f"Ctrl+{index + 1}")
        action = QAction(f"Go to {name}", self)
        action.setShortcut(key)
        action.triggered.connect(lambda: self.show_place(name))
        self.addAction(action)
        if hasattr(self, "view_menu"):
            self.view_menu.addAction(action)
        return index

    def show_place(self, name: str) -> None:
        self.sidebar.setCurrentRow(list(self.places).index(name))

    # ---- menus and toolbar

    def _action(self, text: str, shortcut: QKeySequence | QKeySequence.StandardKey | str, slot: Any,
                tip: str) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(shortcut))
        action.setStatusTip(tip)
        action.setToolTip(f"{tip} ({QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)})")
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _make_actions(self) -> None:
        self.actions_by_name = {
            "new": self._action("&New plan", "Ctrl+N", self.new_plan, "Start a new plan"),
            "open": self._action("&Open request…", "Ctrl+O", self.open_request, "Open a plan request JSON file"),
            "save": self._action("&Save to library", "Ctrl+S", self.save_plan, "Save this plan to the library"),
            "pdf": self._action("Export &PDF…", "Ctrl+E", self.export_pdf, "Export the plan as a PDF report"),
            "json": self._action("Export &JSON…", "Ctrl+Shift+E", self.export_json, "Export the plan result JSON"),
            "quit": self._action("&Quit", "Ctrl+Q", self.close, "Quit tuneplan"),
        }
        file_menu = self.menuBar().addMenu("&File")
        for key in ("new", "open", "save", "pdf", "json"):
            file_menu.addAction(self.actions_by_name[key])
        file_menu.addSeparator()
        file_menu.addAction(self.actions_by_name["quit"])
        self.view_menu = self.menuBar().addMenu("&View")
        for action in self.actions():
            if action.text().startswith("Go to"):
                self.view_menu.addAction(action)
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(self._action("&About", "F1", self._about, "About tuneplan"))
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        toolbar.setAccessibleName("Main toolbar")
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for key in ("new", "open", "save", "pdf"):
            toolbar.addAction(self.actions_by_name[key])

    def _about(self) -> None:
        QMessageBox.about(self, "tuneplan", "tuneplan plans what an LLM fine-tune needs and costs.\n"
                          "Every figure carries its source and date.")

    # ---- plan actions

    def new_plan(self) -> None:
        self.wizard.new_plan()
        self.show_place("Plan")

    def open_request(self, path: Path | None = None) -> bool:
        """Load a plan request JSON into the wizard; a file that cannot be one is refused with a dialog saying why."""
        if path is None:
            name, _ = QFileDialog.getOpenFileName(self, "Open plan request", "", "JSON (*.json)")
            if not name:
                return False
            path = Path(name)
        try:
            raw = read_request_file(path)
        except RequestFileError as exc:
            show_problem(self, "Cannot open plan request", str(exc))
            return False
        self.wizard.load_request(raw, name=path.stem)
        self.show_place("Plan")
        return True

    def open_record(self, record: PlanRecord) -> None:
        self.wizard.load_request(record.request, plan_id=record.id, name=record.name)
        self.show_place("Plan")
        self.statusBar().showMessage(f"Opened “{record.name}”", 5000)

    def _ready(self) -> bool:
        if self.wizard.state.analysis is None or self.wizard.state.request is None:
            self.statusBar().showMessage("Nothing to save yet: the plan has errors or is still computing", 8000)
            return False
        return True

    def save_plan(self) -> int | None:
        """Save to the library (updating the plan it was opened from); returns the id."""
        if not self._ready():
            return None
        state, wizard = self.wizard.state, self.wizard
        analysis, request = state.analysis, state.request
        assert analysis is not None and request is not None
        r = analysis.result
        name = wizard.plan_name or f"{r.model_name} {r.request.training.method.value} {hardware_label(r.hardware)}"
        wizard.plan_id = self.store.save(name, request_to_dict(request), r, plan_id=wizard.plan_id)
        wizard.plan_name = name
        self.library.refresh()
        self.statusBar().showMessage(f"Saved “{name}” to the library", 8000)
        return wizard.plan_id

    def export_json(self, path: Path | None = None) -> Path | None:
        if not self._ready():
            return None
        analysis = self.wizard.state.analysis
        assert analysis is not None
        if path is None:
            name, _ = QFileDialog.getSaveFileName(self, "Export plan JSON", "plan.json", "JSON (*.json)")
            if not name:
                return None
            path = Path(name)
        try:
            path.write_text(analysis.result.model_dump_json(indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            self.statusBar().showMessage(f"Cannot write {path}: {exc.strerror or exc}", 10000)
            return None
        self.statusBar().showMessage(f"Exported {path}", 8000)
        return path

    def export_pdf(self, path: Path | None = None) -> None:
        """Render the report on a worker (painting on a QPdfWriter is allowed off the GUI thread)."""
        if not self._ready():
            return
        analysis = self.wizard.state.analysis
        assert analysis is not None
        if path is None:
            name, _ = QFileDialog.getSaveFileName(self, "Export PDF", "plan.pdf", "PDF (*.pdf)")
            if not name:
                return
            path = Path(name)
        from gui.pdf import render_report

        report = build_report(analysis)
        target = path
        self.statusBar().showMessage(f"Writing {target}…")
        self.executor.submit(lambda: render_report(report, target),
                             lambda pages: self.statusBar().showMessage(f"Exported {target} ({pages} pages)", 8000),
                             lambda exc: self.statusBar().showMessage(f"PDF export failed: {exc}", 10000))

    # ---- window state

    def _restore_geometry(self) -> None:
        geometry = self.settings.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 860)
        state = self.settings.value("window/state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()
        self.executor.stop_all(2000)
        self.store.close()
        super().closeEvent(event)
