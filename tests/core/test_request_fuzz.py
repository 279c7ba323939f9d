"""Generated bad requests through the real CLI: a result or one sentence, exit code 0 or 1, within 2
s.

Hypothesis starts from a valid request (its GPU given, or searching the catalog) and changes it: any
field of the request schema (walked from ``PlanRequest`` itself, so a new field is generated too)
set to a value it may well hold (each choice the schema names, small and boundary numbers) or a
hostile one (NaN, ±inf, 1e308, 0.5, a 2^31 integer, -0, a string with a newline or a terminal
escape, a 5,000-character name, a list, an object), an inline config.json with its size keys broken
the same way, or a config.json path that is no config (a folder, /dev/zero, a named pipe, a JSON
list). The request is written to a file and planned by ``cli.main.main`` in-process, as `tuneplan
plan FILE --json` runs. What must hold for every one:

- exit code 0 with JSON on stdout and nothing on stderr (no NumPy warning either), or exit code 1
  with one line on stderr and nothing on stdout; never an exception out of ``main``;
- within 2 s.

Examples are bounded so the test runs in CI in well under a minute.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import threading
import time
import warnings
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from cli.main import main
from core.planner.model.config_limits import LIMITS
from core.planner.request import PlanRequest

BUDGET_S = 2.0
HANG_S = 20.0
VALID: dict[str, Any] = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8"},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
}
CONFIG: dict[str, Any] = {
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "intermediate_size": 5632,
    "model_type": "llama",
}


def schema_fields(
    model: type[BaseModel], prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], FieldInfo]]:
    """Every leaf field of the request schema with its path, nested models walked
    (assumptions.buy.pue)."""
    out: list[tuple[tuple[str, ...], FieldInfo]] = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        nested = next(
            (
                a
                for a in get_args(kind) or (kind,)
                if isinstance(a, type) and issubclass(a, BaseModel)
            ),
            None,
        )
        out += schema_fields(nested, (*prefix, name)) if nested else [((*prefix, name), info)]
    return out


def in_range(info: FieldInfo) -> st.SearchStrategy[Any]:
    """Values the field's own type and bounds allow: what keeps a good share of the requests valid,
    so that the planner and the search run on the odd corners, not only validation."""
    kinds = get_args(info.annotation) or (info.annotation,)
    bound = {
        k: getattr(m, k) for m in info.metadata for k in ("ge", "gt", "le", "lt") if hasattr(m, k)
    }
    low, high = bound.get("ge", bound.get("gt", 0)), bound.get("le", bound.get("lt", 10**6))
    for kind in kinds:
        if kind is bool:
            return st.booleans()
        if isinstance(kind, type) and issubclass(kind, Enum):
            return st.sampled_from([m.value for m in kind])
        if get_origin(kind) is Literal:
            return st.sampled_from(get_args(kind))
        if kind is int:
            return st.integers(int(low), int(high))
        if kind is float:
            return st.floats(float(low), float(high))
    return plausible


FIELDS = [(path, info) for path, info in schema_fields(PlanRequest) if path[0] != "model"]
hostile_numbers = st.sampled_from(
    [
        0,
        -1,
        0.5,
        -0.0,
        1e-9,
        1e308,
        -1e308,
        2**31,
        2**63,
        10**30,
        float("nan"),
        float("inf"),
        float("-inf"),
        True,
    ]
)
hostile_text = st.sampled_from(
    [
        "",
        " ",
        "a\nb",
        "\x1b[31mred",
        "x" * 5000,
        "1,5B",
        "2,5e8",
        "80G",
        "null",
        "-1",
        "\u2028",
        "../../etc/passwd",
        "H100-SXM\n",
    ]
)
scalars = st.one_of(
    hostile_numbers, hostile_text, st.none(), st.integers(), st.floats(), st.text(max_size=20)
)
hostile = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(max_size=5), scalars, max_size=2),
)
plausible = st.sampled_from(
    [
        1,
        8,
        64,
        0.3,
        True,
        "aws",
        "lambda",
        "runpod",
        "H100-SXM",
        "RTX-4090",
        "A10G",
        "q,v",
        "all-linear",
    ]
)


def _set(request: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = request
    for key in path[:-1]:
        child = node.get(key)
        node[key] = child = child if isinstance(child, dict) else {}
        node = child
    node[path[-1]] = value


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """An inline config.json with up to three keys broken (the keys the planner reads as sizes and
    others)."""
    cfg = dict(CONFIG)
    keys = [
        *LIMITS,
        "expansion_ratio",
        "model_type",
        "hidden_act",
        "tie_word_embeddings",
        "layer_types",
        "text_config",
        "use_sliding_window",
        "no_rope_layers",
        "_name_or_path",
    ]
    for key in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
        cfg[key] = draw(st.one_of(hostile, st.integers(0, 2**20), st.integers(1, 64)))
    return cfg


@st.composite
def requests(draw: st.DrawFn, folder: Path) -> dict[str, Any] | str:
    """A request to write: the valid one with fields broken, another model, or the whole document
    replaced."""
    request: dict[str, Any] = json.loads(json.dumps(VALID))
    kind = draw(
        st.sampled_from(
            ["fields", "fields", "fields", "config", "config file", "params", "document"]
        )
    )
    if kind == "document":
        return str(draw(st.one_of(hostile, st.just("[" * 5000))))
    if kind == "config":
        request["model"] = draw(configs())
    elif kind == "config file":
        request["model"] = {
            "hf_config": draw(
                st.sampled_from(
                    [
                        str(folder),
                        "/dev/zero",
                        str(folder / "fifo"),
                        str(folder / "list.json"),
                        "x" * 5000 + ".json",
                        str(folder / "missing.json"),
                    ]
                )
            )
        }
    elif kind == "params":
        request["model"] = {"params": draw(hostile)}
    if draw(st.booleans()):
        del request["hardware"]  # the search over the whole catalog instead of the GPU given
    for path, info in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique_by=lambda f: f[0])):
        _set(request, path, draw(st.one_of(in_range(info), in_range(info), hostile)))
    return request


def plan_cli(path: Path) -> tuple[int, str, str]:
    """`tuneplan plan FILE --json` in-process: (exit code, stdout, stderr), warnings shown as a user
    sees them.

    It runs on a daemon thread so that a hang (a named pipe opened for reading blocks until a writer
    comes) fails the test after HANG_S instead of stopping the suite; an exception out of ``main``
    is re-raised."""
    out, err = io.StringIO(), io.StringIO()
    outcome: list[Any] = []

    def run() -> None:
        try:
            with (
                warnings.catch_warnings(),
                contextlib.redirect_stdout(out),
                contextlib.redirect_stderr(err),
            ):
                # every NumPy warning printed, not only the first of a run
                warnings.simplefilter("always")
                outcome.append(main(["plan", str(path), "--json"]))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_S)
    assert outcome, f"tuneplan plan hung for {HANG_S:g} s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0], out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz")
    os.mkfifo(path / "fifo")
    (path / "list.json").write_text("[1, 2]", encoding="utf-8")
    return path


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_request_gives_a_result_or_one_sentence_within_two_seconds(
    folder: Path, data: st.DataObject
) -> None:
    request = data.draw(requests(folder))
    path = folder / "request.json"
    path.write_text(request if isinstance(request, str) else json.dumps(request), encoding="utf-8")
    start = time.perf_counter()
    code, out, err = plan_cli(path)
    elapsed = time.perf_counter() - start
    assert code in (0, 1)
    if code == 0:
        assert err == "" and json.loads(out)["request"]
    else:
        assert out == "" and err.startswith("tuneplan: ") and err.count("\n") == 1, err
    assert elapsed < BUDGET_S, f"{elapsed:.1f} s"
