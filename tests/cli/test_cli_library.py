"""`tuneplan library`: the window's plan library on the command line, run as a user runs it (a new
process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from core.library.store import PlanStore

ROOT = Path(__file__).resolve().parents[2]


def tuneplan(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_import_list_show_export_delete_on_the_windows_library(tmp_path):
    request = tmp_path / "team plan.json"
    request.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "200M"},
                "training": {"method": "qlora"},
                "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
            }
        ),
        encoding="utf-8",
    )
    done = tuneplan("library", "import", str(request), home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Imported team plan.json as plan 1 “team plan”.\n"
    # the file the window opens (core.paths)
    window_db = tmp_path / "data" / "tuneplan" / "tuneplan.db"
    store = PlanStore(window_db)
    assert [(r.id, r.name, r.method, r.gpu) for r in store.list()] == [
        (1, "team plan", "qlora", "8× H100-SXM")
    ]
    store.close()

    listed = tuneplan("library", "list", home=tmp_path)
    assert listed.returncode == 0 and listed.stdout.splitlines()[2].split()[:5] == [
        "1",
        "team",
        "plan",
        "llama-3.1-8b",
        "qlora",
    ]
    rows = json.loads(tuneplan("library", "list", "--json", home=tmp_path).stdout)
    assert [(r["id"], r["name"]) for r in rows] == [(1, "team plan")]

    shown = tuneplan("library", "show", "1", home=tmp_path).stdout
    lines = {
        line.split()[0]: line.split()[1:]
        for line in shown.splitlines()
        if line.startswith("training.")
    }
    assert lines["training.method"] == ["qlora", "set"]
    assert lines["training.sharding"][1:] == ["chosen", "by", "the", "planner"]
    assert "training.optimizer" not in lines  # a default: counted, not listed
    assert "settings at their defaults)" in shown

    out = tmp_path / "shared.json"
    assert tuneplan("library", "export", "1", "-o", str(out), home=tmp_path).returncode == 0
    assert json.loads(out.read_text(encoding="utf-8")) == {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 2e8},
        "training": {"method": "qlora"},
        "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
    }

    deleted = tuneplan("library", "delete", "1", home=tmp_path)
    assert (deleted.returncode, deleted.stdout) == (0, "Deleted plan 1 “team plan”.\n")
    again = tuneplan("library", "delete", "1", home=tmp_path)
    assert again.returncode == 1 and again.stderr.startswith(
        "tuneplan: no plan with id 1 in the library "
    )
    assert "Traceback" not in again.stderr and again.stderr.count("\n") == 1


def test_an_import_the_planner_cannot_plan_is_kept_and_a_bad_file_is_one_sentence(tmp_path):
    too_long = tmp_path / "long.json"
    too_long.write_text(
        json.dumps(
            {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 1e8, "seq_len": 2000000}}
        ),
        encoding="utf-8",
    )
    done = tuneplan("library", "import", str(too_long), "--name", "too long", home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "Imported long.json as plan 1 “too long” (not planned: data.seq_len 2000000 "
    )
    shown = tuneplan("library", "show", "1", "--json", home=tmp_path)
    assert shown.returncode == 1 and "has no result: it was not planned" in shown.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": -5}}), encoding="utf-8"
    )
    refused = tuneplan("library", "import", str(bad), home=tmp_path)
    assert refused.returncode == 1 and refused.stderr.startswith(
        "tuneplan: bad.json is not a valid plan request: "
    )
    assert "data.tokens" in refused.stderr and refused.stderr.count("\n") == 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "model",
                    "data",
                    "training",
                    "preset",
                    "tokens",
                    "method",
                    "request",
                    "memory",
                    "hardware",
                    "gpu",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(JSON)
def test_importing_any_json_is_saved_or_refused_in_one_sentence(tmp_path_factory, capsys, value):
    folder = tmp_path_factory.mktemp("import")
    path = folder / "request.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    capsys.readouterr()
    code = main(["library", "--db", str(folder / "lib.db"), "import", str(path)])
    out, err = capsys.readouterr()
    if code == 0:
        assert out.startswith("Imported request.json as plan 1 “request”") and not err
    else:
        assert code == 1 and not out and err.startswith("tuneplan: ") and err.count("\n") == 1
        assert "Traceback" not in err
