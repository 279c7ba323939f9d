"""fio --output-format=json. Expected values read by hand; comments give the fixture line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.probes.parsers.fio import parse_fio_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
FIO_333 = "fio_json_fio3.33_rw_4k_interrupted_with_text_prefix.json"
FIO_31 = "fio_json_fio3.1_randread_4k_qd1_32jobs_SATA_SSD_PM883.json"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_fio_333_with_text_prefix():
    result = parse_fio_json(fixture(FIO_333))
    assert any("terminating on signal 2" in w for w in result.warnings)  # line 2
    fio = result.value
    assert fio is not None and not fio.truncated
    assert fio.fio_version == "fio-3.33"  # line 4
    (job,) = fio.jobs
    assert (job.name, job.rw, job.bs, job.iodepth, job.numjobs) == (
        "sequential_read",
        "rw",
        "4k",
        16,
        1,
    )
    assert job.read is not None and job.write is not None
    assert job.read.iops == 7662.030309  # line 36
    assert job.read.bw_bytes_per_s == 31383676  # line 34 'bw_bytes'
    assert job.read.clat_p99_ns == 35913728  # line 67 '"99.000000" : 35913728'
    assert job.read.clat_p50_ns == 6258688  # line 61
    assert job.read.runtime_s == 48.170  # line 37 'runtime' 48170 ms
    assert job.write.iops == 39338.066766  # line 98
    assert job.write.bw_bytes_per_s == 161128721  # line 96
    assert job.write.clat_p99_ns == 6848512  # line 129
    assert job.runtime_s == 288.990  # line 208 'job_runtime' 288990 ms


def test_fio_31_has_no_bw_bytes():
    result = parse_fio_json(fixture(FIO_31))
    assert result.warnings == []
    fio = result.value
    assert fio is not None
    assert fio.fio_version == "fio-3.1"
    job = fio.jobs[0]
    assert (job.rw, job.iodepth, job.numjobs) == ("randread", 1, 32)  # 'job options'
    assert job.read is not None
    assert job.read.iops == 45419.109682  # line 34
    assert job.read.bw_bytes_per_s == 181676 * 1024  # line 33 'bw' : 181676 (KiB/s)
    assert job.read.clat_p99_ns == 790528  # line 63
    assert job.read.clat_p999_ns == 856064  # line 65
    assert job.read.clat_mean_ns == 687710.574540  # line 48
    assert job.read.lat_mean_ns == 701282.954001  # line 76
    assert job.read.runtime_s == 60.001  # line 35
    assert fio.disk_util_pct == {"sdc": 99.903555}  # lines 273, 281


@pytest.mark.parametrize("fraction", [0.9, 0.6, 0.4])
def test_cut_json_is_repaired(fraction):
    text = fixture(FIO_31)
    result = parse_fio_json(text[: int(len(text) * fraction)])
    fio = result.value
    assert fio is not None and fio.truncated
    assert any("cut off" in w for w in result.warnings)
    assert fio.jobs[0].name == "iotest"  # line 8
    # line 34 is in the kept part
    assert fio.jobs[0].read is not None and fio.jobs[0].read.iops == 45419.109682


def test_cut_inside_first_job_keeps_job_name():
    text = fixture(FIO_333)
    cut = text.index('"read"')
    fio = parse_fio_json(text[:cut]).value
    assert fio is not None and fio.truncated
    assert fio.jobs[0].name == "sequential_read" and fio.jobs[0].read is None


def test_fio_2x_microsecond_latencies():
    # fio 2.x layout: 'clat'/'lat' in microseconds, typed for this test
    data = {
        "fio version": "fio-2.2.10",
        "jobs": [
            {
                "jobname": "old",
                "job options": {"rw": "read"},
                "read": {
                    "io_bytes": 4096,
                    "bw": 100,
                    "iops": 25.0,
                    "runtime": 1000,
                    "clat": {"mean": 12.5, "percentile": {"99.000000": 40}},
                    "lat": {"mean": 13.0},
                },
            }
        ],
    }
    fio = parse_fio_json(json.dumps(data)).value
    assert fio is not None
    job = fio.jobs[0]
    assert job.read is not None
    assert job.read.clat_mean_ns == 12500.0 and job.read.clat_p99_ns == 40000.0
    assert job.read.lat_mean_ns == 13000.0 and job.read.bw_bytes_per_s == 102400.0


@pytest.mark.parametrize(
    "text", ["", "fio: pid=0, err=2/file:filesetup.c:174, error=No such file", "{{{{", "[1, 2, 3]"]
)
def test_no_json(text):
    result = parse_fio_json(text)
    assert result.value is None
    assert result.warnings


def test_job_error_is_reported():
    data = {
        "fio version": "fio-3.33",
        "jobs": [{"jobname": "j", "error": 5, "read": {"iops": 1.0}}],
    }
    result = parse_fio_json(json.dumps(data))
    assert result.value is not None and result.value.jobs[0].error == 5
    assert any("error 5" in w for w in result.warnings)
