"""Model page: a preset from the catalog, a Hugging Face config.json (file, drop or paste), or a
count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QMimeData, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.catalog import load_catalog
from core.json_file import FileReadError, parse_json, read_bounded
from core.units import fmt_count
from gui.forms import make_error_label, make_hint_label
from gui.wizard.page import PlanPage
from gui.wizard.state import PlanState

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis

PRESET, CONFIG, PARAMS = 0, 1, 2
CONFIG_PATH = "model.config"  # where config.json text errors are shown
MAX_CONFIG_BYTES = 2**20
NO_PARAMS = "type the parameter count, such as 7B, 7e9 or 13.5B, or pick a preset"


def parse_config_text(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(config, None) or (None, one-sentence error) for text that should hold a config.json."""
    if not text.strip():
        return None, "paste a config.json, open one, or drop the file here"
    try:
        # no NaN, no nesting deep enough to overflow the parser
        data = parse_json(text, "config.json")
    except FileReadError as exc:
        return None, str(exc)
    if not isinstance(data, dict):
        return None, "config.json must be a JSON object with keys such as hidden_size"
    if "hidden_size" not in data:
        return None, "config.json lacks hidden_size; it is needed to size the model"
    return data, None


def read_config_file(path: Path) -> tuple[str | None, str | None]:
    """The text of a config file, or an error sentence (unreadable, too large, not UTF-8, a folder,
    a named pipe or a device: read_bounded never blocks the window on a pipe nor reads /dev/zero
    without end)."""
    try:
        return read_bounded(path, MAX_CONFIG_BYTES).decode("utf-8"), None
    except UnicodeDecodeError:
        return None, f"{path.name} is not UTF-8 text"
    except FileReadError as exc:
        return None, str(exc)


def _squashed(text: str) -> str:
    """Lower case, without the dashes, slashes and spaces between parts of a name: "Llama-3.1-8B"
    and the "llama3.1 8b" a person types meet as "llama3.18b"."""
    return "".join(c for c in text.casefold() if c.isalnum() or c == ".")


def filter_words(text: str) -> list[str]:
    """The words a filter text asks for, squashed; a word without a letter or digit asks for
    nothing."""
    return [_squashed(word) for word in text.split() if any(c.isalnum() for c in word)]


def shows(words: list[str], label: str) -> bool:
    """Whether a preset's label holds every word, in any order and any case, each at the start of a
    part of the name: "llama 8b" and "8B Llama" find llama-3.1-8b, "qwen 7b" finds qwen2.5-7b but
    not qwen3-1.7b."""
    text = label.casefold()
    starts = [
        _squashed(text[i:])
        for i, c in enumerate(text)
        if c.isalnum() and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "."))
    ]
    return all(any(part.startswith(word) for part in starts) for word in words)


class WordsFilter(QSortFilterProxyModel):
    """The presets whose label holds every word typed (:func:`shows`), not the typed text as one
    string: "llama 8b" found nothing when the label reads "llama-3.1-8b"."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._words: list[str] = []

    def set_text(self, text: str) -> None:
        # Qt 6.10 on; invalidateRowsFilter is deprecated there
        if hasattr(self, "beginFilterChange"):
            self.beginFilterChange()
            self._words = filter_words(text)
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self._words = filter_words(text)
            self.invalidateRowsFilter()

    def filterAcceptsRow(
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        return shows(
            self._words, str(self.sourceModel().index(source_row, 0, source_parent).data())
        )


def _local_file(mime: QMimeData) -> Path | None:
    urls = [u for u in mime.urls() if u.isLocalFile()]
    return Path(urls[0].toLocalFile()) if urls else None


class ConfigEdit(QPlainTextEdit):
    """A text box for config.json that also takes a dropped file (its text replaces the box)."""

    def __init__(self, on_file: Any) -> None:
        super().__init__()
        self._on_file = on_file
        self.setAcceptDrops(True)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if _local_file(event.mimeData()) is not None:
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event: Any) -> None:
        if _local_file(event.mimeData()) is not None:
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        path = _local_file(event.mimeData())
        if path is not None:
            event.acceptProposedAction()
            self._on_file(path)
        else:
            super().dropEvent(event)


class ModelPage(PlanPage):
    prefixes = ("model",)

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state,
            "Model",
            "Pick a published model, import its config.json, or give a parameter count.",
        )
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Model source")
        self.tabs.addTab(self._preset_tab(), "Preset")
        self.tabs.addTab(self._config_tab(), "config.json")
        self.tabs.addTab(self._params_tab(), "Parameter count")
        self.body.addWidget(self.tabs, 1)
        self.summary = QLabel()
        self.summary.setAccessibleName("Model architecture")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.addWidget(self.summary)
        self.tabs.currentChanged.connect(self._tab_changed)
        state.errors_changed.connect(self._show_local_errors)
        state.replaced.connect(self.refresh)
        self.setAcceptDrops(True)
        self.refresh()

    # ---- tabs

    def _preset_tab(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("filter: llama, qwen, 70b …")
        self.filter.setAccessibleName("Filter presets")
        self.filter.setClearButtonEnabled(True)
        self.presets = QStandardItemModel(self)
        for preset in load_catalog().models.values():
            item = QStandardItem(f"{preset.id}    ({preset.hf_repo})")
            item.setData(preset.id, Qt.ItemDataRole.UserRole)
            item.setEditable(False)
            self.presets.appendRow(item)
        self.proxy = WordsFilter(self)
        self.proxy.setSourceModel(self.presets)
        self.list = QListView()
        self.list.setAccessibleName("Model presets")
        self.list.setModel(self.proxy)
        self._filtering = False
        self.filter.textChanged.connect(self._filter_changed)
        # A pick selects a row (a click, or the arrow keys); the current index alone also moves when
        # the filter hides the current row or the list merely takes the focus, and neither is a
        # pick.
        self.list.selectionModel().selectionChanged.connect(
            lambda selected, _old: self._preset_chosen(
                selected.indexes()[0] if selected.indexes() else QModelIndex()
            )
        )
        self.selected = QLabel()
        self.selected.setAccessibleName("Selected preset")
        self.selected.setWordWrap(True)
        layout.addWidget(self.filter)
        layout.addWidget(self.list)
        layout.addWidget(self.selected)
        return box

    def _config_tab(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        row = QHBoxLayout()
        self.open_button = QPushButton("Open config.json…")
        self.open_button.setAccessibleName("Open config.json")
        self.open_button.clicked.connect(self._open_config)
        row.addWidget(self.open_button)
        row.addWidget(
            make_hint_label("config.json", "or drop the file here, or paste its text below"), 1
        )
        layout.addLayout(row)
        self.config_edit = ConfigEdit(self.load_config_file)
        self.config_edit.setAccessibleName("config.json text")
        self.config_edit.setPlaceholderText('{"hidden_size": 4096, "num_hidden_layers": 32, …}')
        self.config_edit.textChanged.connect(self._config_text_changed)
        layout.addWidget(self.config_edit)
        self.config_error = make_error_label("config.json")
        layout.addWidget(self.config_error)
        return box

    def _params_tab(self) -> QWidget:
        box = QWidget()
        layout = QFormLayout(box)
        self.params_edit = QLineEdit()
        self.params_edit.setAccessibleName("Parameter count")
        self.params_edit.setPlaceholderText("7B, 7e9, 13.5B")
        self.params_edit.textEdited.connect(self._params_edited)
        layout.addRow("Parameters", self.params_edit)
        self.params_error = make_error_label("Parameter count")
        layout.addRow(self.params_error)
        layout.addRow(
            make_hint_label(
                "Parameter count",
                "The architecture is inferred from a typical shape for "
                "this size, and the plan says so. Until a count is typed here the plan "
                "keeps the model it has.",
            )
        )
        return box

    # ---- edits

    def _tab_changed(self, index: int) -> None:
        """A tab with something in it gives the plan its model; an empty one changes nothing until
        the person types, picks or pastes there, so looking at a tab neither raises an error nor
        makes the plan unsaved."""
        if index != CONFIG:
            self.state.set_local_error(CONFIG_PATH, None)
        if index == PRESET:
            picked = self.list.selectionModel().selectedIndexes()
            if picked:
                self._preset_chosen(picked[0])
        elif index == CONFIG:
            if self.config_edit.toPlainText().strip():
                self._config_text_changed()
        elif self.params_edit.text().strip():
            self._params_edited(self.params_edit.text())
        self._show_local_errors()

    def _filter_changed(self, text: str) -> None:
        """Filter the list; the model stays the one the user picked.

        Filtering out the current row moved the list's current index to another row, which read as a
        pick: typing "q" chose qwen2.5-0.5b. Only a selected row is a pick, and none the filter or
        the page makes.
        """
        self._filtering = True
        try:
            self.proxy.set_text(text)
        finally:
            self._filtering = False
        self._show_selected()

    def clear_filter(self) -> None:
        """Another plan is shown (New plan, Open): its model in view and selected, not hidden by the
        old filter."""
        self.filter.clear()

    def _preset_chosen(self, index: Any) -> None:
        if self._filtering:
            return
        if index.isValid() and self.tabs.currentIndex() == PRESET:
            self.state.set_section("model", {"preset": index.data(Qt.ItemDataRole.UserRole)})
            self._show_selected()

    def _config_text_changed(self) -> None:
        if self.tabs.currentIndex() != CONFIG:
            return
        config, error = parse_config_text(self.config_edit.toPlainText())
        if config is not None:
            self.state.set_local_error(CONFIG_PATH, None)
            self.state.set_section("model", config)
        else:
            self.state.set_local_error(CONFIG_PATH, error)

    def _params_edited(self, text: str) -> None:
        self.state.set_section("model", {"params": text.strip()} if text.strip() else {})

    def load_config_file(self, path: Path) -> None:
        """Put a file's text in the box (it is parsed like pasted text) or say why it cannot be
        read."""
        self.tabs.setCurrentIndex(CONFIG)
        text, error = read_config_file(path)
        if text is None:
            self.state.set_local_error(CONFIG_PATH, error)
            return
        self.config_edit.setPlainText(text)

    def _open_config(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, "Open config.json", "", "config.json (*.json);;All files (*)"
        )
        if name:
            self.load_config_file(Path(name))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if _local_file(event.mimeData()) is not None:
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        path = _local_file(event.mimeData())
        if path is not None:
            event.acceptProposedAction()
            self.load_config_file(path)

    # ---- display

    def _show_local_errors(self) -> None:
        errors = self.state.errors
        config_msg = errors.get(CONFIG_PATH) or (
            errors.get("model") if self.tabs.currentIndex() == CONFIG else None
        )
        self.config_error.setText(config_msg or "")
        self.config_error.setVisible(bool(config_msg))
        params_msg = errors.get("model.params")
        if params_msg is None and self.tabs.currentIndex() == PARAMS and "model" in errors:
            # the field was emptied
            params_msg = NO_PARAMS if not self.state.get("model") else errors["model"]
        self.params_error.setText(params_msg or "")
        self.params_error.setVisible(bool(params_msg))

    def field_paths(self) -> set[str]:
        shown = {CONFIG_PATH, "model.params"}
        if self.tabs.currentIndex() in (CONFIG, PARAMS):
            shown.add("model")
        return shown

    def refresh(self) -> None:
        """Show the state's model spec in the matching tab."""
        model = self.state.get("model") or {}
        self.tabs.blockSignals(True)
        try:
            if "preset" in model:
                self.tabs.setCurrentIndex(PRESET)
            elif "params" in model:
                self.params_edit.setText(str(model["params"]))
                self.tabs.setCurrentIndex(PARAMS)
            elif "hidden_size" in model:
                self.tabs.setCurrentIndex(CONFIG)
                text = json.dumps(model, indent=2)
                if self.config_edit.toPlainText() != text:
                    self.config_edit.blockSignals(True)
                    self.config_edit.setPlainText(text)
                    self.config_edit.blockSignals(False)
        finally:
            self.tabs.blockSignals(False)
        if "hf_config" in model:
            self.load_config_file(Path(str(model["hf_config"])).expanduser())
        self._show_selected()
        self._show_local_errors()

    def _select_preset(self, preset: str) -> bool:
        """Make the preset the list's current row where the filter shows it; False where it does
        not."""
        rows = self.proxy.match(
            self.proxy.index(0, 0), Qt.ItemDataRole.UserRole, preset, 1, Qt.MatchFlag.MatchExactly
        )
        self._filtering = True  # a row the program selects is not a pick
        try:
            if rows:
                self.list.setCurrentIndex(rows[0])
                self.list.scrollTo(rows[0])
            else:
                self.list.selectionModel().clear()
        finally:
            self._filtering = False
        return bool(rows)

    def _show_selected(self) -> None:
        """Highlight the state's preset where the filter shows it, none elsewhere, and name it under
        the list."""
        preset = (self.state.get("model") or {}).get("preset")
        if preset is None:
            self._select_preset("")
            text = "No preset selected"
        elif self._select_preset(str(preset)):
            text = f"Selected: {preset}"
        else:
            text = f"Selected: {preset} (hidden by the filter “{self.filter.text()}”)"
        if text != self.selected.text():
            self.selected.setText(text)

    def show_analysis(self, analysis: Analysis) -> None:
        m = analysis.figures.model
        lines = [
            f"<b>{m.name}</b>: {fmt_count(m.total_params)} parameters"
            + (
                f", {fmt_count(m.active_params)} active per token"
                if m.active_params != m.total_params
                else ""
            ),
            f"{m.layers} layers, hidden {m.hidden}, {m.heads} attention heads ({m.kv_heads} "
            f"key/value), MLP {m.intermediate}, vocabulary {m.vocab:,}"
            + (f", context {m.max_position:,}" if m.max_position else ""),
        ]
        if m.experts:
            lines.append(
                f"Mixture of experts: {m.experts} experts, {m.experts_per_token} per token"
            )
        lines += [f"<i>{note}</i>" for note in m.notes]
        self.summary.setText("<br>".join(lines))

    def clear_analysis(self) -> None:
        self.summary.setText("")
