"""The probe report: content built from real fixtures, the run JSON round trip, and `tuneplan
probe-report`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from cli import main as cli
from core.document import BarChart, LineChart, Table
from core.probes.evidence import (
    BurnResult,
    ComputeResult,
    DistributedResult,
    HostInventory,
    ProbeEvidence,
    ProbeOutcome,
    ProbeStatus,
    StorageResult,
)
from core.probes.history.store import ProbeStore
from core.probes.output.report import build_probe_report
from core.probes.output.run_json import run_json
from core.probes.output.run_record import ProbeRunRecord, record_from_json
from core.probes.parsers import (
    parse_dmesg,
    parse_dmon,
    parse_fio_json,
    parse_ibstat,
    parse_nccl_tests,
    parse_nvidia_smi_q,
    parse_topo_matrix,
)
from core.probes.scorecard import score

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "probes"
SCREENSHOT = ROOT / "docs" / "screenshots" / "probe-report-page-1.png"


def text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def realistic_evidence() -> ProbeEvidence:
    """An 8×H100 node, each part parsed from a real output; the matmul figures are illustrative (no
    fixture)."""
    q = parse_nvidia_smi_q(text("nvidia_smi_q_8xH100_535.183.01.txt")).value
    fio = parse_fio_json(text("fio_json_fio3.1_randread_4k_qd1_32jobs_SATA_SSD_PM883.json")).value
    assert q is not None and fio is not None
    read = fio.jobs[0].read
    assert read is not None and read.clat_p99_ns is not None
    return ProbeEvidence(
        inventory=HostInventory(
            hostname="gpu-node-17",
            os="Ubuntu 22.04.4 LTS",
            kernel="5.15.0-112-generic",
            cpu_model="Intel Xeon Platinum 8480+",
            cpu_cores=224,
            ram_bytes=2 * 1024**4,
            virtualization="kvm",
            nvidia=q,
            topology=parse_topo_matrix(text("nvidia_smi_topo_m_8xH100_SXM_NV18_noNICs.txt")).value,
            infiniband=parse_ibstat(text("ibstat_H100_node_CX7_all_active.txt")).value,
            filesystems=[{"mount": "/", "type": "ext4", "size": "2TB", "free": "1.4TB"}],
        ),
        health=q,
        kernel_log=parse_dmesg(text("dmesg_iso_xid13_xid43_app_fault_plus_oom.log")).value,
        compute=ComputeResult(
            device="cuda",
            dtype="bf16",
            matrix_size=8192,
            tflops_per_device=[742.0, 738.5, 745.1, 701.2, 739.9, 741.3, 736.8, 744.0],
        ),
        collectives=parse_nccl_tests(
            text("nccl_allreduce_2x8xH100_GCP_A3mega_TCPXO_mangled_header.txt")
        ).value,
        collective_interconnect="roce",
        storage=[
            StorageResult(
                path="/data",
                role="data",
                tool="fio",
                filesystem="ext4",
                free_bytes=1.4e12,
                rand_read_iops=read.iops,
                rand_read_p99_ms=read.clat_p99_ns / 1e6,
                fio=[fio],
            )
        ],
        distributed=DistributedResult(
            backend="nccl",
            world_size=8,
            all_reduce_ok=True,
            ranks=[{"RANK": str(i), "WORLD_SIZE": "8"} for i in range(8)],
        ),
        burn=BurnResult(
            duration_s=5, completed=True, samples=5, max_temp_c=65.0, min_sm_clock_mhz=1980.0
        ),
    )


@pytest.fixture(scope="module")
def samples():
    found = parse_dmon(text("nvidia_smi_dmon_1xH100_under_gpuburn_590.48.01.txt")).value
    assert found
    return found


@pytest.fixture(scope="module")
def record(samples) -> ProbeRunRecord:
    evidence = realistic_evidence()
    return ProbeRunRecord(
        host="gpu-node-17",
        started="2026-03-02T14:05:00Z",
        evidence=evidence,
        scorecard=score(evidence, samples=samples),
        samples=samples,
        warnings=["storage: fio printed 'fio: terminating on signal 2'"],
    )


@pytest.fixture(scope="module")
def report(record):
    return build_probe_report(record)


def blocks(report, kind):
    return [b for s in report.sections for b in s.blocks if isinstance(b, kind)]


def test_cover_has_the_verdict_and_one_sentence(report, record):
    assert report.title == "GPU node readiness: gpu-node-17"
    assert report.date == "2026-03-02 14:05 UTC"
    assert report.conclusion == record.scorecard.summary
    assert report.conclusion.startswith("READY WITH WARNINGS: ")
    figures = {k.label: k.value for k in report.key_figures}
    assert figures["Verdict"] == "READY WITH WARNINGS"
    assert figures["GPUs"] == "8× NVIDIA H100 80GB HBM3"
    assert figures["Matmul"] == "701–745 TFLOP/s per device (bf16)"
    # A3 Mega fixture line 54: ' 8589934592 ... 47743 179.92 337.35 0' (in-place busbw at 8 GiB), 16
    # ranks
    assert figures["All-reduce busbw"] == "337.4 GB/s at 8 GiB (16 ranks)"


def test_scorecard_table_lists_every_check_failures_first(report, record):
    table = next(
        t
        for t in blocks(report, Table)
        if t.header == ["check", "status", "measured", "expected", "source"]
    )
    assert {r[0] for r in table.rows} == {c.name for c in record.scorecard.checks}
    order = [r[1] for r in table.rows]
    assert order == sorted(order, key=["FAIL", "WARN", "PASS", "INFO"].index)
    # sources are cited by number; the URLs are listed once at the end
    assert all("https://" not in r[4] for r in table.rows)
    sources = next(s for s in report.sections if s.title == "Sources").blocks[0].items
    assert any("azure_gpu_clock_throttling.nhc" in item for item in sources)
    findings = next(s for s in report.sections if s.title == "Findings").blocks[0].items
    assert any(item.startswith("WARN — Clock-event reasons: GPU 2") for item in findings)


def test_busbw_chart_by_message_size_with_the_expected_marker(report):
    chart = next(
        c for c in blocks(report, BarChart) if c.title == "All-reduce bus bandwidth by message size"
    )
    # sizes below 1 MiB left out
    assert chart.categories[-1] == "8 GiB" and chart.categories[0] == "1 MiB"
    in_place = dict(zip(chart.categories, chart.series[0].values, strict=True))
    assert in_place["8 GiB"] == pytest.approx(337.35)
    # line 51: ' 1073741824 ... 159.37  298.82  0'
    assert in_place["1 GiB"] == pytest.approx(298.82)
    # ibstat: 8 × 'Rate: 400' ConnectX-7 ports up -> 8 rails × 48 GB/s (sjeaugey, nccl-tests#119) =
    # 384
    assert chart.markers and chart.markers[0] == pytest.approx(384.0)


def test_storage_matmul_and_metric_charts(report):
    bars = {c.title: c for c in blocks(report, BarChart)}
    iops = bars["4 KiB random read"]
    assert iops.series[0].values == [pytest.approx(45.419, abs=1e-3)]  # fio 'iops' 45419.109682
    matmul = bars["Dense bf16 matmul per device (8192×8192)"]
    # H100 SXM MAMF (stas00)
    assert matmul.series[0].values[3] == 701.2 and matmul.markers[0] == 794.5
    lines = {c.title: c for c in blocks(report, LineChart)}
    # dmon columns gtemp / pclk / pwr, five rows, one per second
    assert lines["GPU temperature over time"].series[0].values == [63, 63, 64, 64, 65]
    assert lines["SM clock over time"].series[0].values == [1980] * 5
    assert lines["Power over time"].series[0].values == [631, 634, 633, 634, 636]
    assert lines["Power over time"].x == [0, 1, 2, 3, 4]


def test_inventory_and_evidence_appendix(report):
    tables = blocks(report, Table)
    gpu_table = next(t for t in tables if t.header[:2] == ["GPU", "model"])
    # fixture line 'GPU UUID'
    assert gpu_table.rows[0][-1] == "GPU-566e6f65-c38e-b12f-4824-6944218668b9"
    assert gpu_table.rows[0][3] == "Gen5 x16 / Gen5 x16"
    xid = next(t for t in tables if t.header[:3] == ["line", "time", "Xid"])
    assert {r[2] for r in xid.rows} == {"13", "43"}
    appendix = next(s for s in report.sections if s.title == "Appendix: evidence")
    text_items = [i for b in appendix.blocks for i in getattr(b, "items", [])]
    assert "storage: fio printed 'fio: terminating on signal 2'" in text_items


def test_a_run_without_scorecard_is_graded_and_gpu_less_runs_report_cleanly():
    evidence = ProbeEvidence(
        inventory=HostInventory(hostname="ci"),
        compute=ComputeResult(
            device="cpu", dtype="fp32", matrix_size=1024, tflops_per_device=[0.2]
        ),
    )
    report = build_probe_report(ProbeRunRecord(host="ci", evidence=evidence))
    assert report.conclusion == "NOT READY for GPU training: no NVIDIA GPU found."
    figures = {k.label: k.value for k in report.key_figures}
    assert figures["Verdict"] == "NOT READY" and figures["GPUs"] == "no NVIDIA GPU found"
    # 0.2 TFLOP/s of a CPU, in the unit that reads
    assert figures["Matmul"] == "200 GFLOP/s (fp32, cpu)"
    chart = next(
        b
        for s in report.sections
        if s.title == "Compute"
        for b in s.blocks
        if isinstance(b, BarChart)
    )
    assert chart.unit == "GFLOP/s" and chart.series[0].values == [200.0]


def test_a_stored_run_that_measured_nothing_reports_no_verdict_and_why():
    store = ProbeStore(":memory:")
    run_id = store.start_run(
        "This machine", "collectives", ["collectives"], started=1_772_460_300.0
    )
    store.add_outcome(
        run_id,
        ProbeOutcome(
            name="collectives",
            status=ProbeStatus.skipped,
            started=1.0,
            ended=1.0,
            error="torch is not installed in the host's Python (/usr/bin/python3)",
        ),
    )
    store.finish_run(
        run_id, "completed", evidence=ProbeEvidence(), scorecard=score(ProbeEvidence())
    )
    run = store.load_run(run_id)
    store.close()
    assert run.summary.verdict is None
    report = build_probe_report(run)
    assert report.conclusion == (
        "No verdict: no probe produced any evidence to grade (collectives skipped: torch is "
        "not installed in the host's Python (/usr/bin/python3))."
    )
    assert {k.label: k.value for k in report.key_figures}["Verdict"] == "no verdict"


def test_record_from_json_names_what_is_wrong():
    with pytest.raises(ValueError, match="no 'evidence' key"):
        record_from_json({"host": "x"})
    with pytest.raises(ValueError, match=r"evidence\.compute\.tflops_per_device"):
        record_from_json(
            {
                "evidence": {
                    "compute": {
                        "device": "cuda",
                        "dtype": "bf16",
                        "matrix_size": 8,
                        "tflops_per_device": "fast",
                    }
                }
            }
        )
    with pytest.raises(ValueError, match="must be an object"):
        record_from_json([1, 2])


def test_run_json_round_trips_through_the_store(record):
    store = ProbeStore(":memory:")
    run_id = store.start_run("gpu-node-17", "quick", ["inventory"], started=1_772_460_300.0)
    store.add_samples(run_id, record.samples)
    store.finish_run(run_id, "completed", evidence=record.evidence, scorecard=record.scorecard)
    data = json.loads(json.dumps(run_json(store.load_run(run_id), samples=True)))
    # what `tuneplan probe --json` prints: the same keys, no samples
    printed = run_json(store.load_run(run_id))
    store.close()
    assert set(data) - set(printed) == {"samples", "samples_note"} and set(printed) <= set(data)
    again = record_from_json(data)
    assert (
        again.host == "gpu-node-17"
        and data["started"] == 1_772_460_300.0
        and data["run_id"] == run_id
    )
    assert build_probe_report(again).date == "2026-03-02 14:05 UTC"
    assert again.evidence == record.evidence and again.scorecard == record.scorecard
    assert [m.temp_c for m in again.samples] == [63, 63, 64, 64, 65]
    assert data["summary"]["status"] == "completed"


def test_stored_samples_are_thinned_evenly_per_gpu():
    import numpy as np

    from core.probes.history.sample_table import SampleTable
    from core.probes.output.run_record import samples_from_table

    n = 5000  # per GPU, two GPUs interleaved
    t = np.repeat(np.arange(n) * 0.1, 2)
    gpu = np.tile([0.0, 1.0], n)
    temp = np.repeat(np.arange(n, dtype=float), 2)
    nan = np.full(2 * n, np.nan)
    table = SampleTable(t, gpu, nan, nan, nan, temp, nan, nan, nan, nan)
    thinned = samples_from_table(table, per_gpu=100)
    assert [sum(1 for m in thinned if m.gpu == g) for g in (0, 1)] == [100, 100]
    first, last = thinned[0], [m for m in thinned if m.gpu == 1][-1]
    assert (first.temp_c, last.temp_c) == (0.0, float(n - 1))  # both ends kept
    assert first.power_w is None and first.clocks_event_reasons == []


# --------------------------------------------------------------------------- the command


def run_cli(args, capsys):
    code = cli.main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_probe_report_errors_are_one_sentence(tmp_path, capsys):
    db = str(tmp_path / "probes.db")
    code, _out, err = run_cli(
        ["probe-report", "42", "--db", db, "-o", str(tmp_path / "r.pdf")], capsys
    )
    assert code == 1 and err.startswith("tuneplan: unknown run id 42") and err.count("\n") == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _out, err = run_cli(["probe-report", str(bad), "-o", str(tmp_path / "r.pdf")], capsys)
    assert code == 1 and "bad.json is not valid JSON" in err
    empty = tmp_path / "plan.json"
    empty.write_text('{"model": {"preset": "llama-3.1-8b"}}')
    code, _out, err = run_cli(["probe-report", str(empty), "--json"], capsys)
    assert code == 1 and "is not a probe run: the JSON has no 'evidence' key" in err
    code, _out, err = run_cli(["probe-report", "latest", "--json"], capsys)
    assert code == 1 and "neither a run JSON file nor a run id" in err
    code, _out, err = run_cli(["probe-report", str(tmp_path / "missing.json"), "--json"], capsys)
    assert code == 1 and "cannot read" in err


def test_probe_report_from_a_store_run_id_prints_json(tmp_path, record, capsys):
    db = tmp_path / "probes.db"
    store = ProbeStore(db)
    run_id = store.start_run("gpu-node-17", "quick", ["inventory"])
    store.finish_run(run_id, "completed", evidence=record.evidence, scorecard=record.scorecard)
    store.close()
    code, out, _err = run_cli(["probe-report", str(run_id), "--db", str(db), "--json"], capsys)
    assert code == 0
    content = json.loads(out)
    assert content["title"] == "GPU node readiness: gpu-node-17"
    assert content["conclusion"] == record.scorecard.summary


def pdf_text(pdf: Path) -> str:
    from pypdf import PdfReader

    reader = PdfReader(str(pdf))
    raw = unicodedata.normalize(
        "NFKC", "\n".join(page.extract_text() or "" for page in reader.pages)
    )
    return re.sub(r"[ \t]+", " ", raw)


@pytest.mark.slow
@pytest.mark.integration
def test_probe_report_pdf_from_a_json_file(tmp_path, record):
    if not shutil.which("pdftoppm"):
        pytest.skip("pdftoppm (poppler-utils) is not installed")
    run = tmp_path / "run.json"
    run.write_text(
        json.dumps(
            {
                "host": record.host,
                "started": "2026-03-02T14:05:00Z",
                "evidence": record.evidence.model_dump(mode="json"),
                "scorecard": record.scorecard.model_dump(mode="json"),
                "samples": [m.model_dump(mode="json") for m in record.samples],
            }
        )
    )
    pdf = tmp_path / "report.pdf"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    code = (
        "import sys; from tuneplan.launch import main; "
        f"raise SystemExit(main(['probe-report', {str(run)!r}, '-o', {str(pdf)!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"wrote .*report\.pdf \(\d+ pages\)", done.stderr)
    words = pdf_text(pdf)
    assert "GPU node readiness: gpu-node-17" in words
    assert "READY WITH WARNINGS" in words
    for heading in (
        "Scorecard",
        "Findings",
        "Network",
        "Compute",
        "Storage",
        "GPU metrics over time",
        "Inventory",
        "Appendix: evidence",
        "Sources",
    ):
        assert heading in words, heading
    assert "All-reduce bus bandwidth by message size" in words
    png = subprocess.run(
        ["pdftoppm", "-r", "80", "-png", "-f", "1", "-l", "1", str(pdf), str(tmp_path / "page")],
        capture_output=True,
        timeout=60,
    )
    assert png.returncode == 0, png.stderr
    page = next(tmp_path.glob("page*.png"))
    assert page.stat().st_size > 10_000
    if os.environ.get("TUNEPLAN_UPDATE_SCREENSHOTS"):
        shutil.copyfile(page, SCREENSHOT)


def test_the_appendix_says_sizes_and_what_was_not_printed_in_words(report):
    # The nccl-tests log of this fixture prints neither the op nor the NCCL version: the report says
    # so in words, not 'op ?' and 'NCCL ?'.
    appendix = next(s for s in report.sections if s.title == "Appendix: evidence")
    items = [i for b in appendix.blocks for i in getattr(b, "items", [])]
    assert any(i.startswith("tool nccl-tests, op not printed, 16 ranks") for i in items), items
    assert any(i.startswith("NCCL version not printed;") for i in items)
    assert not any(re.search(r"(^| )\?([ ,;]|$)", i) for i in items)


def test_filesystem_sizes_from_a_real_df_read_as_sizes() -> None:
    # df -PT -B1, as the inventory script runs it (resources/probes/inventory.sh), on this machine:
    # byte counts.
    from core.probes.checks.inventory import parse_df
    from core.probes.output.evidence_tables import fs_cell
    from core.units import fmt_bytes

    df = subprocess.run(
        ["df", "-PT", "-B1", "/"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    (root,) = [fs for fs in parse_df(df) if fs.get("mount") == "/"] or [
        {"mount": "/", "size": "0", "free": "0"}
    ]
    assert root["size"].isdigit()  # what the PDF printed raw
    assert fs_cell("size", root["size"]) == fmt_bytes(int(root["size"]))
    assert fs_cell("size", root["size"]).endswith(("GB", "TB", "MB", "PB", "KB", " B"))
    assert fs_cell("type", "ext4") == "ext4"
