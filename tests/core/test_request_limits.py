"""Requests that once ended in a traceback, a hang or an unbounded read, each now one sentence
naming the field and what it allows, on one line, exit code 1: found by generating bad requests
(tests/core/test_request_fuzz.py keeps generating them).

The CLI runs in-process through its real entry point (``cli.main.main``), as `tuneplan plan FILE`
would; the cases that could hang run in a child process with a timeout, so a regression fails
instead of blocking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "vocab_size": 32000,
    "intermediate_size": 11008,
}


def one_sentence(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run `tuneplan ARGV`; assert exit 1, nothing on stdout, one line on stderr; that line without
    its prefix."""
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("tuneplan: ") and err.endswith("\n") and err.count("\n") == 1, err
    return err.removeprefix("tuneplan: ").rstrip("\n")


def plan_file(tmp_path: Path, request: dict[str, Any] | str) -> str:
    path = tmp_path / "request.json"
    path.write_text(request if isinstance(request, str) else json.dumps(request), encoding="utf-8")
    return str(path)


def with_config(**keys: Any) -> dict[str, Any]:
    return {"model": {**CONFIG, **keys}, "data": {"tokens": "2e8"}, "hardware": {"gpu": "H100-SXM"}}


@pytest.mark.parametrize(
    ("keys", "sentence"),
    [
        (
            {"num_hidden_layers": 0.5},
            "num_hidden_layers must be a whole number from 1 to 100,000 (got 0.5)",
        ),
        (
            {"num_hidden_layers": 2147483648},
            "num_hidden_layers must be a whole number from 1 to 100,000 (got 2147483648)",
        ),
        (
            {"hidden_size": 1e308},
            "hidden_size must be a whole number from 1 to 1,048,576 (got 1e+308)",
        ),
        (
            {"hidden_size": 10**400},
            "hidden_size must be a whole number from 1 to 1,048,576 (got 1.00e+400)",
        ),
        (
            {"vocab_size": 1e308},
            "vocab_size must be a whole number from 1 to 16,777,216 (got 1e+308)",
        ),
        (
            {"intermediate_size": 1e308},
            "intermediate_size must be a whole number from 1 to 1,048,576",
        ),
        ({"head_dim": 1e308}, "head_dim must be a whole number from 1 to 1,048,576"),
        (
            {"num_local_experts": 1e308},
            "num_local_experts must be a whole number from 0 to 1,048,576",
        ),
        (
            {"max_position_embeddings": 1e308},
            "max_position_embeddings must be a whole number from 1 to 4,294,967,296",
        ),
        (
            {"sliding_window": 1e308},
            "sliding_window must be a whole number from 0 to 4,294,967,296",
        ),
        ({"expansion_ratio": 1e308}, "expansion_ratio must be a number above 0 and at most 64"),
        (
            {"num_attention_heads": 1e308},
            "num_attention_heads must be a whole number from 1 to 1,048,576",
        ),
        (
            {"num_local_experts": 8, "num_experts_per_tok": 9},
            "num_experts_per_tok (9) must be at most num_local_experts (8): a token cannot be "
            "routed to more experts",
        ),
        (
            {"num_attention_heads": 8192, "num_key_value_heads": 8192},
            "num_attention_heads (8192) must be at most "
            "hidden_size (4096) unless head_dim is given",
        ),
    ],
)
def test_a_config_size_out_of_range_is_one_sentence_naming_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, keys: dict[str, Any], sentence: str
) -> None:
    said = one_sentence(capsys, ["plan", plan_file(tmp_path, with_config(**keys))])
    assert said.startswith(f"model: config.json key {sentence}")


def test_more_experts_per_token_than_experts_is_refused_not_planned(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It used to plan, with more active parameters than total ones."""
    said = one_sentence(
        capsys,
        [
            "plan",
            plan_file(
                tmp_path,
                with_config(num_local_experts=8, num_experts_per_tok=9, moe_intermediate_size=1024),
            ),
        ],
    )
    assert "num_experts_per_tok (9) must be at most num_local_experts (8)" in said


@pytest.mark.parametrize(
    ("make", "sentence"),
    [
        (lambda tmp: str(tmp), "is a folder, not a file"),
        (lambda tmp: "/dev/zero", "/dev/zero is a device, not a file"),
        (lambda tmp: str(tmp / ("x" * 5000 + ".json")), "File name too long"),
    ],
)
def test_a_config_json_that_is_no_file_is_one_sentence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: Any, sentence: str
) -> None:
    request = {"model": {"hf_config": make(tmp_path)}, "data": {"tokens": "2e8"}}
    said = one_sentence(capsys, ["plan", plan_file(tmp_path, request)])
    assert said.startswith("model.hf_config: ") and sentence in said
    assert len(said) < 400  # a 5,000-character name is cut in the middle, not echoed whole


def test_a_json_list_as_config_json_is_one_sentence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text("[1, 2]", encoding="utf-8")
    request = {"model": {"hf_config": str(tmp_path / "config.json")}, "data": {"tokens": "2e8"}}
    assert one_sentence(capsys, ["plan", plan_file(tmp_path, request)]) == (
        "model: config.json must be a JSON object with keys such as hidden_size"
    )


def test_a_config_json_larger_than_a_config_is_refused_unread(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    big = tmp_path / "config.json"
    # a sparse 20 MB file: larger than the 16 MiB a JSON file here may be
    with big.open("wb") as fh:
        fh.truncate(20_000_000)
    request = {"model": {"hf_config": str(big)}, "data": {"tokens": "2e8"}}
    assert "is larger than 16 MiB" in one_sentence(capsys, ["plan", plan_file(tmp_path, request)])


def _plan_in_child(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", "plan", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_named_pipe_as_config_json_or_request_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading would block forever
    request = plan_file(tmp_path, {"model": {"hf_config": str(fifo)}, "data": {"tokens": "2e8"}})
    for argv in ([request], [str(fifo)]):
        run = _plan_in_child(tmp_path, *argv)
        assert run.returncode == 1 and "is a named pipe, not a file" in run.stderr
        assert run.stderr.count("\n") == 1


def test_dev_zero_as_the_request_is_refused_before_it_is_read(tmp_path: Path) -> None:
    run = _plan_in_child(tmp_path, "/dev/zero")
    assert run.returncode == 1 and run.stderr == "tuneplan: /dev/zero is a device, not a file\n"


def test_a_request_nested_100000_deep_is_one_sentence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deep = '{"model": ' + "[" * 100_000 + "]" * 100_000 + ', "data": {"tokens": 1}}'
    said = one_sentence(capsys, ["plan", plan_file(tmp_path, deep)])
    assert said.endswith("request.json nests deeper than JSON can be read here (at most 64 levels)")


def test_a_request_nested_deeper_than_a_request_ever_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """500 levels parse (Python's json goes about 1,000 deep) but no request or config nests past a
    few."""
    nested: Any = 1
    for _ in range(500):
        nested = {"a": nested}
    request = {"model": {**CONFIG, "extra": nested}, "data": {"tokens": "2e8"}}
    assert "nests deeper than 64 levels" in one_sentence(
        capsys, ["plan", plan_file(tmp_path, request)]
    )


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, constant: str
) -> None:
    text = '{"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": CONSTANT}}'.replace(
        "CONSTANT", constant
    )
    assert f"{constant} is not a JSON number" in one_sentence(
        capsys, ["plan", plan_file(tmp_path, text)]
    )


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"pricing": {"provider": "a\nb"}}, "unknown provider 'a\\nb'"),
        ({"model": {"preset": "llama\n3\x1b[31m"}}, "unknown model preset 'llama\\n3\\x1b[31m'"),
        ({"model": {"hf_config": "a\nb.json"}}, "model.hf_config: cannot read a\\nb.json"),
    ],
)
def test_a_sentence_that_echoes_a_newline_stays_on_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, section: dict[str, Any], field: str
) -> None:
    request: dict[str, Any] = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": "2e8"},
        **section,
    }
    assert field in one_sentence(capsys, ["plan", plan_file(tmp_path, request)])


def test_a_long_echo_is_cut_in_the_middle_keeping_the_advice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    request = {"model": {"preset": "x" * 5000}, "data": {"tokens": "2e8"}}
    said = one_sentence(capsys, ["plan", plan_file(tmp_path, request)])
    assert (
        len(said) <= 1003
        and said.startswith("unknown model preset 'xxx")
        and said.endswith("lists all)")
    )


def test_a_global_batch_of_1e30_sequences_is_refused_not_planned(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It used to plan '1 steps of 292413026471125103021649821696.00 s'; 2^24 sequences is far past
    any published run (Llama 3 405B: 16M tokens, 2,048 sequences of 8,192)."""
    request = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": "2e8"},
        "hardware": {"gpu": "H100-SXM"},
        "training": {"global_batch_size": 10**30},
    }
    assert one_sentence(capsys, ["plan", plan_file(tmp_path, request)]) == (
        "training.global_batch_size: 1.00e+30 is out of range: use 1 to 16,777,216"
    )
