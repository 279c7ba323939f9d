"""Functions every parser shares: cleaning terminal text and reading numbers that may be missing.

Remote tools print for a terminal (ANSI colours, CR line ends) and mark missing values in several
ways (``N/A``, ``[N/A]``, ``[Not Supported]``, ``-``); one place handles all of them so parsers stay
short.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from core.probes.samples import ParseResult

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")

MISSING = frozenset(
    {
        "",
        "n/a",
        "[n/a]",
        "na",
        "-",
        "[not supported]",
        "not supported",
        "[unknown error]",
        "unknown error",
        "[insufficient permissions]",
        "[requested functionality has been deprecated]",
        "requested functionality has been deprecated",
        "[gpu is lost]",
        "nan",
    }
)

# clocks_event_reasons.active bit -> query-gpu field name (Azure NHC
# azure_gpu_clock_throttling.nhc).
CLOCK_EVENT_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

_BYTE_UNITS = {
    "b": 1,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}

R = TypeVar("R")
P = ParamSpec("P")


def clean_text(text: object) -> str:
    """Terminal output -> plain text with '\\n' line ends, no ANSI codes, no stray control bytes."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


def is_missing(value: str | None) -> bool:
    return value is None or value.strip().lower() in MISSING


def to_float(value: str | None) -> float | None:
    """First number in ``value`` ('631.95 W' -> 631.95), None when missing or not numeric."""
    if is_missing(value):
        return None
    assert value is not None
    match = _NUMBER.search(value.replace(",", ""))
    if not match:
        return None
    try:
        number = float(match.group(0))
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def to_int(value: str | None) -> int | None:
    """Integer in ``value`` ('16x' -> 16, '120' -> 120); hex '0x1F' is read as hex."""
    if is_missing(value):
        return None
    assert value is not None
    stripped = value.strip()
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", stripped):
        return int(stripped, 16)
    number = to_float(stripped)
    if number is None or abs(number) > 1e18:
        return None
    return int(number)


def to_bool(value: str | None) -> bool | None:
    """'Yes'/'Enabled'/'Active'/'On' -> True, their opposites -> False, anything else -> None."""
    if is_missing(value):
        return None
    assert value is not None
    word = value.strip().lower()
    if word in {"yes", "enabled", "active", "on", "true", "1"}:
        return True
    if word in {"no", "disabled", "not active", "off", "false", "0"}:
        return False
    return None


def to_bytes(value: str | None, default_unit: str = "b") -> int | None:
    """'81559 MiB' -> bytes; a bare number is read in ``default_unit`` (e.g. 'mib' from a CSV
    header)."""
    number = to_float(value)
    if number is None or number < 0:
        return None
    assert value is not None
    unit_match = re.search(r"([KMGT]i?B|B)\s*$", value.strip(), re.IGNORECASE)
    unit = unit_match.group(1).lower() if unit_match else default_unit.lower()
    total = number * _BYTE_UNITS.get(unit, 1)
    return int(total) if total < 1e30 else None


def clock_reasons_from_mask(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit]


def never_raises(func: Callable[P, ParseResult[R]]) -> Callable[P, ParseResult[R]]:
    """Last line of defence: a parser bug becomes a warning, never an exception in the GUI thread.

    Tests fuzz every parser and assert this warning never appears, so bugs still show up there.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> ParseResult[R]:
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # by design: a parser must not crash its caller
            return ParseResult[R](
                value=None, warnings=[f"internal parser error in {func.__name__}: {exc!r}"]
            )

    return wrapper
