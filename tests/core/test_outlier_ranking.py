"""A price the plan flags as an outlier never becomes the recommendation while an unflagged one
fits.

The user's prices.json (a real file in a real folder, loaded as every plan loads it) adds an
H100-SXM offer at a tenth of list, $0.30 per GPU-hour: inside the feeds' sane band (a fiftieth to
ten times the catalog's median) so it loads, but under a quarter of the providers' median, so the
plan calls it an outlier. The search must rank it after the unflagged offers, as it ranks a tight
memory headroom; it still shows it, lower in the list: the recommendation is the one the plan makes
without that file (tests/core/test_search_answers.py pins that answer).
"""

from __future__ import annotations

import json
from pathlib import Path

from core.catalog import load_catalog
from core.planner.plan import plan
from core.planner.request import PlanRequest

REQUEST = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": "2e8"}}
CHEAP = {
    "provider": "mycloud",
    "instance": "h100-at-a-tenth",
    "gpu": "H100-SXM",
    "pricing_model": "on_demand",
    "usd_per_gpu_hour": 0.30,
}


def test_an_outlier_price_ranks_after_every_unflagged_one(tmp_path: Path) -> None:
    (tmp_path / "prices.json").write_text(json.dumps([CHEAP]), encoding="utf-8")
    catalog = load_catalog(tmp_path)
    # it is inside the sane band
    assert any(p.instance == CHEAP["instance"] for p in catalog.prices)
    result = plan(PlanRequest.model_validate(REQUEST), catalog)
    (tmp_path / "none").mkdir()
    without = plan(PlanRequest.model_validate(REQUEST), load_catalog(tmp_path / "none"))
    assert without.hardware.gpu != "H100-SXM"  # the cheap row is what would have made it an H100
    assert (result.hardware.gpu, result.cost.usd_per_gpu_hour.on_demand) == (
        without.hardware.gpu,
        without.cost.usd_per_gpu_hour.on_demand,
    )
    assert not [w for w in result.sanity if w.kind == "price_outlier"]
    cheap = [
        i for i, c in enumerate(result.candidates) if c.provider and c.provider.lower() == "mycloud"
    ]
    assert cheap and min(cheap) > 0  # still shown, after the recommendation
    flagged = plan(
        PlanRequest.model_validate(
            {**REQUEST, "hardware": {"gpu": "H100-SXM"}, "pricing": {"provider": "mycloud"}}
        ),
        catalog,
    )
    # the plan calls it an outlier
    assert [w.kind for w in flagged.sanity].count("price_outlier") == 1


def test_when_every_offer_is_an_outlier_the_search_still_answers(tmp_path: Path) -> None:
    (tmp_path / "prices.json").write_text(json.dumps([CHEAP]), encoding="utf-8")
    result = plan(
        PlanRequest.model_validate({**REQUEST, "pricing": {"provider": "mycloud"}}),
        load_catalog(tmp_path),
    )
    assert result.hardware.gpu == "H100-SXM" and result.cost.usd_per_gpu_hour.on_demand == 0.30
