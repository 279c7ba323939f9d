"""Saving never loses work: Save updates the plan that was opened, Save as new asks for a name, a
taken name is only reused when the user says so, and New plan, Open and Quit ask before unsaved
edits go."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit, QWizard

from core.library.store import PlanStore
from gui.main_window import MainWindow
from gui.wizard.fields import TextField
from gui.workers import InlineExecutor
from tests.gui.dialogs import answering
from tests.gui.wizard_driver import click, settle, type_like_a_person

# the default plan: Llama 3.1 8B, LoRA, on the cheapest GPU that fits
PROPOSED = "llama-3.1-8b lora on 1× RTX-6000-ADA"
DISCARD_QUESTION = (
    "Discard unsaved changes to “{}”?\nSave keeps them in the library; Cancel goes back to the "
    "plan."
)


def title(window: MainWindow) -> str:
    """The title as the window system shows it (Qt puts '*' for '[*]' while the window is
    modified)."""
    return window.windowHandle().title()


def press(qtbot, window: MainWindow, action: str) -> None:
    """Click the Plan toolbar's button for `action`."""
    click(qtbot, window.plan_toolbar.widgetForAction(window.actions_by_name[action]))


def library_rows(window: MainWindow) -> list[str]:
    """The plan names the library's table shows, top to bottom."""
    view = window.library.table
    return [view.model().index(row, 0).data() for row in range(view.model().rowCount())]


def tokens_field(window: MainWindow) -> QLineEdit:
    field = next(f for f in window.wizard.data_page.fields if f.path == "data.tokens")
    assert isinstance(field, TextField)
    return field.edit


def type_tokens(qtbot, window: MainWindow, text: str) -> None:
    """Go to the Data page with Next or Back, click into the token count and type over it."""
    wizard = window.wizard
    while wizard.currentPage() is not wizard.data_page:
        click(
            qtbot,
            wizard.button(
                QWizard.WizardButton.BackButton
                if wizard.currentId() > 1
                else QWizard.WizardButton.NextButton
            ),
        )
    edit = tokens_field(window)
    click(qtbot, edit)
    # the typing every wizard test shares: each key to the focus widget
    type_like_a_person(qtbot, edit, text)
    settle(qtbot, wizard.state)
    assert edit.text() == text


def save_as(qtbot, window: MainWindow, name: str | None) -> str:
    """Save as new…, type `name` over the proposal (None: keep the proposal), OK; returns the
    proposal shown."""
    with answering(("OK", name)) as seen:
        press(qtbot, window, "save_as")
    assert seen[0].title == "Save as new plan"
    return seen[0].value


def open_in_library(qtbot, window: MainWindow, name: str) -> None:
    """Go to the Library in the sidebar and double-click the plan's row."""
    click_sidebar(qtbot, window, "Library")
    row = library_rows(window).index(name)
    view = window.library.table
    rect = view.visualRect(view.model().index(row, 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    settle(qtbot, window.wizard.state)


def click_sidebar(qtbot, window: MainWindow, place: str) -> None:
    item = window.sidebar.findItems(place, Qt.MatchFlag.MatchExactly)[0]
    qtbot.mouseClick(
        window.sidebar.viewport(),
        Qt.MouseButton.LeftButton,
        pos=window.sidebar.visualItemRect(item).center(),
    )


def saved_tokens(window: MainWindow, name: str) -> float:
    record = next(r for r in window.store.list() if r.name == name)
    return float(record.request["data"]["tokens"])


def test_save_as_new_asks_for_a_name_proposed_from_model_method_and_gpu(qtbot, window):
    assert title(window) == "New plan — tuneplan"
    assert save_as(qtbot, window, None) == PROPOSED
    assert library_rows(window) == [PROPOSED]
    assert title(window) == f"{PROPOSED} — tuneplan"
    # The same plan again: the proposal is not a name the library already has.
    assert save_as(qtbot, window, None) == f"{PROPOSED} (2)"
    assert sorted(library_rows(window)) == [PROPOSED, f"{PROPOSED} (2)"]


def test_saving_an_opened_plan_updates_it(qtbot, window):
    save_as(qtbot, window, "baseline")
    open_in_library(qtbot, window, "baseline")
    assert window.stack.currentWidget() is window.wizard
    assert title(window) == "baseline — tuneplan"
    type_tokens(qtbot, window, "4e8")
    assert title(window) == "baseline* — tuneplan"
    with answering():  # Save asks nothing: the plan is in the library
        press(qtbot, window, "save")
    assert title(window) == "baseline — tuneplan"
    assert window.statusBar().currentMessage() == "Saved “baseline” to the library"
    click_sidebar(qtbot, window, "Library")
    assert library_rows(window) == ["baseline"]
    assert saved_tokens(window, "baseline") == 4e8


def test_a_plan_renamed_in_the_library_keeps_its_new_name_when_saved(qtbot, window):
    save_as(qtbot, window, "baseline")
    open_in_library(qtbot, window, "baseline")
    click_sidebar(qtbot, window, "Library")
    with answering(("OK", "final")) as seen:
        click(qtbot, window.library.buttons["rename"])
    assert seen[0].value == "baseline"
    assert title(window) == "final — tuneplan"  # the window follows the library
    click_sidebar(qtbot, window, "Plan")
    type_tokens(qtbot, window, "5e8")
    with answering():
        press(qtbot, window, "save")
    assert library_rows(window) == ["final"]
    assert saved_tokens(window, "final") == 5e8


def test_save_as_new_under_a_taken_name_asks_before_replacing(qtbot, window):
    save_as(qtbot, window, "a")
    type_tokens(qtbot, window, "3e8")
    save_as(qtbot, window, "b")
    type_tokens(qtbot, window, "5e8")
    with answering(("OK", "a"), ("Choose another name", None), ("OK", "c")) as seen:
        press(qtbot, window, "save_as")
    assert (
        seen[1].text
        == "A plan named “a” is already in the library.\nReplace it with this plan, or choose "
        "another name?"
    )
    assert seen[2].text == "“a” is the name of another plan; type a different name:"
    assert sorted(library_rows(window)) == ["a", "b", "c"]
    assert saved_tokens(window, "a") == 2e8 and saved_tokens(window, "c") == 5e8
    type_tokens(qtbot, window, "6e8")
    with answering(("OK", "b"), ("Replace", None)):
        press(qtbot, window, "save_as")
    assert sorted(library_rows(window)) == ["a", "b", "c"]
    assert saved_tokens(window, "b") == 6e8 and saved_tokens(window, "c") == 5e8
    assert title(window) == "b — tuneplan"


def test_an_empty_name_is_asked_again_and_cancel_saves_nothing(qtbot, window):
    with answering(("OK", ""), ("Cancel", None)) as seen:
        press(qtbot, window, "save_as")
    assert seen[1].text == "The plan name is empty: type at least one character."
    assert library_rows(window) == []
    assert window.statusBar().currentMessage() == "Not saved: no name was chosen"


def test_a_plan_deleted_from_the_library_is_saved_as_new(qtbot, window):
    save_as(qtbot, window, "gone")
    open_in_library(qtbot, window, "gone")
    click_sidebar(qtbot, window, "Library")
    click(qtbot, window.library.buttons["delete"])
    click_sidebar(qtbot, window, "Plan")
    type_tokens(qtbot, window, "3e8")
    with answering(("OK", "back again")) as seen:
        press(qtbot, window, "save")
    assert seen[0].title == "Save as new plan"
    assert library_rows(window) == ["back again"]


def test_new_plan_with_unsaved_edits_asks_and_cancel_keeps_them(qtbot, window):
    type_tokens(qtbot, window, "4e8")
    assert title(window) == "New plan* — tuneplan"
    with answering(("Cancel", None)) as seen:
        press(qtbot, window, "new")
    assert seen[0].title == "Unsaved changes"
    assert seen[0].text == DISCARD_QUESTION.format("New plan")
    assert window.wizard.currentPage() is window.wizard.data_page
    assert tokens_field(window).text() == "4e8"
    assert title(window) == "New plan* — tuneplan"
    with answering(("Discard", None)):
        press(qtbot, window, "new")
    settle(qtbot, window.wizard.state)
    assert window.wizard.currentPage() is window.wizard.model_page
    assert tokens_field(window).text() == "2e8"
    assert title(window) == "New plan — tuneplan"
    with answering():  # nothing unsaved now: New plan asks nothing
        press(qtbot, window, "new")


def test_opening_another_plan_offers_to_save_the_edits_first(qtbot, window):
    save_as(qtbot, window, "a")
    type_tokens(qtbot, window, "3e8")
    save_as(qtbot, window, "b")
    open_in_library(qtbot, window, "a")
    type_tokens(qtbot, window, "7e8")
    with answering(("Save", None)) as seen:
        open_in_library(qtbot, window, "b")
    assert seen[0].text == DISCARD_QUESTION.format("a")
    assert saved_tokens(window, "a") == 7e8
    assert title(window) == "b — tuneplan"
    assert window.wizard.state.request.data.tokens == 3e8


def test_opening_another_plan_and_cancelling_keeps_the_edits(qtbot, window):
    save_as(qtbot, window, "a")
    type_tokens(qtbot, window, "3e8")
    with answering(("Cancel", None)):
        open_in_library(qtbot, window, "a")
    assert window.stack.currentWidget() is window.library  # still where the user was
    click_sidebar(qtbot, window, "Plan")
    assert tokens_field(window).text() == "3e8"
    assert title(window) == "a* — tuneplan"


def test_quitting_with_unsaved_edits_asks_and_cancel_keeps_the_window(qtbot, window):
    type_tokens(qtbot, window, "4e8")
    with answering(("Cancel", None)) as seen:
        window.close()
    assert seen[0].text == DISCARD_QUESTION.format("New plan")
    assert window.isVisible()
    assert tokens_field(window).text() == "4e8"
    with answering(("Discard", None)):
        window.close()
    assert not window.isVisible()


def test_quitting_and_saving_keeps_the_plan_for_next_time(qtbot, executor, settings, tmp_path):
    window = MainWindow(executor, PlanStore(tmp_path / "kept.db"), settings, debounce_ms=0)
    qtbot.addWidget(window)
    window.show()
    settle(qtbot, window.wizard.state)
    type_tokens(qtbot, window, "9e8")
    with answering(("Save", None), ("OK", "kept")):
        window.close()
    assert not window.isVisible()
    again = MainWindow(InlineExecutor(), PlanStore(tmp_path / "kept.db"), settings, debounce_ms=0)
    qtbot.addWidget(again)
    again.show()
    assert library_rows(again) == ["kept"]
    assert saved_tokens(again, "kept") == 9e8


def test_quitting_with_edits_that_cannot_be_saved_keeps_the_window(qtbot, window):
    type_tokens(qtbot, window, "lots")
    with answering(("Save", None)):  # no name is asked: there is nothing valid to save
        window.close()
    assert window.isVisible()
    assert window.statusBar().currentMessage() == (
        "Not saved: the plan has errors, shown in red on its pages; fix them first"
    )
    assert tokens_field(window).text() == "lots"


class CountingExecutor(InlineExecutor):
    """Runs each job at once, and counts them: a plan started after the window closed shows up
    here."""

    def __init__(self) -> None:
        super().__init__()
        self.submitted = 0

    def submit(self, fn, on_done, on_error=None):
        self.submitted += 1
        return super().submit(fn, on_done, on_error)


def test_closing_the_window_while_a_plan_waits_starts_no_plan_afterwards(qtbot, store, settings):
    executor = CountingExecutor()
    window = MainWindow(executor, store, settings, debounce_ms=150)
    qtbot.addWidget(window)
    window.show()
    settle(qtbot, window.wizard.state)
    type_tokens(qtbot, window, "40000000")
    edit = tokens_field(window)
    qtbot.keyClick(edit, Qt.Key.Key_End)
    # one more key (400,000,001 tokens): its plan waits for the debounce
    qtbot.keyClick(edit, Qt.Key.Key_1)
    assert window.wizard.state.pending
    before = executor.submitted
    with answering(("Discard", None)):
        window.close()
    # longer than the debounce and the wizard's one-second wait before loading charts
    qtbot.wait(1300)
    assert executor.submitted == before
    assert not window.wizard.state.pending
