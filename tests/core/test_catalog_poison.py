"""A catalog no feed can poison: prices no GPU is rented at, an instance of a billion GPUs, a feed
of nan, a server that drips, a server that fails for a moment, terminal escapes in names.

Every feed is served by the local catalog server on 127.0.0.1 (tests/core/catalog_server.py) or read
as a file; nothing reaches the internet. The poisoned rows are the recorded AWS vms.csv's own
p4d.24xlarge row (8 × A100 40GB, $32.7726/h in us-east-1) with its price or GPU count changed; the
sane band they are held to is the rule stated in resources/catalog/SOURCES.md ($0.01 to $1,000 per
GPU-hour, and from a fiftieth to ten times the median of the catalog's other prices for that GPU).
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.catalog import CatalogError, load_catalog, shipped_catalog
from core.catalog.download import fetch
from core.catalog.refresh import import_file, refresh
from tests.core.catalog_server import FIXTURES, CatalogServer, serve

TODAY = dt.date(2026, 12, 1)
HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
    "AvailabilityZone,Arch"
)
GPU_INFO = (
    "\"{'Gpus': [{'Name': 'A100', 'Manufacturer': 'NVIDIA', 'Count': 8, 'MemoryInfo': "
    "{'SizeInMiB': 40960}}]}\""
)


def p4d(
    instance: str = "p4d.24xlarge",
    price: str = "32.7726",
    count: str = "8.0",
    region: str = "us-east-1",
) -> str:
    return f"{instance},A100,{count},96.0,1152.0,{GPU_INFO},{price},,{region},use1-az1,x86_64"


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    yield from serve()


def _rows(folder: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(
        (folder / "refreshed_prices.json").read_text(encoding="utf-8")
    )["rows"]
    return rows


def _import(tmp_path: Path, *lines: str) -> Any:
    feed = tmp_path / "aws" / "vms.csv"
    feed.parent.mkdir(exist_ok=True)
    feed.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")
    return import_file(feed, user_dir=tmp_path, today=TODAY)


@pytest.mark.parametrize("price", ["0", "1e-9", "1e12", "1e308"])
def test_an_imported_price_outside_the_sane_band_is_skipped_and_named(
    tmp_path: Path, price: str
) -> None:
    report = _import(
        tmp_path, p4d(price="32.7726", region="eu-west-1"), p4d(price=price, region="us-east-1")
    )
    summary = report.summary()
    assert (
        "outside the sane band" in summary and "p4d.24xlarge in us-east-1, A100-40GB-SXM" in summary
    )
    kept = [r for r in _rows(tmp_path) if r["instance"] == "p4d.24xlarge"]
    # The sane row of the other region is the one kept: 32.7726 / 8 GPUs = 4.096575 per GPU-hour.
    assert [(r["region"], r["usd_per_gpu_hour"]) for r in kept] == [
        ("eu-west-1", pytest.approx(4.096575))
    ]


def test_the_band_is_stated_from_the_catalogs_other_prices_for_that_gpu(tmp_path: Path) -> None:
    """$0.02 per GPU-hour is above the absolute floor but under a fiftieth of the A100 40GB's median
    price."""
    a100 = [p.usd_per_gpu_hour for p in shipped_catalog().prices if p.gpu == "A100-40GB-SXM"]
    low = statistics.median(a100) / 50
    assert 0.01 < 0.02 < low  # the premise: the relative floor, not the absolute one, refuses it
    summary = _import(
        tmp_path, p4d(price=str(0.02 * 8)), p4d(price="26.0", region="eu-west-1")
    ).summary()
    assert f"on_demand price $0.02 per GPU-hour outside the sane band ${low:.2f} to $" in summary


def test_a_billion_gpus_in_one_instance_is_skipped_and_named(tmp_path: Path) -> None:
    summary = _import(tmp_path, p4d(count="1e9"), p4d(instance="p4de.24xlarge")).summary()
    assert "GPU count 1e+09 outside 1 to 64 (p4d.24xlarge in us-east-1, A100-40GB-SXM)" in summary
    assert [r["instance"] for r in _rows(tmp_path)] == ["p4de.24xlarge"]


def test_a_poisoned_refresh_never_prices_a_plan_at_zero(
    server: CatalogServer, tmp_path: Path
) -> None:
    aws = (FIXTURES / "skypilot" / "aws" / "vms.csv").read_text(encoding="utf-8")
    server.served["aws"] = (aws + p4d(instance="p5.48xlarge", price="0") + "\n").encode()
    refresh(
        ["skypilot"],
        clouds=["aws"],
        user_dir=tmp_path,
        today=TODAY,
        base_urls={"skypilot": f"{server.url}/served"},
    )
    prices = [p.usd_per_gpu_hour for p in load_catalog(tmp_path).prices]
    assert min(prices) >= 0.01


def test_a_slow_drip_server_ends_at_the_download_deadline(
    server: CatalogServer, tmp_path: Path
) -> None:
    before = _first_refresh(server, tmp_path)
    start = time.monotonic()
    with pytest.raises(
        CatalogError,
        match=r"download of http://127\.0\.0\.1:\d+/drip/aws/vms\.csv did not finish "
        r"within 1\.5 s",
    ):
        refresh(
            ["skypilot"],
            clouds=["aws"],
            user_dir=tmp_path,
            timeout=10,
            deadline=1.5,
            base_urls={"skypilot": f"{server.url}/drip"},
        )
    # the per-read timeout (10 s) never fires: a byte comes every 0.2 s
    assert time.monotonic() - start < 5
    assert (tmp_path / "refreshed_prices.json").read_bytes() == before


def _first_refresh(server: CatalogServer, folder: Path) -> bytes:
    refresh(
        ["skypilot"],
        clouds=["aws"],
        user_dir=folder,
        today=TODAY,
        base_urls={"skypilot": f"{server.url}/skypilot"},
    )
    return (folder / "refreshed_prices.json").read_bytes()


def test_a_transient_error_is_retried_with_backoff(server: CatalogServer) -> None:
    url = f"{server.url}/flaky2/aws/vms.csv"
    got = fetch(url, timeout=5, backoff_s=0.05)
    assert got.body == (FIXTURES / "skypilot" / "aws" / "vms.csv").read_bytes()
    assert server.requests.count("/flaky2/aws/vms.csv") == 3  # two 503s, then the file


def test_retries_stop_after_two(server: CatalogServer) -> None:
    with pytest.raises(CatalogError, match="the server answered 503"):
        fetch(f"{server.url}/flaky9/aws/vms.csv", timeout=5, backoff_s=0.01)
    assert server.requests.count("/flaky9/aws/vms.csv") == 3


def test_a_missing_file_is_not_retried(server: CatalogServer) -> None:
    with pytest.raises(CatalogError, match="answered 404"):
        fetch(f"{server.url}/nothing/here.csv", timeout=5, backoff_s=0.01)
    assert server.requests == ["/nothing/here.csv"]


def test_a_feed_of_nan_prices_is_refused_and_the_previous_prices_kept(
    server: CatalogServer, tmp_path: Path
) -> None:
    before = _first_refresh(server, tmp_path)
    lines = (FIXTURES / "skypilot" / "aws" / "vms.csv").read_text(encoding="utf-8").splitlines()
    # Price and SpotPrice are the 5th and 4th cells from the end
    cells = [line.rsplit(",", 5) for line in lines[1:]]
    server.served["aws"] = "\n".join(
        [lines[0], *(",".join([c[0], "nan", "nan", *c[3:]]) for c in cells)]
    ).encode()
    with pytest.raises(CatalogError) as caught:
        refresh(
            ["skypilot"],
            clouds=["aws"],
            user_dir=tmp_path,
            base_urls={"skypilot": f"{server.url}/served"},
        )
    kept = len(json.loads(before)["rows"])
    assert str(caught.value) == (
        f"the skypilot feed for aws gave 0 usable prices where the last refresh kept {kept}, so "
        "it was refused and "
        "the previous prices kept (give --accept-fewer if aws really sells that much less)"
    )
    assert (tmp_path / "refreshed_prices.json").read_bytes() == before
    refresh(
        ["skypilot"],
        clouds=["aws"],
        user_dir=tmp_path,
        accept_fewer=True,
        base_urls={"skypilot": f"{server.url}/served"},
    )
    assert _rows(tmp_path) == []


def test_terminal_escapes_in_a_feed_are_stripped_at_parse(tmp_path: Path) -> None:
    unknown = "x1.metal,Evil\x1b[31mGPU\x1b[0m,8.0,96.0,1152.0,,32.7726,,us-east-1,use1-az1,x86_64"
    report = _import(tmp_path, p4d(instance="p4d.24xlarge\x1b[2J\x1b]0;owned\x07"), unknown)
    assert [r["instance"] for r in _rows(tmp_path)] == ["p4d.24xlarge"]
    summary = report.summary()
    assert "\x1b" not in summary and "\x07" not in summary and "EvilGPU (1)" in summary
