"""`tuneplan plan` and `tuneplan catalog` as a user runs them: real subprocesses, exit codes,
stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": 2.0e8, "epochs": 1, "seq_len": 4096},
    "training": {
        "method": "lora",
        "lora_rank": 16,
        "lora_targets": "all-linear",
        "precision": "amp_bf16",
        "optimizer": "adamw",
        "sharding": "none",
        "offload": "none",
        "gradient_checkpointing": True,
        "attention": "flash",
        "micro_batch_size": 1,
        "global_batch_size": 64,
        "optimizer_in_backward": False,
    },
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
    "pricing": {"provider": "aws", "mode": "on_demand"},
    "assumptions": {"mfu": None},
}


def tuneplan(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )


def write(tmp_path: Path, data: object, name: str = "req.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_plan_json_has_the_public_contract(tmp_path: Path) -> None:
    proc = tuneplan("plan", write(tmp_path, EXAMPLE), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # stdout is JSON only
    per_gpu = result["memory"]["per_gpu"]
    for key in ("weights", "gradients", "optimizer", "activations", "logits", "overhead", "total"):
        assert isinstance(per_gpu[key], int)
    assert per_gpu["total"] == pytest.approx(
        sum(per_gpu[k] for k in per_gpu if k != "total"), rel=0.001
    )
    assert result["memory"]["fits"] is True
    for key in (
        "total_flops",
        "tokens_per_second",
        "mfu",
        "step_time_s",
        "comm_time_s",
        "scaling_efficiency",
    ):
        assert key in result["compute"]
    assert set(result["cost"]["compute_usd"]) == {"on_demand", "spot", "reserved"}
    assert {"hours", "gpu_hours"} <= set(result["time"])
    assert {"size_bytes", "write_seconds", "interval_minutes"} <= set(result["checkpoint"])
    assert all({"name", "value", "source", "date"} <= set(a) for a in result["assumptions"])
    # Llama 3.1 8B in bf16: 8.03e9 × 2 bytes of frozen weights (Meta's model card: 8B parameters).
    assert per_gpu["weights"] == pytest.approx(8.03e9 * 2, rel=0.01)


def test_human_output_is_a_table_with_units(tmp_path: Path) -> None:
    proc = tuneplan("plan", write(tmp_path, EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert "Memory per GPU" in proc.stdout and " GB" in proc.stdout and "$" in proc.stdout


def test_quick_flags_and_units() -> None:
    proc = tuneplan(
        "plan",
        "--model",
        "llama-3.1-8b",
        "--tokens",
        "200M",
        "--method",
        "lora",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["hardware"]["gpu"] in ("h100", "H100-SXM")
    assert out["request"]["data"]["tokens"] == 2e8


def test_search_without_hardware_returns_candidates() -> None:
    proc = tuneplan(
        "plan", "--model", "qwen2.5-7b", "--tokens", "1e9", "--method", "full", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["candidates"] and all(c["fits"] and c["why"] for c in out["candidates"])


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--model", "llama-3-8b", "--tokens", "1e8"], "did you mean llama-3.1-8b"),
        (["--model", "llama-3.1-8b", "--tokens", "1e8", "--gpu", "H900"], "H900"),
        (["--model", "llama-3.1-8b", "--tokens", "-5"], "data.tokens"),
        (
            ["--model", "llama-3.1-8b", "--tokens", "0"],
            "0 is out of range: use more than 0 and at most 1e15",
        ),
        (["--model", "llama-3.1-8b", "--tokens", "lots"], "not a count"),
        (
            ["--model", "llama-3.1-8b", "--tokens", "1e8", "--method", "full", "--lora-rank", "8"],
            "lora_rank",
        ),
        (["--model", "llama-3.1-8b", "--tokens", "1e8", "--method", "dpo"], "full"),
        (["--model", "llama-2-7b", "--tokens", "1e8", "--seq-len", "8192"], "context of 4096"),
        (
            [
                "--model",
                "llama-3.1-405b",
                "--tokens",
                "1e9",
                "--method",
                "full",
                "--gpu",
                "RTX-4090",
            ],
            None,
        ),
    ],
)
def test_bad_input_is_one_sentence_and_nonzero(args: list[str], fragment: str | None) -> None:
    proc = tuneplan("plan", *args)
    if fragment is None:  # a plan that cannot fit still plans, says so, and lists what to change
        assert proc.returncode == 0, proc.stderr
        assert "DOES NOT FIT" in proc.stdout and "To make it fit" in proc.stdout
        return
    assert proc.returncode != 0
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_impossible_search_is_a_clear_error() -> None:
    req = json.loads(json.dumps(EXAMPLE))
    del req["hardware"]
    req["model"] = {"preset": "llama-3.1-405b"}
    req["training"].update(method="full", gradient_checkpointing=False, micro_batch_size=1)
    del req["training"]["lora_rank"]
    req["search"] = {"max_gpus": 4}
    proc = tuneplan("plan", "-", stdin=json.dumps(req))
    assert proc.returncode != 0
    assert "nothing fits" in proc.stderr and "Traceback" not in proc.stderr


def test_malformed_config_and_json(tmp_path: Path) -> None:
    bad_cfg = write(tmp_path, {"hidden_size": 4096, "num_attention_heads": 32}, "config.json")
    proc = tuneplan(
        "plan", write(tmp_path, {"model": {"hf_config": bad_cfg}, "data": {"tokens": 1e8}})
    )
    assert proc.returncode != 0 and "num_hidden_layers" in proc.stderr
    proc = tuneplan("plan", write(tmp_path, "{not json", "broken.json"))
    assert proc.returncode != 0 and "not valid JSON" in proc.stderr
    proc = tuneplan(
        "plan",
        write(
            tmp_path,
            {
                "model": {"preset": "llama-2-7b"},
                "data": {"tokens": 1e8},
                "training": {"precision": "fp4"},
            },
        ),
    )
    assert (
        proc.returncode != 0 and "training.precision" in proc.stderr and "amp_bf16" in proc.stderr
    )


@pytest.mark.parametrize("what", ["gpus", "models", "prices"])
def test_catalog_lists(what: str) -> None:
    proc = tuneplan("catalog", what, "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) >= {"gpus": 20, "models": 25, "prices": 8}[what]


def test_one_table_writer_lays_out_figures_and_text() -> None:
    """Plan and catalog tables right-align figures; the scorecard left-aligns words and cuts long
    cells."""
    from cli.table import table

    assert table([("weights", "16 GB"), ("total", "9 GB")]) == "weights  16 GB\ntotal     9 GB"
    assert table([("a", "1")], header=("name", "n")) == "name  n\n----  -\na     1"
    assert (
        table([["PASS", "a long sentence"]], ["status", "why"], align="text", max_cell=6)
        == "status  why\n------  ------\nPASS    a lon…"
    )


def test_core_never_imports_qt() -> None:
    code = (
        "import sys, importlib, pkgutil, core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'core.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', "
        "'shiboken6', 'gui')]\nprint(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_plan_loads_no_probe_module() -> None:
    """`tuneplan plan` builds the whole parser (every command's flags) but imports only what
    planning needs: the probe modules (SSH, the store, the scorecards) were 345 ms of its 408 ms
    imports."""
    code = (
        "import contextlib, io, sys\n"
        "from cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['plan', '--model', 'qwen2.5-7b', '--tokens', '1e9', '--method', 'full', "
        "'--json'])\nprint(code, sorted(m for m in sys.modules if m.startswith(('core.probes', "
        "'paramiko', 'sqlite_utils'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0 []"
