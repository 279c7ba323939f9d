"""The request's newer training settings, set the way a person sets them, and the step breakdown on
screen.

Tensor parallel is typed into the Hardware page's "Advanced parallelism" group, checkpointing is
chosen from its combo with the keyboard, a PEFT target list survives a load and a save, and the Time
& cost page shows where a step's time goes (only the kinds of work that take time) with the achieved
MFU.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QWizard

from core.planner.analysis import Analysis
from core.planner.result import Candidate, PlanResult, StepBreakdown
from tests.gui.wizard_driver import choose, click, next_page, settle, type_like_a_person

LLAMA_8B_ON_8 = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8", "seq_len": 4096},
    "training": {"method": "lora"},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
}


def open_request(qtbot, window, tmp_path: Path, request: dict) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    assert window.open_request(path)
    settle(qtbot, window.wizard.state)


def go_to(qtbot, wizard, page) -> None:
    while wizard.currentPage() is not page:
        next_page(qtbot, wizard)


def next_enabled(wizard) -> bool:
    return wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def tick(qtbot, page, check) -> None:
    """Scroll the box into view and click the box itself, not the middle of a row wider than its
    text."""
    page.scroll_area.ensureWidgetVisible(check)
    qtbot.mouseClick(check, Qt.MouseButton.LeftButton, pos=QPoint(8, check.height() // 2))


def field(page, path):
    return next(f for f in page.fields if f.path == path)


def test_tensor_parallel_0_is_refused_beside_the_field_and_2_goes_into_the_request(
    qtbot, window, tmp_path
):
    wizard, state = window.wizard, window.wizard.state
    open_request(qtbot, window, tmp_path, LLAMA_8B_ON_8)
    hardware = wizard.hardware_page
    go_to(qtbot, wizard, hardware)
    group = hardware.parallelism
    assert not group.is_expanded() and not group.tensor.edit.isVisible()  # collapsed by default
    click(qtbot, group.toggle)
    assert group.is_expanded() and group.tensor.edit.isVisible()

    type_like_a_person(qtbot, group.tensor.edit, "0")
    settle(qtbot, state)
    # the field's range (ge=1, le=64), both ends said next to it; Next waits.
    assert group.tensor.error.isVisible()
    assert group.tensor.error.text() == "0 is out of range: use 1 to 64"
    assert not next_enabled(wizard)
    # The error is the Hardware page's: the Method and Memory pages before it do not block on it.
    assert wizard.blocking_page(wizard.pages().index(hardware)) is None
    assert not wizard.method_page.page_errors() and not wizard.memory_page.page_errors()

    type_like_a_person(qtbot, group.tensor.edit, "2")
    settle(qtbot, state)
    assert not group.tensor.error.isVisible()
    assert state.get("training.tensor_parallel") == "2"
    assert state.request is not None and state.request.training.tensor_parallel == 2


def test_a_loaded_request_with_parallelism_opens_the_group(qtbot, window, tmp_path):
    request = {
        **LLAMA_8B_ON_8,
        "training": {"method": "lora", "tensor_parallel": 2, "sequence_parallel": True},
    }
    open_request(qtbot, window, tmp_path, request)
    hardware = window.wizard.hardware_page
    go_to(qtbot, window.wizard, hardware)
    group = hardware.parallelism
    assert group.is_expanded()
    assert group.tensor.edit.text() == "2" and group.sequence.check.isChecked()


def test_sequence_parallel_without_tensor_parallel_is_the_hardware_pages_message(
    qtbot, window, tmp_path
):
    wizard, state = window.wizard, window.wizard.state
    open_request(qtbot, window, tmp_path, LLAMA_8B_ON_8)
    hardware = wizard.hardware_page
    go_to(qtbot, wizard, hardware)
    click(qtbot, hardware.parallelism.toggle)
    tick(qtbot, hardware, hardware.parallelism.sequence.check)
    settle(qtbot, state)
    assert state.get("training.sequence_parallel") is True
    # The request's own rule (request.py TrainingSpec._coherent), shown once, on the page that holds
    # the field.
    assert hardware.page_error.isVisible()
    assert (
        hardware.page_error.text()
        == "training.sequence_parallel needs training.tensor_parallel of 2 or more"
    )
    assert not next_enabled(wizard)
    assert not wizard.method_page.page_errors()


def test_choosing_selective_checkpointing_from_the_combo_puts_selective_in_the_request(
    qtbot, window
):
    wizard, state = window.wizard, window.wizard.state
    method = wizard.method_page
    go_to(qtbot, wizard, method)
    checkpointing = field(method, "training.gradient_checkpointing")
    settle(qtbot, state)
    # Left out of the request: the combo shows what the plan runs with (the sample plan's search
    # recomputes nothing) and that the planner chose it, not the request's default (true).
    assert checkpointing.combo.currentText() == "Off — chosen by the planner"
    assert state.get("training.gradient_checkpointing") is None
    choose(qtbot, checkpointing.combo, "selective")
    settle(qtbot, state)
    assert state.get("training.gradient_checkpointing") == "selective"
    assert state.request is not None and state.request.training.checkpointing == "selective"
    assert checkpointing.hint.text().startswith("only the attention core is recomputed")
    choose(qtbot, checkpointing.combo, "false")
    settle(qtbot, state)
    assert state.get("training.gradient_checkpointing") is False
    assert checkpointing.combo.currentText() == "Off"


def candidate(recompute: bool) -> Candidate:
    return Candidate(
        gpu="H100-SXM",
        gpus_per_node=8,
        nodes=1,
        sharding="zero2",
        method="lora",
        gradient_checkpointing=recompute,
        micro_batch_size=2,
        fits=True,
        memory_per_gpu=40_000_000_000,
        hours=3.0,
        cost_usd=100.0,
        provider="aws",
        pareto=True,
        why="built by hand",
    )


def test_using_a_candidate_with_recompute_keeps_selective_checkpointing(qtbot, window, tmp_path):
    """A candidate says recompute on or off; "on" must not turn the person's selective recompute
    into full."""
    state = window.wizard.state
    open_request(qtbot, window, tmp_path, LLAMA_8B_ON_8)
    state.set("training.gradient_checkpointing", "selective")
    hardware = window.wizard.hardware_page
    hardware.use_candidate(candidate(True))
    assert state.get("training.gradient_checkpointing") == "selective"
    assert state.get("training.micro_batch_size") == 2
    hardware.use_candidate(candidate(False))
    assert state.get("training.gradient_checkpointing") is False
    hardware.use_candidate(candidate(True))
    assert state.get("training.gradient_checkpointing") is True


def test_the_new_method_settings_go_into_the_request(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    method = wizard.method_page
    go_to(qtbot, wizard, method)
    choose(qtbot, field(method, "training.cross_entropy").combo, "fused")
    framework = field(method, "training.framework")
    choose(qtbot, framework.combo, "torchtune")
    assert framework.hint.text() == "sets the framework's documented defaults; fields you set win"
    for path in ("training.activation_offload", "training.compile"):
        tick(qtbot, method, field(method, path).check)
    settle(qtbot, state)
    assert state.request is not None
    t = state.request.training
    assert (t.cross_entropy.value, t.framework.value, t.activation_offload, t.compile) == (
        "fused",
        "torchtune",
        True,
        True,
    )


def test_a_peft_target_list_shows_as_a_comma_list_and_is_saved_as_the_list(qtbot, window, tmp_path):
    request = {
        **LLAMA_8B_ON_8,
        "training": {"method": "lora", "lora_targets": ["q_proj", "v_proj"]},
    }
    open_request(qtbot, window, tmp_path, request)
    method = window.wizard.method_page
    go_to(qtbot, window.wizard, method)
    assert method.targets.edit.text() == "q_proj, v_proj"
    assert not window.wizard.is_modified()  # showing it changed nothing
    assert window.save_as_new("targets") is not None
    record = next(r for r in window.store.list() if r.name == "targets")
    assert record.request["training"]["lora_targets"] == ["q_proj", "v_proj"]
    type_like_a_person(qtbot, method.targets.edit, "q_proj, k_proj")
    settle(qtbot, window.wizard.state)
    assert window.wizard.state.get("training.lora_targets") == "q_proj, k_proj"


def with_step(
    result: PlanResult, step_time_s: float, breakdown: StepBreakdown, mfu: float, hfu: float
) -> PlanResult:
    compute = result.compute.model_copy(
        update={"step_time_s": step_time_s, "step_breakdown_s": breakdown, "mfu": mfu, "hfu": hfu}
    )
    return result.model_copy(update={"compute": compute})


def test_the_step_breakdown_shows_the_parts_that_take_time(qtbot, window, tmp_path):
    wizard, state = window.wizard, window.wizard.state
    open_request(qtbot, window, tmp_path, LLAMA_8B_ON_8)
    cost = wizard.cost_page
    go_to(qtbot, wizard, cost)
    analysis = state.analysis
    assert analysis is not None
    # A step of 10 s built by hand: shares are each part over 10 s (6/10 = 60%, 2/10 = 20%, 1/10 =
    # 10%, 0.5/10 = 5%); host transfer and the pipeline bubble are 0 and are not shown.
    breakdown = StepBreakdown(
        gemm=6.0, attention=2.0, memory_bound=1.0, optimizer=0.5, exposed_comm=0.5
    )
    shown = Analysis(
        result=with_step(analysis.result, 10.0, breakdown, 0.41, 0.55), figures=analysis.figures
    )
    cost.show_analysis(shown)
    view = cost.step
    assert view.shown_rows() == [
        ("matmuls (GEMM)", "6 s", "60%"),
        ("attention", "2 s", "20%"),
        ("memory-bound kernels", "1 s", "10%"),
        ("optimizer step", "0.5 s", "5%"),
        ("exposed communication", "0.5 s", "5%"),
    ]
    for name in ("host transfer", "pipeline bubble"):
        assert not view.rows[name][0].isVisible()
    assert view.rows["matmuls (GEMM)"][0].isVisible()
    assert view.mfu.text() == (
        "Achieved MFU (model-FLOPs utilisation): 41%; hardware-FLOPs utilisation (HFU) 55%"
    )
    assert view.summary.text().startswith("10 s per optimizer step of ")
    assert not view.empty.isVisible()

    # A plan whose step model gives no breakdown: no rows at all, and a line that says so.
    cost.show_analysis(
        Analysis(
            result=with_step(analysis.result, 10.0, StepBreakdown(), 0.41, 0.0),
            figures=analysis.figures,
        )
    )
    assert view.shown_rows() == []
    assert view.empty.isVisible()
    assert view.mfu.text() == "Achieved MFU (model-FLOPs utilisation): 41%"


def test_the_summary_names_mfu_as_achieved_model_flops_utilisation(qtbot, window):
    wizard = window.wizard
    go_to(qtbot, wizard, wizard.summary_page)
    labels = [
        wizard.summary_page.figures.itemAt(i, wizard.summary_page.figures.ItemRole.LabelRole)
        .widget()
        .text()
        for i in range(wizard.summary_page.figures.rowCount())
    ]
    assert "Achieved MFU (model-FLOPs utilisation)" in labels and "MFU" not in labels
