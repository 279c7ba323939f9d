"""Adding a host in the Probe place, as a person does it: the dialog opens clean, says what is wrong
once something is typed, and its messages wrap inside it instead of being cut off."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QLineEdit

from core.probes.history.records import HostProfile
from core.probes.run.replay import ReplayRunner
from gui.probe import backend
from gui.probe.hosts import python_error
from gui.probe.pane import ProbePane
from gui.workers import InlineExecutor
from tests.gui.probe_driver import click, click_host, click_into, show_pane, type_keys


def open_add_dialog(qtbot, pane: ProbePane):
    with qtbot.waitSignal(pane.hosts.editing, timeout=2000) as opened:
        click(qtbot, pane.hosts.buttons["add"])
    dialog = opened.args[0]
    qtbot.waitExposed(dialog)
    return dialog


def test_the_add_host_dialog_shows_no_error_before_anything_is_typed(qtbot, probe_store, tmp_path):
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    dialog = open_add_dialog(qtbot, pane)
    save = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    assert dialog.error.text() == "" and save.isEnabled()
    click_into(qtbot, dialog.name)
    type_keys(qtbot, "lambda-1")
    assert dialog.error.text() == ""  # the target has not been typed yet: not an error yet
    click_into(qtbot, dialog.target)
    type_keys(qtbot, "ubuntu@10.0.0.5:99999")
    assert dialog.error.text().startswith("target: port '99999' in target 'ubuntu@10.0.0.5:99999'")
    assert not save.isEnabled()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    type_keys(qtbot, "ubuntu@10.0.0.5:2222")
    assert dialog.error.text() == "" and save.isEnabled()
    click(qtbot, save)
    assert probe_store.host("lambda-1") == HostProfile(
        name="lambda-1", target="ubuntu@10.0.0.5:2222"
    )


def test_a_port_field_that_disagrees_with_the_target_s_port_is_said_before_saving(
    qtbot, probe_store, tmp_path
):
    """The form's Port beside a target that names another port: the sentence the command line gives
    for --port beside such a target (tests/cli/test_cli_probe.py), shown as the user types, never
    one dropped."""
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    dialog = open_add_dialog(qtbot, pane)
    save = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    click_into(qtbot, dialog.name)
    type_keys(qtbot, "box")
    click_into(qtbot, dialog.target)
    type_keys(qtbot, "root@10.0.0.9:2022")
    click_into(qtbot, dialog.port)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    type_keys(qtbot, "2222")
    assert dialog.error.text() == (
        "target: target 'root@10.0.0.9:2022' names port 2022 and port 2222 is also "
        "given; give the port once"
    )
    assert not save.isEnabled()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    type_keys(qtbot, "2022")
    assert dialog.error.text() == "" and save.isEnabled()
    dialog.reject()


def test_saving_an_empty_host_form_says_what_is_missing(qtbot, probe_store, tmp_path):
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    dialog = open_add_dialog(qtbot, pane)
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Save))
    assert dialog.isVisible()
    assert dialog.error.text() == "name is empty; give the host a label, e.g. 'lambda-8xh100'"
    assert probe_store.hosts() == []
    dialog.reject()


def test_a_long_host_error_wraps_inside_the_dialog(qtbot, probe_store, tmp_path):
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    dialog = open_add_dialog(qtbot, pane)
    click_into(qtbot, dialog.name)
    type_keys(qtbot, "box")
    click_into(qtbot, dialog.target)
    type_keys(qtbot, "ubuntu@[fe80::1 and then some words that are not an address at all]:22")
    qtbot.wait(20)
    error = dialog.error
    assert error.text().startswith("target: host 'fe80::1 and then some words")
    # every line shows
    assert error.wordWrap() and error.height() >= error.heightForWidth(error.width())
    assert (
        dialog.rect().contains(error.geometry())
        and error.geometry().bottom() < dialog.buttons.geometry().top()
    )
    # the placeholders read in full at the dialog's width
    for field in (dialog.name, dialog.target, dialog.identity):
        assert field.width() > field.fontMetrics().horizontalAdvance(field.placeholderText())
    dialog.reject()


def test_the_host_s_python_is_typed_once_saved_and_used_by_its_runs(qtbot, probe_store, tmp_path):
    """A box whose torch lives in a venv: the form had no interpreter field, so the all-reduce and
    distributed checks were skipped and told the user to use --python, which the window does not
    have."""
    pane = show_pane(qtbot, probe_store, tmp_path, InlineExecutor(), runner=ReplayRunner())
    dialog = open_add_dialog(qtbot, pane)
    click_into(qtbot, dialog.name)
    type_keys(qtbot, "venv-box")
    click_into(qtbot, dialog.target)
    type_keys(qtbot, "ubuntu@10.0.0.5")
    python_field = next(
        f for f in dialog.findChildren(QLineEdit) if f.accessibleName() == "Python interpreter"
    )
    click_into(qtbot, python_field)
    type_keys(qtbot, "~/venv/bin/python")
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Save))
    assert probe_store.host("venv-box").python == "~/venv/bin/python"
    click_host(qtbot, pane, "venv-box")
    assert backend.make_options(pane.suite.choice()).python == "~/venv/bin/python"
    with qtbot.waitSignal(pane.hosts.editing, timeout=2000) as opened:
        click(qtbot, pane.hosts.buttons["edit"])
    again = opened.args[0]
    qtbot.waitExposed(again)
    assert next(
        f for f in again.findChildren(QLineEdit) if f.accessibleName() == "Python interpreter"
    ).text() == ("~/venv/bin/python")
    again.reject()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_python_typed_is_taken_or_refused_in_one_sentence(text):
    """Whatever is typed or pasted into the Python field: empty means "look for one", anything else
    is kept as typed, or refused with one sentence naming the field (never an exception)."""
    error = python_error(text)
    if not text.strip():
        assert error is None
    elif "\0" in text.strip() or any(len(f"a{c}a".splitlines()) > 1 for c in text.strip()):
        # a NUL, or any line break Python's splitlines knows (VT, FF, NEL, U+2028, ...), as the
        # runner refuses
        assert error is not None and error.startswith("python: ") and "\n" not in error
    else:
        assert error is None
