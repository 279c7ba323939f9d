"""The Summary page shows the plan's sanity checks where a person reads them, under the headline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.gui.wizard_driver import next_page, settle


def test_a_node_no_instance_holds_is_named_on_the_summary(qtbot, window, tmp_path: Path):
    # Lambda rents the H100 SXM as 1x and 8x instances (resources/catalog/prices.json): no 16-GPU node.
    wizard, state = window.wizard, window.wizard.state
    request = tmp_path / "sixteen.json"
    request.write_text(json.dumps({"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2e8},
                                   "training": {"method": "lora"},
                                   "hardware": {"gpu": "H100-SXM", "gpus_per_node": 16},
                                   "pricing": {"provider": "lambda"}}))
    assert window.open_request(request)
    settle(qtbot, state)
    while wizard.currentPage() is not wizard.summary_page:
        next_page(qtbot, wizard)
    checks = wizard.summary_page.sanity
    qtbot.waitUntil(checks.isVisible, timeout=2000)
    shown = [checks.item(i).text() for i in range(checks.count())]
    # a plan pays whole instances, so no Lambda price can be used, and the check says why and what would do
    assert "No on-demand offer for H100-SXM at Lambda has instances of 16 GPUs (the largest holds 8): it cannot be " \
           "rented as planned; use at most 8 GPUs per node." in shown, shown
