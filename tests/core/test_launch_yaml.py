"""The launch files' quoting layer (core/launch/emit.py): what PyYAML reads back is what was
written, and a comment stays one comment whatever line break the text holds."""

from __future__ import annotations

import math

import yaml
from hypothesis import given
from hypothesis import strategies as st

from core.launch import emit

# Every character some consumer ends a line at: bash (\n), YAML 1.1 (\r, NEL, LS, PS), Python's
# splitlines.
LINE_BREAKS = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_round_trip_through_pyyaml() -> None:
    data: dict[str, object] = {
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
        # What the hand-written writer lost: a list holding an empty mapping, and a multi-line
        # string that starts with spaces (a literal block cannot start with more indentation than it
        # declares).
        "list_of_empty": [{}],
        "indented_block": "  two spaces\nthen more\n",
        "leading_space_path": " /models/x\ny",
    }
    assert yaml.safe_load(emit.yaml_document(data, ["header: with colon", ""])) == data
    assert math.isnan(yaml.safe_load(emit.yaml_document({"x": float("nan")}, []))["x"])


def test_a_script_stays_readable_as_a_literal_block() -> None:
    text = emit.yaml_document({"run": "set -e\ntorchrun train.py\n"}, [])
    assert "run: |\n  set -e\n  torchrun train.py\n" in text


def test_header_lines_are_comments() -> None:
    text = emit.yaml_document({"a": 1}, ["plan 'x'", "", "expect: 30 GB"])
    assert text.splitlines()[:3] == ["# plan 'x'", "#", "# expect: 30 GB"]


def test_every_line_break_in_a_comment_becomes_a_space() -> None:
    for brk in LINE_BREAKS:
        (line,) = emit.comment_lines([f"x{brk}setup: touch PWNED"])
        assert line == "# x" + " " * len(brk) + "setup: touch PWNED"
        assert yaml.safe_load(emit.yaml_document({"a": 1}, [f"x{brk}setup: touch PWNED"])) == {
            "a": 1
        }


@given(
    st.lists(st.text(), max_size=4),
    st.dictionaries(st.text(), st.text() | st.integers() | st.none(), max_size=4),
)
def test_any_header_and_any_strings_read_back_exactly(
    header: list[str], data: dict[str, object]
) -> None:
    # Lone surrogates cannot be UTF-8 at all; the mapping's own strings are the plan's, written as
    # given.
    data = {
        k: v
        for k, v in data.items()
        if not any(0xD800 <= ord(c) <= 0xDFFF for c in k + (v if isinstance(v, str) else ""))
    }
    text = emit.yaml_document(data, header)
    text.encode("utf-8")
    assert (yaml.safe_load(text) or {}) == data
    comments = text.split("\n")[: len(header)]
    assert all(c == "#" or c.startswith("# ") for c in comments)
