"""Where each setting of a saved plan comes from: the user set it, the planner chose it, or it is a
default.

A saved request holds only what the user set (pydantic's fields set,
:func:`core.library.store.request_to_dict`): a field left out is the planner's to choose (sharding,
micro-batch, recomputation, the hardware when none is named) or takes its default, so the plan
reopens as the same plan. The stored result's request is the configuration in effect; comparing the
two says which is which, and every place that shows a plan's settings (the Method page, Compare,
``tuneplan library show``) says it the same way.

Libraries written before schema 4 saved every default as if the user had set it;
:func:`from_complete` reads such a request back as set, with the stored result as the witness of
what the planner had chosen.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from core.planner.choices import OVERRIDABLE
from core.planner.request import PlanRequest
from core.planner.result import PlanResult

Source = Literal["set", "planner", "default"]
SOURCE_WORDS: dict[Source, str] = {
    "set": "set",
    "planner": "chosen by the planner",
    "default": "default",
}
# the sections schema 3 wrote out in full
_SAVED_WHOLE = ("data", "training", "hardware", "pricing")
PLANNER_CHOOSES = frozenset(f"training.{name}" for name in OVERRIDABLE)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'training': {'method': 'lora'}} → {'training.method': 'lora'}; None values are left out (not
    set)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {} if value is None else {prefix: value}


def from_complete(saved: dict[str, Any], result: PlanResult | None) -> dict[str, Any]:
    """A request saved with every default written out, as the user set it: a field at its default
    that the stored plan ran with another value cannot have been the user's (on hardware the user
    names, the planner keeps what the request sets; with the hardware searched, the search chose
    over it anyway), so it is left out and the planner chooses it again, as it did. Without a
    readable result nothing can be told apart and the request is kept as it was."""
    if result is None:
        return saved
    try:
        asked = PlanRequest.model_validate(saved)
    except ValidationError:
        return saved
    out = dict(saved)
    for name in _SAVED_WHOLE:
        section, ran = getattr(asked, name), getattr(result.request, name)
        if not isinstance(saved.get(name), dict) or section is None or ran is None:
            continue
        kept = dict(saved[name])
        for field in list(kept):
            info = type(section).model_fields.get(field)
            if info is None or info.is_required():
                continue
            value = getattr(section, field)
            if (
                value == info.get_default(call_default_factory=True)
                and getattr(ran, field, value) != value
            ):
                del kept[field]
        out[name] = kept
    return out


def _dumped(model: BaseModel) -> dict[str, Any]:
    return flatten(model.model_dump(mode="json", exclude_none=True, by_alias=False))


def settings_in_effect(
    request: dict[str, Any], result: PlanResult
) -> dict[str, tuple[Any, Source]]:
    """Every setting the plan ran with, by path, with where it came from: 'set' (in the saved
    request), 'planner' (the search's choice: the training settings it chooses, all of the hardware
    when none was named, and whatever the framework's recipe or the planner changed) or
    'default'."""
    given = flatten(request)
    try:
        asked: dict[str, Any] = _dumped(PlanRequest.model_validate(request))
    except ValidationError:
        asked = {}
    searched = not isinstance(request.get("hardware"), dict)
    out: dict[str, tuple[Any, Source]] = {}
    for path, value in _dumped(result.request).items():
        source: Source
        if path in given or path.startswith("model."):
            source = "set"
        elif (
            path in PLANNER_CHOOSES
            or (searched and path.startswith("hardware."))
            or asked.get(path) != value
        ):
            source = "planner"
        else:
            source = "default"
        out[path] = (value, source)
    return out
