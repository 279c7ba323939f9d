"""The PDF report: headline numbers equal the plan JSON, charts are vector paths, every page
renders."""

from __future__ import annotations

import html
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

from core.units import fmt_gpu_hours, fmt_hours, fmt_usd
from tuneplan.launch import main

REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": 2.0e8, "epochs": 1, "seq_len": 4096},
    "training": {"method": "lora", "lora_rank": 16},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
    "pricing": {"provider": "aws", "mode": "on_demand"},
}


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
    text = unicodedata.normalize(
        "NFKC", "\n".join(page.extract_text() or "" for page in reader.pages)
    )
    return re.sub(r"[ \t]+", " ", text)  # pypdf puts tabs between words


def test_headline_numbers_equal_the_plan_json(rendered):
    pdf, plan_json = rendered
    text = text_of(pdf)
    assert "8× H100-SXM" in text
    assert fmt_hours(plan_json["time"]["hours"]) in text
    assert fmt_usd(plan_json["cost"]["total_usd"]) in text
    # GPU-hours to three significant figures, the one rule for them (units.fmt_gpu_hours); the old
    # one-decimal check passed only while the figure's first decimals happened to match
    assert f"{fmt_gpu_hours(plan_json['time']['gpu_hours'])} GPU-hours" in text
    assert f"{plan_json['compute']['mfu']:.0%}" in text
    assert plan_json["cost"]["provider"] in text  # AWS


def test_every_section_is_there_and_long_sources_are_not_clipped(rendered):
    pdf, plan_json = rendered
    text = text_of(pdf)
    for title in (
        "Executive summary",
        "Memory",
        "Cost",
        "Hardware options",
        "Risks",
        "Assumptions",
        "Appendix: formulas",
    ):
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
    contents = (page.get_contents() for page in reader.pages)
    streams = b"".join(stream.get_data() for stream in contents if stream is not None)
    operators = re.findall(rb"(?<=\s)(re|f\*?|B\*?|l|m|c)(?=\s)", streams)
    fills = sum(1 for op in operators if op in (b"f", b"f*", b"B", b"B*"))
    lines = operators.count(b"l")
    # The memory chart alone stacks six components for about twenty GPUs: well over 100 filled
    # shapes.
    assert fills > 100 and lines > 200
    assert b"/Image" not in streams  # drawn, not pasted as pixels


@pytest.mark.integration
def test_pdftoppm_renders_every_page(rendered, tmp_path: Path):
    pdftoppm = need("pdftoppm")
    pdf, _ = rendered
    pages = len(PdfReader(str(pdf)).pages)
    subprocess.run(
        [pdftoppm, "-r", "30", "-png", str(pdf), str(tmp_path / "p")], check=True, timeout=60
    )
    images = sorted(tmp_path.glob("p-*.png"))
    assert len(images) == pages >= 3
    assert all(p.stat().st_size > 1000 for p in images)


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{tool} is required in CI (poppler-utils)")
        pytest.skip(f"{tool} (poppler-utils) is not installed")
    return path


def word_boxes(
    pdf: Path, out: Path
) -> list[tuple[float, float, list[tuple[float, float, float, float, str]]]]:
    """(page width, page height, [(x0, y0, x1, y1, word)]) per page, from pdftotext -bbox."""
    subprocess.run([need("pdftotext"), "-bbox", str(pdf), str(out)], check=True, timeout=60)
    pages = []
    for page in re.finditer(
        r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', out.read_text(), re.S
    ):
        words = [
            (float(a), float(b), float(c), float(d), html.unescape(w))
            for a, b, c, d, w in re.findall(
                r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" '
                r'yMax="([\d.]+)">(.*?)</word>',
                page.group(3),
            )
        ]
        pages.append((float(page.group(1)), float(page.group(2)), words))
    return pages


@pytest.mark.integration
def test_no_text_is_clipped_or_drawn_over_other_text(rendered, tmp_path: Path):
    pdf, _ = rendered
    pages = word_boxes(pdf, tmp_path / "words.html")
    assert len(pages) == len(PdfReader(str(pdf)).pages)
    for n, (width, height, words) in enumerate(pages, start=1):
        assert words, f"page {n} has no text"
        # A4 with 48 pt margins: every word sits inside the margins (a clipped word would run past
        # them).
        outside = [
            w for w in words if w[0] < 46 or w[2] > width - 46 or w[1] < 46 or w[3] > height - 20
        ]
        assert not outside, f"page {n}: words outside the margins: {outside[:5]}"
        overlapping = []
        for i, a in enumerate(words):
            for b in words[i + 1 :]:
                dx = min(a[2], b[2]) - max(a[0], b[0])
                dy = min(a[3], b[3]) - max(a[1], b[1])
                if (
                    dx > 0.5
                    and dy > 0.5
                    and dx * dy
                    > 0.2 * min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
                ):
                    overlapping.append((a[4], b[4]))
        assert not overlapping, f"page {n}: words drawn over each other: {overlapping[:5]}"


def test_memory_chart_labels_and_captions_are_in_the_pdf(rendered):
    """Each GPU's bar is labelled with the configuration it is drawn at, and each chart says what it
    shows."""
    from core.planner.analysis import analyse
    from core.planner.report_charts import memory_chart
    from core.planner.request import PlanRequest

    pdf, _ = rendered
    squashed = re.sub(r"\s+", "", text_of(pdf))
    analysis = analyse(PlanRequest.model_validate(REQUEST))
    chart = memory_chart(analysis.figures)
    for label in chart.labels():
        assert re.sub(r"\s+", "", label) in squashed, label
    # the planned GPU's bar at the plan's own configuration (its sharding the planner's best for 8
    # H100s)
    assert f"H100-SXM·8×{analysis.result.request.training.sharding.value}" in squashed
    assert re.sub(r"\s+", "", chart.caption or "x") in squashed
    assert "thePareto front(no other is both faster and cheaper)".replace(" ", "") in squashed


@pytest.mark.integration
def test_report_command_renders_headless(tmp_path: Path):
    req = tmp_path / "request.json"
    req.write_text(json.dumps(REQUEST))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    out = tmp_path / "plan.pdf"
    done = subprocess.run(
        [sys.executable, "-m", "tuneplan", "report", str(req), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b"%PDF")
    assert "pages" in done.stderr


def test_pdf_renders_off_the_gui_thread(qtbot, tmp_path: Path):
    """The window exports on a worker: painting on a QPdfWriter there must work."""
    from core.planner.analysis import analyse
    from core.planner.report import build_report
    from core.planner.request import PlanRequest
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


def test_the_time_section_prints_the_step_breakdown_without_its_zero_rows(qapp, tmp_path: Path):
    """A plan with a step breakdown set by hand, drawn and read back: the shares are each part over
    the 8 s step (5/8 = 62.5% → 62%, 1.5/8 = 18.75% → 19%, 1/8 = 12.5% → 12%, 0.5/8 = 6.25% → 6%;
    Python rounds exact halves to even), the parts that are 0 (memory-bound, host transfer, bubble)
    are left out, and MFU is named as the achieved model-FLOPs utilisation."""
    from core.planner.analysis import analyse
    from core.planner.report import build_report
    from core.planner.request import PlanRequest
    from core.planner.result import StepBreakdown
    from gui.pdf import render_report

    analysis = analyse(PlanRequest.model_validate(REQUEST))
    compute = analysis.result.compute.model_copy(
        update={
            "step_time_s": 8.0,
            "mfu": 0.38,
            "hfu": 0.0,
            "step_breakdown_s": StepBreakdown(
                gemm=5.0, attention=1.5, optimizer=1.0, exposed_comm=0.5
            ),
        }
    )
    analysis = analysis.model_copy(
        update={"result": analysis.result.model_copy(update={"compute": compute})}
    )
    pdf = tmp_path / "step.pdf"
    render_report(build_report(analysis), pdf)
    text = text_of(pdf)
    # one cell a line in pypdf
    time = " ".join(text[text.index("\nTime\n") : text.index("\nCost\n")].split())
    assert "part of the step seconds share of the step" in time
    for row in (
        "matmuls (GEMM) 5 s 62%",
        "attention 1.5 s 19%",
        "optimizer step 1 s 12%",
        "exposed communication 0.5 s 6%",
    ):
        assert row in time, row
    for absent in ("memory-bound", "host transfer", "pipeline bubble"):
        assert absent not in time
    assert "takes 8 s" in time
    # wrapped after "model-"
    assert "achievedmodel-FLOPsutilisation(MFU)38%" in time.replace(" ", "")
