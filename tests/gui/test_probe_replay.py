"""The replayed probe run (core.probes.run.replay) reads the real tool outputs it ships, and they
are the fixtures.

The replay feeds the probe pane's tests and the screenshots: the `nvidia-smi --query-gpu` CSV and
`nvidia-smi dmon` captured under gpu-burn on one H100 (tests/fixtures/probes/SOURCES.md #4 and #7),
the nccl-tests sweep of two p5 nodes (#21) and a fio JSON, copied to resources/samples/probe_run.
"""

from __future__ import annotations

from pathlib import Path

from core.probes.run.replay import CAPTURES, SAMPLES, burn_metrics, nccl_points
from core.resources import resource_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def test_shipped_captures_are_the_fixtures_byte_for_byte():
    sources = resource_path(*SAMPLES, "SOURCES.md").read_text(encoding="utf-8")
    for name in CAPTURES:
        assert resource_path(*SAMPLES, name).read_bytes() == (FIXTURES / name).read_bytes(), name
        assert f"`{name}`" in sources, name


def test_burn_metrics_are_the_captured_values():
    metrics = burn_metrics()
    # Read by hand: CSV row power.draw 631.95 W, temperature.gpu 59, memory.used 19818 MiB; dmon pwr
    # column.
    assert [m.power_w for m in metrics] == [631.95, 631.0, 634.0, 633.0, 634.0, 636.0]
    assert [m.temp_c for m in metrics] == [59.0, 63.0, 63.0, 64.0, 64.0, 65.0]
    assert metrics[0].mem_used_bytes == 19818 * 2**20
    assert [m.t for m in metrics] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert {m.sm_clock_mhz for m in metrics} == {1980.0}


def test_nccl_points_are_the_sweep():
    points = nccl_points()
    # 8 B … 16 GiB by ×2 is 32 rows; the last in-place busbw printed is 487.26 GB/s.
    assert len(points) == 32
    assert points[0] == (8.0, 0.0)
    assert points[-1] == (17179869184.0, 487.26)
