"""Parsing and formatting of counts, byte sizes and durations the way people write them."""

from __future__ import annotations

import math
import re

_COUNT_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
_BYTE_SUFFIX = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
    "PIB": 2**50,
}
# Digits with an optional fraction and exponent. Thousands may be grouped by commas only in groups
# of three ("1,500,000"): "1,5B" is a decimal comma to half the world and a typo to the rest, so it
# is refused, never read as 15 billion. Underscores may sit between digits as in Python
# ("1_000_000").
_DIGITS = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+(?:_[0-9]+)*)"
_NUMBER = rf"(?P<number>[-+]?(?:{_DIGITS}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
_COUNT_RE = re.compile(rf"^{_NUMBER}\s*(?P<suffix>[KMBGTPkmbgtp]?)$")
# A byte size's unit: "GB", "GiB", or the prefix alone ("80G", as df -h and people write it:
# decimal, like GB).
_BYTES_RE = re.compile(rf"^{_NUMBER}\s*(?P<prefix>[KMGTPkmgtp]?)(?P<binary>[iI]?)(?P<unit>[bB]?)$")


def _number(match: re.Match[str]) -> float:
    """The number a match holds, the commas and underscores between its digits dropped."""
    return float(match.group("number").replace(",", "").replace("_", ""))


def _comma_hint(text: str) -> str:
    """What to write instead when a comma is not a thousands separator."""
    if "," in text:
        return (
            " (a comma separates thousands only in groups of three, as in 1,500,000; a decimal "
            "takes a point: 1.5)"
        )
    return ""


def parse_count(text: str | float | int) -> float:
    """'2e8', '200M', '1.5T', '7B', '3,000' → a float. Raises ValueError with the accepted forms.

    A comma is a thousands separator in groups of three only: '1,5B' and '2,5e8' are refused, never
    read as 15 billion and 2.5e9."""
    if isinstance(text, bool):
        raise ValueError(f"{text} is not a count; write e.g. 2e8, 200M, 1.5B or 1.5T")
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _COUNT_RE.match(text.strip())
        if match is None:
            raise ValueError(
                f"'{text}' is not a count; write e.g. 2e8, 200M, 1.5B or 1.5T{_comma_hint(text)}"
            )
        value = _number(match) * _COUNT_SUFFIX[match.group("suffix").upper()]
    if not math.isfinite(value):
        raise ValueError(f"'{text}' is not a finite count")
    return value


def parse_bytes(text: str | float | int) -> int:
    """'80GB' and '80G' (10^9), '80GiB' and '80Gi' (2^30), '512' (bytes) → bytes.

    '80Gb' is refused: a capital prefix before a small b is how network speeds write gigabits, so it
    is ambiguous; '80gb' (all small) is read as gigabytes, as people type it."""
    if isinstance(text, bool):
        raise ValueError(f"{text} is not a size; write e.g. 80GB, 80GiB, 1.5TB or 512MB")
    if isinstance(text, int | float):
        if not math.isfinite(text) or text < 0:
            raise ValueError(f"{text} is not a size of 0 bytes or more")
        return int(text)
    match = _BYTES_RE.match(text.strip())
    if match is None:
        raise ValueError(
            f"'{text}' is not a size; write e.g. 80GB, 80GiB, 1.5TB or 512MB{_comma_hint(text)}"
        )
    prefix, binary, unit = match.group("prefix").upper(), match.group("binary"), match.group("unit")
    if unit == "b" and match.group("prefix").isupper():
        raise ValueError(
            f"'{text}' could be bits; write {match.group('number')}{prefix}B for bytes"
        )
    if binary and not prefix:
        raise ValueError(f"'{text}' is not a size; write e.g. 80GB, 80GiB, 1.5TB or 512MB")
    value = _number(match) * _BYTE_SUFFIX[(prefix + ("I" if binary else "") + "B")]
    if not math.isfinite(value):
        raise ValueError(f"'{text}' is not a finite size")
    if value < 0:
        raise ValueError(f"'{text}' is not a size of 0 bytes or more")
    return int(value)


def fmt_bytes(n: float, binary: bool = False) -> str:
    """Human bytes: decimal GB by default (as vendor sheets and PyTorch's /1e9 reports use)."""
    base, units = (
        (1024.0, ["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
        if binary
        else (1000.0, ["B", "KB", "MB", "GB", "TB", "PB"])
    )
    value = float(n)
    for unit in units:
        if abs(value) < base or unit == units[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= base
    raise AssertionError("unreachable")


def fmt_count(n: float) -> str:
    """1.5e9 → '1.50B'; past a thousand trillion, '1.00e+30' (a row of digits before 'T' reads as
    noise)."""
    if not math.isfinite(n) or abs(n) >= 1e15:
        return f"{n:.2e}"
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{suffix}"
    return f"{n:.0f}"


HOURS_PER_YEAR = 8766.0  # 365.25 days
_WORDS = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"))


def fmt_large(n: float) -> str:
    """A magnitude for people: 'about 12,000', 'about 2.1 million' ... 'about 3.4 trillion', then
    'over 1,000 trillion'. An absurd input (1e30 tokens) must still give a figure one can read, not
    twenty digits."""
    if math.isnan(n):
        return "unknown"
    if abs(n) >= 1e15:
        return "over 1,000 trillion"
    for scale, word in _WORDS:
        if abs(n) >= scale:
            return f"about {n / scale:.1f} {word}"
    if abs(n) >= 1000:
        return f"about {float(f'{n:.2g}'):,.0f}"
    return f"{n:,.0f}"


def fmt_amount(n: float, decimals: int = 1) -> str:
    """'1,234.5' below a million, then in words ('about 2.1 million'): GPU-hours of a thousand-year
    run."""
    if not math.isfinite(n) or abs(n) >= 1e6:
        return fmt_large(n) if not math.isinf(n) else "unbounded"
    return f"{n:,.{decimals}f}"


def fmt_gpu_hours(n: float) -> str:
    """GPU-hours to three significant figures, at least whole hours: '7.46', '74.6', '746', '7,460';
    words past a million. The one rule for GPU-hours in the CLI, the window and the PDF: the same
    figure everywhere, and billed GPU-hours × the price come to the compute line's dollars (7.46 ×
    $3.58 is $26.70; '7 × $3.58' is not)."""
    if not math.isfinite(n) or abs(n) >= 1e6:
        return fmt_amount(n)
    return f"{n:,.{2 if abs(n) < 10 else 1 if abs(n) < 100 else 0}f}"


def _hours_unit(hours: float) -> tuple[float, str] | None:
    """The hours per unit and the unit's name that ``fmt_hours`` writes `hours` in; None where it
    writes words."""
    if not math.isfinite(hours) or hours / HOURS_PER_YEAR >= 1000:
        return None
    if hours < 1:
        return 1 / 60, "min"
    if hours < 72:
        return 1.0, "h"
    return (24.0, "days") if hours / HOURS_PER_YEAR < 2 else (HOURS_PER_YEAR, "years")


def fmt_hours(hours: float) -> str:
    """'12.5 min', '3.2 h', '40.1 days', '2.7 years', 'about 2.1 million years'."""
    if math.isnan(hours):
        return "unknown"
    if math.isinf(hours):
        return "forever"
    unit = _hours_unit(hours)
    if unit is None:
        return f"{fmt_large(hours / HOURS_PER_YEAR)} years"
    per, name = unit
    return f"{hours / per:.1f} {name}"


def fmt_hours_range(low: float, high: float, like: float) -> str:
    """'2.6–4.1 h': both ends in the unit ``fmt_hours`` gives `like` (the figure the range
    brackets), one decimal each, so 'likely 3.2 h (range 2.6–4.1 h)' never mixes '58.0 min' with
    '1.2 h' or rounds one end coarser."""
    unit = _hours_unit(like)
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{fmt_hours(low)}–{fmt_hours(high)}"
    # past a million years: '35.3–50.0 million years', not 'about 35.3 million years–about ...'
    if unit is None:
        ends = [fmt_large(h / HOURS_PER_YEAR).removeprefix("about ") for h in (low, high)]
        words = [e.split(" ", 1) for e in ends]
        if all(len(w) == 2 for w in words) and words[0][1] == words[1][1]:
            return f"{words[0][0]}–{words[1][0]} {words[0][1]} years"
        return f"{ends[0]} years–{ends[1]} years"
    per, name = unit
    return f"{low / per:,.1f}–{high / per:,.1f} {name}"


def fmt_usd(usd: float | None) -> str:
    """'$12.34', '$1,234', '$2.1 billion' (past a billion the digits stop meaning anything to a
    reader)."""
    if usd is None:
        return "—"
    if not math.isfinite(usd):
        return "unknown"
    if abs(usd) >= 1e15:
        return "over $1,000 trillion"
    if abs(usd) >= 1e9:
        return "$" + fmt_large(usd).removeprefix("about ")
    return f"${usd:,.0f}" if abs(usd) >= 100 else f"${usd:,.2f}"


def fmt_usd_range(low: float, high: float, like: float) -> str:
    """'$44–$71', '$17.50–$23.10': both ends rounded as ``fmt_usd`` rounds `like` (whole dollars
    from $100, cents below), so the range reads at the precision of the figure it brackets; words
    past a billion, as fmt_usd."""
    if not (math.isfinite(like) and math.isfinite(low) and math.isfinite(high)) or abs(like) >= 1e9:
        return f"{fmt_usd(low)}–{fmt_usd(high)}"
    decimals = 0 if abs(like) >= 100 else 2
    return f"${low:,.{decimals}f}–${high:,.{decimals}f}"


def fmt_rate_range(low: float, high: float) -> str:
    """'55,000–80,000': a throughput range in whole units, as a plan's tokens/s are written."""
    return f"{low:,.0f}–{high:,.0f}"


def plural(n: float, noun: str, nouns: str | None = None) -> str:
    """(1, 'GPU') → '1 GPU'; (8, 'GPU') → '8 GPUs'; (2.5, 'epoch') → '2.5 epochs'; `nouns` where
    adding an s is wrong ('1 copy', '2 copies'). The one rule every view counts things with: never
    '1 epochs' or 'on 1 GPUs'."""
    count = f"{int(n):,}" if float(n).is_integer() else f"{n:g}"
    return f"{count} {noun}" if n == 1 else f"{count} {nouns or noun + 's'}"


def fmt_percent(share: float) -> str:
    """0.41 → '41%': a chart axis's share, the same in the window and the PDF."""
    return f"{share:.0%}"


def fmt_tick(v: float) -> str:
    """A chart axis's number, short: 1500000 → '1.5M', 20000 → '20k', 3 → '3' (the window's and the
    PDF's)."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"
