"""The plan you saved is the plan you saw: a person sets some fields, leaves the rest to the
planner, saves, and opens the plan again from the Library; every page shows the figures and settings
it showed before the save.

When the bug was reported, the Summary of "H100-SXM, 8 per node, nodes left empty" showed 51.1 min,
$24.45 and zero3 at micro-batch 4, and the reopened plan 1.2 h, $33.24 and no sharding at
micro-batch 1. The time model has since added start-up and checkpoint writes to the wall time, so
the figures are read off the screen before the save and must come back unchanged; the configuration
the bug lost (zero3, micro-batch 4, no recompute, each chosen by the planner) is pinned.
"""

from __future__ import annotations

import json

from PySide6.QtWidgets import QWizard

from cli.main import main
from core.library.store import PlanStore
from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.units import fmt_hours, fmt_usd
from gui.library.widget import LibraryWidget
from tests.core.test_plan_round_trip import load_v3
from tests.core.test_store_faults import fill, needs_mount, tmpfs
from tests.gui.conftest import open_window
from tests.gui.dialogs import answering
from tests.gui.wizard_driver import choose, click, settle, type_like_a_person


def go_to(qtbot, wizard, page) -> None:
    """Next or Back, as a person steps through the wizard, until `page` is shown."""
    while wizard.currentPage() is not page:
        forward = wizard.pages().index(page) > wizard.pages().index(wizard.currentPage())
        click(
            qtbot,
            wizard.button(
                QWizard.WizardButton.NextButton if forward else QWizard.WizardButton.BackButton
            ),
        )
        settle(qtbot, wizard.state)


def field(page, path):
    return next(f for f in page.fields if f.path == path)


def on_screen(qtbot, window) -> dict[str, str]:
    """What a person reads on the Summary, Method and Memory pages."""
    wizard = window.wizard
    go_to(qtbot, wizard, wizard.summary_page)
    headline = wizard.summary_page.headline.text()
    go_to(qtbot, wizard, wizard.method_page)
    method = wizard.method_page
    micro = method.micro_batch.edit
    return {
        "headline": headline,
        "sharding": field(method, "training.sharding").combo.currentText(),
        "checkpointing": field(method, "training.gradient_checkpointing").combo.currentText(),
        "micro-batch": micro.text() or micro.placeholderText(),
        "memory": wizard.memory_page.headline.text(),
    }


def reopen(qtbot, window, plan_id: int) -> None:
    """New plan, then the Library: select the saved plan and press Open."""
    window.new_plan()
    settle(qtbot, window.wizard.state)
    window.show_place("Library")
    library = window.library
    library.select_ids([plan_id])
    click(qtbot, library.buttons["open"])
    settle(qtbot, window.wizard.state)
    assert window.wizard.plan_id == plan_id


def test_a_plan_reopens_with_what_was_set_and_what_the_planner_chose(qtbot, window, capsys):
    wizard, state = window.wizard, window.wizard.state
    hardware = wizard.hardware_page
    go_to(qtbot, wizard, hardware)
    choose(qtbot, hardware.gpu.combo, "H100-SXM")
    type_like_a_person(qtbot, hardware.per_node.edit, "8")  # nodes left empty
    settle(qtbot, state)
    result = state.analysis.result
    hours, usd = fmt_hours(result.time.hours), fmt_usd(result.cost.total_usd)
    assert (
        f"(you chose): zero3 and micro-batch 4 chosen by the planner, {hours}, {usd}"
        in hardware.chosen.text()
    )
    seen = on_screen(qtbot, window)
    assert hours in seen["headline"] and usd in seen["headline"]
    assert seen["sharding"] == "ZeRO-3 (+ weights) — chosen by the planner"
    assert seen["checkpointing"] == "Off — chosen by the planner"
    assert seen["micro-batch"] == "4 — chosen by the planner"
    assert "zero3: 74.39 GB" in seen["memory"]
    with answering(("OK", "H100, nodes empty")):
        first = window.save_as_new()
    assert first is not None
    assert window.store.get(first).request == {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 2e8},
        "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
    }
    row = next(window.library.model.row(i) for i in range(window.library.model.rowCount()))
    assert row.cells[4:6] == [usd, hours]
    reopen(qtbot, window, first)
    assert on_screen(qtbot, window) == seen
    # `tuneplan library show --json` on the same file prints the plan the window shows.
    capsys.readouterr()
    assert main(["library", "--db", str(window.store.path), "show", str(first), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(
        state.analysis.result.model_dump_json()
    )

    # Now the person pins micro-batch 2 on the Method page and leaves sharding and recomputation to
    # the planner.
    type_like_a_person(qtbot, wizard.method_page.micro_batch.edit, "2")
    settle(qtbot, state)
    pinned = on_screen(qtbot, window)
    assert pinned["micro-batch"] == "2" and pinned["sharding"].endswith("— chosen by the planner")
    with answering(("OK", "H100, micro-batch 2")):
        second = window.save_as_new()
    assert second is not None
    shown = state.analysis.result
    reopen(qtbot, window, second)
    assert on_screen(qtbot, window) == pinned
    again = state.analysis.result
    assert (again.time.hours, again.cost.total_usd, again.memory.per_gpu.total) == (
        shown.time.hours,
        shown.cost.total_usd,
        shown.memory.per_gpu.total,
    )

    # Compare lists the settings in effect, each saying who chose it.
    window.show_place("Library")
    window.library.select_ids([first, second])
    dialog = window.library.compare_selected()
    assert dialog is not None
    qtbot.addWidget(dialog)
    rows = {
        dialog.view.model.row(i).cells[0]: dialog.view.model.row(i).cells[1:]
        for i in range(dialog.view.model.rowCount())
    }
    assert rows["total cost"][0] == usd
    assert rows["setting: training.gradient_checkpointing"][0] == "no (chosen by the planner)"
    assert rows["setting: training.micro_batch_size"] == ["4 (chosen by the planner)", "2"]


@needs_mount
def test_an_undo_the_full_disk_refuses_stays_undoable_and_says_why(qtbot, executor, tmp_path):
    with tmpfs(tmp_path / "mnt") as mnt:
        store = PlanStore(mnt / "tuneplan.db")
        request = PlanRequest.model_validate(
            {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2e8}}
        )
        plan_id = store.save(
            "keep me", {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2e8}}, plan(request)
        )
        library = LibraryWidget(store, executor)
        qtbot.addWidget(library)
        library.show()
        library.select_ids([plan_id])
        click(qtbot, library.buttons["delete"])
        assert store.list() == [] and library.undo_bar.isVisible()
        filler = fill(mnt)
        click(qtbot, library.undo_button)
        qtbot.waitUntil(lambda: library.undo_stack.canUndo(), timeout=2000)
        assert library.error.isVisible() and library.error.text().startswith("Undo failed: ")
        assert "full" in library.error.text() and "press Undo again" in library.error.text()
        assert library.undo_bar.isVisible() and not library.undo_stack.canRedo()
        assert store.list() == []
        filler.unlink()  # room again: the same Undo now brings the plan back, under its own id
        click(qtbot, library.undo_button)
        assert [r.id for r in store.list()] == [plan_id] and store.get(plan_id).name == "keep me"
        library.undo_stack.redo()  # and Redo deletes it again, as it should
        assert store.list() == []
        store.close()


def test_a_plan_that_now_plans_to_other_figures_says_so_when_opened(qtbot, window):
    """A plan saved when its GPU cost more (its stored total raised here to $30.00, as a price
    refresh since would leave it) is opened: the window plans it again and says which figure moved,
    instead of showing it silently."""
    state = window.wizard.state
    settle(qtbot, state)
    with answering(("OK", "sample")):
        plan_id = window.save_as_new()
    assert plan_id is not None
    result = state.analysis.result
    now = result.cost.total_usd
    older = result.model_copy(update={"cost": result.cost.model_copy(update={"total_usd": 30.0})})
    window.store.db.execute(
        "UPDATE plans SET result_json = ? WHERE id = ?", [older.model_dump_json(), plan_id]
    )
    window.store.db.conn.commit()
    reopen(qtbot, window, plan_id)
    shown = window.statusBar().currentMessage()
    assert shown == (
        f"“sample” now plans to other figures than it was saved with (total cost $30.00 → "
        f"{fmt_usd(now)}): the catalog's prices or the planner changed since"
    )
    window.store.db.execute(
        "UPDATE plans SET result_json = ? WHERE id = ?", [result.model_dump_json(), plan_id]
    )
    window.store.db.conn.commit()
    reopen(qtbot, window, plan_id)
    assert window.statusBar().currentMessage() == "Opened “sample”"


@needs_mount
def test_closing_with_plans_the_full_disk_would_not_take_back_asks_first(qtbot, executor, tmp_path):
    with tmpfs(tmp_path / "mnt") as mnt:
        store = PlanStore(mnt / "tuneplan.db")
        request = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2e8}}
        plan_id = store.save("keep me", request, plan(PlanRequest.model_validate(request)))
        library = LibraryWidget(store, executor)
        qtbot.addWidget(library)
        library.show()
        library.select_ids([plan_id])
        click(qtbot, library.buttons["delete"])
        filler = fill(mnt)
        click(qtbot, library.undo_button)
        qtbot.waitUntil(lambda: library.undo_stack.canUndo(), timeout=2000)
        with answering(("Keep the window open", None)) as seen:
            assert not library.may_close()
        assert (
            seen[0].title == "Deleted plans not restored"
            and "1 plan you asked back with Undo" in seen[0].text
        )
        assert store.list() == []
        filler.unlink()  # room again: closing now puts the plan back first, and asks nothing
        with answering():
            assert library.may_close()
        assert [r.name for r in store.list()] == ["keep me"]
        store.close()


def test_the_method_page_says_what_a_frameworks_recipe_sets(qtbot, window):
    """torchtune's LoRA recipes train in bf16 with chunked cross-entropy and activation
    checkpointing (recipes/configs/llama3_1/8B_lora_single_device.yaml): left unset, the page shows
    those, as the recipe's."""
    state = window.wizard.state
    state.load(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": "2e8"},
            "training": {"framework": "torchtune", "micro_batch_size": 2},
            "hardware": {"gpu": "A100-80GB-SXM", "gpus_per_node": 2},
        }
    )
    settle(qtbot, state)
    method = window.wizard.method_page
    go_to(qtbot, window.wizard, method)
    assert (
        field(method, "training.precision").combo.currentText()
        == "Pure bf16 (no fp32 copy) — torchtune's recipe"
    )
    assert (
        field(method, "training.cross_entropy").combo.currentText()
        == "Chunked — torchtune's recipe"
    )
    checkpointing = field(method, "training.gradient_checkpointing")
    assert checkpointing.combo.currentText() == "Full (every layer) — torchtune's recipe"
    assert method.micro_batch.edit.text() == "2"  # set by the person: shown as typed, no note
    # Picking the first entry hands a pinned setting back: it leaves the request, and the planner's
    # choice shows.
    sharding = field(method, "training.sharding")
    choose(qtbot, sharding.combo, "zero3")
    settle(qtbot, state)
    assert (
        state.get("training.sharding") == "zero3"
        and sharding.combo.currentText() == "ZeRO-3 (+ weights)"
    )
    choose(qtbot, sharding.combo, "")
    settle(qtbot, state)
    assert state.get("training.sharding") is None
    assert sharding.combo.currentText().endswith(" — chosen by the planner")


def test_a_plan_saved_by_the_earlier_version_opens_in_the_window_with_its_figures(
    qtbot, executor, settings, tmp_path
):
    """The schema-3 library in tests/fixtures/library (every Method default saved as if set): the
    window opens the H100 plan with the configuration it was saved with, saying the planner chose
    zero3 and micro-batch 4; its figures, saved by the planner of that day (51.1 min, $24.45), moved
    with the wall time's start-up and checkpoint writes, and the status bar says so instead of
    showing other numbers silently."""
    db = tmp_path / "tuneplan.db"
    load_v3(db)
    store = PlanStore(db)
    window = open_window(qtbot, executor, store, settings, debounce_ms=0)
    reopen(qtbot, window, 1)
    seen = on_screen(qtbot, window)
    assert seen["sharding"] == "ZeRO-3 (+ weights) — chosen by the planner"
    assert seen["micro-batch"] == "4 — chosen by the planner"
    moved = window.statusBar().currentMessage()
    assert moved.startswith(
        "“llama-3.1-8b on 8× H100-SXM” now plans to other figures than it was saved with ("
    )
    assert "$24.45 →" in moved and "51.1 min →" in moved
    window.close()
    store.close()
