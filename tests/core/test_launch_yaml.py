"""The launch files' YAML writer: what PyYAML reads back is what was written, for the awkward strings too."""

from __future__ import annotations

import pytest

from core.launch import yaml_text

yaml = pytest.importorskip("yaml", reason="the launch extra brings PyYAML")


def test_round_trip_through_pyyaml() -> None:
    data = {
        "plain": "train.py",
        "colon": "a: b",
        "hash": "x # not a comment",
        "quotes": 'say "hi" it\'s',
        "yes_word": "yes",  # YAML 1.1 would read a bare yes as true
        "numberish": "1e3",
        "unicode": "× GPUs – ok",
        "null": None,
        "flag": False,
        "int": 8,
        "float": 2e-5,
        "big": 1e20,
        "lr": 0.0003,
        "script": 'set -e\nMASTER_ADDR="$(echo "$X" | head -n 1)"\n\ntorchrun "$S"\n',
        "nested": {"/checkpoints": {"name": "b", "mode": "MOUNT_CACHED"}, "empty": {}},
        "list": ["q_proj", "v_proj"],
        "records": [{"path": "p", "type": "alpaca"}, {"path": "q"}],
        "none_list": [],
    }
    assert yaml.safe_load(yaml_text.dump(data, ["header: with colon", ""])) == data


def test_header_lines_are_comments() -> None:
    text = yaml_text.dump({"a": 1}, ["plan 'x'", "", "expect: 30 GB"])
    assert text.splitlines()[:3] == ["# plan 'x'", "#", "# expect: 30 GB"]
