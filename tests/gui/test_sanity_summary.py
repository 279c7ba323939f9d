"""The Summary page shows the plan's sanity checks where a person reads them, under the headline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.gui.wizard_driver import next_page, settle


def test_a_node_no_instance_holds_is_named_on_the_summary(qtbot, window, tmp_path: Path):
    # Lambda rents the H100 SXM as 1x and 8x instances (resources/catalog/prices.json): no 16-GPU
    # node.
    wizard, state = window.wizard, window.wizard.state
    request = tmp_path / "sixteen.json"
    request.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": 2e8},
                "training": {"method": "lora"},
                "hardware": {"gpu": "H100-SXM", "gpus_per_node": 16},
                "pricing": {"provider": "lambda"},
            }
        )
    )
    assert window.open_request(request)
    settle(qtbot, state)
    while wizard.currentPage() is not wizard.summary_page:
        next_page(qtbot, wizard)
    checks = wizard.summary_page.sanity
    qtbot.waitUntil(checks.isVisible, timeout=2000)
    shown = [checks.item(i).text() for i in range(checks.count())]
    # a plan pays whole instances, so no Lambda price can be used, and the check says why and what
    # would do
    assert (
        "No on-demand offer for H100-SXM at Lambda has instances of 16 GPUs (the largest holds "
        "8): it cannot be rented as planned; use at most 8 GPUs per node." in shown
    ), shown


def test_a_plan_that_does_not_fit_shows_no_price_on_the_hardware_and_summary_pages(
    qtbot, window, tmp_path: Path
):
    # The reproduction: a 1T-parameter full fine-tune on one 48 GB card showed its $ first.
    wizard, state = window.wizard, window.wizard.state
    request = tmp_path / "one-trillion.json"
    request.write_text(
        json.dumps(
            {
                "model": {"params": "1T"},
                "data": {"tokens": 2e8},
                "training": {"method": "full"},
                "hardware": {"gpu": "RTX-6000-ADA", "gpus_per_node": 1},
            }
        )
    )
    assert window.open_request(request)
    settle(qtbot, state)
    while wizard.currentPage() is not wizard.hardware_page:
        next_page(qtbot, wizard)
    chosen = wizard.hardware_page.chosen
    qtbot.waitUntil(chosen.isVisible, timeout=2000)
    assert "Does not fit: it needs 22.00 TB per GPU" in chosen.text() and "$" not in chosen.text()
    assert "what would: use LoRA or QLoRA" in chosen.text()
    next_page(qtbot, wizard)
    cost = wizard.cost_page
    qtbot.waitUntil(cost.headline.isVisible, timeout=2000)
    headline = cost.headline.text()
    assert "no cost</b>: the plan does not fit in GPU memory" in headline and "$" not in headline
    # what would run, in the plan's own mode: not "no on-demand price", since the card has one
    assert cost.priced_elsewhere.text().startswith(
        "It does not fit as planned on RTX-6000-ADA; the cheapest configuration that fits: "
    )
    assert "\n" not in cost.priced_elsewhere.text()
    while wizard.currentPage() is not wizard.summary_page:
        next_page(qtbot, wizard)
    page = wizard.summary_page
    qtbot.waitUntil(page.headline.isVisible, timeout=2000)
    assert page.headline.text().startswith(
        "1× RTX-6000-ADA · Does not fit: it needs 22.00 TB per GPU, 21.95 TB more "
        "than the 48.00 GB of RTX-6000-ADA"
    )
    shown = {
        label: page.figures.itemAt(i, page.figures.ItemRole.FieldRole).widget().text()
        for i in range(page.figures.rowCount())
        if (label := page.figures.itemAt(i, page.figures.ItemRole.LabelRole).widget().text())
    }
    assert shown["Total cost"] == shown["Cost by pricing mode"] == "none: it does not fit"
    assert "$" not in page.headline.text() + page.conclusion.text()
    assert page.sanity.item(0).text().startswith("Does not fit:")
