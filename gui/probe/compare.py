"""Two probe runs side by side (same host at two times, or two hosts): scorecard rows aligned by
check, differences highlighted, so "did the provider fix it?" and "which box is better?" take one
glance.

Checks are matched by what they are (``core.probes.scorecard.check_key``): a storage check by its
role (data, checkpoint, scratch), not by its path, since the scratch directory gets a new random
name every run. A data or checkpoint path that differs between the runs is named as a difference;
the scratch path is not.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from core.probes import Check, RunSummary, Scorecard, StoredRun, check_key, check_path
from gui.probe.scorecard_view import StatusRowsModel, VerdictBanner, verdict_value
from gui.table_model import Row, make_table

HEADER = [
    "area",
    "check",
    "A status",
    "A measured",
    "B status",
    "B measured",
    "expected",
    "difference",
]
STATUS_COLUMNS = (2, 4)


@dataclass(frozen=True)
class Side:
    """One side of the comparison: the run, its host, its scorecard (None when the run has none)."""

    summary: RunSummary
    scorecard: Scorecard | None

    @property
    def title(self) -> str:
        return f"{self.summary.host} · run {self.summary.id}"


def _status(check: Check | None) -> str:
    if check is None:
        return "—"
    return str(check.status.value if hasattr(check.status, "value") else check.status)


def compare_rows(a: Scorecard | None, b: Scorecard | None) -> list[Row]:
    """Rows in A's order, then checks only B has; cells that differ are highlighted."""
    checks_a = {check_key(c): c for c in (a.checks if a else [])}
    checks_b = {check_key(c): c for c in (b.checks if b else [])}
    keys = list(checks_a) + [k for k in checks_b if k not in checks_a]
    rows = []
    for key in keys:
        ca, cb = checks_a.get(key), checks_b.get(key)
        either = ca if ca is not None else cb
        same_name = ca is None or cb is None or ca.name == cb.name
        name = either.name if same_name and either is not None else key[1]
        cells = [
            key[0],
            name,
            _status(ca),
            ca.measured if ca else "—",
            _status(cb),
            cb.measured if cb else "—",
            either.expected if either is not None else "",
            "",
        ]
        highlight: set[int] = set()
        if ca is None or cb is None:
            cells[7] = "only in B" if ca is None else "only in A"
            highlight = {7}
        else:
            diffs = []
            if cells[2] != cells[4]:
                diffs.append("status")
            if not same_name and not key[1].endswith("scratch"):
                diffs.append("path")
                highlight.add(1)
            if ca.measured != cb.measured:
                diffs.append("measured")
                highlight |= {3, 5}
            cells[7] = ", ".join(diffs)
            if diffs:
                highlight.add(7)
        tips = [
            *cells[:7],
            "\n".join(
                x for x in (f"A: {ca.reason}" if ca else "", f"B: {cb.reason}" if cb else "") if x
            ),
        ]
        if not same_name and ca is not None and cb is not None:
            tips[1] = f"A: {check_path(ca)}\nB: {check_path(cb)}"
        rows.append(Row(cells, highlight=highlight, bold=bool(cells[7]), tooltips=tips))
    return rows


class CompareDialog(QDialog):
    """Non-modal; rows are built once from the two sides."""

    @classmethod
    def of_runs(cls, a: StoredRun, b: StoredRun, parent: QWidget | None = None) -> CompareDialog:
        """Two stored runs side by side, by their summaries and scorecards."""
        return cls(Side(a.summary, a.scorecard), Side(b.summary, b.scorecard), parent)

    def __init__(self, a: Side, b: Side, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Compare {a.title} with {b.title}")
        self.setAccessibleName("Compare probe runs")
        self.resize(1100, 640)
        layout = QVBoxLayout(self)
        banners = QHBoxLayout()
        self.banners: list[VerdictBanner] = []
        for letter, side in (("A", a), ("B", b)):
            column = QVBoxLayout()
            title = QLabel(f"{letter}: {side.title}")
            title.setAccessibleName(f"Run {letter}")
            column.addWidget(title)
            banner = VerdictBanner()
            banner.setAccessibleName(f"Verdict {letter}")
            if side.scorecard is not None:
                banner.show_verdict(verdict_value(side.scorecard), side.scorecard.summary)
            else:
                banner.show_verdict(
                    None, f"run {side.summary.id} has no scorecard ({side.summary.status})"
                )
            column.addWidget(banner)
            self.banners.append(banner)
            banners.addLayout(column, 1)
        layout.addLayout(banners)
        self.model = StatusRowsModel(HEADER, STATUS_COLUMNS, self)
        self.rows = compare_rows(a.scorecard, b.scorecard)
        self.model.set_rows(self.rows)
        self.table = make_table(self.model, "Compared checks", sortable=False)
        layout.addWidget(self.table, 1)
        differing = sum(1 for r in self.rows if r.cells[7])
        self.summary = QLabel(f"{differing} of {len(self.rows)} checks differ")
        self.summary.setAccessibleName("Difference count")
        layout.addWidget(self.summary)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
