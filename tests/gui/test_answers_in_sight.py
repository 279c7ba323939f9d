"""Answers in sight: the step list says where the user is and jumps to a step; each page's answer
stays on screen while its page scrolls; no table is squeezed to its header; a page shown again
starts at its top; the Plan toolbar shows only in the Plan place."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHeaderView,
    QListWidget,
    QScrollArea,
    QTableView,
    QWizard,
)

from gui.main_window import MainWindow
from tests.gui.wizard_driver import click, settle, type_like_a_person

STEPS = [
    "1. Model",
    "2. Data",
    "3. Method",
    "4. Memory",
    "5. Hardware",
    "6. Time & cost",
    "7. Summary",
]


def step_item_rect(window: MainWindow, text: str):
    steps = window.wizard.steps
    return steps.visualItemRect(steps.findItems(text, Qt.MatchFlag.MatchExactly)[0])


def click_step(qtbot, window: MainWindow, text: str) -> None:
    """Click a step in the list beside the pages."""
    qtbot.mouseClick(
        window.wizard.steps.viewport(),
        Qt.MouseButton.LeftButton,
        pos=step_item_rect(window, text).center(),
    )
    settle(qtbot, window.wizard.state)


def step_enabled(window: MainWindow, text: str) -> bool:
    item = window.wizard.steps.findItems(text, Qt.MatchFlag.MatchExactly)[0]
    return bool(item.flags() & Qt.ItemFlag.ItemIsEnabled)


def field(page, path):
    return next(f for f in page.fields if f.path == path)


def wheel_to_the_bottom(area: QScrollArea) -> None:
    """Turn the mouse wheel over the page until it scrolls no further."""
    bar = area.verticalScrollBar()
    viewport = area.viewport()
    centre = QPointF(viewport.rect().center())
    for _ in range(200):
        before = bar.value()
        event = QWheelEvent(
            centre,
            QPointF(viewport.mapToGlobal(centre.toPoint())),
            QPoint(),
            QPoint(0, -120),
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        QApplication.sendEvent(viewport, event)
        if bar.value() == before:
            break
    assert bar.maximum() > 0 and bar.value() == bar.maximum(), (
        "the page does not scroll: nothing to test"
    )


def on_screen(widget) -> bool:
    """Some of the widget is on screen: shown and not clipped away by a scrolled parent."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


def test_the_step_indicator_follows_the_pages(qtbot, window):
    wizard = window.wizard
    assert [wizard.steps.item(i).text() for i in range(wizard.steps.count())] == STEPS
    assert wizard.step_label.text() == "Step 1 of 7 — Model"
    assert on_screen(wizard.step_label) and on_screen(wizard.steps)
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    settle(qtbot, wizard.state)
    assert wizard.step_label.text() == "Step 2 of 7 — Data"
    assert [item.text() for item in wizard.steps.selectedItems()] == ["2. Data"]


def test_clicking_a_step_jumps_there(qtbot, window):
    wizard = window.wizard
    click_step(qtbot, window, "5. Hardware")
    assert wizard.currentPage() is wizard.hardware_page
    assert wizard.step_label.text() == "Step 5 of 7 — Hardware"
    click_step(qtbot, window, "2. Data")
    assert wizard.currentPage() is wizard.data_page
    assert wizard.step_label.text() == "Step 2 of 7 — Data"
    click(qtbot, wizard.button(QWizard.WizardButton.BackButton))  # Back still goes one step back
    assert wizard.currentPage() is wizard.model_page


def test_steps_after_a_page_with_errors_cannot_be_chosen(qtbot, window):
    wizard = window.wizard
    click_step(qtbot, window, "2. Data")
    type_like_a_person(qtbot, field(wizard.data_page, "data.tokens").edit, "lots")
    settle(qtbot, wizard.state)
    assert step_enabled(window, "1. Model") and step_enabled(window, "2. Data")
    for text in STEPS[2:]:
        assert not step_enabled(window, text), text
        assert (
            wizard.steps.findItems(text, Qt.MatchFlag.MatchExactly)[0].toolTip()
            == "Fix the Data page first"
        )
    click_step(qtbot, window, "7. Summary")
    assert wizard.currentPage() is wizard.data_page
    assert field(wizard.data_page, "data.tokens").edit.text() == "lots"
    type_like_a_person(qtbot, field(wizard.data_page, "data.tokens").edit, "3e8")
    settle(qtbot, wizard.state)
    assert all(step_enabled(window, text) for text in STEPS)
    click_step(qtbot, window, "7. Summary")
    assert wizard.currentPage() is wizard.summary_page


def test_an_error_on_a_late_page_can_be_reached_and_fixed_there(qtbot, window, tmp_path: Path):
    """A request whose price discount is wrong: Next stops on the Memory page (no plan), the step
    list does not."""
    wizard = window.wizard
    request = tmp_path / "discounted.json"
    request.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "2e8"},
                "pricing": {"discount": "lots"},
            }
        )
    )
    assert window.open_request(request)
    settle(qtbot, wizard.state)
    click_step(qtbot, window, "4. Memory")
    assert not wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    assert step_enabled(window, "6. Time & cost") and not step_enabled(window, "7. Summary")
    click_step(qtbot, window, "6. Time & cost")
    assert wizard.currentPage() is wizard.cost_page
    discount = field(wizard.cost_page, "pricing.discount")
    assert discount.error.isVisible() and discount.error.text()
    type_like_a_person(qtbot, discount.edit, "0.1")
    settle(qtbot, wizard.state)
    assert not discount.error.isVisible()
    assert "total" in wizard.cost_page.headline.text()


def test_each_answer_stays_in_sight_while_its_page_scrolls(qtbot, window):
    window.resize(1100, 700)  # a laptop's window: every one of these pages is taller
    wizard = window.wizard
    # the default plan: 1× RTX 6000 Ada (RunPod, $0.77): Hugging Face LoRA at its published
    # sustained efficiency
    answers = {
        "4. Memory": (
            wizard.memory_page,
            wizard.memory_page.headline,
            "of 48.00 GB per GPU — fits",
        ),
        "5. Hardware": (
            wizard.hardware_page,
            wizard.hardware_page.chosen,
            "Planned on 1× RTX-6000-ADA",
        ),
        "6. Time & cost": (wizard.cost_page, wizard.cost_page.headline, "total on-demand"),
        "7. Summary": (wizard.summary_page, wizard.summary_page.headline, "1× RTX-6000-ADA · "),
    }
    for step, (page, answer, says) in answers.items():
        click_step(qtbot, window, step)
        assert wizard.currentPage() is page
        wheel_to_the_bottom(page.scroll_area)
        assert on_screen(answer), f"{step}: the answer scrolled away"
        assert says in answer.text(), (step, answer.text())


def test_a_page_shown_again_starts_at_its_top(qtbot, window):
    wizard = window.wizard
    click_step(qtbot, window, "5. Hardware")
    hardware = wizard.hardware_page
    wheel_to_the_bottom(hardware.scroll_area)
    assert not on_screen(hardware.gpu.combo)
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    click(qtbot, wizard.button(QWizard.WizardButton.BackButton))
    assert wizard.currentPage() is hardware
    assert hardware.scroll_area.verticalScrollBar().value() == 0
    assert on_screen(hardware.gpu.combo)
    wheel_to_the_bottom(hardware.scroll_area)
    click_step(qtbot, window, "1. Model")
    click_step(qtbot, window, "5. Hardware")
    assert on_screen(hardware.gpu.combo)


def rows_shown(view: QAbstractItemView) -> float:
    """How many rows the view has room for on screen."""
    if isinstance(view, QTableView):
        row = (
            view.rowHeight(0)
            if view.model().rowCount()
            else view.verticalHeader().defaultSectionSize()
        )
    else:
        row = view.sizeHintForRow(0)
    return view.viewport().height() / row


def test_no_table_is_squeezed_to_its_header(qtbot, window):
    window.resize(1100, 700)
    wizard = window.wizard
    seen = []
    for step in STEPS:
        click_step(qtbot, window, step)
        page = wizard.currentPage()
        for view in page.body_widget.findChildren(QAbstractItemView):
            if isinstance(view, QHeaderView) or view.window() is not window or not view.isVisible():
                continue
            seen.append(view.accessibleName())
            wanted = min(view.model().rowCount(), 3 if isinstance(view, QListWidget) else 5)
            assert rows_shown(view) >= wanted, (step, view.accessibleName(), rows_shown(view))
    assert {
        "Model presets",
        "Fit on each GPU",
        "Hardware candidates",
        "Prices by provider",
        "Cost items",
        "Warnings",
        "Assumptions",
    } <= set(seen)


def test_the_plan_toolbar_shows_only_in_the_plan_place(qtbot, window):
    toolbar = window.plan_toolbar
    sidebar = window.sidebar

    def click_place(name: str) -> None:
        item = sidebar.findItems(name, Qt.MatchFlag.MatchExactly)[0]
        qtbot.mouseClick(
            sidebar.viewport(), Qt.MouseButton.LeftButton, pos=sidebar.visualItemRect(item).center()
        )

    assert toolbar.isVisible()
    texts = [toolbar.widgetForAction(a).text() for a in toolbar.actions()]
    assert texts == ["New plan", "Open request", "Save to library", "Save as new", "Export PDF"]
    click_place("Library")
    assert window.stack.currentWidget() is window.library
    assert not toolbar.isVisible()
    click_place("Plan")
    assert toolbar.isVisible()
