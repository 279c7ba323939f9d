"""A catalog that says which instance: every priced plan names the exact instance type and region it
priced (the rows of resources/catalog/prices.json, read here as the file has them), and the command
line shows both."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.planner.plan import plan
from core.planner.request import PlanRequest

ROOT = Path(__file__).resolve().parents[2]
SHEET = json.loads((ROOT / "resources/catalog/prices.json").read_text(encoding="utf-8"))
# (provider name, instance, region) of every row the sheet prices, as written in the file.
OFFERS = {(r["provider_name"], r["instance"], r.get("region") or "any") for r in SHEET["rows"]}
GPUS = sorted({r["gpu"] for r in SHEET["rows"]})


def test_an_aws_plan_names_the_instance_and_region_of_its_row() -> None:
    # prices.json: AWS p4de.24xlarge (8 × A100-80GB-SXM), on demand, region us-east-1.
    assert ("AWS", "p4de.24xlarge", "us-east-1") in OFFERS
    request = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": "200M"},
        "training": {"method": "lora"},
        "hardware": {"gpu": "A100-80GB-SXM", "gpus_per_node": 8},
        "pricing": {"provider": "aws"},
    }
    done = subprocess.run(
        [sys.executable, "-m", "cli", "plan", "-", "--json"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    cost = json.loads(done.stdout)["cost"]
    assert (cost["instance"], cost["region"]) == ("p4de.24xlarge", "us-east-1")
    text = subprocess.run(
        [sys.executable, "-m", "cli", "plan", "-"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    ).stdout
    assert "Prices: AWS p4de.24xlarge in us-east-1 (on_demand)" in text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gpu=st.sampled_from(GPUS),
    mode=st.sampled_from(["on_demand", "spot", "reserved"]),
    gpus=st.sampled_from([1, 2, 8]),
)
def test_every_priced_plan_names_an_instance_and_region_the_catalog_prices(
    gpu: str, mode: str, gpus: int
) -> None:
    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.2-1b"},
            "data": {"tokens": "10M", "seq_len": 1024},
            "training": {"method": "qlora"},
            "hardware": {"gpu": gpu, "gpus_per_node": gpus},
            "pricing": {"mode": mode},
        }
    )
    try:
        result = plan(request)
    # PlanError, or the catalog's: a GPU without a figure for the precision (V100 and bf16)
    except ValueError:
        return
    cost = result.cost
    if cost.total_usd is None:
        assert cost.instance is None or cost.pricing_model != mode
        return
    assert cost.instance and cost.region
    # a reserved price derived from an on-demand row keeps that row's instance and region
    assert (cost.provider, cost.instance, cost.region) in OFFERS


def test_every_shipped_row_is_dated_by_its_source_or_by_when_it_was_read() -> None:
    """resources/catalog/SOURCES.md: the sheets 'were converted on **2026-11-29** ... compiled from
    public sources on that date'. A row whose source gives no date shows that reading date; its own
    date is not invented."""
    from core.catalog import shipped_catalog

    sources = (ROOT / "resources/catalog/SOURCES.md").read_text(encoding="utf-8")
    read = re.search(r"converted on \*\*(\d{4}-\d{2}-\d{2})\*\*", sources)
    assert read is not None and read.group(1) == SHEET["retrieved"]
    prices = list(shipped_catalog().prices)
    assert all(p.fetched == read.group(1) for p in prices)
    undated = [p for p in prices if p.date is None]
    assert undated and all(p.seen == f"undated, read {read.group(1)}" for p in undated)
    listed = subprocess.run(
        [sys.executable, "-m", "cli", "catalog", "prices"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "XDG_CONFIG_HOME": "/nonexistent", "XDG_DATA_HOME": "/nonexistent"},
    ).stdout
    body, _, footer = listed.partition("\n\n")
    seen = [line.rsplit("  ", 1)[-1].strip() for line in body.splitlines()[2:]]
    assert len(seen) == len(prices) and seen.count("undated") == len(undated)
    assert footer == f"undated: the source gives no date; those rows were read {read.group(1)}\n"
