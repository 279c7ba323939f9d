"""One read-only table model for every table in the window (model/view, sortable through a proxy).

Each row is a list of display strings plus optional sort keys (numbers sort as numbers) and a
highlight flag per cell, so views never format or compare values themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
PAYLOAD_ROLE = Qt.ItemDataRole.UserRole + 2
HIGHLIGHT = QColor(255, 196, 0, 90)

Index = QModelIndex | QPersistentModelIndex


@dataclass
class Row:
    cells: list[str]
    sort: list[Any] | None = None
    highlight: set[int] = field(default_factory=set)
    bold: bool = False
    payload: Any = None
    tooltips: list[str] | None = None


class RowsModel(QAbstractTableModel):
    def __init__(self, header: Sequence[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._header = list(header)
        self._rows: list[Row] = []

    def set_rows(self, rows: Sequence[Row]) -> None:
        """Replace the rows; the same rows again change nothing (no reset, no re-measured
        columns)."""
        new = list(rows)
        if new == self._rows:
            return
        self.beginResetModel()
        self._rows = new
        self.endResetModel()

    def row(self, i: int) -> Row:
        return self._rows[i]

    def rows(self) -> list[Row]:
        return list(self._rows)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return 0 if parent.isValid() else len(self._header)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._header[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return row.cells[col]
        if role == Qt.ItemDataRole.ToolTipRole:
            return row.tooltips[col] if row.tooltips else row.cells[col]
        if role == SORT_ROLE:
            return row.sort[col] if row.sort is not None else row.cells[col]
        if role == PAYLOAD_ROLE:
            return row.payload
        if role == Qt.ItemDataRole.BackgroundRole and col in row.highlight:
            return QBrush(HIGHLIGHT)
        if role == Qt.ItemDataRole.FontRole and row.bold:
            font = QFont()
            font.setBold(True)
            return font
        return None


class SortProxy(QSortFilterProxyModel):
    """Sorts by each cell's sort key (numbers as numbers); a place that filters too subclasses
    it."""

    def lessThan(self, left: Index, right: Index) -> bool:
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        if a is None or b is None:  # unknown values (no price) sort last
            return a is not None
        try:
            return bool(a < b)
        except TypeError:
            return str(a) < str(b)


def make_table(
    model: RowsModel,
    name: str,
    sortable: bool = True,
    stretch_last: bool = True,
    proxy: SortProxy | None = None,
) -> QTableView:
    """A QTableView over `model` through a sort proxy (`proxy`, or a plain SortProxy), with row
    selection and an accessible name."""
    view = QTableView()
    view.setAccessibleName(name)
    if sortable:
        proxy = proxy or SortProxy(view)
        proxy.setSourceModel(model)
        view.setModel(proxy)
        view.setSortingEnabled(True)
        view.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
    else:
        view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setAlternatingRowColors(True)
    view.verticalHeader().setVisible(False)
    header = view.horizontalHeader()
    # Columns are fitted to their contents once per new set of rows. ResizeToContents would measure
    # every cell again on each layout pass: half of the time a page took to appear
    # (docs/performance.md, "Window").
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(stretch_last)
    model.modelReset.connect(lambda: fit_columns(view, model))
    fit_columns(view, model)  # rows set before the view existed
    view.setWordWrap(False)
    return view


def fit_columns(view: QTableView, model: RowsModel, cap: int = 440) -> None:
    """Each column as wide as its longest text, up to `cap` pixels (tooltips show the rest).

    Measured with font metrics on the row strings: resizeColumnsToContents asks the model for every
    role of every cell, thousands of Python calls per table.
    """
    header = view.horizontalHeader()
    normal = QFontMetrics(view.font())
    bold_font = QFont(view.font())
    bold_font.setBold(True)
    bold = QFontMetrics(bold_font)
    head = QFontMetrics(header.font())
    rows = model.rows()
    for col in range(model.columnCount()):
        width = head.horizontalAdvance(str(model.headerData(col, Qt.Orientation.Horizontal))) + 26
        for r in rows:
            width = max(width, (bold if r.bold else normal).horizontalAdvance(r.cells[col]) + 14)
        header.resizeSection(col, min(width, cap))


def selected_payload(view: QTableView) -> Any:
    """The payload of the selected row (through the proxy), or None."""
    rows = view.selectionModel().selectedRows() if view.selectionModel() else []
    return rows[0].data(PAYLOAD_ROLE) if rows else None
