"""The Time & cost page's "Also price …" boxes, clicked as a person clicks them: the headline's
provider follows pricing.allow, and a node that pays for more GPUs than it uses says so.

Prices from the shipped rows' sources: RunPod Secure H100 SXM $3.99 and Community $2.69 (runpod.io,
2026-11-09), Vast.ai's median verified 1x H100 SXM offer $2.4024 (silybench, 2026-10-19), AWS p4de
spot $1.0813 per GPU-hour (2026-11-09), Mithril's A100 auction floor $0.0625 (SkyPilot PR #9156),
Lambda's 8x A100 80 GB $2.79.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QCheckBox

from tests.gui.wizard_driver import choose, next_page, settle


def go_to(qtbot, wizard, page) -> None:
    while wizard.currentPage() is not page:
        next_page(qtbot, wizard)


def tick(qtbot, check: QCheckBox) -> None:
    """Click the box itself, not the middle of a row that may be wider than its text."""
    check.ensurePolished()
    qtbot.mouseClick(check, Qt.MouseButton.LeftButton, pos=QPoint(8, check.height() // 2))


def test_allowing_marketplace_hosts_moves_a_one_gpu_h100_plan_from_runpod_secure_to_vast(
    qtbot, window
):
    wizard, state = window.wizard, window.wizard.state
    cost = wizard.cost_page
    go_to(qtbot, wizard, cost)
    # as "Use selected" does
    state.update_many({}, {"hardware": {"gpu": "H100-SXM", "gpus_per_node": 1}})
    settle(qtbot, state)
    box = cost.allow_marketplace.check
    assert box.text() == "Also price community/marketplace hosts" and not box.isChecked()
    assert "at RunPod (H100-SXM Secure Cloud in any region)" in cost.headline.text()
    assert "× $3.99" in cost.items.index(0, 3).data()

    tick(qtbot, box)
    settle(qtbot, state)
    assert box.isChecked() and state.get("pricing.allow") == ["marketplace"]
    assert (
        "at Vast.ai (H100 SXM 1x (marketplace median) in any region, marketplace)"
        in cost.headline.text()
    )
    assert "× $2.40" in cost.items.index(0, 3).data()

    tick(qtbot, box)
    settle(qtbot, state)
    assert not box.isChecked() and state.get("pricing.allow") is None
    assert "at RunPod (H100-SXM Secure Cloud in any region)" in cost.headline.text()


def test_allowing_auction_offers_prices_an_8_gpu_a100_spot_plan_at_mithrils_floor(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    cost = wizard.cost_page
    go_to(qtbot, wizard, cost)
    state.update_many({}, {"hardware": {"gpu": "A100-80GB-SXM", "gpus_per_node": 8}})
    choose(qtbot, cost.mode.combo, "spot")
    settle(qtbot, state)
    assert "at AWS (p4de.24xlarge in us-east-1)" in cost.headline.text()
    assert "× $1.08" in cost.items.index(0, 3).data()

    box = cost.allow_auction.check
    assert box.text() == "Also price auction/bid offers"
    tick(qtbot, box)
    settle(qtbot, state)
    assert state.get("pricing.allow") == ["auction"]
    assert (
        "at Mithril (via SkyPilot) (a100-80gb.sxm.8x in any region, auction)"
        in cost.headline.text()
    )
    assert "× $0.06" in cost.items.index(0, 3).data()


def test_a_two_gpu_plan_on_an_8_gpu_instance_says_it_pays_for_8(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    cost = wizard.cost_page
    go_to(qtbot, wizard, cost)
    state.update_many({}, {"hardware": {"gpu": "A100-80GB-SXM", "gpus_per_node": 2}})
    choose(qtbot, cost.provider.combo, "lambda")
    settle(qtbot, state)
    assert "It pays for 8 GPUs per node (8x NVIDIA A100 SXM 80 GB holds 8)." in cost.headline.text()
