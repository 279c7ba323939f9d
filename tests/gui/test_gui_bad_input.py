"""Bad input in the window: a value beyond physical sense is explained under its field, a run of
millions of years reads as years, and a request file that cannot be one gets a dialog that stays
until it is read."""

from __future__ import annotations

import json
import re
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit, QWizard

from tests.gui.dialogs import press_ok, the_dialog
from tests.gui.wizard_driver import next_page, settle


def paste_into(qtbot, edit: QLineEdit, text: str) -> None:
    """Click into the field, select what is there and paste over it, as one pastes a figure from a
    sheet."""
    QApplication.clipboard().setText(text)
    qtbot.mouseClick(edit, Qt.MouseButton.LeftButton)
    assert QApplication.focusWidget() is edit
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)


def field(page, path: str):
    return next(f for f in page.fields if f.path == path)


def go_to(qtbot, wizard, page) -> None:
    while wizard.currentPage() is not page:
        next_page(qtbot, wizard)


def test_pasting_1e30_tokens_explains_the_range_under_the_field(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    go_to(qtbot, wizard, wizard.data_page)
    tokens = field(wizard.data_page, "data.tokens")
    paste_into(qtbot, tokens.edit, "1e30")
    settle(qtbot, state)
    assert tokens.edit.text() == "1e30"
    assert tokens.error.isVisible()
    assert (
        tokens.error.text()
        == "1e+30 is out of range: use more than 0 and at most 1e15 (1,000T) tokens"
    )
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    paste_into(qtbot, tokens.edit, "2B")
    settle(qtbot, state)
    assert not tokens.error.isVisible()
    assert wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def test_a_decimal_comma_in_the_token_count_is_explained_not_misread(qtbot, window):
    """'1,5B' once read as 15 billion tokens: a comma separates thousands only in groups of
    three."""
    wizard, state = window.wizard, window.wizard.state
    go_to(qtbot, wizard, wizard.data_page)
    tokens = field(wizard.data_page, "data.tokens")
    paste_into(qtbot, tokens.edit, "1,5B")
    settle(qtbot, state)
    assert tokens.error.isVisible()
    assert tokens.error.text().startswith("'1,5B' is not a count;")
    assert "groups of three, as in 1,500,000" in tokens.error.text()
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    paste_into(qtbot, tokens.edit, "1,500,000,000")
    settle(qtbot, state)
    assert not tokens.error.isVisible()
    assert wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def test_a_price_of_a_tenth_of_a_cent_per_gpu_hour_is_explained_under_the_price(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    cost = wizard.cost_page
    go_to(qtbot, wizard, cost)
    price = field(cost, "pricing.usd_per_gpu_hour")
    paste_into(qtbot, price.edit, "0.001")
    settle(qtbot, state)
    assert price.error.isVisible()
    assert price.error.text() == "0.001 is out of range: use $0.01 to $1,000 per GPU-hour"
    assert price.edit.text() == "0.001"
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def test_a_run_of_millions_of_years_reads_as_years_and_is_warned_about(
    qtbot, window, tmp_path: Path
):
    wizard, state = window.wizard, window.wizard.state
    request = tmp_path / "forever.json"
    request.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": 1e15, "epochs": 1000},
                "hardware": {"gpu": "L4"},
            }
        )
    )
    assert window.open_request(request)
    settle(qtbot, state)
    cost = wizard.cost_page
    go_to(qtbot, wizard, cost)
    headline = cost.headline.text()
    # 1e18 tokens on one L4: tens of millions of years, whatever the exact step time
    # (with its calibrated band: 'likely 48.2 million years (range 35.3–50.0 million years) wall')
    years = re.match(
        r"<b>likely ([\d.]+) million years \(range [\d.]+–[\d.]+ million years\) wall, "
        r"about [\d.]+ billion GPU-hours; ",
        headline,
    )
    assert years is not None, headline
    assert " days" not in headline
    go_to(qtbot, wizard, wizard.summary_page)
    warnings = [
        wizard.summary_page.warnings.item(i).text()
        for i in range(wizard.summary_page.warnings.count())
    ]
    assert (
        f"the run would take about {years.group(1)} million years, more than 10 years: no one can "
        "run this; "
        "check data.tokens and data.epochs, or give it more GPUs"
    ) in warnings


def test_opening_a_file_that_is_not_json_shows_a_dialog_and_keeps_the_plan(
    qtbot, window, tmp_path: Path
):
    bad = tmp_path / "notes.json"
    bad.write_text("{nope")
    assert not window.open_request(bad)
    box = the_dialog(qtbot)
    assert box.windowTitle() == "Cannot open plan request"
    assert (
        box.text()
        == "notes.json is not valid JSON: Expecting property name enclosed in double quotes at "
        "line 1, column 2"
    )
    press_ok(qtbot, box)
    assert window.wizard.state.get("model") == {"preset": "llama-3.1-8b"}


def test_opening_a_request_with_an_unknown_preset_names_it_in_a_dialog(
    qtbot, window, tmp_path: Path
):
    unknown = tmp_path / "colleague.json"
    unknown.write_text(json.dumps({"model": {"preset": "llama-4-400b"}, "data": {"tokens": "2e8"}}))
    assert not window.open_request(unknown)
    box = the_dialog(qtbot)
    assert box.text() == (
        "colleague.json names an unknown model preset 'llama-4-400b'; did you mean llama-2-70b, "
        "llama-3.1-405b, llama-2-7b? (tuneplan catalog models lists all)"
    )
    press_ok(qtbot, box)
    assert window.wizard.state.get("model") == {"preset": "llama-3.1-8b"}


def test_importing_a_broken_or_unknown_request_into_the_library_shows_a_dialog(
    qtbot, window, tmp_path: Path
):
    library = window.library
    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2")
    library.import_json(broken)
    box = the_dialog(qtbot)
    assert box.windowTitle() == "Cannot import plan request"
    assert (
        box.text() == "broken.json is not valid JSON: Expecting ',' delimiter at line 1, column 6"
    )
    press_ok(qtbot, box)

    listed = tmp_path / "list.json"
    listed.write_text("[]")
    library.import_json(listed)
    box = the_dialog(qtbot)
    assert (
        box.text()
        == "list.json holds a JSON list, not a plan request: it must be an object with model and "
        "data"
    )
    press_ok(qtbot, box)

    gpu = tmp_path / "gpu.json"
    gpu.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "2e8"},
                "hardware": {"gpu": "H900"},
            }
        )
    )
    library.import_json(gpu)
    box = the_dialog(qtbot)
    assert box.text() == (
        "gpu.json names an unknown GPU 'H900'; did you mean H200-SXM, H100-SXM, GH200? (tuneplan "
        "catalog gpus lists all)"
    )
    press_ok(qtbot, box)
    assert window.store.list() == []
