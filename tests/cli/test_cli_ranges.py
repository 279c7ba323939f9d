"""`tuneplan plan` shows a plan's likely ranges (real subprocesses): 'likely X (range A–B)' for wall
time, tokens/s and total cost with how often published runs fell inside, the bands in --json, and
nothing of it without a band.

The bands are the test's own (tests/bands.py), so these check the showing, not calibration's values.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.units import fmt_hours, fmt_hours_range, fmt_rate_range, fmt_usd, fmt_usd_range
from tests import bands as B

ROOT = Path(__file__).parents[2]
QUICK = [
    "plan",
    "--model",
    "llama-3.1-8b",
    "--tokens",
    "2e8",
    "--seq-len",
    "4096",
    "--lora-rank",
    "16",
    "--gpu",
    "H100-SXM",
    "--gpus",
    "8",
    "--provider",
    "aws",
    "--mode",
    "on_demand",
]


def tuneplan(with_bands: bool, *args: str) -> subprocess.CompletedProcess[str]:
    kind = "bands" if with_bands else "none"
    done = subprocess.run(
        [sys.executable, "-c", B.SUBPROCESS, kind, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def planned() -> dict:
    return json.loads(tuneplan(True, *QUICK, "--json").stdout)


def test_json_carries_the_bands_in_their_documented_shape(planned):
    for where, field in (
        ("time", "hours_range"),
        ("compute", "tokens_per_second_range"),
        ("cost", "total_usd_range"),
    ):
        band = planned[where][field]
        assert set(band) == {"low", "high", "coverage", "regime", "cases", "sources"}, field
        assert (band["coverage"], band["regime"], band["cases"], band["sources"]) == (
            B.COVERAGE,
            B.REGIME,
            B.CASES,
            B.SOURCES,
        )
        assert band["low"] < band["high"]


def test_text_says_likely_and_the_range_with_its_coverage(planned):
    out = tuneplan(True, *QUICK).stdout
    t, c, cost = planned["time"], planned["compute"], planned["cost"]
    hours = t["hours_range"]
    assert (
        f"Time     likely {fmt_hours(t['hours'])} (range "
        f"{fmt_hours_range(hours['low'], hours['high'], t['hours'])}) wall"
    ) in out
    rate = c["tokens_per_second_range"]
    assert (
        f"Speed    likely {c['tokens_per_second']:,.0f} tokens/s (range "
        f"{fmt_rate_range(rate['low'], rate['high'])})"
    ) in out
    usd = cost["total_usd_range"]
    assert (
        f"Total    likely {fmt_usd(cost['total_usd'])} (estimate range "
        f"{fmt_usd_range(usd['low'], usd['high'], cost['total_usd'])})"
    ) in out
    assert (
        f"Range    80% of held-out published runs of this kind fell inside (regime: {B.REGIME}, "
        f"from {B.CASES} runs of {B.SOURCES} sources)"
    ) in out


def test_without_a_band_no_range_is_claimed():
    out = tuneplan(False, *QUICK).stdout
    plain = json.loads(tuneplan(False, *QUICK, "--json").stdout)
    assert "likely" not in out and "range" not in out.replace("cost range", "")
    assert f"Time     {fmt_hours(plain['time']['hours'])} wall" in out
    assert f"{plain['compute']['tokens_per_second']:,.0f} tokens/s, scaling" in out
    assert plain["time"]["hours_range"] is None and plain["cost"]["total_usd_range"] is None


def test_both_ends_round_alike():
    # in the point's unit, not '46.8 min–1.3 h'
    assert fmt_hours_range(0.78, 1.27, 0.98) == "46.8–76.2 min"
    assert fmt_hours_range(50.0, 90.0, 80.0) == "2.1–3.8 days"
    assert fmt_usd_range(43.2, 120.4, 54.06) == "$43.20–$120.40"  # cents, as $54.06 is written
    assert fmt_usd_range(95.2, 180.7, 130.0) == "$95–$181"
    assert fmt_rate_range(54558.4, 88657.2) == "54,558–88,657"
