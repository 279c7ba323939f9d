"""Form fields bound to a path in the request: title and help from the pydantic model, error under
the field.

A field writes what the user typed into :class:`PlanState` and shows the error pydantic reports for
its path. Counts and sizes are text ("2e8", "200M"), never spin boxes: PySide6 ints are 32-bit and
spin boxes clamp instead of saying what is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QLineEdit, QVBoxLayout, QWidget

from core.planner import PlanRequest
from gui.forms import make_error_label, make_hint_label
from gui.wizard.state import PlanState


def field_info(path: str) -> FieldInfo | None:
    """The pydantic FieldInfo for a dotted request path (title, description, default)."""
    model: type[BaseModel] = PlanRequest
    info: FieldInfo | None = None
    for part in path.split("."):
        info = model.model_fields.get(part)
        if info is None:
            return None
        ann = info.annotation
        for candidate in getattr(ann, "__args__", (ann,)):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                model = candidate
                break
    return info


def _default_text(info: FieldInfo | None) -> str:
    if info is None or info.is_required() or info.default is None:
        return ""
    value = info.default
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float) else str(value)


def display(value: Any) -> str:
    """The text a field shows for a request value; a list (PEFT target modules) as the comma list
    the engine also accepts, so a request loaded with ["q_proj", "v_proj"] reads "q_proj,
    v_proj"."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(display(v) for v in value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class FieldBox(QWidget):
    """Title, editor, a one-line hint and the error for one request path, stacked."""

    def __init__(
        self,
        state: PlanState,
        path: str,
        editor: QWidget,
        title: str | None = None,
        hint: str | None = None,
        error_paths: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.state, self.path, self.editor = state, path, editor
        info = field_info(path)
        self.title = title or (info.title if info and info.title else path.rsplit(".", 1)[-1])
        self.error_paths = (path, *error_paths)
        self.label = QLabel(self.title)
        self.label.setBuddy(editor)
        editor.setAccessibleName(self.title)
        description = info.description if info and info.description else ""
        editor.setAccessibleDescription(description)
        editor.setToolTip(description)
        self.hint = make_hint_label(self.title, hint or "")
        self.error = make_error_label(self.title)
        self._shown_error = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        layout.addWidget(self.label)
        layout.addWidget(editor)
        layout.addWidget(self.hint)
        layout.addWidget(self.error)
        layout.addStretch(1)
        state.errors_changed.connect(self.show_error)
        state.replaced.connect(self.refresh)

    def set_hint(self, text: str) -> None:
        if text != self.hint.text():
            self.hint.setText(text)
            self.hint.setVisible(bool(text))

    def show_error(self) -> None:
        """The first error under this field's paths; untouched when it did not change (every edit
        asks)."""
        message = next(
            (self.state.errors[p] for p in self.error_paths if p in self.state.errors), ""
        )
        if message != self._shown_error:
            self._shown_error = message
            self.error.setText(message)
            self.error.setVisible(bool(message))

    def refresh(self) -> None:
        """Re-read the value from the state (after a load); subclasses set their editor."""


class TextField(FieldBox):
    def __init__(
        self,
        state: PlanState,
        path: str,
        title: str | None = None,
        hint: str | None = None,
        placeholder: str | None = None,
    ) -> None:
        self.edit = QLineEdit()
        super().__init__(state, path, self.edit, title, hint)
        self.edit.setPlaceholderText(
            placeholder if placeholder is not None else _default_text(field_info(path))
        )
        self.edit.textEdited.connect(lambda text: self.state.set(self.path, text))
        self.refresh()
        self.show_error()

    def refresh(self) -> None:
        text = display(self.state.get(self.path))
        if text != self.edit.text():
            self.edit.setText(text)


UNSET = ""  # the data of a combo's first item when the request leaves the field out (``automatic``)
PLANNER, DEFAULT = "chosen by the planner", "default"


class ComboField(FieldBox):
    """Choices from an enum (value, label); the hint follows the selected choice.

    ``automatic``: a first item stands for the field left out of the request, and says what is then
    in effect and who chose it ("ZeRO-3 (+ weights) — chosen by the planner", "AMP bf16 — default"):
    the page shows the plan's configuration, and a saved plan keeps only what the user picked
    (core.library.provenance).
    """

    def __init__(
        self,
        state: PlanState,
        path: str,
        options: Sequence[tuple[str, str]],
        hints: dict[str, str] | None = None,
        title: str | None = None,
        default: str | None = None,
        automatic: str | None = None,
    ) -> None:
        self.combo = QComboBox()
        self._labels = dict(options)
        # None: no automatic item; else who chooses a field left out (PLANNER, DEFAULT)
        self._automatic = automatic
        if automatic is not None:
            self.combo.addItem("", UNSET)
        for value, label in options:
            self.combo.addItem(label, value)
            if value and label != value:  # the id the request JSON and the CLI use
                self.combo.setItemData(
                    self.combo.count() - 1,
                    f"{label} — “{value}” in a request file",
                    Qt.ItemDataRole.ToolTipRole,
                )
        self._hints = hints or {}
        self._default = default if default is not None else _default_text(field_info(path))
        self._in_effect: tuple[str, str] | None = None  # (value, who chose it) for a field left out
        super().__init__(state, path, self.combo, title)
        self.combo.activated.connect(self._chosen)
        self.show_in_effect(None)
        self.show_error()

    def _chosen(self, index: int) -> None:
        value = self.combo.itemData(index)
        self.state.set(self.path, None if value == UNSET else value)
        self.set_hint(self.hint_for(self._unset_value() if value == UNSET else value))

    def _unset_value(self) -> str:
        """What runs while the field is left out: the plan's value once there is one, else the
        default."""
        if self._in_effect:
            return self._in_effect[0]
        return "" if self._automatic == PLANNER else self._default  # the planner has not chosen yet

    def show_in_effect(self, in_effect: tuple[str, str] | None) -> None:
        """The value the plan runs with while this field is left out, and who chose it (None: no
        plan yet)."""
        self._in_effect = in_effect
        if self._automatic is not None:
            if in_effect is None:
                text = (
                    "Chosen by the planner"
                    if self._automatic == PLANNER
                    else f"{self._labels.get(self._default, self._default)} — {DEFAULT}"
                )
            else:
                text = f"{self._labels.get(in_effect[0], in_effect[0])} — {in_effect[1]}"
            if self.combo.itemText(0) != text:
                self.combo.setItemText(0, text)
        self.refresh()

    def hint_for(self, value: str) -> str:
        """The line under the combo for a choice (subclasses may compute it from the request)."""
        return self._hints.get(value, "")

    def value(self) -> str:
        return str(self.combo.currentData())

    def refresh(self) -> None:
        given = display(self.state.get(self.path))
        value = given or self._unset_value()
        i = self.combo.findData(given if self._automatic is not None else value)
        if i >= 0 and i != self.combo.currentIndex():
            self.combo.setCurrentIndex(i)
        self.set_hint(self.hint_for(value))


class CheckField(FieldBox):
    def __init__(
        self, state: PlanState, path: str, title: str | None = None, hint: str | None = None
    ) -> None:
        self.check = QCheckBox()
        info = field_info(path)
        self._default = (
            bool(info.default) if info is not None and isinstance(info.default, bool) else False
        )
        self._in_effect: bool | None = None
        super().__init__(state, path, self.check, title, hint)
        self.check.setText(self.title)
        self.label.hide()
        self.check.clicked.connect(lambda checked: self.state.set(self.path, bool(checked)))
        self.refresh()
        self.show_error()

    def show_in_effect(self, value: bool | None) -> None:
        """What the plan runs with while the field is left out (a framework's recipe may turn it
        on)."""
        self._in_effect = value
        self.refresh()

    def refresh(self) -> None:
        value = self.state.get(self.path)
        unset = self._default if self._in_effect is None else self._in_effect
        self.check.setChecked(unset if value is None else bool(value))


class MemberCheckField(FieldBox):
    """A checkbox that puts one value into a list field or takes it out (``pricing.allow``:
    marketplace).

    Each allowance is its own yes/no question for the user, while the request keeps the list the CLI
    reads; the other members of the list (typed in a request file) are kept as they are.
    """

    def __init__(
        self, state: PlanState, path: str, member: str, title: str, hint: str | None = None
    ) -> None:
        self.member = member
        self.check = QCheckBox()
        super().__init__(state, path, self.check, title, hint)
        self.check.setText(title)
        self.label.hide()
        self.check.clicked.connect(self._clicked)
        self.refresh()
        self.show_error()

    def _members(self) -> list[Any]:
        value = self.state.get(self.path)
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return list(value) if isinstance(value, list) else []

    def _clicked(self, checked: bool) -> None:
        members = [m for m in self._members() if display(m) != self.member]
        if checked:
            members.append(self.member)
        self.state.set(self.path, members or None)

    def refresh(self) -> None:
        self.check.setChecked(any(display(m) == self.member for m in self._members()))


def set_enabled(widget: QWidget, enabled: bool) -> None:
    """setEnabled only on a change: it runs after every keystroke, and each Qt call may wait for the
    GIL."""
    if widget.isEnabled() != enabled:
        widget.setEnabled(enabled)


def enum_options(
    enum: type[StrEnum], labels: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    labels = labels or {}
    return [(m.value, labels.get(m.value, m.value)) for m in enum]
