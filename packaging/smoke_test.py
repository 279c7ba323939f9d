"""Smoke-test a built bundle.

The frozen window starts and passes its self-checks, and the frozen CLI plans,
writes a PDF and probes this machine, all with an empty home so nothing of the builder's leaks in.

    python packaging/smoke_test.py dist/tuneplan [--without-resources]

`--without-resources` runs the window check on a copy of the bundle whose resources/ were removed
and passes only when that check FAILS: proof that the smoke test notices a bundle that lost its
data. Exit 0 when everything expected happened; each step prints one line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUEST = ROOT / "resources" / "samples" / "plan" / "readme_request.json"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNEPLAN_", "XDG_", "PYTHON"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        QT_QPA_PLATFORM="offscreen",
    )
    return env


def _run(
    cmd: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def window(binary: Path, home: Path) -> tuple[bool, str]:
    """The frozen window starts offscreen, runs gui.smoke's checks and exits."""
    proc = _run([str(binary)], {**_env(home), "TUNEPLAN_SMOKE_TEST": "1"}, timeout=60)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("smoke ")]
    ok = proc.returncode == 0 and lines and not any("FAIL" in ln for ln in lines)
    return bool(ok), "\n".join(lines) + (f"\n{proc.stderr.strip()}" if not ok else "")


def cli_plan(binary: Path, home: Path) -> tuple[bool, str]:
    proc = _run([str(binary), "plan", str(REQUEST), "--json"], _env(home))
    if proc.returncode != 0:
        return False, proc.stderr.strip()
    result = json.loads(proc.stdout)
    hw, hours = result["hardware"], result["time"]["hours"]
    return hours > 0 and hw[
        "gpu"
    ] == "H100-SXM", f"{hw['gpu']} x{hw['gpus_per_node'] * hw['nodes']}, {hours:.2f} h"


def cli_pdf(binary: Path, home: Path) -> tuple[bool, str]:
    out = home / "plan.pdf"
    proc = _run([str(binary), "report", str(REQUEST), "-o", str(out)], _env(home))
    data = out.read_bytes() if out.exists() else b""
    pages = data.count(b"/Type /Page") - data.count(b"/Type /Pages")
    ok = proc.returncode == 0 and data.startswith(b"%PDF") and pages >= 1
    return ok, f"{len(data):,} bytes, {pages} pages" if ok else proc.stderr.strip()


def cli_probe(binary: Path, home: Path) -> tuple[bool, str]:
    proc = _run(
        [str(binary), "probe", "--local", "--suite", "inventory", "--json"], _env(home), timeout=180
    )
    try:
        run = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return False, (proc.stderr or proc.stdout).strip()[-400:]
    verdict = run.get("scorecard", {}).get("verdict")
    return bool(verdict) and run.get(
        "status"
    ) == "completed", f"run {run.get('status')}, verdict {verdict!r}"


# Qt modules the app never uses: their libraries in the bundle mean the spec's excludes stopped
# working.
UNUSED_QT = (
    "Qt6WebEngine",
    "Qt6Qml",
    "Qt6Quick",
    "Qt63D",
    "Qt6Multimedia",
    "Qt6Pdf",
    "Qt6Charts",
    "Qt6Designer",
)


def contents(bundle: Path) -> tuple[bool, str]:
    """Only the Qt the app uses is inside, and the shipped data is where core/resources.py looks."""
    internal = bundle / "_internal"
    unused = sorted({p.name for p in internal.rglob("*") if any(m in p.name for m in UNUSED_QT)})
    data = [
        internal / "resources" / part
        for part in (
            "catalog/gpus.json",
            "catalog/prices.json",
            "probes",
            "samples/plan/readme_request.json",
            "icons/tuneplan.svg",
        )
    ]
    missing = [str(p.relative_to(bundle)) for p in data if not p.exists()]
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file() and not p.is_symlink())
    ok = not unused and not missing
    detail = (
        f"{size / 1e6:.0f} MB"
        + (f"; unused Qt inside: {', '.join(unused)}" if unused else "")
        + (f"; missing: {', '.join(missing)}" if missing else "")
    )
    return ok, detail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path, help="the one-folder bundle (dist/tuneplan)")
    parser.add_argument("--without-resources", action="store_true")
    args = parser.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="tuneplan-smoke-") as tmp:
        home = Path(tmp)
        if args.without_resources:
            copy = home / "bundle"
            shutil.copytree(args.bundle, copy, symlinks=True)
            shutil.rmtree(copy / "_internal" / "resources")
            ok, text = window(copy / "tuneplan", home)
            print(text)
            print(
                "smoke without resources: "
                + ("FAILED as it must" if not ok else "PASSED (a missing catalog went unnoticed)")
            )
            return 0 if not ok else 1
        ok, text = contents(args.bundle)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} contents: {text}")
        binary = args.bundle / "tuneplan"
        for name, step in (
            ("window", window),
            ("cli plan", cli_plan),
            ("cli report", cli_pdf),
            ("cli probe --local", cli_probe),
        ):
            ok, text = step(binary, home)
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {text}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
