"""The "Refresh prices" button, clicked like a person, against the catalog server on 127.0.0.1.

The refresh runs on the real thread pool (ThreadExecutor), as in the window; the test waits for the
status line to show what a user would read. Figures: the default clouds read from the recorded
excerpts (tests/fixtures/catalog): SkyPilot aws 12 prices from 54 rows + lambda 5 from 19 (V100,
A100 and the three A6000 instances) + runpod 6 from 13 = 23 from 86 (azure is not on the server:
skipped and said); gpuhunt lambdalabs 2 from 7 (+ the A6000's 1x and 2x rows) + runpod 3 from 5.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gui.catalog.refresh_button import RefreshPricesButton
from gui.workers import ThreadExecutor
from tests.core.catalog_server import CatalogServer, serve


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    yield from serve()


def _button(qtbot: QtBot, executor: ThreadExecutor) -> RefreshPricesButton:
    w = RefreshPricesButton(executor)
    qtbot.addWidget(w)
    w.resize(700, 200)
    with qtbot.waitExposed(w):
        w.show()
    return w


def test_clicking_refresh_shows_the_summary(
    qtbot: QtBot, server: CatalogServer, monkeypatch: pytest.MonkeyPatch, user_dirs: Path
) -> None:
    monkeypatch.setenv("TUNEPLAN_SKYPILOT_CATALOG_URL", f"{server.url}/skypilot")
    monkeypatch.setenv("TUNEPLAN_GPUHUNT_CATALOG_URL", f"{server.url}/gpuhunt")
    executor = ThreadExecutor()
    w = _button(qtbot, executor)
    assert w.status.text() == "" and server.requests == []  # nothing is fetched until the click
    qtbot.mouseClick(w.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "refreshed prices written to" in w.status.text(), timeout=60000)
    text = w.status.text()
    assert "skypilot: 23 prices kept from 86 rows" in text
    assert "gpuhunt: 7 prices kept from 12 rows" in text
    assert "GPU not in the catalog" not in text  # Lambda's A6000 is the catalog's RTX-A6000
    # prices are data
    written = Path(os.environ["XDG_DATA_HOME"]) / "tuneplan" / "refreshed_prices.json"
    assert str(written) in text
    assert len(json.loads(written.read_text(encoding="utf-8"))["rows"]) == 23 + 7
    assert w.button.isEnabled()
    assert executor.stop_all(5000)


def test_a_failed_refresh_says_why_and_keeps_the_old_prices(
    qtbot: QtBot, server: CatalogServer, monkeypatch: pytest.MonkeyPatch, user_dirs: Path
) -> None:
    # prices are data
    written = Path(os.environ["XDG_DATA_HOME"]) / "tuneplan" / "refreshed_prices.json"
    written.parent.mkdir(parents=True)
    written.write_text('{"format": 1, "sources": [], "rows": []}\n', encoding="utf-8")
    monkeypatch.setenv("TUNEPLAN_SKYPILOT_CATALOG_URL", f"{server.url}/cut")
    monkeypatch.setenv("TUNEPLAN_GPUHUNT_CATALOG_URL", f"{server.url}/gpuhunt")
    executor = ThreadExecutor()
    w = _button(qtbot, executor)
    qtbot.mouseClick(w.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: w.status.text().startswith("Prices were not refreshed"), timeout=60000)
    assert "was cut off" in w.status.text() and "/cut/aws/vms.csv" in w.status.text()
    assert w.status.text().endswith("The previous prices are kept.")
    assert written.read_text(encoding="utf-8") == '{"format": 1, "sources": [], "rows": []}\n'
    assert w.button.isEnabled()
    assert executor.stop_all(5000)


def test_the_catalog_place_shows_refreshed_prices_after_the_click(
    qtbot: QtBot, server: CatalogServer, monkeypatch: pytest.MonkeyPatch, live_window: Any
) -> None:
    """In the window: the button sits at the top of the Catalog place and its prices reach the
    table."""
    monkeypatch.setenv("TUNEPLAN_SKYPILOT_CATALOG_URL", f"{server.url}/skypilot")
    monkeypatch.setenv("TUNEPLAN_GPUHUNT_CATALOG_URL", f"{server.url}/gpuhunt")
    window = live_window
    sidebar = window.sidebar
    item = next(
        sidebar.item(i) for i in range(sidebar.count()) if sidebar.item(i).text() == "Catalog"
    )
    qtbot.mouseClick(
        sidebar.viewport(), Qt.MouseButton.LeftButton, pos=sidebar.visualItemRect(item).center()
    )
    view = window.catalog_view
    assert window.stack.currentWidget() is view and window.refresh_prices.button.isVisible()
    before = view.model.rowCount()
    qtbot.mouseClick(window.refresh_prices.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: "refreshed prices written to" in window.refresh_prices.status.text(), timeout=60000
    )
    # the 30 refreshed records (the summary above) replace shipped records of the same offer or are
    # added, so the table changes; every refreshed record is in it, marked by its origin in the
    # source column
    qtbot.waitUntil(lambda: view.model.rowCount() != before, timeout=5000)
    sources = [
        view.model.index(r, c).data()
        for r in range(view.model.rowCount())
        for c in range(view.model.columnCount())
    ]
    assert any(f"{server.url}/skypilot" in str(s) for s in sources)
