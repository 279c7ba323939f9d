"""The request's field validators: token counts as people type them, and one sentence for a value
out of range.

Kept apart from request.py, the JSON contract itself, so that the contract reads as a list of
fields.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from core.catalog.records import Allowance
from core.units import HOURS_PER_YEAR, parse_count
from core.validation import shown_number


def _count(value: Any) -> Any:
    """Accept '2e8', '200M', '1.5T' wherever a token count is asked for."""
    return parse_count(value) if isinstance(value, str) else value


TokenCount = Annotated[float, BeforeValidator(_count, json_schema_input_type=float | str)]
TEN_YEARS_HOURS = 10 * HOURS_PER_YEAR


def left_out(value: Any) -> bool:
    """Optional fields a request leaves out stay out of its JSON (older requests' plans read the
    same)."""
    return value is None


def within(low: float, high: float, allowed: str, low_open: bool = False) -> AfterValidator:
    """A bound of physical sense on one field, said as one sentence with the range allowed.

    pydantic's own "less than or equal to 1000000000000000" names neither the unit nor the other
    end, and values such as 1e30 tokens or $0.001 per GPU-hour are typing slips, not plans: the
    planner would answer them with figures like "9662086974982864896.0 days".
    """
    return AfterValidator(Within(low, high, allowed, low_open))


class Within:
    """The check ``within`` makes; `allowed` is the range in words (request_ranges says it for a nan
    too)."""

    def __init__(self, low: float, high: float, allowed: str, low_open: bool) -> None:
        self.low, self.high, self.allowed, self.low_open = low, high, allowed, low_open

    def __call__(self, value: Any) -> Any:
        if value is None:
            return value
        if value != value:  # nan compares false with every bound
            raise ValueError(f"nan is not a number: use {self.allowed}")
        below = value <= self.low if self.low_open else value < self.low
        if below or value > self.high:
            raise ValueError(f"{shown_number(value)} is out of range: use {self.allowed}")
        return value


ALLOWANCES = tuple(a.value for a in Allowance)


def allowance_list(value: Any) -> Any:
    """``pricing.allow``: a list of marketplace / auction (a comma string too); one sentence for
    anything else.

    Marketplace hosts and auction floors are cheaper and less certain than a provider's list price,
    so a plan uses them only when asked; a misspelt name must not silently price nothing.
    """
    if value is None:
        return []
    items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise ValueError(
            f"pricing.allow must be a list of {' and '.join(ALLOWANCES)} (got {value!r})"
        )
    for item in items:
        if str(getattr(item, "value", item)) not in ALLOWANCES:
            raise ValueError(
                f"pricing.allow: {item!r} is not allowed; use "
                f"{' or '.join(repr(a) for a in ALLOWANCES)}"
                " (serverless rates never price a plan)"
            )
    return list(dict.fromkeys(str(getattr(i, "value", i)) for i in items))


# RFC 1123 label: what Kubernetes names and label values such as a Kueue queue must be
DNS_LABEL_MAX = 63


def dns_label(field: str) -> AfterValidator:
    """A name Kubernetes takes as a DNS-1123 label (a Kueue LocalQueue's, written as the job's queue
    label).

    The API server refuses any other name when the manifest is applied, far from where it was typed;
    the sentence says the rule at once, with the value as typed made printable.
    """

    def check(value: Any) -> Any:
        if value is None:
            return value
        if not (
            isinstance(value, str)
            and 0 < len(value) <= DNS_LABEL_MAX
            and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value)
        ):
            shown = "".join(
                ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                for ch in str(value)
            )[:80]
            raise ValueError(
                f"{field} {shown!r} is not a Kubernetes name: use 1 to {DNS_LABEL_MAX} lowercase "
                "letters, digits and '-', starting and ending with a letter or digit"
            )
        return value

    return AfterValidator(check)
