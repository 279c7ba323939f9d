"""A plan opened from the library is planned again from its request as set; when that gives other
figures than it was saved with (the catalog's prices were refreshed since, or a newer planner
estimates differently), the window says so, figure by figure, instead of showing other numbers as if
they were the saved plan's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from core.units import fmt_bytes, fmt_hours, fmt_usd

if TYPE_CHECKING:
    from core.planner import Analysis, PlanResult
    from gui.wizard.state import PlanState


def headline_figures(result: PlanResult) -> dict[str, str]:
    """The figures a person compares at a glance, as the Summary prints them."""
    return {
        "wall time": fmt_hours(result.time.hours),
        "total cost": fmt_usd(result.cost.total_usd),
        "memory per GPU": fmt_bytes(result.memory.per_gpu.total),
    }


def changed_figures(saved: PlanResult, now: PlanResult) -> str:
    """'total cost $24.45 → $26.10, …' for each headline figure that differs; '' when none does."""
    before, after = headline_figures(saved), headline_figures(now)
    return ", ".join(
        f"{name} {before[name]} → {after[name]}" for name in before if before[name] != after[name]
    )


class SavedFiguresCheck(QObject):
    """Signal ``differs(str)``: the sentence, once, when the first plan of an opened record differs
    from it."""

    differs = Signal(str)

    def __init__(self, state: PlanState) -> None:
        super().__init__(state)
        self._expected: tuple[str, PlanResult] | None = None
        state.analysis_changed.connect(self._arrived)
        state.edited.connect(self.forget)  # an edit makes it another plan: nothing to compare with

    def expect(self, name: str, saved: PlanResult | None) -> None:
        self._expected = (name, saved) if saved is not None else None

    def forget(self) -> None:
        self._expected = None

    def _arrived(self, analysis: Analysis | None) -> None:
        if self._expected is None or analysis is None:
            return
        (name, saved), self._expected = self._expected, None
        changed = changed_figures(saved, analysis.result)
        if changed:
            self.differs.emit(
                f"“{name}” now plans to other figures than it was saved with ({changed}): the "
                "catalog's prices or the planner changed since"
            )
