"""A "Refresh prices" button and its status line: core.catalog.refresh run off the GUI thread.

A refresh downloads a few MB from the public catalogs, which takes seconds on a slow line; it runs
through the window's executor (gui/workers.py), so the window keeps answering. The status line shows
the summary the command line prints (prices kept per source, GPU names skipped, where they were
written) or the error's one sentence, after which the previous refreshed prices are still in use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.catalog import CatalogError
from gui.workers import Executor, error_message

if TYPE_CHECKING:
    from core.catalog import RefreshReport

BUSY_TEXT = "Downloading prices from the SkyPilot and gpuhunt catalogs…"


class RefreshPricesButton(QWidget):
    """Emits ``refreshed(RefreshReport)`` after new prices were written, so a view can reload the
    catalog."""

    refreshed = Signal(object)

    def __init__(
        self,
        executor: Executor,
        refresh_fn: Callable[[], RefreshReport] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._executor = executor
        self._refresh_fn = refresh_fn or _refresh
        self.button = QPushButton("Refresh prices")
        self.button.setObjectName("refresh_prices")
        self.button.setToolTip(
            "Download current prices from SkyPilot's and dstack's gpuhunt public catalogs. "
            "Nothing is downloaded unless you click."
        )
        self.status = QLabel("")
        self.status.setObjectName("refresh_status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.status)
        self.button.clicked.connect(self.start)

    def start(self) -> None:
        """Run one refresh; a second click while it runs does nothing (the button is disabled)."""
        self.button.setEnabled(False)
        self.status.setText(BUSY_TEXT)
        self._executor.submit(self._refresh_fn, self._done, self._failed)

    def _done(self, report: RefreshReport) -> None:
        self.button.setEnabled(True)
        self.status.setText(report.summary())
        self.refreshed.emit(report)

    def _failed(self, exc: BaseException) -> None:
        self.button.setEnabled(True)
        if isinstance(exc, CatalogError):
            self.status.setText(
                f"Prices were not refreshed: {str(exc).rstrip('.')}. The previous prices are kept."
            )
        else:
            self.status.setText(error_message(exc))


def _refresh() -> RefreshReport:
    """The real refresh, imported when clicked: its download and parsing code need not slow the
    window's start."""
    from core.catalog import refresh_prices

    return refresh_prices()
