"""The Model page as a person uses it: the preset filter finds words in any order and any case, a
new or opened plan shows its own model rather than a list the last filter emptied of it, and looking
at the other tabs changes nothing until something is typed there."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from core.catalog import load_catalog
from gui.wizard.page_model import filter_words, shows
from tests.gui.dialogs import answering
from tests.gui.wizard_driver import settle, type_like_a_person

LABELS = [f"{m.id}    ({m.hf_repo})" for m in load_catalog().models.values()]


def click_tab(qtbot, tabs, text: str) -> None:
    bar = tabs.tabBar()
    index = next(i for i in range(tabs.count()) if tabs.tabText(i) == text)
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())
    assert tabs.currentIndex() == index


def shown_presets(page) -> list[str]:
    return [
        page.proxy.index(row, 0).data(Qt.ItemDataRole.UserRole)
        for row in range(page.proxy.rowCount())
    ]


def in_sight(page, preset: str) -> bool:
    """The preset's row is listed, selected, and inside the list's visible area."""
    rows = [page.proxy.index(row, 0) for row in range(page.proxy.rowCount())]
    row = next((i for i in rows if i.data(Qt.ItemDataRole.UserRole) == preset), None)
    return (
        row is not None
        and page.list.selectionModel().isSelected(row)
        and page.list.viewport().rect().contains(page.list.visualRect(row))
    )


def test_words_in_any_order_and_case_find_the_model(qtbot, window):
    """ "llama 8b" found nothing: the filter looked for the text as one string. The presets expected
    are read by hand from resources/catalog (the two whose name holds both "llama" and "8b")."""
    page = window.wizard.model_page
    both = ["llama-3.1-8b", "deepseek-r1-distill-llama-8b"]
    type_like_a_person(qtbot, page.filter, "llama 8b")
    assert shown_presets(page) == both
    type_like_a_person(qtbot, page.filter, "8B LLAMA")
    assert shown_presets(page) == both
    # the name as Hugging Face spells it, without the dash
    type_like_a_person(qtbot, page.filter, "llama3.1 8B")
    assert shown_presets(page) == ["llama-3.1-8b"]
    assert page.selected.text() == "Selected: llama-3.1-8b"
    type_like_a_person(qtbot, page.filter, "qwen 7b")
    assert shown_presets(page) == ["qwen2.5-7b", "deepseek-r1-distill-qwen-7b"]
    assert page.selected.text() == "Selected: llama-3.1-8b (hidden by the filter “qwen 7b”)"


def test_new_plan_shows_its_model_not_the_last_filter(qtbot, window):
    """Pick a model through a filter, then File › New plan (Ctrl+N): the filter is empty and the new
    plan's model is selected and in sight (the filter used to stay and hide it)."""
    page, state = window.wizard.model_page, window.wizard.state
    type_like_a_person(qtbot, page.filter, "qwen 7b")
    index = page.proxy.index(shown_presets(page).index("qwen2.5-7b"), 0)
    qtbot.mouseClick(
        page.list.viewport(), Qt.MouseButton.LeftButton, pos=page.list.visualRect(index).center()
    )
    settle(qtbot, state)
    assert state.get("model") == {"preset": "qwen2.5-7b"}
    with answering(("Discard", None)):
        qtbot.keyClick(
            QApplication.focusWidget(), Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier
        )
    settle(qtbot, state)
    assert page.filter.text() == ""
    assert len(shown_presets(page)) == len(LABELS)
    assert in_sight(page, "llama-3.1-8b")
    assert page.selected.text() == "Selected: llama-3.1-8b"


def test_an_opened_plan_shows_its_model_not_the_last_filter(qtbot, window, tmp_path: Path):
    page = window.wizard.model_page
    type_like_a_person(qtbot, page.filter, "gemma")
    request = tmp_path / "qwen3.json"
    request.write_text(json.dumps({"model": {"preset": "qwen3-8b"}, "data": {"tokens": "2e8"}}))
    assert window.open_request(request)
    settle(qtbot, window.wizard.state)
    assert page.filter.text() == ""
    assert in_sight(page, "qwen3-8b")
    assert page.selected.text() == "Selected: qwen3-8b"


def test_looking_at_the_parameter_count_and_config_tabs_changes_nothing(qtbot, window):
    """Clicking the "Parameter count" tab showed "model needs exactly one of preset, hf_config,
    params or inline config.json keys (got none)" in red at once and marked the plan unsaved;
    config.json's tab asked for a paste in red. An empty tab now leaves the plan as it was, until
    something is typed there."""
    page, state = window.wizard.model_page, window.wizard.state
    assert not window.isWindowModified()
    for tab in ("Parameter count", "config.json", "Preset", "Parameter count"):
        click_tab(qtbot, page.tabs, tab)
        settle(qtbot, state)
        assert not page.params_error.isVisible() and not page.config_error.isVisible(), tab
        assert not page.page_error.isVisible(), page.page_error.text()
        assert state.errors == {} and state.get("model") == {"preset": "llama-3.1-8b"}, tab
        assert not window.isWindowModified(), tab
    assert page.summary.text().startswith("<b>llama-3.1-8b</b>")
    type_like_a_person(qtbot, page.params_edit, "13.5B")
    settle(qtbot, state)
    assert state.get("model") == {"params": "13.5B"} and window.isWindowModified()
    assert page.summary.text().startswith("<b>13.5B (inferred shape)</b>: 13.50B parameters")
    # emptied: said in the page's words, not the schema's
    type_like_a_person(qtbot, page.params_edit, "")
    assert page.params_error.isVisible()
    assert (
        page.params_error.text()
        == "type the parameter count, such as 7B, 7e9 or 13.5B, or pick a preset"
    )
    assert not page.page_error.isVisible()


TYPED = st.lists(
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=8), max_size=5
)


@given(TYPED, st.randoms(use_true_random=False), st.sampled_from(LABELS))
def test_order_and_case_of_the_words_never_matter(words: list[str], rnd, label: str) -> None:
    """What a keyboard types (printable ASCII), in any order and case, filters alike."""
    shuffled = words[:]
    rnd.shuffle(shuffled)
    asked = shows(filter_words(" ".join(words)), label)
    assert shows(filter_words(" ".join(shuffled)), label) == asked
    assert shows(filter_words(" ".join(words).upper()), label) == asked
    assert shows(filter_words(" ".join(words).lower()), label) == asked


@given(st.text(), st.sampled_from(LABELS))
def test_any_text_filters_without_failing_and_blank_text_shows_everything(
    text: str, label: str
) -> None:
    words = filter_words(text)
    assert isinstance(shows(words, label), bool)
    if not any(c.isalnum() for c in text):
        assert shows(words, label)


@given(st.sampled_from(LABELS), st.data())
def test_every_model_is_found_by_words_of_its_own_name(label: str, data) -> None:
    words = label.replace("(", " ").replace(")", " ").replace("-", " ").replace("/", " ").split()
    picked = data.draw(st.lists(st.sampled_from(words), min_size=1, max_size=4))
    assert shows(filter_words(" ".join(picked)), label)
