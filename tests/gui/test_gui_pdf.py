"""The PDF report: headline numbers equal the plan JSON, charts are vector paths, every page renders."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from pypdf import PdfReader

from core import report_cli
from core.units import fmt_hours, fmt_usd
from gui.launch import main

REQUEST = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2.0e8, "epochs": 1, "seq_len": 4096},
           "training": {"method": "lora", "lora_rank": 16},
           "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
           "pricing": {"provider": "aws", "mode": "on_demand"}}


@pytest.fixture(scope="module")
def rendered(qapp, tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("pdf")
    req = folder / "request.json"
    req.write_text(json.dumps(REQUEST))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["plan", str(req), "--json"]) == 0
    plan_json = json.loads(out.getvalue())
    pdf = folder / "plan.pdf"
    assert main(["report", str(req), "-o", str(pdf)]) == 0
    return pdf, plan_json


def text_of(pdf: Path) -> str:
    reader = PdfReader(str(pdf))
    text = unicodedata.normalize("NFKC", "\n".join(page.extract_text() or "" for page in reader.pages))
    return re.sub(r"[ \t]+", " ", text)  # pypdf puts tabs between words


def test_headline_numbers_equal_the_plan_json(rendered):
    pdf, plan_json = rendered
    text = text_of(pdf)
    assert "8× H100-SXM" in text
    assert fmt_hours(plan_json["time"]["hours"]) in text
    assert fmt_usd(plan_json["cost"]["total_usd"]) in text
    assert f"{plan_json['time']['gpu_hours']:,.1f}" in text
    assert f"{plan_json['compute']['mfu']:.0%}" in text
    assert plan_json["cost"]["provider"] in text  # AWS


def test_every_section_is_there_and_long_sources_are_not_clipped(rendered):
    pdf, plan_json = rendered
    text = text_of(pdf)
    for title in ("Executive summary", "Memory", "Cost", "Hardware options", "Risks", "Assumptions",
                  "Appendix: formulas"):
        assert title in text
    squashed = re.sub(r"\s+", "", text)
    for assumption in plan_json["assumptions"]:
        assert re.sub(r"\s+", "", assumption["source"]) in squashed, assumption["source"]
    reader = PdfReader(str(pdf))
    n = len(reader.pages)
    assert f"page {n} of {n}" in text


def test_charts_are_vector_paths(rendered):
    pdf, _ = rendered
    reader = PdfReader(str(pdf))
    streams = b"".join(page.get_contents().get_data() for page in reader.pages
                       if page.get_contents() is not None)
    operators = re.findall(rb"(?<=\s)(re|f\*?|B\*?|l|m|c)(?=\s)", streams)
    fills = sum(1 for op in operators if op in (b"f", b"f*", b"B", b"B*"))
    lines = operators.count(b"l")
    # The memory chart alone stacks six components for about twenty GPUs: well over 100 filled shapes.
    assert fills > 100 and lines > 200
    assert b"/Image" not in streams  # drawn, not pasted as pixels


@pytest.mark.integration
def test_pdftoppm_renders_every_page(rendered, tmp_path: Path):
    if shutil.which("pdftoppm") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("pdftoppm is required in CI (poppler-utils)")
        pytest.skip("pdftoppm (poppler-utils) is not installed")
    pdf, _ = rendered
    pages = len(PdfReader(str(pdf)).pages)
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(pdf), str(tmp_path / "p")], check=True, timeout=60)
    images = sorted(tmp_path.glob("p-*.png"))
    assert len(images) == pages >= 3
    assert all(p.stat().st_size > 1000 for p in images)


@pytest.mark.integration
def test_report_command_renders_headless(tmp_path: Path):
    req = tmp_path / "request.json"
    req.write_text(json.dumps(REQUEST))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    out = tmp_path / "plan.pdf"
    done = subprocess.run([sys.executable, "-m", "gui.launch", "report", str(req), "-o", str(out)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b"%PDF")
    assert "pages" in done.stderr


def test_report_without_a_renderer_says_so(tmp_path: Path, capsys):
    from core.cli import main as core_main

    req = tmp_path / "request.json"
    req.write_text(json.dumps(REQUEST))
    report_cli.set_renderer(None)
    assert core_main(["report", str(req), "-o", str(tmp_path / "x.pdf")]) == 1
    assert "needs PySide6" in capsys.readouterr().err
    assert not (tmp_path / "x.pdf").exists()


def test_pdf_renders_off_the_gui_thread(qtbot, tmp_path: Path):
    """The window exports on a worker: painting on a QPdfWriter there must work."""
    from core.models import PlanRequest
    from core.report import analyse, build_report
    from gui.pdf import render_report
    from gui.workers import ThreadExecutor

    report = build_report(analyse(PlanRequest.model_validate(REQUEST)))
    ex = ThreadExecutor()
    pages: list[int] = []
    ex.submit(lambda: render_report(report, tmp_path / "t.pdf"), pages.append)
    qtbot.waitUntil(lambda: bool(pages), timeout=20000)
    assert pages[0] == len(PdfReader(str(tmp_path / "t.pdf")).pages) >= 3
    assert ex.stop_all(2000)


def test_report_command_errors_are_one_sentence(tmp_path: Path, capsys):
    assert main(["report", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.pdf")]) == 1
    assert "cannot read" in capsys.readouterr().err
    req = tmp_path / "request.json"
    req.write_text(json.dumps(REQUEST))
    assert main(["report", str(req), "-o", str(tmp_path / "no" / "such" / "x.pdf")]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and err.count("\n") == 1
