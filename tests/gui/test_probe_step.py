"""The step probe in the Probe place as an engineer uses it: the plan that is open gives the layer,
the Live tab charts each repetition, the scorecard shows the step, and Apply to plan sends the
measured step to the plan.

The run is real, on this GPU-less machine, for a small Llama-shaped model at its own shapes (scale
1), so there is something to apply; every step is a click, the expectations are what is on
screen."""

from __future__ import annotations

import sys
from typing import Any

from core.planner.request import PlanRequest
from gui.probe import backend
from gui.probe.pane import ProbePane
from tests.gui.probe_driver import (
    click,
    click_host,
    click_tab,
    pick_probes,
    run_and_wait,
    table_cells,
)

TINY = PlanRequest.model_validate(
    {
        "model": {
            "hidden_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 688,
            "vocab_size": 2048,
            "model_type": "llama",
            "_name_or_path": "tiny-llama",
        },
        "data": {"tokens": "2M", "seq_len": 128},
        "training": {"method": "full", "micro_batch_size": 2, "gradient_checkpointing": False},
        "hardware": {"gpu": "H100-SXM"},
    }
)


def at_own_shapes(choice: Any) -> Any:
    """This interpreter (it has torch), and the plan's own shapes on the CPU."""
    return backend.make_options(choice).model_copy(
        update={"python": sys.executable, "step_cpu_scale": 1}
    )


def show(qtbot, store, tmp_path, executor, plan: PlanRequest | None) -> ProbePane:
    pane = ProbePane(
        executor,
        store,
        make_options=at_own_shapes,
        known_hosts_file=tmp_path / "known_hosts",
        plan_request_source=lambda: plan,
    )
    qtbot.addWidget(pane)
    pane.resize(1280, 900)
    pane.show()
    qtbot.waitExposed(pane)
    return pane


def test_the_step_of_the_open_plan_is_charted_shown_and_applied(
    qtbot, probe_store, tmp_path, threads, need_torch
):
    pane = show(qtbot, probe_store, tmp_path, threads, TINY)
    click_host(qtbot, pane, "This machine")
    click(qtbot, pane.connect_button)
    pick_probes(qtbot, pane, "step")
    run_and_wait(qtbot, pane)
    rows = {cells[1]: cells for cells in table_cells(pane.scorecard_view.table)}
    step = rows["Step time (planned vs measured)"]
    assert (
        step[0] == "INFO" and " per step (one layer " in step[2] and step[2].endswith("on the CPU)")
    )
    assert pane.scorecard_view.apply_button.isEnabled()
    click_tab(qtbot, pane.tabs, "Live")
    chart = pane.point_charts["step"]
    assert chart.isVisible()
    layer = chart.points("layer")
    assert [x for x, _y in layer] == [0.0, 1.0, 2.0, 3.0, 4.0] and all(y > 0 for _x, y in layer)
    with qtbot.waitSignal(pane.apply_to_plan, timeout=10_000) as sent:
        click(qtbot, pane.scorecard_view.apply_button)
    request = sent.args[0]
    assert request.hardware.measured_step is not None
    assert (
        request.hardware.measured_step.micro_batch == 2
        and request.hardware.measured_step.seq_len == 128
    )
    assert pane.status.text().startswith("Measured figures sent to the plan: Step measured on ")


def test_the_step_without_an_open_plan_says_what_it_needs(qtbot, probe_store, tmp_path, threads):
    pane = show(qtbot, probe_store, tmp_path, threads, None)
    click(qtbot, pane.connect_button)
    pick_probes(qtbot, pane, "step")
    run_and_wait(qtbot, pane)
    assert pane.scorecard_view.banner.text() == (
        "No verdict: no probe produced any evidence to grade (step skipped: the step probe needs "
        "a plan to take its layer from (open or choose one; on the command line --plan "
        "REQUEST.json))."
    )
