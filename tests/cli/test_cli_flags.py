"""Every flag of `tuneplan plan` is honoured or refused in one sentence naming it: a 0 is not
dropped for being falsy, --gpus and --nodes do not vanish without --gpu, quick flags are not ignored
beside REQUEST.json, --db is not ignored without --probe-run. (The CLI and the window judging the
same text alike: tests/gui/test_cli_window_flags.py.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

import pytest

from cli.common import CliError
from cli.main import build_parser, main
from cli.plan_request import QUICK_FIELDS, build_request

BASE = ["plan", "--model", "llama-3.1-8b", "--tokens", "2e8"]


def parsed(*flags: str) -> argparse.Namespace:
    return build_parser().parse_args([*BASE, *flags])


def refusal(*flags: str) -> str:
    with pytest.raises(CliError) as caught:
        build_request(parsed(*flags))
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("flags", "path", "value"),
    [
        (["--seq-len", "4096"], ("data", "seq_len"), 4096),
        (["--epochs", "2.5"], ("data", "epochs"), 2.5),
        (["--method", "qlora"], ("training", "method"), "qlora"),
        (["--lora-rank", "64"], ("training", "lora_rank"), 64),
        (["--gpu", "A100-80GB-SXM", "--gpus", "4"], ("hardware", "gpus_per_node"), 4),
        (["--gpu", "A100-80GB-SXM", "--nodes", "2"], ("hardware", "nodes"), 2),
        (["--provider", "lambda"], ("pricing", "provider"), "lambda"),
        (["--mode", "spot"], ("pricing", "mode"), "spot"),
    ],
)
def test_each_value_flag_reaches_the_request(
    flags: list[str], path: tuple[str, str], value: object
) -> None:
    request = build_request(parsed(*flags)).model_dump(mode="json")
    assert request[path[0]][path[1]] == value


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--seq-len", "0"], "--seq-len (data.seq_len): 0 is out of range: use 16 to 2,097,152"),
        (
            ["--epochs", "0"],
            "--epochs (data.epochs): 0 is out of range: use more than 0 and at most 1,000",
        ),
        (
            ["--lora-rank", "0"],
            "--lora-rank (training.lora_rank): 0 is out of range: use 1 to 4,096",
        ),
        (
            ["--gpu", "H100-SXM", "--gpus", "0"],
            "--gpus (hardware.gpus_per_node): 0 is out of range: use 1 to 72",
        ),
        (["--gpus", "8"], "--gpus needs --gpu: name the GPU (e.g. --gpu H100-SXM --gpus 8)"),
        (["--nodes", "2"], "--nodes needs --gpu: name the GPU (e.g. --gpu H100-SXM --nodes 2)"),
        (["--db", "probes.db"], "--db names the probe history for --probe-run"),
        (["--seq-len="], "--seq-len is empty"),
    ],
)
def test_a_flag_that_would_be_dropped_is_refused_naming_it(flags: list[str], words: str) -> None:
    assert refusal(*flags).startswith(words)


@pytest.mark.parametrize("dest", list(QUICK_FIELDS))
def test_a_quick_flag_beside_a_request_file_is_refused(dest: str, tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2e8}}))
    option = "--" + dest.replace("_", "-")
    args = build_parser().parse_args(["plan", str(path), option, "1"])
    with pytest.raises(CliError) as caught:
        build_request(args)
    assert str(caught.value) == (
        f"{option} applies only without REQUEST.json: set {QUICK_FIELDS[dest]} in the file "
        "instead, or leave the file out"
    )


def test_seq_len_and_epochs_change_the_plan() -> None:
    # The reproduction planned --seq-len 0 at 2048 and --epochs 0 as one epoch; a value that
    # is accepted must change what is planned: twice the epochs, twice the steps (same tokens per
    # step).
    def steps(*flags: str) -> int:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*BASE, "--gpu", "H100-SXM", *flags, "--json"]) == 0
        return int(json.loads(out.getvalue())["compute"]["steps"])

    assert steps("--epochs", "2") == 2 * steps("--epochs", "1")
