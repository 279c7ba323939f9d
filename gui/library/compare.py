"""Two plans side by side: key figures first, then every setting each plan ran with, saying which
the user set and which the planner chose (core.library.provenance); differing rows highlighted."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget

from core.library import SOURCE_WORDS, PlanRecord, Source, flatten, settings_in_effect
from core.planner import PlanResult
from core.units import fmt_bytes, fmt_gpu_hours, fmt_hours, fmt_usd
from gui.table_model import Row, RowsModel, make_table


def shown(value: Any) -> str:
    """2e8 as 200,000,000 and True as yes: the way the wizard's fields say them."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (
        isinstance(value, float) and value.is_integer() and abs(value) < 1e18
    ):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _figures(record: PlanRecord, result: PlanResult | None) -> dict[str, str]:
    from core.planner import cost_range_text, hardware_label  # the planner is not loaded at start

    out = {"name": record.name, "updated": record.updated}
    if result is None:
        return {**out, "result": "cannot be read" if record.result_problem else "not planned"}
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


def _settings(record: PlanRecord, result: PlanResult | None) -> dict[str, tuple[str, Source]]:
    """Each setting the plan ran with and where it came from; only what was set when there is no
    result."""
    if result is None:
        return {path: (shown(value), "set") for path, value in flatten(record.request).items()}
    return {
        path: (shown(value), source)
        for path, (value, source) in settings_in_effect(record.request, result).items()
    }


def _with_source(setting: tuple[str, Source] | None) -> str:
    """'zero3 (chosen by the planner)', '2,048 (default)', or the value alone when the user set
    it."""
    if setting is None:
        return "—"
    value, source = setting
    return value if source == "set" else f"{value} ({SOURCE_WORDS[source]})"


def compare_rows(a: PlanRecord, b: PlanRecord) -> list[Row]:
    """Rows of (what, plan A, plan B); a row whose values differ has both value cells highlighted (a
    setting by its value: the same value set by one plan and chosen for the other is not a
    difference in the plan)."""
    rows: list[Row] = []
    ra, rb = a.result(), b.result()
    fa, fb = _figures(a, ra), _figures(b, rb)
    for key in dict.fromkeys([*fa, *fb]):
        va, vb = fa.get(key, "—"), fb.get(key, "—")
        differs = va != vb and key not in ("name", "updated")
        rows.append(Row([key, va, vb], highlight={1, 2} if differs else set(), bold=differs))
    sa, sb = _settings(a, ra), _settings(b, rb)
    rank = {"set": 0, "planner": 1, "default": 2}  # what was chosen first, the defaults after

    def order(key: str) -> tuple[int, str]:
        return min(rank[s[key][1]] for s in (sa, sb) if key in s), key

    for key in sorted(dict.fromkeys([*sa, *sb]), key=order):
        left, right = sa.get(key), sb.get(key)
        differs = (left or ("—",))[0] != (right or ("—",))[0]
        rows.append(
            Row(
                [f"setting: {key}", _with_source(left), _with_source(right)],
                highlight={1, 2} if differs else set(),
                bold=differs,
            )
        )
    return rows


class CompareView(QWidget):
    def __init__(self, a: PlanRecord, b: PlanRecord, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        rows = compare_rows(a, b)
        differing = sum(1 for r in rows if r.highlight)
        problems = " ".join(
            f"{problem[0].upper()}{problem[1:]}." for problem in [*a.problems, *b.problems]
        )
        note = QLabel(f"{differing} of {len(rows)} rows differ (highlighted). {problems}".strip())
        note.setWordWrap(True)
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
