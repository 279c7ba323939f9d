"""Exports as a person makes them: Ctrl+E proposes the plan's library name in their documents folder
(it proposed plan.pdf in whatever folder tuneplan was started from), Enter in the save dialog writes
it, and the PDF's title and the launch files' headers carry that name; in the launch dialog Enter
exports."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pypdf import PdfReader
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit

from gui.forms import suggested_path
from tests.gui.wizard_driver import click, next_page, settle, type_like_a_person

pytestmark = pytest.mark.real_window

# Fixed hardware, so the launch files are known: 8 × H100 in one node, LoRA
# (tests/gui/test_launch_dialog.py).
REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": 2e8, "seq_len": 4096},
    "training": {"method": "lora", "micro_batch_size": 1, "global_batch_size": 64},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's folder is the home, with a Documents folder as a desktop makes it (no
    user-dirs.dirs in the test's XDG_CONFIG_HOME: Qt's documents folder is then ~/Documents)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "Documents").mkdir()
    return tmp_path


@dataclass
class SaveDialog:
    """Answers the next save dialog as a person does: reads the file it proposes, presses Enter. A
    dialog still open 10 s after it was first seen is closed (Cancel), so the test fails instead of
    waiting for ever; the 10 s start when the dialog shows, since a loaded machine can take seconds
    to open it. It answers one dialog: once that one has closed it stops looking, so a later test's
    dialog is never taken for its own."""

    proposed: list[str] = field(default_factory=list)
    # the proposed name shows whole in the file-name field
    name_fits: list[bool] = field(default_factory=list)
    pressed_at: float | None = None
    seen_at: float | None = None
    answering: QFileDialog | None = None
    # no dialog at all a minute on: stop looking
    gives_up_at: float = field(default_factory=lambda: time.monotonic() + 60)

    def look(self) -> None:
        if self.answering is not None and not self.answering.isVisible():
            return  # its dialog has closed
        # once seen, its own dialog: the modal Qt reports can blink to another while it activates
        dialog = self.answering or QApplication.activeModalWidget()
        if isinstance(dialog, QFileDialog) and dialog.isVisible():
            if self.answering is None:
                self.answering, self.seen_at = dialog, time.monotonic()
            if self.seen_at is not None and time.monotonic() > self.seen_at + 10:
                dialog.reject()
                return
            if not self.proposed:
                self.proposed.append(dialog.selectedFiles()[0])
                edit = dialog.findChild(QLineEdit, "fileNameEdit")
                if edit is not None:
                    # the frame's and the text margins' pixels
                    room = edit.contentsRect().width() - 8
                    self.name_fits.append(edit.fontMetrics().horizontalAdvance(edit.text()) <= room)
            # a window manager activates a dialog that opens; Xvfb runs none, and late in a long
            # test session no window of the process becomes active at all (CI: active window None):
            # a dialog not active 1 s after it showed gets its Enter in the file name field itself
            active = dialog.isActiveWindow()
            if not active:
                dialog.activateWindow()
            waited = self.seen_at is not None and time.monotonic() > self.seen_at + 1
            if (active or waited) and (
                self.pressed_at is None or time.monotonic() > self.pressed_at + 2
            ):
                name = dialog.findChild(QLineEdit, "fileNameEdit")
                assert name is not None, "the save dialog has no file name field"
                # where a person's eyes are: the file name
                QTest.mouseClick(name, Qt.MouseButton.LeftButton)
                if not active:
                    name.setFocus()
                focus = QApplication.focusWidget() if active else name
                # Enter only once the click has put the focus in the dialog; a dialog still open 2 s
                # after Enter (a loaded machine lost the key) gets it again, as a person would
                if focus is not None and (focus is dialog or dialog.isAncestorOf(focus)):
                    self.pressed_at = time.monotonic()
                    QTest.keyClick(focus, Qt.Key.Key_Return)
        elif time.monotonic() > self.gives_up_at:
            return
        QTimer.singleShot(20, self.look)


def press(
    qtbot, key: Qt.Key, modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
) -> None:
    """A key to whatever has the keyboard focus, as the keyboard delivers it."""
    qtbot.keyClick(QApplication.focusWidget(), key, modifiers)


def save_as(qtbot, window, name: str) -> None:
    """Save as new under `name` (typing into that dialog is tests/gui/test_saving.py's)."""
    assert window.save_as_new(name) is not None
    assert window.wizard.plan_name == name


def open_plan(qtbot, window, tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    assert window.open_request(path)
    settle(qtbot, window.wizard.state)


def export_pdf_by_keyboard(qtbot, window) -> str:
    """Ctrl+E, then Enter in the save dialog; the file the dialog proposed, once the PDF is
    written."""
    answer = SaveDialog()
    QTimer.singleShot(20, answer.look)
    press(qtbot, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert answer.proposed, "no save dialog opened"
    assert answer.name_fits == [True], "the proposed name is cut in the dialog's file-name field"
    qtbot.waitUntil(
        lambda: window.statusBar().currentMessage().startswith("Exported"), timeout=20000
    )
    return answer.proposed[0]


def test_the_pdf_is_proposed_under_the_library_name_in_documents_and_titled_so(
    qtbot, window, home: Path
):
    open_plan(qtbot, window, home)
    save_as(qtbot, window, "team baseline")
    proposed = export_pdf_by_keyboard(qtbot, window)
    pdf = home / "Documents" / "team baseline.pdf"
    assert proposed == str(pdf)
    reader = PdfReader(str(pdf))
    title = "Fine-tuning plan “team baseline”: llama-3.1-8b (lora)"
    assert reader.metadata is not None and reader.metadata.title == title
    first = " ".join((reader.pages[0].extract_text() or "").split())
    assert first.startswith(f"{title} tuneplan report")  # the heading, then the date line
    assert f"{title} · page 1 of {len(reader.pages)}" in first  # and every page's footer


def test_an_unsaved_plan_is_proposed_under_what_it_is(qtbot, window, home: Path):
    """A plan not in the library yet has no name: the proposal is the one Save would make, and the
    title the plain one."""
    window.wizard.load_request(REQUEST)  # as a new plan is: no library id, no name
    settle(qtbot, window.wizard.state)
    proposed = export_pdf_by_keyboard(qtbot, window)
    assert proposed == str(home / "Documents" / "llama-3.1-8b lora on 8× H100-SXM.pdf")
    reader = PdfReader(proposed)
    assert (
        reader.metadata is not None
        and reader.metadata.title == "Fine-tuning plan: llama-3.1-8b (lora)"
    )


def test_enter_in_the_launch_dialog_exports_with_the_library_name_in_the_headers(
    qtbot, window, home: Path
):
    open_plan(qtbot, window, home)
    save_as(qtbot, window, "team baseline")
    wizard = window.wizard
    while wizard.currentPage() is not wizard.summary_page:
        next_page(qtbot, wizard)
    click(qtbot, wizard.summary_page.launch_button)
    qtbot.waitUntil(
        lambda: (
            wizard.summary_page.launch_dialog is not None
            and wizard.summary_page.launch_dialog.isVisible()
        )
    )
    dialog = wizard.summary_page.launch_dialog
    box = dialog.boxes["slurm"]
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))
    type_like_a_person(qtbot, dialog.folder, "~/launch")
    chooser: list[str] = []

    # what Enter opened before: closed, so the test fails and goes on
    def close_a_folder_chooser() -> None:
        opened = QApplication.activeModalWidget()
        if isinstance(opened, QFileDialog):
            chooser.append(opened.windowTitle())
            opened.reject()

    # A chooser Enter opened would hold the key press in its own event loop; once the press has
    # returned the closer is stopped, so it cannot fire in a later test and cancel that test's save
    # dialog (it did: the probe report's export found its dialog rejected, no PDF written).
    closer = QTimer()
    closer.setSingleShot(True)
    closer.timeout.connect(close_a_folder_chooser)
    closer.start(500)
    press(qtbot, Qt.Key.Key_Return)
    closer.stop()
    assert chooser == []
    qtbot.waitUntil(lambda: dialog.message.text().startswith("Wrote"), timeout=10000)
    # Enter exported; it did not open the folder chooser nor close the dialog
    assert dialog.isVisible()
    lines = (home / "launch" / "train.sbatch").read_text().splitlines()
    assert "# tuneplan launch file for plan 'team baseline' (llama-3.1-8b, lora)" in lines
    assert "#SBATCH --job-name=tuneplan-team-baseline" in lines
    dialog.close()


@given(st.text(max_size=300), st.sampled_from([".pdf", ".json"]))
def test_any_plan_name_gives_one_file_in_the_documents_folder(name: str, suffix: str) -> None:
    """Names are whatever people type (a '/' or a newline included): the proposal is always one
    file, named after the plan, in the documents folder."""
    path = Path(suggested_path(name, suffix))
    assert path.parent == Path.home() / "Documents"
    assert path.name.endswith(suffix) and len(path.name) > len(suffix)
    assert path.name.isprintable() and not any(c in path.name for c in '/\\:*?"<>|')


def test_the_probe_report_is_proposed_in_documents_as_the_plan_is(qtbot, probe_store, home: Path):
    """The scorecard's Export PDF… proposed probe-run-N.pdf in whatever folder tuneplan was started
    from."""
    from tests.gui.test_probe_pane import connect_local, make_pane

    pane = make_pane(qtbot, probe_store, home)
    connect_local(qtbot, pane)
    qtbot.mouseClick(pane.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pane.export_pdf_button.isEnabled(), timeout=10000)
    # the Scorecard tab, where Export PDF… is (a finished run opens it)
    pane.tabs.setCurrentIndex(1)
    qtbot.waitUntil(pane.export_pdf_button.isVisible, timeout=2000)
    answer = SaveDialog()
    QTimer.singleShot(20, answer.look)
    pane.activateWindow()
    pane.export_pdf_button.setFocus()  # tabbed to, then Space, as a keyboard user presses a button
    qtbot.waitUntil(pane.export_pdf_button.hasFocus, timeout=2000)
    press(qtbot, Qt.Key.Key_Space)
    assert answer.proposed == [str(home / "Documents" / f"probe-run-{pane.shown_run}.pdf")]
    assert answer.name_fits == [True]
    written = home / "Documents" / f"probe-run-{pane.shown_run}.pdf"
    # the file itself, as a person looks for it: the status line's "Exported …" can be replaced a
    # moment later by the run's own status, and the PDF is drawn on a worker that a loaded machine
    # makes slow
    try:
        qtbot.waitUntil(lambda: written.exists() and written.stat().st_size > 0, timeout=60000)
    except Exception:
        raise AssertionError(
            f"no {written.name}: status {pane.status.text()!r}, dialog {answer}, "
            f"modal {QApplication.activeModalWidget()}, focus {QApplication.focusWidget()}, "
            f"active {QApplication.activeWindow()}, popup {QApplication.activePopupWidget()}, "
            f"windows {[w for w in QApplication.topLevelWidgets() if w.isVisible()]}"
        ) from None
