"""The main window: places (Plan, Library, Catalog, and later Probe) in a sidebar, with menus,
toolbar and shortcuts.

What the Help menu opens is ``gui/help_menu.py``'s. Window geometry is UI state, kept in QSettings;
preferences live elsewhere. ``closeEvent`` stops every worker (bounded wait) and the wizard's
timers, so no thread or plan outlives the window.

The window `tuneplan` opens shows before its plan library is open: the SQLite layer (sqlite-utils,
which loads NumPy) is imported on a worker once the event loop runs, and the library opened on this
thread then (sqlite3's rule); whatever needs the library sooner (a save, the About box) opens it at
once.

Saving never loses work: how a plan is named, saved and exported is ``gui/plan_saving.py``'s; here
New plan, Open and Quit ask before unsaved edits go. The title shows the plan's name and, while it
has unsaved edits, Qt's ``[*]`` mark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QWidget,
)

from core.catalog import CatalogError
from core.library import PlanRecord, PlanStore, StoreError, library_is_empty, request_to_dict
from core.planner import RequestFileError, read_request_file
from gui.catalog.refresh_button import RefreshPricesButton
from gui.catalog.view import CatalogView
from gui.forms import chosen_path, show_problem
from gui.help_menu import HelpWindows
from gui.library.widget import LibraryWidget
from gui.plan_saving import PlanSaving
from gui.wizard.saved_figures import SavedFiguresCheck
from gui.wizard.wizard import PlanWizard
from gui.workers import Executor, ThreadExecutor


class MainWindow(QMainWindow):
    """``store`` None: the library opens later (:meth:`open_library_in_background`, or at first
    use)."""

    def __init__(
        self,
        executor: Executor,
        store: PlanStore | None,
        settings: QSettings | None = None,
        debounce_ms: int = 150,
    ) -> None:
        super().__init__()
        self.executor = executor
        self._store: PlanStore | None = None
        self._library: LibraryWidget | None = None
        self.settings = settings or QSettings()
        self.setAccessibleName("tuneplan main window")
        self._closed = False
        self.help = HelpWindows(
            self,
            lambda: self.store.path,
            lambda: self._library.actions() if self._library is not None else [],
        )
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
        self.saving = PlanSaving(
            self, self.wizard, executor, lambda: self.store, lambda: self.library.refresh()
        )
        self._saved_figures = SavedFiguresCheck(self.wizard.state)
        self._saved_figures.differs.connect(lambda text: self.saving.say(text, 20000))
        self.add_place("Plan", self.wizard)
        self.add_place(
            "Library", QLabel("Opening the plan library…", alignment=Qt.AlignmentFlag.AlignCenter)
        )
        if store is not None:
            self._attach_library(store)
        self.catalog_view = CatalogView()
        self.refresh_prices = RefreshPricesButton(executor)
        self.catalog_view.refresh_area.addWidget(self.refresh_prices)
        self.refresh_prices.refreshed.connect(lambda _report: self._prices_refreshed())
        self.add_place("Catalog", self.catalog_view)
        self.wizard.save_requested.connect(self.save_plan)
        self.wizard.export_pdf_requested.connect(self.export_pdf)
        self.wizard.export_json_requested.connect(self.export_json)
        self.wizard.document_changed.connect(self._update_title)
        self._make_actions()
        self.sidebar.currentRowChanged.connect(self._place_changed)
        self.sidebar.setCurrentRow(0)
        self.statusBar().showMessage(
            store.notice if store is not None and store.notice else "Ready", 15000
        )
        # a background error nobody handled shows here, not on stderr
        if isinstance(executor, ThreadExecutor):
            executor.set_report(lambda text: self.statusBar().showMessage(text, 15000))
        self._restore_geometry()
        # the saved window state may have shown the toolbar
        self._place_changed(self.sidebar.currentRow())
        self._update_title()

    @classmethod
    def create_default(cls) -> MainWindow:
        """The window the `tuneplan` command opens: threaded executor, library in the user data
        folder.

        Whether the library is empty (the first run) is read with plain sqlite3; the store itself
        opens once the window is on screen. A file that cannot be read so (damaged, locked, an older
        schema) is opened now, as the store's checks, recovery and error dialog need.
        """
        store, empty = None, library_is_empty()
        if empty is None:
            store = _open_store_or_exit(None)
            empty = store.is_empty()
        window = cls(ThreadExecutor(), store)
        window.add_probe_place()
        if empty:  # the first run (or an emptied library): a whole answer before any typing
            from gui.wizard.first_run import open_sample

            open_sample(window.wizard)
        if store is None:
            # once the event loop runs: after the show
            QTimer.singleShot(0, window.open_library_in_background)
        return window

    # ---- the plan library

    @property
    def store(self) -> PlanStore:
        """The plan library, opened now if the background opening has not done it yet."""
        return self._open_library()

    @property
    def library(self) -> LibraryWidget:
        """The Library place (made when the library opens)."""
        self._open_library()
        assert self._library is not None
        return self._library

    def _open_library(self) -> PlanStore:
        if self._store is None:
            self._attach_library(_open_store_or_exit(self))
        assert self._store is not None
        return self._store

    def open_library_in_background(self) -> None:
        """Import the SQLite layer on a worker, then open the library here, on the thread that will
        use it."""

        def opened(_result: object = None) -> None:
            if self._store is None and not self._closed:
                self._open_library()

        # an import that failed fails again, and says so
        self.executor.submit(_import_store_layer, opened, opened)

    def _attach_library(self, store: PlanStore) -> None:
        """The Library place with `store`'s plans, where its placeholder was in the sidebar."""
        self._store = store
        library = self._library = LibraryWidget(store, self.executor)
        library.open_requested.connect(self.open_record)
        library.renamed.connect(self._library_renamed)
        library.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        placeholder = self.places["Library"]
        index = self.stack.indexOf(placeholder)
        self.stack.insertWidget(index, library)
        self.stack.removeWidget(placeholder)
        placeholder.deleteLater()
        self.places["Library"] = library
        self.stack.setCurrentIndex(self.sidebar.currentRow())
        # a file moved aside (damaged): said at once, also when the library opens after the start
        if store.notice:
            self.statusBar().showMessage(store.notice, 15000)

    def _prices_refreshed(self) -> None:
        """New refreshed prices are on disk: the Catalog place and the plan being edited use them at
        once."""
        from core.catalog import load_catalog

        try:
            self.catalog_view.set_catalog(load_catalog())
        except CatalogError as exc:
            self.catalog_view.show_problem(str(exc))
            return
        self.wizard.state.recompute_now()

    def add_probe_place(self) -> None:
        """The Probe place in the sidebar; its pane (paramiko, pyqtgraph) is built when it is first
        shown."""
        from gui.probe import ProbePlace

        probe = ProbePlace(self.executor, plan_request_source=lambda: self.wizard.state.request)
        probe.apply_to_plan.connect(self.apply_probe_request)
        probe.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.add_place("Probe", probe)

    def apply_probe_request(self, request: Any) -> None:
        """A plan request carrying a probe's measured matmul TFLOP/s and bandwidth: open it in the
        wizard, unsaved."""
        if not self._may_replace_plan():
            return
        self.wizard.load_request(
            request_to_dict(request), name="with probe measurements", saved=False
        )
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

    def _place_changed(self, row: int) -> None:
        """The Plan toolbar (save, export) acts on the wizard's plan: it shows only while the Plan
        place does."""
        self.plan_toolbar.setVisible(self.stack.widget(row) is self.wizard)

    def _update_title(self) -> None:
        self.setWindowTitle(f"{self.wizard.display_name}[*] — tuneplan")
        self.setWindowModified(self.wizard.is_modified())

    def _library_renamed(self, plan_id: int, name: str) -> None:
        if plan_id == self.wizard.plan_id:
            self.wizard.rename(name)

    # ---- menus and toolbar

    def _action(
        self,
        text: str,
        shortcut: QKeySequence | QKeySequence.StandardKey | str,
        slot: Any,
        tip: str,
    ) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(shortcut))
        action.setStatusTip(tip)
        action.setToolTip(
            f"{tip} ({QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)})"
        )
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _make_actions(self) -> None:
        self.actions_by_name = {
            "new": self._action("&New plan", "Ctrl+N", self.new_plan, "Start a new plan"),
            "open": self._action(
                "&Open request…", "Ctrl+O", self.open_request, "Open a plan request JSON file"
            ),
            "save": self._action(
                "&Save to library",
                "Ctrl+S",
                self.save_plan,
                "Save this plan to the library, updating the plan it was opened from",
            ),
            "save_as": self._action(
                "Save as &new…",
                "Ctrl+Shift+S",
                self.save_as_new,
                "Save this plan to the library as a new plan, under a name you choose",
            ),
            "pdf": self._action(
                "Export &PDF…", "Ctrl+E", self.export_pdf, "Export the plan as a PDF report"
            ),
            "json": self._action(
                "Export &JSON…", "Ctrl+Shift+E", self.export_json, "Export the plan result JSON"
            ),
            "quit": self._action("&Quit", "Ctrl+Q", self.close, "Quit tuneplan"),
        }
        file_menu = self.menuBar().addMenu("&File")
        for key in ("new", "open", "save", "save_as", "pdf", "json"):
            file_menu.addAction(self.actions_by_name[key])
        file_menu.addSeparator()
        file_menu.addAction(self.actions_by_name["quit"])
        self.view_menu = self.menuBar().addMenu("&View")
        for action in self.actions():
            if action.text().startswith("Go to"):
                self.view_menu.addAction(action)
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(
            self._action("&User guide", "F1", self.help.show_guide, "Read the user guide")
        )
        help_menu.addAction(
            self._action(
                "&Keyboard shortcuts",
                "Ctrl+/",
                self.help.show_shortcuts,
                "List the keyboard shortcuts",
            )
        )
        about = QAction("&About tuneplan", self)
        about.triggered.connect(self.help.about)
        help_menu.addAction(about)
        toolbar = self.addToolBar("Plan")
        toolbar.setObjectName("plan-toolbar")
        toolbar.setAccessibleName("Plan toolbar")
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        toolbar.toggleViewAction().setVisible(False)  # it follows the place shown, not a menu
        for key in ("new", "open", "save", "save_as", "pdf"):
            toolbar.addAction(self.actions_by_name[key])
        self.plan_toolbar = toolbar

    # ---- plan actions

    def _may_replace_plan(self) -> bool:
        """Before the wizard's plan is replaced or the window closes: True unless that would lose
        unsaved edits.

        With unsaved edits the user chooses: Save (the edits go to the library first; a save that
        does not happen keeps everything), Discard, or Cancel (everything stays as it is).
        """
        if not self.wizard.is_modified():
            return True
        buttons = (
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel
        )
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Unsaved changes",
            f"Discard unsaved changes to “{self.wizard.display_name}”?",
            buttons,
            self,
        )
        box.setInformativeText("Save keeps them in the library; Cancel goes back to the plan.")
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        box.exec()
        answer = box.standardButton(box.clickedButton())
        if answer == QMessageBox.StandardButton.Save:
            return self.save_plan() is not None
        return answer == QMessageBox.StandardButton.Discard

    def new_plan(self) -> None:
        if not self._may_replace_plan():
            return
        self.wizard.new_plan()
        self.show_place("Plan")

    def open_request(self, path: Path | None = None) -> bool:
        """Load a plan request JSON into the wizard; a file that cannot be one is refused with a
        dialog saying why."""
        path = chosen_path(self, path, "Open plan request", "", "JSON (*.json)", save=False)
        if path is None:
            return False
        try:
            raw = read_request_file(path)
        except RequestFileError as exc:
            show_problem(self, "Cannot open plan request", str(exc))
            return False
        if not self._may_replace_plan():
            return False
        self.wizard.load_request(raw, name=path.stem)
        self.show_place("Plan")
        return True

    def open_record(self, record: PlanRecord) -> None:
        if not self._may_replace_plan():
            return
        self.wizard.load_request(record.request, plan_id=record.id, name=record.name)
        self._saved_figures.expect(record.name, record.result())
        self.show_place("Plan")
        # each names the plan
        problems = " ".join(f"{p[0].upper()}{p[1:]}." for p in record.problems)
        self.saving.say(
            f"Opened “{record.name}”. {problems}".strip()
            if problems
            else f"Opened “{record.name}”",
            15000 if problems else 5000,
        )

    def save_plan(self) -> int | None:
        """Save to the library and return the plan's id (None: not saved, and the status bar says
        why)."""
        return self.saving.save_plan()

    def save_as_new(self, name: str | None = None) -> int | None:
        """Save as a new library plan under a name the user types (``name``: the first answer, no
        dialog)."""
        return self.saving.save_as_new(name)

    def export_json(self, path: Path | None = None) -> Path | None:
        return self.saving.export_json(path)

    def export_pdf(self, path: Path | None = None) -> None:
        self.saving.export_pdf(path)

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
        """Quit: ask about unsaved edits (Cancel keeps the window), then stop timers and workers,
        once."""
        if not self._closed:
            if not self._may_replace_plan() or (
                self._library is not None and not self._library.may_close()
            ):
                event.ignore()
                return
            self._closed = True
            self.settings.setValue("window/geometry", self.saveGeometry())
            self.settings.setValue("window/state", self.saveState())
            self.settings.sync()
            self.wizard.shutdown()
            self.executor.stop_all(2000)
            if self._store is not None:
                self._store.close()
        super().closeEvent(event)


def _import_store_layer() -> None:
    """On a worker: the modules opening a store needs (sqlite-utils and what it loads), so the GUI
    thread does not."""
    import sqlite_utils  # noqa: F401


def _open_store_or_exit(parent: QWidget | None) -> PlanStore:
    """The library in the user data folder; one that cannot be opened is said in a dialog, and the
    app ends."""
    try:
        return PlanStore()
    except StoreError as exc:
        QMessageBox.critical(parent, "tuneplan", str(exc))
        raise SystemExit(1) from exc
