"""No text from the user can become a command or a key in a launch file.

The plan's name, the model's ``_name_or_path`` (a downloaded config.json controls it), the folder of
a ``model.hf_config`` and the request file's own name all reach the files. Here they are generated
from every line break any consumer reads (bash: LF; YAML 1.1: CR, NEL, LS, PS; Python: VT, FF, FS,
GS, RS) and the shell's metacharacters, and every file written must then:

- parse in its consumer's parser (PyYAML for the YAML files, every document of a Kubernetes manifest
  file, ``json`` for DeepSpeed) with the same structure as the same plan under a plain name (no key
  gained, e.g. a SkyPilot ``setup:``, accelerate's ``main_process_ip`` or a Kubernetes
  ``command:``);
- pass ``bash -n`` and shellcheck, when it is a shell script (``torchrun.sh``, ``train.sbatch``,
  SkyPilot's ``setup``/``run``);
- when run by bash with stub ``torchrun``, ``srun`` and ``scontrol`` first on PATH, create nothing
  but the stubs' log and the checkpoint folder it was pointed at.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.catalog.overrides import load_catalog
from core.launch import emit, write_launch_files
from core.planner.plan import plan
from core.planner.request import PlanRequest
from tests.core import launch_shell
from tests.core.launch_cases import TODAY

ROOT = Path(__file__).parents[2]
LINE_BREAKS = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
PAYLOADS = [
    "touch PWNED",
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED;",
    "&& touch PWNED",
    "| touch PWNED",
    "setup: touch PWNED",
    "main_process_ip: 6.6.6.6",
    "run: |",
    "---",
    "- x",
    "{a: b}",
    "#",
    "'",
    '"',
    "\\",
    "$HOME",
    "${X:?}",
    "*",
    "?",
    "!",
    "~",
    "%",
    ":",
    " ",
    "\t",
    "x",
    "é",
    "\u202e",
    "\x00",
    "\x1b[31m",
]
TOKENS = st.sampled_from(LINE_BREAKS + PAYLOADS)
NAMES = st.lists(TOKENS, min_size=1, max_size=8).map("".join)
# A folder name: anything but NUL and '/'.
FOLDERS = NAMES.map(lambda s: s.replace("\x00", "").replace("/", "_")).filter(
    lambda s: s.strip(" .") != ""
)

# Each example plans, writes and runs files in its own folder: slow by design, and the folders are
# fixtures.
SLOW_FIXTURES = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def _request(
    model: dict[str, Any], spot: bool, sharding: str = "zero2", launch: dict[str, str] | None = None
) -> PlanRequest:
    """A 2-node plan (every multi-node branch of the scripts) that every format can express but
    torchtune; with FSDP, accelerate and axolotl write the config's decoder-layer class name."""
    return PlanRequest.model_validate(
        {
            "model": model,
            "data": {"tokens": 2e8, "seq_len": 4096},
            "training": {
                "method": "lora",
                "sharding": sharding,
                "micro_batch_size": 4,
                "global_batch_size": 256,
            },
            "hardware": {"gpu": "A100-80GB-SXM", "gpus_per_node": 8, "nodes": 2},
            "pricing": {"provider": "aws", "mode": "spot" if spot else "on_demand"},
            "launch": launch,
        }
    )


def _hf_config(folder: Path) -> str:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(load_catalog().model("llama-3.1-8b").config))
    return str(folder / "config.json")


def _write(out: Path, request: PlanRequest, name: str) -> dict[str, str]:
    written = write_launch_files(
        request, plan(request, today=TODAY), "all", out, name=name, today=TODAY, partial=True
    )
    return {p.name: p.read_text(encoding="utf-8") for p in written.paths}


def _shape(value: Any) -> Any:
    """The structure of a parsed document: its keys all the way down, values only as their type."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _documents(files: dict[str, str]) -> dict[str, Any]:
    """Each file as its consumer parses it (the shell scripts as their text: they are run below)."""
    parsed: dict[str, Any] = {}
    for name, text in files.items():
        if name.endswith(".yaml"):
            parsed[name] = list(yaml.safe_load_all(text))
        elif name.endswith(".json"):
            parsed[name] = json.loads(text)
    return parsed


def _scripts(files: dict[str, str]) -> dict[str, str]:
    scripts = {n: t for n, t in files.items() if n.endswith((".sh", ".sbatch"))}
    sky = yaml.safe_load(files.get("sky_task.yaml", "{}")) or {}
    for key in ("setup", "run"):
        if isinstance(sky.get(key), str):
            scripts[f"sky_{key}.sh"] = "#!/usr/bin/env bash\n" + sky[key]
    return scripts


def _run_with_stubs(script: Path, work: Path) -> tuple[set[str], str]:
    """Run `script` with bash in an empty `work` folder: every path it left there (relative) but the
    stubs' log and the checkpoint folder, and that log."""
    env = launch_shell.stub_env(
        work.parent / f"{work.name}-stubs",
        work,
        others=("sbatch", "accelerate", "deepspeed", "python", "python3"),
    )
    env |= {
        "NODE_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "SKYPILOT_NODE_IPS": "127.0.0.1\n127.0.0.2",
        "SKYPILOT_NODE_RANK": "0",
        "SKYPILOT_NUM_NODES": "2",
        "SKYPILOT_NUM_GPUS_PER_NODE": "8",
        "TRAIN_SCRIPT": "train.py",
    }
    subprocess.run(
        ["bash", str(script)], cwd=work, env=env, capture_output=True, timeout=60, check=False
    )
    left = {str(p.relative_to(work)) for p in work.rglob("*")}
    log = Path(env["STUB_LOG"]).read_text() if Path(env["STUB_LOG"]).exists() else ""
    return {p for p in left if p != "log" and p.split(os.sep)[0] != "checkpoints"}, log


def _check_scripts(files: dict[str, str], tmp: Path) -> None:
    for name, text in _scripts(files).items():
        path = tmp / "scripts" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        syntax = subprocess.run(
            ["bash", "-n", str(path)], capture_output=True, text=True, timeout=30
        )
        assert syntax.returncode == 0, f"{name}: {syntax.stderr}"
        check = launch_shell.run_shellcheck(path)
        assert check is None or check.returncode == 0, f"{name}: {check.stdout if check else ''}"
        work = tmp / f"run-{name}"
        work.mkdir()
        left, log = _run_with_stubs(path, work)
        assert left == set(), f"{name} created files"
        # it ran, and ran through
        assert "torchrun " in log, f"{name} did not reach its torchrun line: {log!r}"
    assert not list(tmp.rglob("PWNED"))


Shapes = Callable[[str, bool, str], dict[str, Any]]


@pytest.fixture(scope="module")
def plain_shapes(tmp_path_factory: pytest.TempPathFactory) -> Shapes:
    """The structure of every file of the same plan under a plain name and a plain model folder."""
    cache: dict[tuple[str, bool, str], dict[str, Any]] = {}

    def shapes(kind: str, spot: bool, sharding: str) -> dict[str, Any]:
        key = (kind, spot, sharding)
        if key not in cache:
            tmp = tmp_path_factory.mktemp("plain")
            model = (
                {"preset": "llama-3.1-8b"}
                if kind == "preset"
                else {"hf_config": _hf_config(tmp / "model")}
            )
            files = _write(tmp / "out", _request(model, spot, sharding), "plain")
            cache[key] = {n: _shape(d) for n, d in _documents(files).items()}
        return cache[key]

    return shapes


def _assert_same_shape(files: dict[str, str], expected: dict[str, Any]) -> None:
    docs = _documents(files)
    assert set(docs) == set(expected)
    for name, doc in docs.items():
        assert _shape(doc) == expected[name], name


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_FIXTURES)
@given(name=NAMES, folder=FOLDERS, spot=st.booleans())
def test_generated_names_and_model_folders_stay_data(
    name: str,
    folder: str,
    spot: bool,
    tmp_path_factory: pytest.TempPathFactory,
    plain_shapes: Shapes,
) -> None:
    tmp = tmp_path_factory.mktemp("inject")
    request = _request({"hf_config": _hf_config(tmp / "models" / folder)}, spot)
    files = _write(tmp / "out", request, name)
    _assert_same_shape(files, plain_shapes("hf_config", spot, "zero2"))
    _check_scripts(files, tmp)


@settings(max_examples=20, deadline=None, suppress_health_check=SLOW_FIXTURES)
@given(
    model_name=NAMES,
    architecture=NAMES,
    spot=st.booleans(),
    sharding=st.sampled_from(["zero2", "fsdp"]),
)
def test_config_fields_stay_data(
    model_name: str,
    architecture: str,
    spot: bool,
    sharding: str,
    tmp_path_factory: pytest.TempPathFactory,
    plain_shapes: Shapes,
) -> None:
    """A downloaded config.json's ``_name_or_path`` (the plan's model name in every header) and
    ``architectures`` (the decoder-layer class FSDP wraps) are the config author's text."""
    tmp = tmp_path_factory.mktemp("config")
    folder = tmp / "model"
    folder.mkdir()
    config = load_catalog().model("llama-3.1-8b").config | {
        "_name_or_path": model_name,
        "architectures": [architecture + "ForCausalLM"],
    }
    (folder / "config.json").write_text(json.dumps(config))
    files = _write(
        tmp / "out", _request({"hf_config": str(folder / "config.json")}, spot, sharding), "plain"
    )
    _assert_same_shape(files, plain_shapes("hf_config", spot, sharding))
    _check_scripts(files, tmp)


@settings(max_examples=15, deadline=None, suppress_health_check=SLOW_FIXTURES)
@given(name=NAMES, spot=st.booleans())
def test_generated_names_stay_data_in_a_queued_pytorchjob(
    name: str, spot: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The kubernetes format's other job (PyTorchJob, with a Kueue queue): the same documents, keys
    and kinds as under a plain name, and the plan's name nowhere but its annotation and the header
    comments."""
    request = _request(
        {"preset": "llama-3.1-8b"},
        spot,
        launch={"kubernetes_job": "pytorchjob", "kueue_queue": "q"},
    )
    result = plan(request, today=TODAY)
    tmp = tmp_path_factory.mktemp("k8s")
    files = {
        p.name: p.read_text(encoding="utf-8")
        for p in write_launch_files(
            request, result, "kubernetes", tmp / "hostile", name=name, today=TODAY
        ).paths
    }
    plain = {
        p.name: p.read_text(encoding="utf-8")
        for p in write_launch_files(
            request, result, "kubernetes", tmp / "plain", name="plain", today=TODAY
        ).paths
    }
    _assert_same_shape(files, {n: _shape(d) for n, d in _documents(plain).items()})
    for docs in _documents(files).values():
        for doc in docs:
            assert doc["metadata"]["annotations"]["tuneplan.io/plan"] == emit.one_line(name)
            assert doc["metadata"]["name"].startswith("tuneplan-")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_the_reported_reproduction_writes_files_that_do_only_what_the_plan_says(
    tmp_path: Path,
) -> None:
    """`tuneplan launch req.json --format all -o out --name $'x\\ntouch PWNED #'`, then `bash
    out/torchrun.sh`; and the same through the request file's own name (the default name)."""
    raw = _request({"preset": "llama-3.1-8b"}, spot=True).model_dump(mode="json", exclude_none=True)
    for i, (req_name, extra) in enumerate(
        [("req.json", ["--name", "x\ntouch PWNED #"]), ("x\ntouch PWNED #.json", [])]
    ):
        req = tmp_path / req_name
        req.write_text(json.dumps(raw))
        out = tmp_path / f"out{i}"
        result = _cli("launch", str(req), "--format", "all", "-o", str(out), *extra, cwd=tmp_path)
        assert "Traceback" not in result.stderr
        files = {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()}
        assert "torchrun.sh" in files and "train.sbatch" in files and "sky_task.yaml" in files
        assert "setup" not in yaml.safe_load(files["sky_task.yaml"])
        assert "main_process_ip" not in yaml.safe_load(files["accelerate_config.yaml"])
        _check_scripts(files, tmp_path / f"check{i}")
    assert not list(tmp_path.rglob("PWNED"))


def test_a_symlink_in_the_output_folder_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("the user's own file\n")
    target.chmod(0o600)
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.sbatch").symlink_to(target)
    (out / "torchrun.sh").symlink_to(tmp_path / "dangling")
    request = _request({"preset": "llama-3.1-8b"}, spot=False)
    write_launch_files(
        request, plan(request, today=TODAY), ["slurm", "torchrun"], out, name="p", today=TODAY
    )
    assert (
        target.read_text() == "the user's own file\n"
        and stat.S_IMODE(target.stat().st_mode) == 0o600
    )
    assert not (tmp_path / "dangling").exists()
    for name in ("train.sbatch", "torchrun.sh"):
        st_ = (out / name).lstat()
        assert stat.S_ISREG(st_.st_mode) and stat.S_IMODE(st_.st_mode) == 0o755
    # no temporary file left
    assert sorted(p.name for p in out.iterdir()) == ["torchrun.sh", "train.sbatch"]
