"""A request number out of range is one sentence naming the field and both ends of its range; nan
and infinity are said to be no numbers (pydantic's own words named one bound: `--epochs nan` said
"less than or equal to 1000"). Run through the real command line (cli.main) and the request
model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cli.main import main
from core.planner.request import PlanRequest
from core.validation import validation_message

PLAN = ["plan", "--model", "llama-3.1-8b", "--tokens", "2e8", "--gpu", "H100-SXM"]


@pytest.mark.parametrize(
    ("flag", "sentence"),
    [
        (
            "--epochs=nan",
            "--epochs (data.epochs): nan is not a number: use more than 0 and at most 1,000",
        ),
        (
            "--epochs=inf",
            "--epochs (data.epochs): inf is not a finite number: use more than 0 and at most 1,000",
        ),
        (
            "--epochs=5000",
            "--epochs (data.epochs): 5000 is out of range: use more than 0 and at most 1,000",
        ),
        (
            "--seq-len=99999999",
            "--seq-len (data.seq_len): 99999999 is out of range: use 16 to 2,097,152",
        ),
        (
            "--lora-rank=5000",
            "--lora-rank (training.lora_rank): 5000 is out of range: use 1 to 4,096",
        ),
    ],
)
def test_a_flag_out_of_range_names_both_bounds(
    capsys: pytest.CaptureFixture[str], flag: str, sentence: str
) -> None:
    assert main([*PLAN, flag]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"tuneplan: {sentence}\n"


@pytest.mark.parametrize(
    ("section", "values", "sentence"),
    [
        ("data", {"tokens": 2e8, "epochs": float("nan")}, "data.epochs: nan is not a number"),
        (
            "pricing",
            {"usd_per_gpu_hour": float("nan")},
            "pricing.usd_per_gpu_hour: nan is not a number: use $0.01 to $1,000 per GPU-hour",
        ),
        (
            "assumptions",
            {"buy": {"usd_per_kwh": 1e308}},
            "assumptions.buy.usd_per_kwh: 1e+308 is out of range: use 0 to 10",
        ),
        (
            "assumptions",
            {"buy": {"kw_per_gpu": float("inf")}},
            "assumptions.buy.kw_per_gpu: inf is not a finite "
            "number: use more than 0 and at most 100",
        ),
        (
            "assumptions",
            {"buy": {"residual_fraction": 1}},
            "assumptions.buy.residual_fraction: 1 is out of range: use 0 to below 1",
        ),
    ],
)
def test_the_request_model_names_both_bounds_and_no_nan_passes(
    section: str, values: dict[str, object], sentence: str
) -> None:
    request: dict[str, object] = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 2e8},
        section: values,
    }
    with pytest.raises(ValidationError) as caught:
        PlanRequest.model_validate(request)
    assert validation_message(caught.value).startswith(sentence)
