"""A headless install (no PySide6): every command but the PDF ones works, and those say so in one
sentence.

The install is simulated honestly, in a process of its own: before anything else runs, a meta-path
finder refuses PySide6, shiboken6 and pyqtgraph as a machine without them would
(ModuleNotFoundError), and the `tuneplan` entry point (tuneplan.launch.main) runs the command as the
installed script would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.replayed_run import replayed_run_file

ROOT = Path(__file__).resolve().parents[2]
REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8"},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
}
SENTENCE = (
    "tuneplan: the PDF renderer is not available (it needs PySide6); run the `tuneplan` command "
    "of a full install"
)
# Runs before the program: Qt's packages cannot be found, as on a machine where they were never
# installed.
WITHOUT_QT = """
import importlib.abc, sys
class NoQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoQt())
"""


def tuneplan_without_qt(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`tuneplan ARGS` in a process where PySide6 cannot be imported."""
    code = WITHOUT_QT + "from tuneplan.launch import main\nraise SystemExit(main(sys.argv[1:]))\n"
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "QT_QPA_PLATFORM": "offscreen",
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_simulated_install_has_no_qt(tmp_path: Path) -> None:
    """The blocker itself: PySide6 is installed here, and in the simulated process it cannot be
    imported."""
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_QT + "import PySide6.QtGui\n"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'PySide6'" in done.stderr


def test_report_without_pyside6_says_so_in_one_sentence(tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST), encoding="utf-8")
    done = tuneplan_without_qt(tmp_path, "report", str(request), "-o", str(tmp_path / "plan.pdf"))
    assert done.returncode == 1
    assert done.stderr.strip() == SENTENCE
    assert done.stdout == ""
    assert not (tmp_path / "plan.pdf").exists()


def test_probe_report_without_pyside6_names_the_json_alternative(tmp_path: Path) -> None:
    run = replayed_run_file(tmp_path)
    done = tuneplan_without_qt(
        tmp_path, "probe-report", str(run), "-o", str(tmp_path / "report.pdf")
    )
    assert done.returncode == 1
    assert done.stderr.strip() == SENTENCE + ", or use --json"
    assert not (tmp_path / "report.pdf").exists()


@pytest.mark.parametrize("output", ["plan.json", None])
def test_other_commands_work_without_pyside6(tmp_path: Path, output: str | None) -> None:
    """`tuneplan plan` and `tuneplan report -o plan.json` never import Qt: they answer as on a full
    install."""
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST), encoding="utf-8")
    if output is None:
        done = tuneplan_without_qt(tmp_path, "plan", str(request), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["request"]["hardware"]["gpu"] == "H100-SXM"
    else:
        done = tuneplan_without_qt(tmp_path, "report", str(request), "-o", str(tmp_path / output))
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip() == f"wrote {tmp_path / output}"
        assert json.loads((tmp_path / output).read_text(encoding="utf-8"))["title"]
