"""The Catalog place: every price record the plans are priced from, sortable and filterable, with
its age.

A founder who is told "this price is stale" wants to see the others: which providers rent this GPU,
in which pricing model, seen when. The table shows the catalog's price records as they are (one row
a record, serverless and marketplace rows included, marked by their pricing model); the filters
narrow it by GPU, provider, pricing model and maximum age. With a maximum age set, undated records
are hidden too: their age is unknown, so they cannot be shown to be within it. The strip at the top
is kept for the catalog refresh button.

Made without a catalog (the window's place), it reads the user's catalog when it is first shown:
filling the table is a few hundredths of a second the window's start should not wait for, and the
place is not on screen then.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSortFilterProxyModel
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.catalog import (
    PRICING_MODELS,
    STALE_AFTER_DAYS,
    Catalog,
    CatalogError,
    Price,
    load_catalog,
)
from gui.table_model import PAYLOAD_ROLE, Row, RowsModel, SortProxy, make_table

HEADER = [
    "provider",
    "instance",
    "GPU",
    "GPUs per instance",
    "pricing model",
    "USD/GPU-h",
    "seen",
    "age",
    "confidence",
    "source",
]
ANY = ""  # the combo boxes' data for "all"


@dataclass(frozen=True)
class PriceFilter:
    """What the user narrowed the table to; empty strings and 0 mean no limit."""

    gpu: str = ANY
    provider: str = ANY
    pricing_model: str = ANY
    max_age_days: int = 0

    def accepts(self, price: Price, today: dt.date) -> bool:
        if self.gpu and price.gpu != self.gpu:
            return False
        if self.provider and price.provider != self.provider:
            return False
        if self.pricing_model and price.pricing_model.value != self.pricing_model:
            return False
        if self.max_age_days:
            age = price.age_days(today)
            return age is not None and age <= self.max_age_days
        return True


class _PriceProxy(SortProxy):
    """Sorts like every table in the window and keeps only the rows the filter accepts."""

    def __init__(self, parent: QWidget, today: dt.date) -> None:
        super().__init__(parent)
        self.today = today
        self.filter = PriceFilter()

    def set_filter(self, f: PriceFilter) -> None:
        # Qt before 6.9; invalidateFilter() is deprecated from 6.10
        if not hasattr(self, "beginFilterChange"):
            self.filter = f
            self.invalidateFilter()
            return
        self.beginFilterChange()
        self.filter = f
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        price = self.sourceModel().index(source_row, 0, source_parent).data(PAYLOAD_ROLE)
        return price is None or self.filter.accepts(price, self.today)


def age_text(price: Price, today: dt.date) -> str:
    """'12 days', 'stale (254 days)', 'undated'."""
    age = price.age_days(today)
    if age is None:
        return "undated"
    days = f"{age} day{'s' if age != 1 else ''}"
    return f"stale ({days})" if age > STALE_AFTER_DAYS else days


def usd_text(value: float) -> str:
    """The record's own figure, cents at least, up to four decimals: '$1.00', '$2.2036',
    '$0.0625'."""
    whole, _, decimals = f"{value:,.4f}".rstrip("0").partition(".")
    return f"${whole}.{decimals.ljust(2, '0')}"


def price_row(price: Price, today: dt.date) -> Row:
    """One record: display strings, numeric sort keys for the counts, the price and the age (undated
    last)."""
    # the instance sizes sold: "1, 8" is not "1 to 8"
    sizes = ", ".join(str(n) for n in price.sizes)
    cells = [
        price.provider_name,
        price.instance,
        price.gpu,
        sizes,
        price.pricing_model.value.replace("_", "-"),
        usd_text(price.usd_per_gpu_hour),
        price.seen,
        age_text(price, today),
        price.confidence,
        price.source,
    ]
    sort: list[object] = list(cells)
    sort[3], sort[5], sort[7] = (
        price.gpus_per_instance,
        price.usd_per_gpu_hour,
        price.age_days(today),
    )
    return Row(
        cells=cells,
        sort=sort,
        payload=price,
        highlight={7} if price.freshness(today) != "fresh" else set(),
    )


class CatalogView(QWidget):
    """The Catalog place. ``refresh_area`` is an empty strip at the top for the refresh button."""

    def __init__(
        self,
        catalog: Catalog | None = None,
        today: dt.date | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.today = today or dt.date.today()
        self.setAccessibleName("Catalog")
        layout = QVBoxLayout(self)
        self.refresh_area = QHBoxLayout()
        layout.addLayout(self.refresh_area)
        self.error = QLabel()
        self.error.setAccessibleName("Catalog problem")
        self.error.setWordWrap(True)
        self.error.hide()
        layout.addWidget(self.error)
        filters = QFormLayout()
        self.gpu = self._combo("GPU filter")
        self.provider = self._combo("Provider filter")
        self.pricing_model = self._combo("Pricing model filter")
        self.max_age = QSpinBox()
        self.max_age.setAccessibleName("Maximum age")
        self.max_age.setRange(0, 3650)
        self.max_age.setSuffix(" days")
        self.max_age.setSpecialValueText("any age")
        self.max_age.setToolTip(
            f"Hide prices seen longer ago than this, and undated ones; stale after "
            f"{STALE_AFTER_DAYS} days"
        )
        self.max_age.valueChanged.connect(self._apply)
        for label, widget in (
            ("GPU", self.gpu),
            ("Provider", self.provider),
            ("Pricing model", self.pricing_model),
            ("Maximum age", self.max_age),
        ):
            filters.addRow(label, widget)
        layout.addLayout(filters)
        self.count = QLabel()
        self.count.setAccessibleName("Price count")
        layout.addWidget(self.count)
        self.model = RowsModel(HEADER, self)
        self.proxy = _PriceProxy(self, self.today)
        self.table = make_table(self.model, "Prices", proxy=self.proxy)
        layout.addWidget(self.table, 1)
        self._unread = catalog is None  # the user's catalog is read when the place is first shown
        if catalog is not None:
            self.set_catalog(catalog)

    def showEvent(self, event: QShowEvent) -> None:
        if self._unread:
            self._unread = False
            try:
                self.set_catalog(load_catalog())
            except CatalogError as exc:
                self.show_problem(str(exc))
        super().showEvent(event)

    def _combo(self, name: str) -> QComboBox:
        combo = QComboBox()
        combo.setAccessibleName(name)
        combo.currentIndexChanged.connect(self._apply)
        return combo

    def show_problem(self, text: str) -> None:
        """A catalog that cannot be read (a broken override file): say so above the table, keep what
        is shown."""
        self.error.setText(text)
        self.error.show()

    def set_catalog(self, catalog: Catalog) -> None:
        """Show `catalog`'s prices (after a refresh too), keeping the filters where the values still
        exist."""
        self._unread = False
        self.error.hide()
        prices = catalog.prices
        self._fill(self.gpu, "All GPUs", [(g, g) for g in sorted({p.gpu for p in prices})])
        names = {p.provider: p.provider_name for p in prices}
        self._fill(
            self.provider,
            "All providers",
            sorted(((n, s) for s, n in names.items()), key=lambda t: t[0]),
        )
        self._fill(
            self.pricing_model,
            "All pricing models",
            [(m.replace("_", "-"), m) for m in PRICING_MODELS],
        )
        self.model.set_rows([price_row(p, self.today) for p in prices])
        self._apply()

    def _fill(self, combo: QComboBox, everything: str, items: list[tuple[str, str]]) -> None:
        kept = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(everything, ANY)
        for text, data in items:
            combo.addItem(text, data)
        combo.setCurrentIndex(max(0, combo.findData(kept)) if kept else 0)
        combo.blockSignals(False)

    def current_filter(self) -> PriceFilter:
        return PriceFilter(
            gpu=self.gpu.currentData() or ANY,
            provider=self.provider.currentData() or ANY,
            pricing_model=self.pricing_model.currentData() or ANY,
            max_age_days=self.max_age.value(),
        )

    def _apply(self) -> None:
        self.proxy.set_filter(self.current_filter())
        self.count.setText(f"{self.proxy.rowCount()} of {self.model.rowCount()} prices")
