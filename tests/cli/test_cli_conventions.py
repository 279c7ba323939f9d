"""What a user of the field checks first, as they check it: `tuneplan --version`, `python -m
tuneplan`, help text on every option and examples at the end of every command's --help, and the
request's published JSON Schema."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import build_parser
from cli.schema import request_schema, schema_text

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "request.schema.json"


def run(
    *args: str, module: str = "cli", stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": "/nonexistent",
        "XDG_DATA_HOME": "/nonexistent",
    }
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = {"tuneplan": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


# --------------------------------------------------------------------------- version


@pytest.mark.parametrize("module", ["cli", "tuneplan"])
def test_version_is_printed_by_the_command_and_by_python_m_tuneplan(module: str) -> None:
    done = run("--version", module=module)
    assert done.returncode == 0, done.stderr
    # The version the package is built with: pyproject reads core.__version__, and the metainfo's
    # release says the same (a release without its metainfo entry is the usual slip).
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "core.__version__"}
    metainfo = (ROOT / "resources/desktop/io.github.tuneplan.metainfo.xml").read_text(
        encoding="utf-8"
    )
    release = re.search(r'<release version="([^"]+)"', metainfo)
    assert release is not None
    assert done.stdout.strip() == f"tuneplan {release.group(1)}"


def test_python_m_tuneplan_runs_the_command_line() -> None:
    done = run("catalog", "gpus", "--json", module="tuneplan")
    assert done.returncode == 0, done.stderr
    assert any(g["id"] == "H100-SXM" for g in json.loads(done.stdout))


# --------------------------------------------------------------------------- help


def test_every_option_of_every_command_has_help_text() -> None:
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, parser in _commands().items()
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()
    ]
    assert missing == []


@pytest.mark.parametrize("command", sorted(_commands()))
def test_each_help_ends_with_two_or_three_examples(command: str) -> None:
    done = run("--help") if command == "tuneplan" else run(command, "--help")
    assert done.returncode == 0, done.stderr
    tail = done.stdout.rstrip("\n").split("\n\n")[-1].splitlines()
    assert tail[0] == "examples:", done.stdout
    examples = tail[1:]
    assert 2 <= len(examples) <= 3
    assert all(line.startswith("  tuneplan ") for line in examples), examples


def test_examples_name_only_options_their_command_has() -> None:
    """An example that names an option the command does not have would fail when pasted."""
    for name, parser in _commands().items():
        known = {s for action in parser._actions for s in action.option_strings}
        known |= (
            {s for cmd in _commands().values() for a in cmd._actions for s in a.option_strings}
            if name == "tuneplan"
            else set()
        )
        for line in (parser.epilog or "").split("examples:")[-1].splitlines():
            used = set(re.findall(r"(?<=\s)--?[a-z][a-z-]*", line.split("#")[0]))
            assert used <= known, (name, line)


# --------------------------------------------------------------------------- schema


def test_published_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "docs/request.schema.json is stale: run `python -m cli schema > docs/request.schema.json`"
    )
    done = run("schema")
    assert done.returncode == 0 and done.stdout == schema_text()


def _shipped_requests() -> list[dict]:
    golden = json.loads((ROOT / "tests/golden/requests.json").read_text(encoding="utf-8"))
    requests = [
        r
        for k, r in golden.items()
        if not k.startswith("_") and isinstance(r, dict) and "model" in r
    ]
    return [
        json.loads(
            (ROOT / "resources/samples/plan/readme_request.json").read_text(encoding="utf-8")
        ),
        *requests,
    ]


def test_shipped_requests_validate_against_the_schema() -> None:
    """An independent validator (jsonschema) reads the schema: the README's request and the golden
    requests that plan must pass it, so an editor never marks a good request as wrong."""
    validator = jsonschema.Draft202012Validator(request_schema())
    from core.planner.request import PlanRequest

    checked = 0
    for request in _shipped_requests():
        try:
            PlanRequest.model_validate(request)
        except ValueError:
            continue  # the golden bad-input cases: the schema may or may not catch them
        errors = [e.message for e in validator.iter_errors(request)]
        assert errors == [], (request, errors)
        checked += 1
    assert checked >= 10


@settings(max_examples=40, deadline=None)
@given(
    key=st.text(min_size=1, max_size=12).filter(
        lambda k: (
            k
            not in {
                "$schema",
                "model",
                "data",
                "training",
                "hardware",
                "pricing",
                "search",
                "assumptions",
            }
        )
    )
)
def test_an_unknown_top_level_key_is_refused_by_the_schema_and_the_planner(key: str) -> None:
    from pydantic import ValidationError

    from core.planner.request import PlanRequest

    request = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "200M"}, key: 1}
    assert not jsonschema.Draft202012Validator(request_schema()).is_valid(request)
    with pytest.raises(ValidationError):
        PlanRequest.model_validate(request)


def test_a_request_naming_its_schema_plans() -> None:
    request = {
        "$schema": "../docs/request.schema.json",
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": "200M"},
        "hardware": {"gpu": "H100-SXM"},
    }
    jsonschema.validate(request, request_schema())
    done = run("plan", "-", "--json", stdin=json.dumps(request))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hardware"]["gpu"] == "H100-SXM"
    assert "$schema" not in done.stdout  # an editor's hint, not part of the plan


def test_a_planning_process_starts_no_blas_threads_but_the_probe_keeps_every_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`tuneplan plan` does small element-wise NumPy work, so its process asks OpenBLAS for one
    thread; the probe, whose local benchmarks run in child processes, leaves the setting alone, and
    a user's own setting wins."""
    from cli.main import process_main

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert process_main(["catalog", "gpus", "--json"]) == 0
    assert os.environ.get("OPENBLAS_NUM_THREADS") == "1"
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    assert process_main(["probe", "--local", "--suite", "no-such-suite"]) != 0
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    assert process_main(["catalog", "gpus", "--json"]) == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == "8"
