"""One sentence with both ends of the range for a request number out of range, not pydantic's half
of it.

pydantic says "Input should be less than or equal to 1000" for ``--epochs nan`` and for ``--epochs
5000`` alike: it names one bound and does not say that nan is no number. Every request model
(RequestModel, here) wraps its validation in :func:`restate_ranges`, which rewrites each range error
of its own fields as "nan is not a number: use more than 0 and at most 1,000", with both bounds
where the field has both.
"""

from __future__ import annotations

import math
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from core.planner.request_fields import Within
from core.validation import shown_number

RANGE_ERRORS = frozenset(
    {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}
)


def _figure(x: Any) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def allowed_range(field: FieldInfo) -> str:
    """The range a field's gt/ge/lt/le constraints allow, in words: 'more than 0 and at most 1,000',
    '16 to 64'."""
    bounds: dict[str, Any] = {}
    for m in field.metadata:
        # the field states its range in words (and unit)
        if isinstance(getattr(m, "func", None), Within):
            return str(m.func.allowed)
        for name in ("gt", "ge", "lt", "le"):
            if isinstance(m, Gt | Ge | Lt | Le) and hasattr(m, name):
                bounds[name] = _figure(getattr(m, name))
    gt, ge, lt, le = (bounds.get(k) for k in ("gt", "ge", "lt", "le"))
    if ge is not None and (le or lt) is not None:
        return f"{ge} to {le}" if le is not None else f"{ge} to below {lt}"
    low = f"more than {gt}" if gt is not None else f"at least {ge}" if ge is not None else ""
    high = f"at most {le}" if le is not None else f"below {lt}" if lt is not None else ""
    return " and ".join(p for p in (low, high) if p) or "a finite number"


def _sentence(field: FieldInfo, value: Any) -> str:
    allowed = allowed_range(field)
    # typed text (a flag, a field): 'nan' and 'inf' read as the floats they are
    if isinstance(value, str):
        try:
            read = float(value.strip())
        except ValueError:
            read = 0.0
        value = read if not math.isfinite(read) else value
    if isinstance(value, float) and math.isnan(value):
        return f"nan is not a number: use {allowed}"
    if isinstance(value, float) and math.isinf(value):
        return f"{value:g} is not a finite number: use {allowed}"
    return f"{shown_number(value)} is out of range: use {allowed}"


def _restated(model: type[BaseModel], err: ErrorDetails) -> InitErrorDetails:
    loc = err["loc"]
    field = model.model_fields.get(str(loc[0])) if len(loc) == 1 else None
    if err["type"] in RANGE_ERRORS and field is not None:
        kind = PydanticCustomError("out_of_range", _sentence(field, err["input"]))
    else:
        kind = PydanticCustomError(
            err["type"], err["msg"].replace("{", "{{").replace("}", "}}"), err.get("ctx")
        )
    return {"type": kind, "loc": loc, "input": err["input"]}


def restate_ranges(
    model: type[BaseModel], data: Any, handler: ModelWrapValidatorHandler[Any]
) -> Any:
    """Validate `data` with `handler`; a range error on one of `model`'s own fields comes back as
    one sentence naming both bounds (nested models restate their own fields)."""
    try:
        return handler(data)
    except ValidationError as exc:
        errors = exc.errors()
        if not any(e["type"] in RANGE_ERRORS and len(e["loc"]) == 1 for e in errors):
            raise
        raise ValidationError.from_exception_data(
            exc.title, [_restated(model, e) for e in errors]
        ) from None


class RequestModel(BaseModel):
    """The base of every part of a plan request: unknown keys, nan and infinity refused, ranges said
    with both ends."""

    model_config = ConfigDict(extra="forbid", use_enum_values=False, allow_inf_nan=False)

    @model_validator(mode="wrap")
    @classmethod
    def _both_bounds(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        return restate_ranges(cls, data, handler)
