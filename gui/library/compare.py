"""Two plans side by side: key figures first, then every request field; differing rows highlighted."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget

from core.library.store import PlanRecord
from core.planner.models import PlanResult
from core.units import fmt_bytes, fmt_gpu_hours, fmt_hours, fmt_usd
from gui.table_model import Row, RowsModel, make_table


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """{'training': {'method': 'lora'}} → {'training.method': 'lora'}."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: shown(value)}


def shown(value: Any) -> str:
    """2e8 as 200,000,000 and True as yes: the way the wizard's fields say them."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e18):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _figures(record: PlanRecord, result: PlanResult | None) -> dict[str, str]:
    from core.planner.analysis import cost_range_text, hardware_label  # the planner is not loaded at start

    out = {"name": record.name, "updated": record.updated}
    if result is None:
        return {**out, "result": "not planned"}
    m = result.memory
    return {
        **out,
        "model": result.model_name,
        "method": result.request.training.method.value,
        "hardware": hardware_label(result.hardware),
        "sharding": result.request.training.sharding.value,
        "wall time": fmt_hours(result.time.hours),
        "GPU-hours": fmt_gpu_hours(result.time.gpu_hours),
        "total cost": fmt_usd(result.cost.total_usd),
        "cost range": cost_range_text(result),
        "provider": result.cost.provider or "—",
        "memory per GPU": f"{fmt_bytes(m.per_gpu.total)} of {fmt_bytes(m.gpu_memory)}",
        "fits": "yes" if m.fits else "no",
        "tokens/s": f"{result.compute.tokens_per_second:,.0f}",
        "achieved MFU": f"{result.compute.mfu:.0%}",
    }


def compare_rows(a: PlanRecord, b: PlanRecord) -> list[Row]:
    """Rows of (what, plan A, plan B); a row whose values differ has both value cells highlighted."""
    rows: list[Row] = []
    fa, fb = _figures(a, a.result()), _figures(b, b.result())
    ra, rb = flatten(a.request), flatten(b.request)
    for left, right, prefix in ((fa, fb, ""), (ra, rb, "request: ")):
        for key in dict.fromkeys([*left, *right]):
            va, vb = left.get(key, "—"), right.get(key, "—")
            differs = va != vb and key not in ("name", "updated")
            rows.append(Row([prefix + key, va, vb], highlight={1, 2} if differs else set(), bold=differs))
    return rows


class CompareView(QWidget):
    def __init__(self, a: PlanRecord, b: PlanRecord, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        rows = compare_rows(a, b)
        differing = sum(1 for r in rows if r.highlight)
        note = QLabel(f"{differing} of {len(rows)} rows differ (highlighted).")
        note.setAccessibleName("Comparison summary")
        layout.addWidget(note)
        self.model = RowsModel(["", a.name, b.name], self)
        self.model.set_rows(rows)
        self.table = make_table(self.model, "Plan comparison", sortable=False)
        layout.addWidget(self.table)


class CompareDialog(QDialog):
    def __init__(self, a: PlanRecord, b: PlanRecord, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Compare: {a.name} — {b.name}")
        self.setAccessibleName("Compare plans")
        layout = QVBoxLayout(self)
        self.view = CompareView(a, b, self)
        layout.addWidget(self.view)
        self.resize(900, 640)
