"""The user's catalog files (prices.json, gpus.json in the config folder; refreshed_prices.json in
the data folder) are held to the limits of the request and the feeds: every bad file is one sentence
naming the file and the row, never a traceback, and no plan is priced at $0.00, at a 309-digit
figure, or for a billion GPUs.

Each case is a real file in a real folder, read by the real loader and by `tuneplan plan` in-process
(its XDG folders pointed at the test's); the FIFO is a real named pipe.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from core.catalog import CatalogError, load_catalog

H100 = {"provider": "lambda", "instance": "mine", "gpu": "H100-SXM", "pricing_model": "on_demand"}


def _price(**values: Any) -> str:
    return json.dumps([{**H100, "usd_per_gpu_hour": 2.5, **values}])


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("prices.json", "[" * 100_000 + "]" * 100_000, "nests deeper than"),
        ("gpus.json", '[{"id": "MY-GPU", "memory_gb": NaN}]', "NaN is not a JSON number"),
        (
            "prices.json",
            _price(usd_per_gpu_hour=7).replace("7}]", "9" * 5000 + "}]"),
            "is not valid JSON",
        ),
        (
            "prices.json",
            _price(usd_per_gpu_hour=1e308),
            "entry 0 (on_demand): usd_per_gpu_hour 1e+308 is outside the sane band for H100-SXM",
        ),
        (
            "prices.json",
            _price(usd_per_gpu_hour=0),
            "entry 0 (on_demand): usd_per_gpu_hour 0 is outside the sane band",
        ),
        (
            "prices.json",
            _price(gpus_per_instance=10**9),
            "entry 0 (on_demand): gpus_per_instance 1000000000 is out of range: use 1 to 64",
        ),
        (
            "gpus.json",
            '[{"id": "MY-GPU", "memory_gb": 1e308}]',
            "entry 0: memory_gb 1e+308 is out of range",
        ),
        (
            "gpus.json",
            '[{"id": "H100", "bf16_tflops": 1e300}]',
            "entry 0: bf16_tflops 1e+300 is out of range: use more than 0 and at most 100,000",
        ),
        (
            "refreshed_prices.json",
            json.dumps(
                {
                    "format": 1,
                    "sources": [],
                    "rows": [
                        {
                            **H100,
                            "provider_name": "Lambda",
                            "source": "feed",
                            "usd_per_gpu_hour": 1e308,
                        }
                    ],
                }
            ),
            "row 0: usd_per_gpu_hour 1e+308",
        ),
        (
            "refreshed_prices.json",
            '{"format": 1, "rows": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "nests deeper",
        ),
    ],
)
def test_a_bad_override_file_is_one_sentence_naming_it(
    tmp_path: Path, name: str, text: str, said: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogError) as caught:
        load_catalog(tmp_path)
    message = str(caught.value)
    assert said in message and str(path) in message and "\n" not in message


@pytest.mark.parametrize("name", ["refreshed_prices.json", "prices.json", "gpus.json"])
def test_a_named_pipe_as_a_catalog_file_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    os.mkfifo(tmp_path / name)
    with pytest.raises(
        CatalogError, match=rf"{name.replace('.', '[.]')} is a named pipe, not a file"
    ):
        load_catalog(tmp_path)


def test_an_override_file_larger_than_such_a_file_is_refused_unread(tmp_path: Path) -> None:
    with (tmp_path / "prices.json").open("wb") as fh:
        fh.truncate(17 * 2**20)
    with pytest.raises(CatalogError, match=r"prices\.json is larger than 16 MiB"):
        load_catalog(tmp_path)


def test_plan_says_the_sentence_with_the_users_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config" / "tuneplan"
    config.mkdir(parents=True)
    (config / "prices.json").write_text(_price(usd_per_gpu_hour=1e308), encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert (
        main(
            [
                "plan",
                "--model",
                "llama-3.1-8b",
                "--tokens",
                "2e8",
                "--gpu",
                "H100-SXM",
                "--gpus",
                "8",
            ]
        )
        == 1
    )
    out, err = capsys.readouterr()
    assert (
        out == ""
        and err.count("\n") == 1
        and str(config / "prices.json") in err
        and "entry 0" in err
    )


def test_a_price_inside_the_band_still_loads(tmp_path: Path) -> None:
    (tmp_path / "prices.json").write_text(
        _price(usd_per_gpu_hour=1.5, gpus_per_instance=8), encoding="utf-8"
    )
    mine = [p for p in load_catalog(tmp_path).prices if p.instance == "mine"]
    assert [(p.usd_per_gpu_hour, p.gpus_per_instance) for p in mine] == [(1.5, 8)]
