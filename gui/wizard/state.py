"""The request being edited, exactly as typed, with its validation errors and the latest analysis.

Fields write raw text into a nested dict; pydantic (``PlanRequest.model_validate``) is the one judge
of it, so a field's error comes from the same rules the CLI applies, and nothing typed is lost when
it is wrong. Planning is debounced and runs on the injected executor; a result for an older edit is
dropped.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import QObject, QTimer, Signal

from core.catalog import CatalogError
from core.planner import PlanRequest
from core.validation import field_errors
from gui.long_lived import freeze_once
from gui.workers import Executor

if TYPE_CHECKING:
    from core.planner import Analysis

DEFAULT_REQUEST: dict[str, Any] = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "2e8"}}
PLAN_PATH = "plan"  # errors from planning that name no field
_FIELD_AT_START = re.compile(r"^([a-z_]+(?:\.[a-z_]+)*)(?=[: ])")
_KNOWN_ROOTS = set(PlanRequest.model_fields)


def plan_error_path(message: str) -> str:
    """Where a planner error belongs: the field it starts with ('data.seq_len 9000 is …'), else
    'plan'."""
    match = _FIELD_AT_START.match(message)
    if match and match.group(1).split(".")[0] in _KNOWN_ROOTS:
        return match.group(1)
    return PLAN_PATH


def owner_path(path: str, message: str) -> str:
    """The field an error is about: a section's cross-field rule that names a field of it first
    ('training': 'training.sequence_parallel needs ...') belongs to that field, anything else to its
    own path."""
    named = plan_error_path(message)
    return named if named.startswith(path + ".") else path


def plan_on_worker(request: PlanRequest) -> Analysis:
    """The plan and what the pages show of it, computed on the executor's thread.

    The planner and NumPy are imported here, by the first plan, and not when the window is built:
    they are a third of the start-up's imports, and nothing on screen needs them before a plan's
    figures arrive. The import then runs on the worker while the window already answers.
    """
    from core.planner import analyse

    return analyse(request)


def under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == pre or path.startswith(pre + ".") for pre in prefixes)


class PlanState(QObject):
    """Signals: ``edited()`` a field changed the request; ``replaced()`` the request was replaced
    from outside (load, a chosen candidate) so fields re-read it; ``errors_changed()``;
    ``analysis_changed(object)`` an
    :class:`Analysis` or None; ``busy_changed(bool)``."""

    edited = Signal()
    replaced = Signal()
    errors_changed = Signal()
    analysis_changed = Signal(object)
    busy_changed = Signal(bool)

    def __init__(
        self, executor: Executor, debounce_ms: int = 150, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._executor = executor
        self._raw: dict[str, Any] = copy.deepcopy(DEFAULT_REQUEST)
        self._local: dict[str, str] = {}
        self._plan_error: tuple[str, str] | None = None
        self.errors: dict[str, str] = {}
        self.request: PlanRequest | None = None
        self.analysis: Analysis | None = None
        self.busy = False
        self._generation = 0
        self._running = False  # a plan is on the executor
        self._again = False  # an edit arrived while it ran
        self._stopped = False  # the window closed: nothing plans any more
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self.recompute_now)
        self._validate()
        self._schedule()

    # ---- raw values

    def raw(self) -> dict[str, Any]:
        """A copy of the request as typed (strings where the user typed them)."""
        return copy.deepcopy(self._raw)

    def get(self, path: str) -> Any:
        node: Any = self._raw
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def set(self, path: str, value: Any) -> None:
        """Set one value ('' or None removes it so the model's default applies) and re-validate."""
        parts = path.split(".")
        node = self._raw
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        if value is None or (isinstance(value, str) and not value.strip()):
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
        self._changed()

    def set_section(self, name: str, value: dict[str, Any] | None) -> None:
        """Replace a whole section (model, hardware); None removes it (hardware: let the planner
        search)."""
        if value is None:
            self._raw.pop(name, None)
        else:
            self._raw[name] = copy.deepcopy(value)
        self._changed()

    def load(self, raw: dict[str, Any]) -> None:
        """Replace the whole request (from a file or the library); fields re-read it."""
        self._raw = copy.deepcopy(raw)
        self._local.clear()
        self._changed(replaced=True)

    def update_many(
        self, values: dict[str, Any], sections: dict[str, dict[str, Any] | None]
    ) -> None:
        """Several edits as one (choosing a candidate sets hardware and training fields
        together)."""
        for name, section in sections.items():
            if section is None:
                self._raw.pop(name, None)
            else:
                self._raw[name] = copy.deepcopy(section)
        for path, value in values.items():
            parts = path.split(".")
            node = self._raw.setdefault(parts[0], {})
            for part in parts[1:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        self._changed(replaced=True)

    def set_local_error(self, path: str, message: str | None) -> None:
        """An error found before pydantic sees the value (a config.json that is not JSON)."""
        if message is None:
            if self._local.pop(path, None) is None:
                return
        else:
            self._local[path] = message
        self._changed()

    # ---- errors

    def _changed(self, replaced: bool = False) -> None:
        self._plan_error = None
        self._validate()
        if replaced:
            self.replaced.emit()
        else:
            self.edited.emit()
        self._schedule()

    def _validate(self) -> None:
        errors: dict[str, str] = {}
        try:
            request: PlanRequest | None = PlanRequest.model_validate(self._raw)
        except ValidationError as exc:
            request = None
            errors.update(field_errors(exc))
        errors.update(self._local)
        if self._plan_error:
            errors.setdefault(*self._plan_error)
        self.request = None if errors else request
        if errors != self.errors:
            self.errors = errors
            self.errors_changed.emit()
        # no figures for a request that is not there
        if self.request is None and self.analysis is not None:
            self.analysis = None
            self.analysis_changed.emit(None)

    # ---- planning

    def _schedule(self) -> None:
        self._generation += 1
        if self.request is None or self._stopped:
            self._timer.stop()
            self._set_busy(False)
            return
        self._set_busy(True)
        self._timer.start()

    def _set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.busy_changed.emit(busy)

    def recompute_now(self) -> None:
        """Plan the current request on the executor (the timer calls this; tests may call it
        directly).

        One plan runs at a time: while one runs, a newer edit waits for it and then plans the latest
        request. Two plans in parallel would only compete with each other, and with the UI thread,
        for the GIL.
        """
        self._timer.stop()
        if self.request is None or self._stopped:
            return
        self._set_busy(True)
        if self._running:
            self._again = True
            return
        request, generation = self.request, self._generation
        self._running = True
        self._executor.submit(
            lambda: plan_on_worker(request),
            lambda a: self._finished(generation, a, None),
            lambda exc: self._finished(generation, None, exc),
        )

    def _finished(
        self, generation: int, analysis: Analysis | None, exc: BaseException | None
    ) -> None:
        self._running = False
        if exc is not None:
            self._on_error(generation, exc)
        elif analysis is not None:
            self._on_analysis(generation, analysis)
        if self._again:
            self._again = False
            if not self._timer.isActive():  # else the timer plans the newest edit soon anyway
                self.recompute_now()

    def _on_analysis(self, generation: int, analysis: Analysis) -> None:
        if generation != self._generation:
            return
        self.analysis = analysis
        self._set_busy(False)
        self.analysis_changed.emit(analysis)
        freeze_once("planner")  # its modules and NumPy were imported for this first plan

    def _on_error(self, generation: int, exc: BaseException) -> None:
        if generation != self._generation:
            return
        if not isinstance(exc, CatalogError | ValueError):  # PlanError is a ValueError
            message = f"the planner failed unexpectedly: {type(exc).__name__}: {exc}"
        else:
            message = str(exc)
        self._plan_error = (plan_error_path(message), message)
        self.analysis = None
        self._validate()
        self._set_busy(False)
        self.analysis_changed.emit(None)

    def stop(self) -> None:
        """The window is closing: stop the debounce timer, and start no plan from now on (a late
        edit or a plan that finishes after this one would otherwise queue another behind a closed
        window)."""
        self._stopped = True
        self._timer.stop()
        self._generation += 1  # a result still on its way is for an edit no one will see
        self._set_busy(False)

    @property
    def pending(self) -> bool:
        return self._timer.isActive()

    @property
    def executor(self) -> Executor:
        """Where the wizard's other slow work runs too (the launch files' export)."""
        return self._executor
