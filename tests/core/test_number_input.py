"""Counts and sizes as people type them: never misread. A comma separates thousands only in groups
of three ('1,500,000'); '1,5B' and '2,5e8' are one sentence, not 15 billion and 2.5e9; '80G' is 80
GB; what could be read two ways ('80Gb': gigabits or gigabytes) is refused. The CLI and the window
read through the same parser (``core.units``, under ``PlanRequest``), so the CLI is tested end to
end and the request model for the window.

Expected values come from the SI and IEC prefixes themselves (k = 10^3 … P = 10^15, Ki = 2^10 … Pi =
2^50) and from Python's own ``format(n, ',')``, not from the parser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.planner.request import PlanRequest
from core.units import parse_bytes, parse_count
from core.validation import validation_message

ROOT = Path(__file__).resolve().parents[2]
SI = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "P": 10**15}
IEC = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


@pytest.mark.parametrize("text", ["1,5B", "2,5e8", "1,50", "12,3456", "1,5", "1,5 M", "1,000,00"])
def test_a_comma_outside_groups_of_three_is_refused_with_what_to_write(text: str) -> None:
    with pytest.raises(ValueError, match="groups of three, as in 1,500,000") as caught:
        parse_count(text)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,500,000", 1_500_000),
        ("3,000", 3000),
        ("1,500.5M", 1_500.5e6),
        ("1_000_000", 1e6),
        ("2e8", 2e8),
        ("200M", 2e8),
        ("1.5B", 1.5e9),
        ("1.5 b", 1.5e9),
        ("80G", 80e9),
        (".5M", 5e5),
        ("7", 7),
    ],
)
def test_what_people_type_reads_as_they_mean_it(text: str, value: float) -> None:
    assert parse_count(text) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("80GB", 80 * 10**9),
        ("80G", 80 * 10**9),
        ("80gb", 80 * 10**9),
        ("80 G", 80 * 10**9),
        ("80GiB", 80 * 2**30),
        ("80Gi", 80 * 2**30),
        ("1.5TB", 15 * 10**11),
        ("512", 512),
        ("1,000MB", 10**9),
        ("80kB", 80_000),
    ],
)
def test_a_size_with_or_without_its_b_reads_as_bytes(text: str, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["80Gb", "80Mb", "1.5Tb"])
def test_a_size_that_could_be_bits_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="could be bits"):
        parse_bytes(text)


@pytest.mark.parametrize(
    "text", ["", " ", ".", "e5", "B", "1..5", "1.5.5", "nan", "inf", "1e400", "٣", "--5"]
)
def test_text_that_is_no_number_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_count(text)


@given(st.integers(min_value=0, max_value=2**53))
def test_any_integer_with_thousands_commas_reads_back_exactly(n: int) -> None:
    assert parse_count(format(n, ",")) == n
    assert parse_bytes(format(n, ",")) == n


@given(st.floats(min_value=0, max_value=1e290), st.sampled_from(sorted(SI)))
def test_a_number_and_a_prefix_read_as_the_number_times_the_prefix(x: float, prefix: str) -> None:
    assert parse_count(f"{x!r}{prefix}") == pytest.approx(x * SI[prefix], rel=1e-12)
    assert parse_count(f"{x!r}{prefix.lower()}") == parse_count(f"{x!r}{prefix}")


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(IEC)))
def test_a_prefix_alone_is_the_decimal_unit_and_i_the_binary_one(n: int, prefix: str) -> None:
    assert parse_bytes(f"{n}{prefix}") == parse_bytes(f"{n}{prefix}B")
    assert parse_bytes(f"{n}{prefix}") == pytest.approx(
        n * (10**3 if prefix == "K" else SI[prefix]), rel=1e-15
    )
    assert parse_bytes(f"{n}{prefix}i") == parse_bytes(f"{n}{prefix}iB")
    assert parse_bytes(f"{n}{prefix}i") == pytest.approx(n * IEC[prefix], rel=1e-15)


@given(
    st.integers(min_value=1, max_value=999),
    st.text("0123456789", min_size=1, max_size=8).filter(lambda d: len(d) != 3),
    st.sampled_from(["", "B", "M", "e8", "GB"]),
)
def test_a_comma_before_anything_but_three_digits_is_never_a_number(
    head: int, tail: str, suffix: str
) -> None:
    for parse in (parse_count, parse_bytes):
        with pytest.raises(ValueError, match="groups of three"):
            parse(f"{head},{tail}{suffix}")


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_any_text_is_a_number_or_one_sentence(text: str) -> None:
    for parse in (parse_count, parse_bytes):
        try:
            value = parse(text)
        except ValueError as exc:
            assert str(exc) and "\n" not in str(exc).replace(text, "")
        else:
            assert value == value and abs(value) < float("inf")  # finite, never NaN


def test_the_window_s_request_refuses_a_decimal_comma_naming_the_field() -> None:
    """The wizard validates what is typed through PlanRequest: the sentence it shows under the
    tokens field."""
    with pytest.raises(ValidationError) as caught:
        PlanRequest.model_validate(
            {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "1,5B"}}
        )
    assert validation_message(caught.value).startswith("data.tokens: '1,5B' is not a count")


@pytest.mark.parametrize(
    ("flags", "field"),
    [  # the flag typed, beside the field it sets
        (["--model", "llama-3.1-8b", "--tokens", "1,5B"], "--tokens (data.tokens)"),
        (["--model", "llama-3.1-8b", "--tokens", "2,5e8"], "--tokens (data.tokens)"),
        (["--model", "1,5B", "--tokens", "2e8"], "model.params"),
    ],
)
def test_the_cli_refuses_a_decimal_comma_in_one_sentence(flags: list[str], field: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cli", "plan", *flags, "--gpu", "H100-SXM"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(f"tuneplan: {field}: ")
    assert "groups of three" in run.stderr
