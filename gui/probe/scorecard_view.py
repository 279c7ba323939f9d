"""The readiness verdict: a coloured banner with the one-sentence summary, and every check with its
reasons.

"Apply to plan" emits the plan request with the measured matmul TFLOP/s and busbw put in; the pane
does not know the wizard (``gui.wizard`` and ``gui.probe`` never import each other), so the main
window routes it. When the run has nothing a plan could use, the button is disabled and the line
beside it (and its tooltip) says why.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QLabel, QPushButton, QVBoxLayout, QWidget

from core.probes import Check, Scorecard
from gui.colors import VERDICT_COLORS, status_color
from gui.table_model import PAYLOAD_ROLE, Row, RowsModel, make_table

HEADER = ["status", "check", "measured", "expected", "reason", "source"]
STATUS_COLUMN = 0
CHECK_COLUMN = 1
REASON_COLUMN = 4
STATUS_ORDER = {"FAIL": 0, "WARN": 1, "PASS": 2, "INFO": 3}
# check, measured, expected and source get room for a short phrase (full text in the tooltip and the
# detail line); the reason takes the rest, wrapped over up to three lines.
COLUMN_WIDTHS = {1: 150, 2: 160, 3: 150, 5: 110}
ROW_LINES = 3
APPLY_TIP = "Use the measured matmul TFLOP/s (GEMM speed) and busbw (interconnect) in the plan"
NO_RUN_TO_APPLY = "Nothing to apply to a plan yet: run a suite or reopen a past run."


class StatusRowsModel(RowsModel):
    """RowsModel whose status columns are painted in the status colour (white bold text on it)."""

    def __init__(
        self,
        header: list[str],
        status_columns: int | tuple[int, ...],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(header, parent)
        self.status_columns = (
            (status_columns,) if isinstance(status_columns, int) else tuple(status_columns)
        )

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if index.isValid() and index.column() in self.status_columns:
            status = self.row(index.row()).cells[index.column()]
            c = status_color(status)
            if c is not None and role == Qt.ItemDataRole.BackgroundRole:
                return QBrush(c)
            if c is not None and role == Qt.ItemDataRole.ForegroundRole:
                return QBrush(QColor("#ffffff"))
            if role == Qt.ItemDataRole.FontRole:
                font = QFont()
                font.setBold(True)
                return font
            if role == Qt.ItemDataRole.TextAlignmentRole:
                return int(Qt.AlignmentFlag.AlignCenter)
        return super().data(index, role)


def check_row(check: Check) -> Row:
    status = str(check.status.value if hasattr(check.status, "value") else check.status)
    cells = [status, check.name, check.measured, check.expected, check.reason, check.source]
    tips = [
        status,
        f"{check.name} ({check.area})",
        check.measured,
        check.expected,
        check.reason,
        check.source,
    ]
    return Row(
        cells,
        sort=[
            STATUS_ORDER.get(status, 9),
            check.name,
            check.measured,
            check.expected,
            check.reason,
            check.source,
        ],
        payload=check,
        tooltips=tips,
    )


def verdict_value(card: Scorecard | None) -> str | None:
    """'READY', 'NOT READY', …; None for no card or a card without a verdict (nothing was
    graded)."""
    return card.verdict.value if card is not None and card.verdict is not None else None


class VerdictBanner(QLabel):
    """The verdict in large type on its colour; grey while there is none."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Verdict")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setMargin(10)
        self.verdict: str | None = None
        self.show_verdict(None, "No verdict yet: run a suite or reopen a past run.")

    def show_verdict(self, verdict: str | None, summary: str) -> None:
        self.verdict = verdict
        code = VERDICT_COLORS.get(verdict or "", "#6b6b6b")
        self.setStyleSheet(
            f"QLabel {{ background: {code}; color: white; border-radius: 4px; "
            f"font-size: 13pt; font-weight: 600; }}"
        )
        shown = (
            summary
            if not verdict or summary.upper().startswith(verdict)
            else f"{verdict}: {summary}"
        )
        self.setText(shown)
        self.setAccessibleDescription(self.text())


class ScorecardView(QWidget):
    """Signals: ``apply_requested()`` when the user asks to apply the measured figures to the
    plan."""

    apply_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Scorecard")
        self.scorecard: Scorecard | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.banner = VerdictBanner()
        layout.addWidget(self.banner)
        row = QHBoxLayout()
        self.counts = QLabel("")
        self.counts.setAccessibleName("Check counts")
        row.addWidget(self.counts, 1)
        self.apply_note = QLabel("")
        self.apply_note.setAccessibleName("Apply to plan note")
        self.apply_note.setWordWrap(True)
        self.apply_note.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.apply_note, 2)
        self.apply_button = QPushButton("Apply to plan")
        self.apply_button.setAccessibleName("Apply to plan")
        self.apply_button.clicked.connect(lambda _checked=False: self.apply_requested.emit())
        row.addWidget(self.apply_button)
        self.set_apply_reason(NO_RUN_TO_APPLY)
        layout.addLayout(row)
        self.model = StatusRowsModel(HEADER, STATUS_COLUMN, self)
        self.table = make_table(self.model, "Scorecard checks")
        header = self.table.horizontalHeader()
        for column, width in COLUMN_WIDTHS.items():
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(column, width)
        header.setSectionResizeMode(REASON_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        lines = self.table.fontMetrics().lineSpacing() * ROW_LINES + 6
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(lines)
        self.table.selectionModel().currentRowChanged.connect(
            lambda _cur, _prev: self._show_detail()
        )
        layout.addWidget(self.table, 1)
        self.detail = QLabel(
            "Select a check to read its measured and expected values, source and reason."
        )
        self.detail.setAccessibleName("Check detail")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.detail)

    def show_scorecard(self, scorecard: Scorecard | None, note: str = "") -> None:
        self.scorecard = scorecard
        self.detail.setText(
            "Select a check to read its measured and expected values, source and reason."
            if scorecard is not None and scorecard.checks
            else ""
        )
        if scorecard is None:
            self.banner.show_verdict(
                None, note or "No verdict: the run ended before the scorecard."
            )
            self.model.set_rows([])
            self.counts.setText("")
            return
        self.banner.show_verdict(verdict_value(scorecard), scorecard.summary)
        rows = sorted(
            (check_row(c) for c in scorecard.checks),
            key=lambda r: STATUS_ORDER.get(r.cells[STATUS_COLUMN], 9),
        )
        self.model.set_rows(rows)
        tally: dict[str, int] = {}
        for r in rows:
            tally[r.cells[STATUS_COLUMN]] = tally.get(r.cells[STATUS_COLUMN], 0) + 1
        self.counts.setText(
            " · ".join(
                f"{n} {s}"
                for s, n in sorted(tally.items(), key=lambda kv: STATUS_ORDER.get(kv[0], 9))
            )
        )
        if rows:  # the worst check first, explained below the table
            self.table.selectRow(0)
            self._show_detail()

    def no_verdict_yet(self, host: str) -> None:
        """No run on screen: the card to come is ``host``'s, named so that it is never read as
        another host's."""
        self.show_scorecard(None, f"No verdict yet for {host}: run a suite or reopen a past run.")
        self.set_apply_reason(NO_RUN_TO_APPLY)

    def set_apply_reason(self, reason: str | None) -> None:
        """``reason``: why "Apply to plan" has nothing to apply (shown beside the button and as its
        tooltip); None enables it."""
        self.apply_button.setEnabled(reason is None)
        self.apply_button.setToolTip(reason or APPLY_TIP)
        self.apply_note.setText(reason or "")

    def _show_detail(self) -> None:
        index = self.table.currentIndex()
        check = index.data(PAYLOAD_ROLE) if index.isValid() else None
        if isinstance(check, Check):
            self.detail.setText(
                f"{check.name} — {check.status.value}. Measured: {check.measured}. Expected: "
                f"{check.expected}. Source: {check.source}. {check.reason}"
            )

    def statuses(self) -> dict[str, str]:
        """Check name → status text as shown (for tests and the comparison view)."""
        return {
            self.model.row(i).cells[CHECK_COLUMN]: self.model.row(i).cells[STATUS_COLUMN]
            for i in range(self.model.rowCount())
        }
