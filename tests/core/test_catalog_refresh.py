"""Prices refreshed from SkyPilot's and gpuhunt's public catalogs, and imported from such a file by
hand.

The catalogs are recorded excerpts (tests/fixtures/catalog/README.md) served on 127.0.0.1; nothing
reaches the internet. Expected prices are worked out below from the numbers in those files (instance
price / GPU count, the cheapest region by eye), never by calling the parsers.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.catalog import Catalog, CatalogError, load_catalog, shipped_catalog
from core.catalog.feeds import gpuhunt, skypilot
from core.catalog.feeds.offer import Offer
from core.catalog.records import Price
from core.catalog.refresh import import_file, refresh
from core.catalog.refreshed import merge_refreshed, price_from_row, refreshed_prices
from tests.core.catalog_server import FIXTURES, CatalogServer, serve

ROOT = Path(__file__).resolve().parents[2]
TODAY = dt.date(2026, 12, 1)


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    yield from serve()


def _parse_sky(cloud: str) -> dict[tuple[str, str], Offer]:
    text = (FIXTURES / "skypilot" / cloud / "vms.csv").read_text(encoding="utf-8")
    result = skypilot.parse_vms_csv(
        text, cloud=cloud, catalog=shipped_catalog(), source="file", fetched=None, date=None
    )
    return {(o.instance, o.pricing_model): o for o in result.offers}


def _without_a6000() -> Catalog:
    """The shipped catalog less the RTX A6000: a real GPU name (Lambda's rows have it) the catalog
    does not know, for the rule that such rows are skipped and counted, never guessed."""
    cat = shipped_catalog()
    return Catalog(
        gpus=[g for g in cat.gpus.values() if g.id != "RTX-A6000"],
        models=cat.models.values(),
        prices=[p for p in cat.prices if p.gpu != "RTX-A6000"],
        storage=cat.storage,
        egress=cat.egress,
        providers=cat.provider_info.values(),
        retrieved=cat.retrieved,
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["rows"]
    return rows


# --------------------------------------------------------------------------- parsing


def test_aws_rows_become_one_price_per_gpu_in_the_cheapest_region() -> None:
    offers = _parse_sky("aws")
    # p3.8xlarge (4 x V100 16 GiB): Price 12.24 in every us-* zone, first in us-east-1 -> 12.24 / 4
    # = 3.06; SpotPrice lowest 1.610600 (us-east-2, use2-az1) -> 1.6106 / 4 = 0.40265
    od, sp = offers["p3.8xlarge", "on_demand"], offers["p3.8xlarge", "spot"]
    assert (od.gpu, od.gpus_per_instance, od.region) == ("V100-16GB", 4, "us-east-1")
    assert od.usd_per_gpu_hour == pytest.approx(3.06)
    assert (sp.region, sp.usd_per_gpu_hour) == ("us-east-2", pytest.approx(0.40265))
    # p4d.24xlarge: 21.95764 (us-east-2) is below 21.957642 (us-east-1) -> 21.95764 / 8 = 2.744705;
    # GpuInfo 40960 MiB = 40 GiB tells the 40 GB A100
    p4d = offers["p4d.24xlarge", "on_demand"]
    assert (p4d.gpu, p4d.region, p4d.usd_per_gpu_hour) == (
        "A100-40GB-SXM",
        "us-east-2",
        pytest.approx(2.744705),
    )
    # p4de.24xlarge: AcceleratorName A100-80GB -> the 80 GB SXM part; spot 9.726200 (use1-az6) / 8 =
    # 1.215775
    assert offers["p4de.24xlarge", "spot"].gpu == "A100-80GB-SXM"
    assert offers["p4de.24xlarge", "spot"].usd_per_gpu_hour == pytest.approx(1.215775)
    # p5.48xlarge: on demand 63.296 (ca-central-1) / 8 = 7.912; spot 7.595500 (ap-southeast-3) / 8 =
    # 0.9494375
    assert offers["p5.48xlarge", "on_demand"].usd_per_gpu_hour == pytest.approx(7.912)
    assert (offers["p5.48xlarge", "spot"].region, offers["p5.48xlarge", "spot"].gpu) == (
        "ap-southeast-3",
        "H100-SXM",
    )
    assert offers["p5.48xlarge", "spot"].usd_per_gpu_hour == pytest.approx(0.9494375)
    # p3dn.24xlarge: V100-32GB -> the 32 GB SXM2 part
    assert offers["p3dn.24xlarge", "on_demand"].gpu == "V100-32GB-SXM2"


def test_lambda_skips_cpu_rows_and_counts_the_gpu_the_catalog_does_not_know() -> None:
    text = (FIXTURES / "skypilot" / "lambda" / "vms.csv").read_text(encoding="utf-8")
    result = skypilot.parse_vms_csv(
        text, cloud="lambda", catalog=_without_a6000(), source="f", fetched=None, date=None
    )
    # 3 + 2 + 3 rows of gpu_4x/2x/1x_a6000: a catalog without the RTX A6000 skips them, not guessed
    assert dict(result.unknown_gpus) == {"A6000": 8}
    assert result.skipped["no GPU"] == 2  # the two cpu_4x_general rows
    got = {(o.instance, o.pricing_model): o for o in result.offers}
    # SpotPrice is empty
    assert set(got) == {("gpu_8x_v100", "on_demand"), ("gpu_8x_a100", "on_demand")}
    # gpu_8x_a100: 10.32 / 8 = 1.29 per GPU, GpuInfo 40960 MiB -> 40 GB A100; gpu_8x_v100: 4.4 / 8 =
    # 0.55
    assert (
        got["gpu_8x_a100", "on_demand"].gpu,
        got["gpu_8x_a100", "on_demand"].usd_per_gpu_hour,
    ) == ("A100-40GB-SXM", pytest.approx(1.29))
    assert got["gpu_8x_v100", "on_demand"].usd_per_gpu_hour == pytest.approx(0.55)


def test_runpod_form_factor_comes_from_gpuinfo_and_spot_from_spotprice() -> None:
    offers = _parse_sky("runpod")
    # GpuInfo names the card "A100 PCIe"; 3x: Price 4.92 / 3 = 1.64, SpotPrice 2.46 / 3 = 0.82
    three = offers["3x_A100-80GB_SECURE", "on_demand"]
    assert (three.gpu, three.gpus_per_instance) == ("A100-80GB-PCIE", 3)
    assert three.usd_per_gpu_hour == pytest.approx(1.64)
    assert offers["3x_A100-80GB_SECURE", "spot"].usd_per_gpu_hour == pytest.approx(0.82)


def test_gpuhunt_spot_and_community_rows_get_their_pricing_models() -> None:
    text = (FIXTURES / "gpuhunt" / "runpod.csv").read_text(encoding="utf-8")
    result = gpuhunt.parse_catalog_csv(
        text, provider="runpod", catalog=shipped_catalog(), source="f", fetched=None, date=None
    )
    got = {o.pricing_model: o for o in result.offers}
    assert set(got) == {"on_demand", "spot", "marketplace"}
    # location "US" is a country code: RunPod Community Cloud -> marketplace, 1.19 / 1
    assert (got["marketplace"].region, got["marketplace"].usd_per_gpu_hour) == (
        "US",
        pytest.approx(1.19),
    )
    assert got["spot"].usd_per_gpu_hour == pytest.approx(0.82)  # spot True, 0.82 / 1
    # 1.64 for 1 GPU and 3.28 for 2 (3.28 / 2 = 1.64): one record, both sizes at that rate
    assert got["on_demand"].usd_per_gpu_hour == pytest.approx(1.64)
    assert got["on_demand"].gpu_counts == (1, 2)
    assert got["on_demand"].gpu == "A100-80GB-PCIE"  # "PCIe" in the instance name


def test_gpuhunt_lambda_file_maps_to_the_lambda_provider() -> None:
    text = (FIXTURES / "gpuhunt" / "lambdalabs.csv").read_text(encoding="utf-8")
    result = gpuhunt.parse_catalog_csv(
        text, provider="lambdalabs", catalog=_without_a6000(), source="f", fetched=None, date=None
    )
    assert {o.provider for o in result.offers} == {"lambda"}
    assert dict(result.unknown_gpus) == {"A6000": 2}
    a100 = next(o for o in result.offers if o.instance == "gpu_8x_a100")
    assert (a100.gpu, a100.usd_per_gpu_hour) == ("A100-40GB-SXM", pytest.approx(10.32 / 8))


def test_gpuhunt_version_carries_the_catalog_date() -> None:
    assert gpuhunt.version_date("20260818-42") == "2026-08-18"
    assert gpuhunt.version_date("latest") is None


def test_names_map_by_memory_and_form_factor_or_not_at_all() -> None:
    from core.catalog.feeds.gpu_names import resolve_gpu

    cat = shipped_catalog()
    assert resolve_gpu(cat, "A100", 40.0) == "A100-40GB-SXM"
    assert resolve_gpu(cat, "A100", 80.0) == "A100-80GB-SXM"
    assert resolve_gpu(cat, "A100-80GB", None, hints=("A100 PCIe",)) == "A100-80GB-PCIE"
    # nvidia-smi MiB
    assert resolve_gpu(cat, "H100", 81559 / 1024, hints=("gpu_1x_h100_pcie",)) == "H100-PCIE"
    assert resolve_gpu(cat, "V100", 32.0) == "V100-32GB-SXM2"
    # no A100 has 24 GB: the row is wrong or the name is
    assert resolve_gpu(cat, "A100", 24.0) is None
    assert resolve_gpu(cat, "A6000", 48.0) == "RTX-A6000"  # Lambda's name for the RTX A6000 (48 GB)
    # a GPU the catalog does not know: no guess
    assert resolve_gpu(_without_a6000(), "A6000", 48.0) is None
    assert resolve_gpu(cat, "", 80.0) is None


# --------------------------------------------------------------------------- refresh over HTTP


def test_refresh_writes_every_source_with_dates_and_origins(
    server: CatalogServer, tmp_path: Path
) -> None:
    report = refresh(
        clouds=["aws", "lambda", "runpod"],
        user_dir=tmp_path,
        today=TODAY,
        base_urls={"skypilot": f"{server.url}/skypilot", "gpuhunt": f"{server.url}/gpuhunt"},
    )
    doc = json.loads((tmp_path / "refreshed_prices.json").read_text(encoding="utf-8"))
    assert doc["format"] == 1
    assert [(s["name"], s["fetched"]) for s in doc["sources"]] == [
        ("skypilot", "2026-12-01"),
        ("gpuhunt", "2026-12-01"),
    ]
    rows = doc["rows"]
    assert {r["fetched"] for r in rows} == {"2026-12-01"}
    aws = [r for r in rows if r["provider"] == "aws"]
    # aws/vms.csv was served with Last-Modified 24 Nov 2026; lambda's without one: undated, not
    # invented
    assert {r["date"] for r in aws} == {"2026-11-24"}
    assert {
        r["date"] for r in rows if r["origin"] == "refresh:skypilot" and r["provider"] == "lambda"
    } == {None}
    # gpuhunt: the version 20261128-57 is the date the catalog was collected
    assert {r["date"] for r in rows if r["origin"] == "refresh:gpuhunt"} == {"2026-11-28"}
    assert {r["source"] for r in aws} == {f"{server.url}/skypilot/aws/vms.csv"}
    by_name = {s.name: s for s in report.sources}
    # the server has no gpuhunt aws catalog: that cloud is skipped and said, the others are read
    assert list(by_name["gpuhunt"].clouds_skipped) == ["aws"]
    assert "not read: aws" in report.summary()
    # Lambda's A6000 rows map to the catalog's RTX-A6000
    assert by_name["skypilot"].unknown_gpus == {}
    assert "GPU not in the catalog" not in report.summary()
    assert str(tmp_path / "refreshed_prices.json") in report.summary()


def test_a_refresh_replaces_only_the_clouds_it_read(server: CatalogServer, tmp_path: Path) -> None:
    urls = {"skypilot": f"{server.url}/skypilot"}
    refresh(["skypilot"], clouds=["lambda"], user_dir=tmp_path, base_urls=urls)
    refresh(["skypilot"], clouds=["aws"], user_dir=tmp_path, base_urls=urls)
    refresh(["skypilot"], clouds=["lambda"], user_dir=tmp_path, base_urls=urls)
    rows = _rows(tmp_path / "refreshed_prices.json")
    # lambda's 2 prices, read twice, once each; aws's 12 kept from the refresh that read aws
    # Lambda's 5 prices: V100 x8, A100 (1 and 2 GPUs at one rate) and the A6000's gpu_1x/2x/4x
    # instances at $0.80/GPU
    assert sorted(r["provider"] for r in rows) == ["aws"] * 12 + ["lambda"] * 5


def test_a_missing_catalog_file_is_one_sentence_naming_the_url(
    server: CatalogServer, tmp_path: Path
) -> None:
    with pytest.raises(
        CatalogError,
        match=r"download of http://127\.0\.0\.1:\d+/gpuhunt/aws/20261128-57/catalog\.zip"
        r" failed: the server answered 404",
    ):
        refresh(
            ["gpuhunt"],
            clouds=["aws"],
            user_dir=tmp_path,
            base_urls={"gpuhunt": f"{server.url}/gpuhunt"},
        )
    assert not (tmp_path / "refreshed_prices.json").exists()


def _first_refresh(server: CatalogServer, folder: Path) -> bytes:
    refresh(
        ["skypilot"],
        clouds=["lambda"],
        user_dir=folder,
        today=TODAY,
        base_urls={"skypilot": f"{server.url}/skypilot"},
    )
    return (folder / "refreshed_prices.json").read_bytes()


def test_a_cut_off_download_changes_nothing(server: CatalogServer, tmp_path: Path) -> None:
    before = _first_refresh(server, tmp_path)
    with pytest.raises(
        CatalogError,
        match=r"download of http://127\.0\.0\.1:\d+/cut/aws/vms\.csv was cut off"
        r" after \d+ of \d+ bytes",
    ):
        refresh(
            ["skypilot"],
            clouds=["aws"],
            user_dir=tmp_path,
            base_urls={"skypilot": f"{server.url}/cut"},
        )
    assert (tmp_path / "refreshed_prices.json").read_bytes() == before
    # no temporary file left
    assert [p.name for p in tmp_path.iterdir()] == ["refreshed_prices.json"]


def test_a_garbled_file_changes_nothing(server: CatalogServer, tmp_path: Path) -> None:
    before = _first_refresh(server, tmp_path)
    with pytest.raises(
        CatalogError,
        match=r"/garbled/aws/vms\.csv is not a catalog of this format: it lacks"
        r" the column\(s\) InstanceType",
    ):
        refresh(
            ["skypilot"],
            clouds=["aws"],
            user_dir=tmp_path,
            base_urls={"skypilot": f"{server.url}/garbled"},
        )
    assert (tmp_path / "refreshed_prices.json").read_bytes() == before


def test_a_second_cloud_failing_writes_nothing_of_the_first(
    server: CatalogServer, tmp_path: Path
) -> None:
    """lambda downloads and parses, then the next file is garbled: all is parsed before anything is
    written."""
    with pytest.raises(CatalogError):
        refresh(
            ["skypilot", "gpuhunt"],
            clouds=["lambda"],
            user_dir=tmp_path,
            base_urls={"skypilot": f"{server.url}/skypilot", "gpuhunt": f"{server.url}/garbled"},
        )
    assert not (tmp_path / "refreshed_prices.json").exists()


def test_a_file_cut_mid_row_is_an_error(tmp_path: Path) -> None:
    text = (FIXTURES / "skypilot" / "aws" / "vms.csv").read_text(encoding="utf-8")
    cut = text[: text.index("p4de.24xlarge") + 60]  # ends inside the GpuInfo cell's quotes
    with pytest.raises(CatalogError, match=r"cut\.csv line"):
        skypilot.parse_vms_csv(
            cut, cloud="aws", catalog=shipped_catalog(), source="cut.csv", fetched=None, date=None
        )
    # a row cut after a comma-free cell
    short = text[: text.index("\n", text.index("p4de.24xlarge")) - 20] + "\n"
    with pytest.raises(CatalogError, match=r"line \d+ (has fewer cells|is not valid CSV)"):
        skypilot.parse_vms_csv(
            short,
            cloud="aws",
            catalog=shipped_catalog(),
            source="short.csv",
            fetched=None,
            date=None,
        )


def test_a_bad_number_names_the_line_and_column() -> None:
    text = (FIXTURES / "skypilot" / "lambda" / "vms.csv").read_text(encoding="utf-8")
    bad = text.replace(
        "gpu_8x_v100,V100,8.0,92.0,448.0,4.4,", "gpu_8x_v100,V100,8.0,92.0,448.0,4,4,", 1
    )
    with pytest.raises(CatalogError, match="more cells than the header"):
        skypilot.parse_vms_csv(
            bad, cloud="lambda", catalog=shipped_catalog(), source="l.csv", fetched=None, date=None
        )
    bad = text.replace(
        "gpu_8x_v100,V100,8.0,92.0,448.0,4.4,", "gpu_8x_v100,V100,8.0,92.0,448.0,four,", 1
    )
    with pytest.raises(CatalogError, match=r"l\.csv line 4: Price 'four' is not a number"):
        skypilot.parse_vms_csv(
            bad, cloud="lambda", catalog=shipped_catalog(), source="l.csv", fetched=None, date=None
        )


def test_gcp_is_not_read_and_says_why(server: CatalogServer, tmp_path: Path) -> None:
    report = refresh(
        ["skypilot"],
        clouds=["gcp", "lambda"],
        user_dir=tmp_path,
        base_urls={"skypilot": f"{server.url}/skypilot"},
    )
    assert "gcp" in report.sources[0].clouds_skipped
    assert not any("gcp" in r for r in server.requests)


# --------------------------------------------------------------------------- merge


def _row(**values: Any) -> dict[str, Any]:
    base = {
        "provider": "aws",
        "provider_name": "AWS",
        "instance": "p3.8xlarge",
        "gpu": "V100-16GB",
        "gpus_per_instance": 4,
        "pricing_model": "on_demand",
        "usd_per_gpu_hour": 3.06,
        "region": "us-east-1",
        "source": "s",
        "origin": "refresh:skypilot",
        "date": None,
        "fetched": "2026-12-01",
        "notes": "",
        "gpu_counts": [],
    }
    return {**base, **values}


def pricing_models(p: Price) -> dict[str, float]:
    return {str(p.pricing_model): p.usd_per_gpu_hour}


def test_merge_replaces_the_same_offer_and_keeps_the_others() -> None:
    shipped = [
        price_from_row(_row(usd_per_gpu_hour=9.0, origin="shipped"), "s1"),
        price_from_row(
            _row(instance="p5.48xlarge", gpu="H100-SXM", usd_per_gpu_hour=6.88, origin="shipped"),
            "s2",
        ),
        price_from_row(_row(usd_per_gpu_hour=0.5, pricing_model="spot", origin="shipped"), "s3"),
    ]
    refreshed = [price_from_row(_row(usd_per_gpu_hour=3.06), "r1")]
    merged = merge_refreshed(shipped, refreshed)
    got = sorted((p.instance, m, v) for p in merged for m, v in pricing_models(p).items())
    # the shipped p3.8xlarge on-demand 9.0 is gone, its spot and the p5 stay, the refreshed 3.06 is
    # added
    assert got == [
        ("p3.8xlarge", "on_demand", 3.06),
        ("p3.8xlarge", "spot", 0.5),
        ("p5.48xlarge", "on_demand", 6.88),
    ]


def test_merge_keeps_a_shipped_price_of_another_region() -> None:
    shipped = [
        price_from_row(_row(usd_per_gpu_hour=9.0, region="us-east-2", origin="shipped"), "s")
    ]
    merged = merge_refreshed(shipped, [price_from_row(_row(), "r")])
    assert sorted(v for p in merged for v in pricing_models(p).values()) == [3.06, 9.0]


def test_refreshed_prices_reach_the_catalog_and_the_users_prices_win(
    server: CatalogServer, tmp_path: Path
) -> None:
    refresh(
        ["skypilot"],
        clouds=["aws"],
        user_dir=tmp_path,
        today=TODAY,
        base_urls={"skypilot": f"{server.url}/skypilot"},
    )
    cat = load_catalog(tmp_path)
    p3dn = [pricing_models(p) for p in cat.prices if p.instance == "p3dn.24xlarge"]
    # shipped p3dn.24xlarge (us-east-1): spot 0.7821; the refreshed us-east-1 spot 5.060000 / 8 =
    # 0.6325 replaces it
    spots = sorted(m["spot"] for m in p3dn if "spot" in m)
    assert spots == [pytest.approx(0.6325)]
    # untouched shipped row
    assert any(p.instance == "p5.48xlarge (EC2 Capacity Block)" for p in cat.prices)
    (tmp_path / "prices.json").write_text(
        json.dumps(
            [
                {
                    "provider": "aws",
                    "instance": "p3dn.24xlarge",
                    "gpu": "V100-32GB-SXM2",
                    "on_demand": 2.5,
                }
            ]
        )
    )
    cat = load_catalog(tmp_path)
    p3dn = [pricing_models(p) for p in cat.prices if p.instance == "p3dn.24xlarge"]
    # the user's on-demand row replaces the p3dn.24xlarge on-demand price; AWS's reserved price is
    # derived from it (2.5 x (1 - 0.384) = 1.54, AWS's 1-year RI discount) and the refreshed spot
    # price stays
    assert sorted((k, round(v, 4)) for m in p3dn for k, v in m.items()) == [
        ("on_demand", 2.5),
        ("reserved", 1.54),
        ("spot", 0.6325),
    ]


# --------------------------------------------------------------------------- files


def test_a_damaged_refreshed_file_is_named_and_left_alone(
    server: CatalogServer, tmp_path: Path
) -> None:
    damaged = tmp_path / "refreshed_prices.json"
    damaged.write_text('{"format": 1, "rows": [', encoding="utf-8")
    with pytest.raises(CatalogError, match=f"refreshed prices file {damaged} is damaged"):
        refreshed_prices(tmp_path)
    with pytest.raises(CatalogError, match="refreshed prices file"):
        load_catalog(tmp_path)
    assert damaged.read_text(encoding="utf-8") == '{"format": 1, "rows": ['
    # a refresh can still replace it
    refresh(
        ["skypilot"],
        clouds=["lambda"],
        user_dir=tmp_path,
        base_urls={"skypilot": f"{server.url}/skypilot"},
    )
    assert len(refreshed_prices(tmp_path)) == 5  # Lambda's V100, A100 and three A6000 prices


def test_a_bad_row_in_the_refreshed_file_names_the_row(tmp_path: Path) -> None:
    (tmp_path / "refreshed_prices.json").write_text(
        json.dumps({"format": 1, "sources": [], "rows": [_row(), _row(usd_per_gpu_hour=-1)]})
    )
    with pytest.raises(CatalogError, match=r"refreshed_prices\.json row 1"):
        refreshed_prices(tmp_path)


def test_runpod_l40s_on_demand_and_spot_come_in_beside_the_shipped_providers(
    tmp_path: Path,
) -> None:
    """SkyPilot's RunPod catalog prices the L40S on demand and interruptible (SpotPrice): an import
    brings both, and a spot L40S plan can then be priced at RunPod. Rows:
    tests/fixtures/catalog/README.md."""
    from core.planner.plan import plan
    from core.planner.request import PlanRequest

    shipped = {(p.provider, p.pricing_model) for p in shipped_catalog().prices if p.gpu == "L40S"}
    assert ("runpod", "on_demand") not in shipped and ("runpod", "spot") not in shipped
    report = import_file(
        FIXTURES / "skypilot" / "runpod_l40s.csv", provider="runpod", user_dir=tmp_path, today=TODAY
    )
    assert report.sources[0].rows_kept == 4  # 4x and 5x, on demand and spot each
    got = {
        (p.instance, str(p.pricing_model)): p
        for p in load_catalog(tmp_path).prices
        if p.gpu == "L40S" and p.provider == "runpod" and p.origin == "import"
    }
    # 4x_L40S_SECURE: Price 3.44 / 4 = 0.86, SpotPrice 1.04 / 4 = 0.26 per GPU-hour
    assert got["4x_L40S_SECURE", "on_demand"].usd_per_gpu_hour == pytest.approx(0.86)
    assert got["4x_L40S_SECURE", "spot"].usd_per_gpu_hour == pytest.approx(0.26)
    on_demand = {
        p.provider
        for p in load_catalog(tmp_path).prices
        if p.gpu == "L40S" and p.pricing_model == "on_demand"
    }
    assert on_demand == {"aws", "coreweave", "nebius", "runpod"}
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": "50M"},
            "training": {"method": "qlora"},
            "hardware": {"gpu": "L40S", "gpus_per_node": 4},
            "pricing": {"provider": "runpod", "mode": "spot"},
        }
    )
    cost = plan(request, catalog=load_catalog(tmp_path)).cost
    assert (cost.instance, cost.region, cost.pricing_model) == ("4x_L40S_SECURE", "US", "spot")


def test_import_by_hand_from_a_skypilot_file_and_a_gpuhunt_zip(
    tmp_path: Path, server: CatalogServer
) -> None:
    folder = tmp_path / "config"
    report = import_file(FIXTURES / "skypilot" / "runpod" / "vms.csv", user_dir=folder, today=TODAY)
    assert report.sources[0].rows_kept == 6  # 1x, 2x, 3x: on demand and spot each
    rows = _rows(folder / "refreshed_prices.json")
    assert {(r["origin"], r["date"], r["fetched"], r["provider"]) for r in rows} == {
        ("import", None, "2026-12-01", "runpod")
    }
    # a gpuhunt catalog.zip, as published, named as the user saved it: the provider must be given
    zipped = tmp_path / "catalog.zip"
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/gpuhunt/lambdalabs/20261128-57/catalog.zip") as r:
        zipped.write_bytes(r.read())
    with pytest.raises(CatalogError, match="give --provider"):
        import_file(zipped, user_dir=folder)
    import_file(zipped, provider="lambdalabs", user_dir=folder, today=TODAY)
    rows = _rows(folder / "refreshed_prices.json")
    # the runpod import is kept
    assert sorted({r["provider"] for r in rows}) == ["lambda", "runpod"]


def test_import_names_a_file_of_no_known_format(tmp_path: Path) -> None:
    other = tmp_path / "prices.csv"
    other.write_text("gpu,price\nH100,2.0\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"prices\.csv is neither a SkyPilot vms\.csv"):
        import_file(other, user_dir=tmp_path)
    renamed = tmp_path / "aws-prices.csv"
    shutil.copy(FIXTURES / "skypilot" / "aws" / "vms.csv", renamed)
    with pytest.raises(CatalogError, match="give --provider"):
        import_file(renamed, user_dir=tmp_path)
    assert import_file(renamed, provider="aws", user_dir=tmp_path).sources[0].rows_kept == 12


# --------------------------------------------------------------------------- the command line


def _cli(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "HOME": str(tmp_path),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=ROOT,
        timeout=120,
    )


def test_cli_refresh_end_to_end(server: CatalogServer, tmp_path: Path) -> None:
    sky = {"TUNEPLAN_SKYPILOT_CATALOG_URL": f"{server.url}/skypilot"}
    done = _cli(["catalog", "prices", "--json"], tmp_path, **sky)
    assert done.returncode == 0 and server.requests == []  # offline unless asked
    done = _cli(
        ["catalog", "refresh", "--source", "skypilot", "--cloud", "aws,lambda"], tmp_path, **sky
    )
    assert done.returncode == 0, done.stderr
    # aws: 12 prices (6 instances x on demand and spot) from 54 rows; lambda: 5 from 19 (the 2 of
    # V100 and A100, and gpu_1x/2x/4x_a6000 at $0.80 per GPU: 0.8/1, 1.6/2, 3.2/4)
    assert "skypilot: 17 prices kept from 73 rows" in done.stdout
    # downloaded data, not settings
    written = tmp_path / "data" / "tuneplan" / "refreshed_prices.json"
    assert str(written) in done.stdout
    before = written.read_bytes()
    listed = json.loads(_cli(["catalog", "prices", "--json"], tmp_path).stdout)
    assert any(p["instance"] == "gpu_8x_a100" and p["gpu"] == "A100-40GB-SXM" for p in listed)
    cut = _cli(
        ["catalog", "refresh", "--source", "skypilot", "--cloud", "aws"],
        tmp_path,
        TUNEPLAN_SKYPILOT_CATALOG_URL=f"{server.url}/cut",
    )
    assert cut.returncode == 1
    assert cut.stderr.startswith("tuneplan: download of ") and "was cut off" in cut.stderr
    assert len(cut.stderr.strip().splitlines()) == 1 and "Traceback" not in cut.stderr
    assert written.read_bytes() == before


def test_refreshed_prices_of_earlier_releases_in_the_config_folder_are_read_and_kept(
    tmp_path: Path,
) -> None:
    """Earlier releases wrote refreshed_prices.json to the config folder: it is read until a refresh
    or import writes the data folder's, and that write keeps its rows of the providers not read
    again."""
    earlier = tmp_path / "config" / "tuneplan"
    earlier.mkdir(parents=True)
    # the data folder is the config folder: as earlier releases
    done = _cli(
        ["catalog", "import", str(FIXTURES / "gpuhunt" / "runpod.csv")],
        tmp_path,
        XDG_DATA_HOME=str(earlier.parent),
    )
    assert done.returncode == 0, done.stderr
    runpod = [
        p
        for p in json.loads(_cli(["catalog", "prices", "--json"], tmp_path).stdout)
        if p.get("origin") == "import"
    ]
    assert len(runpod) == 3  # read from the config folder while the data folder has none
    new = tmp_path / "data" / "tuneplan" / "refreshed_prices.json"
    assert not new.exists()
    done = _cli(
        ["catalog", "import", str(FIXTURES / "skypilot" / "aws" / "vms.csv"), "--provider", "aws"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(new.read_text(encoding="utf-8"))["rows"]
    assert {r["provider"] for r in rows} == {"runpod", "aws"}


def test_cli_import_and_its_errors(tmp_path: Path) -> None:
    done = _cli(["catalog", "import", str(FIXTURES / "gpuhunt" / "runpod.csv")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "import (gpuhunt): 3 prices kept from 5 rows" in done.stdout
    missing = _cli(["catalog", "import"], tmp_path)
    assert missing.returncode == 1 and "needs the catalog FILE" in missing.stderr
    nofile = _cli(["catalog", "import", str(tmp_path / "nope.csv")], tmp_path)
    assert nofile.returncode == 1 and nofile.stderr.startswith("tuneplan: cannot read ")
    usage = _cli(["catalog", "refresh", "--source", "both"], tmp_path)
    assert usage.returncode == 2  # argparse: the command line itself is wrong
