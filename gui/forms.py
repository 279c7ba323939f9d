"""Form helpers every place uses: a hint or error line under a field, in a colour that follows the
palette.

The wizard's fields and the library's list show their messages the same way. Pieces more than one
place uses live here (or in ``gui.charts`` and ``gui.colors``), so that ``gui.wizard``,
``gui.probe`` and ``gui.library`` never import one another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from PySide6.QtCore import QEvent, QStandardPaths, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QWidget,
)

from gui.colors import error_color, is_dark


class ToneLabel(QLabel):
    """A wrapped label in a secondary colour (hint grey or error red) that follows the palette.

    A style sheet's ``palette(...)`` is read once, when the sheet is applied: after the system
    switched between light and dark, hints kept the old grey and became unreadable. This label takes
    its text colour from the application palette whenever that palette changes.
    """

    def __init__(self, name: str, tone: Literal["hint", "error"], text: str = "") -> None:
        super().__init__(text)
        self.tone = tone
        self.setWordWrap(True)
        self.setAccessibleName(f"{name} {tone}")
        self._retint()

    def tone_color(self) -> QColor:
        pal = QApplication.palette()
        if self.tone == "error":
            return QColor(error_color(is_dark(pal)))
        return pal.color(QPalette.ColorRole.PlaceholderText)

    def _retint(self) -> None:
        color = self.tone_color()
        pal = self.palette()
        if pal.color(QPalette.ColorRole.WindowText) != color:
            pal.setColor(QPalette.ColorRole.WindowText, color)
            self.setPalette(pal)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        # Children get PaletteChange when the application palette changes; setting our own palette
        # sends one too, which _retint ignores because the colour is already right.
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self._retint()


def make_error_label(name: str) -> QLabel:
    label = ToneLabel(name, "error")
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.hide()
    return label


def form_footer(
    form: QFormLayout,
    error_name: str,
    on_save: Callable[[], object],
    on_cancel: Callable[[], object],
) -> tuple[QLabel, QDialogButtonBox]:
    """The bottom of a dialog's form: the line its one-sentence errors go on, then Save and
    Cancel."""
    error = ToneLabel(error_name, "error")
    error.setAccessibleName(error_name)
    form.addRow(error)
    buttons = QDialogButtonBox(
        QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
    )
    buttons.accepted.connect(on_save)
    buttons.rejected.connect(on_cancel)
    form.addRow(buttons)
    return error, buttons


def make_hint_label(name: str, text: str = "") -> QLabel:
    label = ToneLabel(name, "hint", text)
    label.setVisible(bool(text))
    return label


def button_row(
    specs: Sequence[tuple[str, str, Callable[[], object]]],
) -> tuple[QHBoxLayout, dict[str, QPushButton]]:
    """A left-aligned row of push buttons from (key, text, action); the buttons by key.

    Each button's accessible name is its text without the ellipsis, so screen readers and tests find
    "Export JSON" whatever the dialog mark.
    """
    row = QHBoxLayout()
    buttons: dict[str, QPushButton] = {}
    for key, text, action in specs:
        button = QPushButton(text)
        button.setAccessibleName(text.rstrip("…"))
        button.clicked.connect(lambda _checked=False, act=action: act())
        row.addWidget(button)
        buttons[key] = button
    row.addStretch(1)
    return row, buttons


def show_problem(parent: QWidget, title: str, text: str) -> QMessageBox:
    """A warning dialog that stays until it is read, for a file the user chose and the window cannot
    take.

    A status-bar message disappears after a few seconds, often before it is read. The dialog is
    window-modal and opened without a nested event loop, so the window's workers and timers keep
    running while it shows.
    """
    box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setAccessibleName(title)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


def chosen_path(
    parent: QWidget, path: Path | None, title: str, suggested: str, file_filter: str, save: bool
) -> Path | None:
    """``path`` when the caller has one (tests, scripts), else the file the person picks in the
    dialog; None when they cancel. One place for it, so every open and export behaves alike."""
    if path is not None:
        return path
    dialog = file_dialog(parent, title, suggested, file_filter, save)
    if dialog.exec() != QFileDialog.DialogCode.Accepted or not dialog.selectedFiles():
        return None
    return Path(dialog.selectedFiles()[0])


DIALOG_MARGIN_PX = 420  # the file-name field's label, the dialog's sidebar share and its margins


def file_dialog(
    parent: QWidget, title: str, suggested: str, file_filter: str, save: bool
) -> QFileDialog:
    """The open or save dialog, proposing `suggested` (a folder and a file name), and wide enough
    that the name it proposes shows whole in its file-name field (a default 'llama-3.1-8b lora on 8×
    H100-SXM.pdf' was cut)."""
    folder, name = (str(Path(suggested).parent), Path(suggested).name) if suggested else ("", "")
    dialog = QFileDialog(parent, title, folder, file_filter)
    dialog.setAcceptMode(
        QFileDialog.AcceptMode.AcceptSave if save else QFileDialog.AcceptMode.AcceptOpen
    )
    dialog.setFileMode(QFileDialog.FileMode.AnyFile if save else QFileDialog.FileMode.ExistingFile)
    if name:
        dialog.selectFile(name)
    wanted = dialog.fontMetrics().horizontalAdvance(name) + DIALOG_MARGIN_PX
    dialog.resize(max(dialog.sizeHint().width(), wanted, 720), max(dialog.sizeHint().height(), 480))
    return dialog


_NOT_IN_FILE_NAMES = str.maketrans({c: "-" for c in '/\\:*?"<>|'})


def suggested_path(name: str, suffix: str) -> str:
    """Where an export is proposed: the user's documents folder (their home where it has none),
    under the plan's name made safe for any file system ('/' and the characters Windows refuses
    become '-', control characters go): "baseline.pdf", not "plan.pdf" in whatever folder tuneplan
    was started from."""
    stem = (
        "".join(c for c in name.translate(_NOT_IN_FILE_NAMES) if c.isprintable()).strip(" .")[:120]
        or "plan"
    )
    folder = Path(
        QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
        or Path.home()
    )
    return str((folder if folder.is_dir() else Path.home()) / f"{stem}{suffix}")


def said(exc: OSError) -> str:
    """A failed write as a status line says it: the writer's own sentence (core.output_file names
    the file and why), else 'Cannot write …' with the system's reason."""
    text = (
        str(exc) if exc.strerror is None else f"cannot write {exc.filename or ''}: {exc.strerror}"
    )
    return text[:1].upper() + text[1:]
