"""Values beyond physical sense: refused at the field with the range allowed, warned about in the
plan, and never printed as a row of twenty digits; a request file that cannot be one is refused in
one sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.planner.request_file import RequestFileError, read_request_file
from core.units import fmt_amount, fmt_count, fmt_hours, fmt_usd
from core.validation import validation_message


def refusal(**sections: dict[str, Any]) -> str:
    raw: dict[str, Any] = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "2e8"}}
    for name, values in sections.items():
        raw.setdefault(name, {}).update(values)
    with pytest.raises(ValidationError) as caught:
        PlanRequest.model_validate(raw)
    return validation_message(caught.value)


@pytest.mark.parametrize(
    ("hours", "shown"),
    [
        (0.25, "15.0 min"),
        (5.0, "5.0 h"),
        (100.0, "4.2 days"),
        (9000.0, "375.0 days"),
        (2.7 * 8766, "2.7 years"),
        (12_345 * 8766, "about 12,000 years"),
        (2.1e6 * 8766, "about 2.1 million years"),
        (9662086974982864896.0 * 24, "over 1,000 trillion years"),
        (float("inf"), "forever"),
    ],
)
def test_a_duration_reads_in_the_unit_a_person_would_use(hours: float, shown: str) -> None:
    assert fmt_hours(hours) == shown


def test_huge_money_and_counts_read_as_words_not_digits() -> None:
    assert fmt_usd(1234.0) == "$1,234"
    assert fmt_usd(2.1e9) == "$2.1 billion"
    assert fmt_usd(3.4e13) == "$34.0 trillion"
    assert fmt_usd(1e20) == "over $1,000 trillion"
    assert fmt_count(1.5e9) == "1.50B"
    assert fmt_count(1e30) == "1.00e+30"


def test_typing_1e30_tokens_is_refused_with_the_range_allowed() -> None:
    assert refusal(data={"tokens": "1e30"}) == (
        "data.tokens: 1e+30 is out of range: use more than 0 and at most 1e15 (1,000T) tokens"
    )


def test_zero_tokens_keeps_its_one_sentence() -> None:
    assert refusal(data={"tokens": 0}) == (
        "data.tokens: 0 is out of range: use more than 0 and at most 1e15 (1,000T) tokens"
    )


def test_a_price_of_a_tenth_of_a_cent_per_gpu_hour_is_refused() -> None:
    assert refusal(pricing={"usd_per_gpu_hour": 0.001}) == (
        "pricing.usd_per_gpu_hour: 0.001 is out of range: use $0.01 to $1,000 per GPU-hour"
    )
    assert refusal(pricing={"usd_per_gpu_hour": 5000}) == (
        "pricing.usd_per_gpu_hour: 5000 is out of range: use $0.01 to $1,000 per GPU-hour"
    )


@pytest.mark.parametrize(
    ("sections", "sentence"),
    [
        (
            {"model": {"preset": None, "params": "1e20"}},
            "model.params: 1e+20 is out of range: use 10M to 100T parameters",
        ),
        (
            {"assumptions": {"mfu": 0.001}},
            "assumptions.mfu: 0.001 is out of range: use 0.01 to 1 (1% to 100% of the GPU's peak)",
        ),
        (
            {"assumptions": {"idle_hours": 1e6}},
            "assumptions.idle_hours: 1e+06 is out of range: use 0 to 87,660 hours (10 years)",
        ),
        (
            {"search": {"deadline_hours": 1e6}},
            "search.deadline_hours: 1e+06 is out of range: use more than 0 and at "
            "most 87,660 hours (10 years)",
        ),
        (
            {"hardware": {"gpu": "H100-SXM", "inter_node_gbps": 1e7}},
            "hardware.inter_node_gbps: 1e+07 is out of range: use more than 0 and at most 100,000 "
            "Gbit/s per node",
        ),
    ],
)
def test_other_fields_beyond_physical_sense_name_their_range(
    sections: dict[str, Any], sentence: str
) -> None:
    assert refusal(**sections) == sentence


def test_a_run_longer_than_ten_years_is_a_warning_in_the_plan() -> None:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-70b"},
            "data": {"tokens": 1e15},
            "training": {"method": "full"},
            "hardware": {"gpu": "L4"},
        }
    )
    result = plan(request)
    assert result.time.hours > 10 * 8766
    warning = next(w for w in result.warnings if "more than 10 years" in w)
    assert warning.startswith("the run would take about ")
    assert warning.endswith(
        " years, more than 10 years: no one can run this; check data.tokens and data.epochs, "
        "or give it more GPUs"
    )


def test_a_run_of_a_few_hours_has_no_such_warning() -> None:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 2e8},
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
        }
    )
    assert not [w for w in plan(request).warnings if "10 years" in w]


def test_gpu_hours_of_an_endless_run_read_in_words() -> None:
    assert fmt_amount(35.04) == "35.0"
    assert fmt_amount(123_456.78) == "123,456.8"
    assert fmt_amount(3.557e11) == "about 355.7 billion"


@pytest.mark.parametrize(
    ("name", "content", "sentence"),
    [
        (
            "notes.json",
            "{nope",  # not JSON
            "notes.json is not valid JSON: Expecting property name enclosed in double quotes at "
            "line 1, column 2",
        ),
        # no preset
        (
            "colleague.json",
            json.dumps({"model": {"preset": "llama-4-400b"}, "data": {"tokens": "2e8"}}),
            "colleague.json names an unknown model preset 'llama-4-400b'; did you mean "
            "llama-2-70b, llama-3.1-405b, llama-2-7b? (tuneplan catalog models lists all)",
        ),
    ],
)
def test_a_request_file_that_cannot_be_one_is_refused_in_one_sentence(
    tmp_path: Path, name: str, content: str, sentence: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(RequestFileError) as caught:
        read_request_file(path)
    assert str(caught.value) == sentence


def test_a_request_file_with_field_errors_is_left_to_the_fields(tmp_path: Path) -> None:
    path = tmp_path / "typo.json"
    raw = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "lots"}}
    path.write_text(json.dumps(raw))
    assert read_request_file(path) == raw
