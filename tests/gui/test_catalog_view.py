"""The Catalog place as a person uses it: open it, pick a GPU in the filter by typing, sort by
price, limit the age.

The counts expected come from the catalog's price records (what the place shows), filtered here by
hand: the shipped prices.json alone holds 22 H100-SXM rows, and providers' published commitment
discounts add reserved records to some of them.
"""

from __future__ import annotations

import datetime as dt

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QApplication

from core.catalog import load_catalog
from gui.catalog.view import HEADER
from tests.gui.wizard_driver import describe

GPU_COL, PRICE_COL, AGE_COL = HEADER.index("GPU"), HEADER.index("USD/GPU-h"), HEADER.index("age")


def visible(view, column: int) -> list[str]:
    model = view.table.model()
    return [model.index(row, column).data() for row in range(model.rowCount())]


def open_catalog(qtbot, window):
    sidebar = window.sidebar
    item = sidebar.findItems("Catalog", Qt.MatchFlag.MatchExactly)[0]
    qtbot.mouseClick(
        sidebar.viewport(), Qt.MouseButton.LeftButton, pos=sidebar.visualItemRect(item).center()
    )
    view = window.places["Catalog"]
    qtbot.waitUntil(view.isVisible, timeout=2000)
    assert window.stack.currentWidget() is view
    return view


def test_filter_sort_and_age(qtbot, window):
    today = dt.date.today()
    prices = load_catalog().prices
    h100 = [p for p in prices if p.gpu == "H100-SXM"]
    assert len(h100) >= 22
    view = open_catalog(qtbot, window)
    assert view.count.text() == f"{len(prices)} of {len(prices)} prices"

    # Click the GPU filter: its list opens; type the GPU's name to the list that has the keyboard,
    # press Enter.
    qtbot.mouseClick(view.gpu, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.gpu.view().isVisible(), timeout=2000)
    focus = QApplication.focusWidget()
    assert isinstance(focus, QAbstractItemView), (
        f"the open list does not have the keyboard: {describe(focus)}"
    )
    qtbot.keyClicks(focus, "H100-S")
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not view.gpu.view().isVisible(), timeout=2000)
    assert view.gpu.currentText() == "H100-SXM"
    assert view.count.text() == f"{len(h100)} of {len(prices)} prices"
    assert set(visible(view, GPU_COL)) == {"H100-SXM"}

    # Click the price header: cheapest first.
    header = view.table.horizontalHeader()
    qtbot.mouseClick(
        header.viewport(),
        Qt.MouseButton.LeftButton,
        pos=header.rect().topLeft() + _section_center(header, PRICE_COL),
    )
    shown = [float(text.lstrip("$")) for text in visible(view, PRICE_COL)]
    assert shown == sorted(shown) and shown[0] < shown[-1]

    # At most 90 days old: undated and stale records go, the fresh ones stay.
    fresh = [
        p for p in h100 if p.date is not None and (today - dt.date.fromisoformat(p.date)).days <= 90
    ]
    assert 0 < len(fresh) < len(h100)
    spin = view.max_age
    qtbot.mouseClick(spin.lineEdit(), Qt.MouseButton.LeftButton)
    focus = QApplication.focusWidget()
    assert focus is spin.lineEdit() or focus is spin, describe(focus)
    qtbot.keyClick(focus, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(QApplication.focusWidget(), "90")
    qtbot.waitUntil(lambda: spin.value() == 90, timeout=2000)
    assert view.count.text() == f"{len(fresh)} of {len(prices)} prices"
    ages = visible(view, AGE_COL)
    assert ages and not any(a == "undated" or a.startswith("stale") for a in ages)
    assert all(int(a.split()[0]) <= 90 for a in ages)

    # Click the age header: youngest first, as numbers ("9 days" before "12 days").
    qtbot.mouseClick(
        header.viewport(),
        Qt.MouseButton.LeftButton,
        pos=header.rect().topLeft() + _section_center(header, AGE_COL),
    )
    days = [int(a.split()[0]) for a in visible(view, AGE_COL)]
    assert days == sorted(days)


def _section_center(header, column: int):
    from PySide6.QtCore import QPoint

    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    return QPoint(x, header.height() // 2)
