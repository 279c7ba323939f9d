"""Check the probes on real NVIDIA hardware: the quick suite, run locally, every output kept.

    python bench/device_check.py [OUT_DIR] [--suite quick] [--python PATH] [--timeout S]
                                 [--gpu ID] [--no-step]

OUT_DIR defaults to $OUT, else ./device_check_out. It runs ``tuneplan probe --local --suite quick
--json`` (this checkout's code, with this interpreter) and saves: probe.json (the run JSON),
probe.stderr.txt (progress), exit_code.txt, probes.db (the run's store),
raw/NN_<probe>_<command>.txt (every remote command's stdout, stderr and exit status, as the parsers
saw them), and when nvidia-smi exists nvidia-smi-q.txt, nvidia-smi-L.txt, nvidia-smi-topo.txt and
nvidia-smi-query.csv taken directly, so parsers and thresholds can be compared with the tool's own
text. On a machine without an NVIDIA GPU it says so and still runs the suite.

Then the step probe times one layer of Llama-3.1-8B for a LoRA r16 all-linear, a full and a QLoRA
fine-tune (micro-batch 1 × 2048 tokens, checkpointing on, the plan's GPU ``--gpu``):
step_<name>.json (the run), step_<name>.stderr.txt and plan_<name>.txt (`tuneplan plan --probe-run`:
planned vs measured step). QLoRA is skipped with the reason where bitsandbytes is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERY_FIELDS = (
    "index,name,pci.bus_id,driver_version,pstate,persistence_mode,mig.mode.current,ecc.mode.current,"
    "memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,power.limit,clocks.sm,"
    "clocks.max.sm,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,"
    "pcie.link.width.max,clocks_event_reasons.active"
)


def out_dir(arg: str | None) -> Path:
    return Path(arg or os.environ.get("OUT") or "device_check_out").resolve()


def save_tool_outputs(out: Path) -> bool:
    """The driver's own view, straight from nvidia-smi; False when there is no nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        print(
            "no NVIDIA GPU: nvidia-smi is not on PATH; the probes will report 'no NVIDIA GPU found'"
        )
        return False
    for name, args in (
        ("nvidia-smi-q.txt", ["-q"]),
        ("nvidia-smi-L.txt", ["-L"]),
        ("nvidia-smi-topo.txt", ["topo", "-m"]),
        ("nvidia-smi-nvlink.txt", ["nvlink", "--status"]),
        ("nvidia-smi-query.csv", [f"--query-gpu={QUERY_FIELDS}", "--format=csv"]),
    ):
        try:
            done = subprocess.run(
                ["nvidia-smi", *args], capture_output=True, text=True, timeout=120
            )
            text = done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr.strip() else "")
            text += f"\n[exit status {done.returncode}]\n"
        except (OSError, subprocess.TimeoutExpired) as exc:
            text = f"[could not run nvidia-smi {' '.join(args)}: {exc}]\n"
        (out / name).write_text(text, encoding="utf-8")
    return True


def dump_raw_outputs(db: Path, raw_dir: Path) -> int:
    """Every stored raw output as a text file; returns how many."""
    if not db.exists():
        return 0
    raw_dir.mkdir(exist_ok=True)
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT probe, command, stdout, stderr, exit_code, duration_s FROM raw_outputs "
            "ORDER BY id"
        ).fetchall()
    except sqlite3.Error as exc:
        print(f"could not read raw outputs from {db}: {exc}")
        return 0
    finally:
        conn.close()
    for n, (probe, command, stdout, stderr, code, duration) in enumerate(rows, start=1):
        slug = (
            re.sub(r"[^A-Za-z0-9]+", "-", re.sub(r"\S*/", "", command))[:60].strip("-") or "command"
        )
        body = (
            f"$ {command}\n[probe {probe}; exit status {code}; {duration:.2f} "
            f"s]\n\n[stdout]\n{stdout}\n\n[stderr]\n{stderr}\n"
        )
        (raw_dir / f"{n:02d}_{probe}_{slug}.txt").write_text(body, encoding="utf-8")
    return len(rows)


STEP_PLANS: dict[str, dict[str, object]] = {
    "lora": {"method": "lora", "lora_rank": 16, "lora_targets": "all-linear"},
    "full": {"method": "full"},
    "qlora": {"method": "qlora", "lora_rank": 16, "lora_targets": "all-linear"},
}


def run_cli(args: list[str], timeout: float) -> tuple[str, str, int]:
    """`python -m cli ARGS` from this checkout: stdout, stderr (with '[timed out]') and the exit
    code."""
    command = [sys.executable, "-m", "cli", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    print("$ " + " ".join(command))
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
        return done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr = (
            exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        ) + "\n[timed out]"
        return stdout, stderr, 124


def step_checks(out: Path, python: str, gpu: str, timeout: float) -> None:
    """The step probe for Llama-3.1-8B LoRA, full and QLoRA layers, and each run applied to its
    plan."""
    for name, training in STEP_PLANS.items():
        plan = out / f"request_{name}.json"
        plan.write_text(
            json.dumps(
                {
                    "model": {"preset": "llama-3.1-8b"},
                    "data": {"tokens": "200M", "seq_len": 2048},
                    "training": {**training, "micro_batch_size": 1},
                    "hardware": {"gpu": gpu, "gpus_per_node": 1},
                }
            ),
            encoding="utf-8",
        )
        run = out / f"step_{name}.json"
        stdout, stderr, code = run_cli(
            [
                "probe",
                "--local",
                "--suite",
                "step",
                "--plan",
                str(plan),
                "--json",
                "--db",
                str(out / "probes.db"),
                "--python",
                python,
            ],
            timeout,
        )
        run.write_text(stdout, encoding="utf-8")
        (out / f"step_{name}.stderr.txt").write_text(
            f"{stderr}\n[exit status {code}]\n", encoding="utf-8"
        )
        text, err, code = run_cli(["plan", str(plan), "--probe-run", str(run)], 120)
        (out / f"plan_{name}.txt").write_text(
            f"{text}\n{err}\n[exit status {code}]\n", encoding="utf-8"
        )
        applied = [line for line in text.splitlines() if line.startswith("Applied")]
        print(
            f"step {name}: "
            + ("; ".join(applied) or f"nothing applied (see {run.name}) {err[-300:]}")
        )


def summarise(doc: dict[str, object]) -> None:
    print(f"run status: {doc.get('status')}")
    card = doc.get("scorecard")
    if isinstance(card, dict):
        print(f"verdict: {card.get('verdict')} - {card.get('summary')}")
        for check in card.get("checks") or []:
            print(
                f"  {check['status']:4}  {check['name']}: {check['measured']} (expected "
                f"{check['expected']})"
            )
    for outcome in doc.get("outcomes") or []:  # type: ignore[attr-defined]
        print(
            f"  probe {outcome['name']}: {outcome['status']}"
            + (f" - {outcome['error']}" if outcome.get("error") else "")
        )
        for warning in outcome.get("warnings") or []:
            print(f"      warning: {warning}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/device_check.py", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "out", nargs="?", help="output folder (default: $OUT or ./device_check_out)"
    )
    parser.add_argument("--suite", default="quick")
    parser.add_argument(
        "--python", help="interpreter with torch for the probes (default: this one)"
    )
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument(
        "--gpu",
        default="H200-SXM",
        help="the catalog GPU the step probe's plans name (default H200-SXM)",
    )
    parser.add_argument(
        "--no-step", action="store_true", help="skip the step probe's Llama-3.1-8B layers"
    )
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    out.mkdir(parents=True, exist_ok=True)
    has_gpu = save_tool_outputs(out)
    db = out / "probes.db"
    stdout, stderr, code = run_cli(
        [
            "probe",
            "--local",
            "--suite",
            args.suite,
            "--json",
            "--db",
            str(db),
            "--python",
            args.python or sys.executable,
        ],
        args.timeout,
    )
    (out / "probe.json").write_text(stdout, encoding="utf-8")
    (out / "probe.stderr.txt").write_text(stderr, encoding="utf-8")
    (out / "exit_code.txt").write_text(f"{code}\n", encoding="utf-8")
    count = dump_raw_outputs(db, out / "raw")
    print(f"exit code {code}; {count} raw outputs saved under {out / 'raw'}")
    try:
        doc = json.loads(stdout)
    except ValueError:
        print("the probe printed no run JSON; see probe.stderr.txt:")
        print(stderr[-2000:])
        return code or 1
    summarise(doc)
    if not args.no_step:
        step_checks(out, args.python or sys.executable, args.gpu, args.timeout)
    if not has_gpu:
        print("no NVIDIA GPU on this machine: GPU parsers and thresholds were not exercised")
    print(f"outputs in {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
