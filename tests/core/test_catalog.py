"""The shipped catalog and its loader.

Expected numbers are read by hand from the vendor sheets / price pages quoted in resources/catalog
(URLs in comments), never computed by the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from core import catalog as cat_mod
from core.catalog import (
    STORAGE_TIERS,
    CatalogError,
    default_user_dir,
    load_catalog,
    save_user_overrides,
    shipped_catalog,
)
from core.planner.money.pricing import node_offer
from core.resources import read_json, resource_path

TODAY = dt.date(2026, 11, 29)


@pytest.fixture(scope="module")
def cat() -> cat_mod.Catalog:
    return shipped_catalog()


# --------------------------------------------------------------------------- coverage and
# provenance


def test_catalog_sizes(cat):
    assert len(cat.gpus) >= 20
    assert len(cat.models) >= 25
    providers_with_gpu_prices = {p.provider for p in cat.prices}
    assert len(providers_with_gpu_prices) >= 8
    assert cat.retrieved == "2026-11-29"


def test_provider_slugs(cat):
    expected = {"aws", "gcp", "azure", "lambda", "runpod", "coreweave", "nebius", "vastai"}
    assert expected <= set(cat.providers())
    assert all(p == p.lower() and " " not in p for p in cat.providers())
    assert cat.provider("AWS").name == "AWS"
    assert cat.provider_id("Vast.ai") == "vastai"
    assert cat.provider_id("Lambda Labs") == "lambda"


def test_every_gpu_figure_in_the_file_has_a_source():
    doc = read_json("catalog", "gpus.json")
    assert doc["retrieved"] == "2026-11-29"
    checked = 0
    for g in doc["gpus"]:
        for key, fig in g.items():
            if isinstance(fig, dict) and "value" in fig and fig["value"] is not None:
                assert str(fig.get("source_url", "")).startswith("http"), (g["id"], key)
                checked += 1
    assert checked > 200


def test_every_gpu_numeric_field_has_a_source(cat):
    numeric = [
        "memory_bytes",
        "memory_bandwidth_gbs",
        "bf16_tflops",
        "fp16_tflops",
        "fp8_tflops",
        "tf32_tflops",
        "fp32_tflops",
        "interconnect_bw_gbs",
        "intra_node_gbs",
        "nvlink_pair_gbs",
        "pcie_gen",
        "tdp_w",
        "release_year",
        "street_price_usd",
    ]
    for g in cat.gpus.values():
        for field in numeric:
            if getattr(g, field) is not None:
                assert g.sources.get(field, "").startswith("http"), (g.id, field)


def test_every_price_has_a_source_and_provider_name(cat):
    # the sheet's 86 offers as 109 records (one per price), plus 19 for the cards added later; the
    # catalog adds the reserved prices derived per provider
    assert len(read_json("catalog", "prices.json")["rows"]) == 109 + 19
    for p in cat.prices:
        assert p.source.startswith("http"), p.instance
        assert p.provider_name
    for s in cat.storage:
        assert s.source.startswith("http"), s.service
    for e in cat.egress:
        assert e.source.startswith("http"), e.provider


def test_derived_intra_node_figures_say_how():
    doc = read_json("catalog", "gpus.json")
    for g in doc["gpus"]:
        assert g["intra_node_link"] in ("nvlink", "pcie", "infinity_fabric", "roce")
        assert g["intra_node_gbs"]["note"], g["id"]


# --------------------------------------------------------------------------- GPU facts (read by
# hand)


def test_h100_sxm_figures_from_nvidia_sheet(cat):
    # nvidia.com/en-us/data-center/h100: 80GB; BF16 1,979 TFLOPS with sparsity → 989.5 dense; TF32
    # 989 → 494.5
    g = cat.gpu("H100-SXM")
    assert g.memory_bytes == 80_000_000_000
    assert g.memory_gb == 80
    assert g.bf16_tflops == 989.5
    assert g.fp8_tflops == 1979
    assert g.memory_bandwidth_gbs == 3350
    assert g.sources["bf16_tflops"] == "https://www.nvidia.com/en-us/data-center/h100/"
    assert g.street_price_usd == (25000, 30000)


def test_intra_node_bandwidth(cat):
    # NVLink4 900 GB/s bidirectional → 450 per direction; NVLink3 600 → 300; PCIe Gen4 x16 ≈ 25,
    # Gen5 ≈ 50
    assert cat.gpu("H100-SXM").intra_node_link == "nvlink"
    assert cat.gpu("H100-SXM").intra_node_gbs == 450
    assert cat.gpu("A100-80GB-SXM").intra_node_gbs == 300
    assert cat.gpu("L40S").intra_node_link == "pcie"
    assert cat.gpu("L40S").intra_node_gbs == 25
    assert cat.gpu("MI300X").intra_node_link == "infinity_fabric"
    pcie = cat.gpu("H100-PCIE")
    assert pcie.intra_node_gbs == 50
    assert pcie.intra_node_bandwidth_gbs(2) == 300  # the NVLink-bridged pair
    assert pcie.intra_node_bandwidth_gbs(4) == 50


def test_peak_tflops_by_precision(cat):
    a100 = cat.gpu("A100-80GB-SXM")  # A100 datasheet: BF16/FP16 312, TF32 156 (dense)
    assert a100.peak_tflops("amp_bf16") == 312
    assert a100.peak_tflops("pure_bf16") == 312
    assert a100.peak_tflops("amp_fp16") == 312
    assert a100.peak_tflops("fp32") == 156
    assert a100.peak_tflops("fp8") == 312  # no FP8 on Ampere: falls back to bf16
    h100 = cat.gpu("h100")
    assert h100.peak_tflops("fp8") == 1979
    t4 = cat.gpu("T4")  # T4: FP16 tensor 65, FP32 8.1, no TF32, no BF16
    assert t4.peak_tflops("amp_fp16") == 65
    assert t4.peak_tflops("fp32") == 8.1
    assert not t4.supports("amp_bf16")
    with pytest.raises(CatalogError, match="T4 has no published bf16"):
        t4.peak_tflops("amp_bf16")
    with pytest.raises(CatalogError, match="precision 'int4' is not one of"):
        h100.peak_tflops("int4")


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("h100", "H100-SXM"),
        ("H100", "H100-SXM"),
        ("h100-sxm5", "H100-SXM"),
        ("h100_sxm", "H100-SXM"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),  # nvidia-smi name
        ("a100", "A100-80GB-SXM"),
        ("a100-80g", "A100-80GB-SXM"),
        ("A100-80GB", "A100-80GB-SXM"),
        ("a100-40g", "A100-40GB-SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB-SXM"),
        ("4090", "RTX-4090"),
        ("rtx 4090", "RTX-4090"),
        ("h200", "H200-SXM"),
        ("L40s", "L40S"),
        ("mi300x", "MI300X"),
        ("Tesla T4", "T4"),
        ("gaudi 3", "GAUDI3"),
    ],
)
def test_gpu_aliases(cat, name, expected):
    assert cat.gpu(name).id == expected


def test_unknown_gpu_suggests(cat):
    with pytest.raises(CatalogError) as err:
        cat.gpu("h10")
    msg = str(err.value)
    assert msg.startswith("unknown GPU 'h10'; did you mean ")
    assert "H100-SXM" in msg
    assert "tuneplan catalog gpus" in msg


def test_model_lookup_and_suggestions(cat):
    assert cat.model("LLAMA-3.1-8B").id == "llama-3.1-8b"
    assert cat.model("meta-llama/Llama-3.1-8B").id == "llama-3.1-8b"
    assert cat.model("mistral-7b").id == "mistral-7b-v0.3"
    with pytest.raises(CatalogError) as err:
        cat.model("llama-3-8b")
    msg = str(err.value)
    assert msg.startswith("unknown model preset 'llama-3-8b'; did you mean llama-3.1-8b")
    assert msg.endswith("(tuneplan catalog models lists all)")


def test_unknown_provider_suggests(cat):
    with pytest.raises(CatalogError, match=r"unknown provider 'awz'; did you mean aws\?"):
        cat.prices_for("H100-SXM", provider="awz")


PRESETS = [
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "llama-3.2-1b",
    "llama-3.2-3b",
    "llama-3.3-70b",
    "mistral-7b-v0.1",
    "mistral-7b-v0.3",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "qwen2.5-0.5b",
    "qwen2.5-1.5b",
    "qwen2.5-3b",
    "qwen2.5-7b",
    "qwen2.5-14b",
    "qwen2.5-32b",
    "qwen2.5-72b",
    "qwen3-0.6b",
    "qwen3-8b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "gemma-2-2b",
    "gemma-2-9b",
    "gemma-2-27b",
    "gemma-3-1b",
    "gemma-3-27b",
    "phi-3-mini-4k",
    "phi-3-medium-4k",
    "phi-4",
    "deepseek-v2-lite",
    "deepseek-v3",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "tinyllama-1.1b",
]


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_exist_with_provenance(cat, preset):
    m = cat.model(preset)
    assert m.source_url.startswith("http")
    assert m.config["hidden_size"] > 0
    assert m.params_source_url


def test_preset_config_keys(cat):
    # MODELS.md table: llama-3.1-8b 4096 / 32 layers / 32 heads, 8 kv / 14336 / 128256, untied
    c = cat.model("llama-3.1-8b").config
    assert (
        c["hidden_size"],
        c["num_hidden_layers"],
        c["num_attention_heads"],
        c["num_key_value_heads"],
    ) == (4096, 32, 32, 8)
    assert (c["intermediate_size"], c["vocab_size"], c["tie_word_embeddings"]) == (
        14336,
        128256,
        False,
    )
    assert c["architectures"] == ["LlamaForCausalLM"]
    assert "head_dim" not in c  # not set in that config.json
    mix = cat.model("mixtral-8x7b")
    assert (mix.config["num_local_experts"], mix.config["num_experts_per_tok"]) == (8, 2)
    assert (mix.published_params, mix.published_active_params) == (46_700_000_000, 12_900_000_000)
    ds = cat.model("deepseek-v3").config
    assert (ds["n_routed_experts"], ds["n_shared_experts"], ds["kv_lora_rank"]) == (256, 1, 512)
    gemma = cat.model("gemma-2-2b")
    assert gemma.published_params is None
    assert gemma.published_params_breakdown == {"embedding": 590118912, "non_embedding": 2024517888}
    copy = cat.model("llama-3.1-8b").hf_config()
    copy["hidden_size"] = 1
    assert cat.model("llama-3.1-8b").config["hidden_size"] == 4096


# --------------------------------------------------------------------------- prices


def _one(cat, gpu, provider, instance, model):
    rows = [
        p
        for p in cat.prices_for(gpu, provider)
        if p.instance == instance and p.pricing_model == model
    ]
    assert len(rows) == 1, rows
    return rows[0]


def test_per_gpu_hour_prices(cat):
    # AWS p5.48xlarge: $55.04/h for 8 GPUs = $6.88 per GPU-hour; spot $17.6289/h → 2.2036 (SkyPilot
    # vms.csv)
    p5 = _one(cat, "H100-SXM", "aws", "p5.48xlarge", "on_demand")
    assert p5.gpus_per_instance == 8
    assert p5.usd_per_gpu_hour == pytest.approx(6.88)
    assert p5.usd_per_instance_hour == pytest.approx(55.04)
    assert _one(cat, "H100-SXM", "aws", "p5.48xlarge", "spot").usd_per_gpu_hour == pytest.approx(
        2.2036
    )
    assert p5.date == "2026-11-09"
    assert p5.region == "us-east-1"


def test_reserved_from_the_providers_own_commitment_discount(cat):
    # Nebius H100 $4.50 on demand, commitments "up to 35% off" → 4.50 x 0.65 = 2.925
    nebius = _one(cat, "H100-SXM", "nebius", "HGX H100 (per GPU)", "reserved")
    assert nebius.usd_per_gpu_hour == pytest.approx(2.925)
    assert "on_demand x (1 - 0.35)" in (nebius.reserved_basis or "")
    # CoreWeave HGX H100 $49.24/8 = 6.155, "up to 60%" → 2.462
    assert _one(
        cat, "H100-SXM", "coreweave", "HGX H100 (8x)", "reserved"
    ).usd_per_gpu_hour == pytest.approx(2.462)
    # Lambda and Google Cloud publish no GPU commitment discount in the data → no reserved price
    assert not [p for p in cat.prices_for("H100-SXM", "lambda") if p.pricing_model == "reserved"]
    assert not [p for p in cat.prices if p.provider == "gcp" and p.pricing_model == "reserved"]
    # AWS Capacity Block $4.916/GPU-h is a reservation (paid upfront), not on-demand
    block = _one(cat, "H100-SXM", "aws", "p5.48xlarge (EC2 Capacity Block)", "reserved")
    assert block.usd_per_gpu_hour == pytest.approx(4.9162)
    assert (block.term, block.upfront) == ("capacity block", "all")
    assert not [
        p
        for p in cat.prices_for("H100-SXM", "aws")
        if "Capacity Block" in p.instance and p.pricing_model != "reserved"
    ]


def test_best_price(cat):
    # cheapest H100 SXM on demand from a provider's own list: Mithril 8x $28.66/h = $3.5825
    # (SkyPilot PR #9156); Vast.ai's $2.40 median and RunPod Community $2.69 are marketplace prices,
    # used only when allowed
    assert cat.best_price("h100", "on_demand").provider == "mithril"
    assert cat.best_price("h100", "on_demand").usd_per_gpu_hour == pytest.approx(3.5825)
    # a 1-GPU node pays a whole instance: Mithril's 8-GPU-only offer would cost 8 x 3.5825 =
    # $28.66/h, so the cheapest 1-GPU H100 is RunPod Secure Cloud's 1-GPU pod at $3.99 (Lambda 1x
    # $4.29, Nebius 1-GPU VM $4.50)
    one = node_offer(cat, "h100", "on_demand", 1)
    assert one is not None and one.billed_gpus == 1
    assert (one.row.provider, one.row.usd_per_gpu_hour) == ("runpod", pytest.approx(3.99))
    market = cat.best_price("h100", "on_demand", allow=["marketplace"])
    assert (market.provider, market.usd_per_gpu_hour) == ("vastai", pytest.approx(2.4024))
    # Nebius preemptible
    assert cat.best_price("H100-SXM", "spot").usd_per_gpu_hour == pytest.approx(0.79)
    assert cat.best_price(
        "H100-SXM", "on_demand", provider="aws"
    ).usd_per_gpu_hour == pytest.approx(6.88)
    # L40S spot: AWS g6e.xlarge $0.6538 < Nebius $0.74
    assert cat.best_price("L40S", "spot").provider == "aws"
    with pytest.raises(CatalogError, match="pricing mode 'hourly'"):
        cat.best_price("H100-SXM", "hourly")


def test_price_staleness(cat):
    lam = _one(cat, "H100-SXM", "lambda", "8x NVIDIA H100 SXM", "on_demand")
    assert lam.date == "2026-09-20"
    assert lam.age_days(TODAY) == 70  # Sep 20 → Nov 29: 10 + 31 + 29
    assert not lam.is_stale(TODAY)
    assert lam.freshness(TODAY) == "fresh"
    assert not lam.is_stale(dt.date(2026, 12, 19))  # 90 days: not older than a quarter
    assert lam.is_stale(dt.date(2026, 12, 20))
    assert lam.freshness(dt.date(2026, 12, 20)) == "stale"
    undated = _one(cat, "H100-SXM", "aws", "p5.4xlarge", "on_demand")
    assert undated.date is None and undated.is_undated
    assert undated.snapshot == "skypilot-catalog v8 @00148f2a"
    assert undated.age_days(TODAY) is None
    assert not undated.is_stale(TODAY)
    assert undated.freshness(TODAY) == "undated"


def test_storage_prices(cat):
    # S3 Standard $0.023/GB-month, $0.005 per 1000 PUT, $0.0004 GET
    s3 = cat.storage_price("aws", "object")
    assert (s3.service, s3.usd_per_gb_month, s3.put_per_1000, s3.get_per_1000) == (
        "S3 Standard",
        0.023,
        0.005,
        0.0004,
    )
    # no Lambda price: default
    assert cat.storage_price("lambda", "object").service == "S3 Standard"
    assert cat.storage_price(None, "block").service == "EBS gp3"
    # FSx PERSISTENT_2 125 MB/s/TiB
    assert cat.storage_price("aws", "parallel_fs").usd_per_gb_month == 0.145
    assert cat.storage_price("gcp", "parallel_fs").provider == "aws"  # GCP Lustre price not found
    nebius = cat.storage_price("nebius", "object")  # $0.0147 per GiB-month = 0.01369 per GB
    assert nebius.usd_per_gb_month == pytest.approx(0.01369, abs=1e-5)
    assert cat.storage_price("runpod", "nfs").usd_per_gb_month == 0.07
    for tier in STORAGE_TIERS:
        assert cat.storage_price(None, tier) is not None
    with pytest.raises(CatalogError, match="storage tier 'ssd' is not one of"):
        cat.storage_price("aws", "ssd")


def test_one_set_of_names_for_tiers_and_modes(cat):
    """The plan request and the catalog share the enums: the tuples and the storage rows use the
    same names."""
    from core.planner import request, request_assumptions

    tier_fields = request_assumptions.Assumptions.model_fields
    assert tier_fields["checkpoint_tier"].annotation is cat_mod.StorageTier
    assert request.PricingMode is cat_mod.PricingMode
    assert request.Interconnect is cat_mod.Interconnect
    assert STORAGE_TIERS == ("local_nvme", "parallel_fs", "block", "nfs", "object")
    assert cat_mod.PRICING_MODES == ("on_demand", "spot", "reserved")
    assert all(isinstance(s.tier, cat_mod.StorageTier) for s in cat.storage)
    assert cat.storage_price("aws", cat_mod.StorageTier.object) is cat.storage_price(
        "aws", "object"
    )
    assert cat.best_price("H100-SXM", cat_mod.PricingMode.spot) is cat.best_price(
        "H100-SXM", "spot"
    )
    with pytest.raises(
        CatalogError, match="pricing mode 'hourly' is not one of on_demand, spot, reserved"
    ):
        cat.best_price("H100-SXM", "hourly")


def test_egress_prices(cat):
    aws = cat.egress_price("aws")  # first 10 TB $0.09/GB, 100 GB/month free
    assert aws.usd_per_gb == 0.09
    assert aws.cost_usd(100) == 0
    assert aws.cost_usd(1100) == pytest.approx(90.0)
    assert aws.cost_usd(20_100) == pytest.approx(10_000 * 0.09 + 10_000 * 0.085)
    assert cat.egress_price("lambda").cost_usd(5000) == 0
    assert cat.egress_price("runpod") is None
    with pytest.raises(CatalogError, match="unknown provider"):
        cat.egress_price("nowhere")


def test_price_rows_for_gpus_outside_the_catalog(cat):
    # Every shipped price row now names a catalog GPU (B300, GB200 and GH200 joined the catalog), so
    # the case is built: a row for a GPU id the catalog does not list stays findable by that id but
    # is not a priced GPU.
    p5 = next(
        p for p in cat.prices if p.instance == "p5.48xlarge" and p.pricing_model == "on_demand"
    )
    orphan = p5.model_copy(update={"gpu": "X9000", "instance": "x9.48xlarge"})
    small = cat_mod.Catalog(
        gpus=cat.gpus.values(),
        models=[],
        prices=[p5, orphan],
        storage=[],
        egress=[],
        providers=cat.provider_info.values(),
        retrieved=cat.retrieved,
    )
    assert "X9000" not in small.gpus
    # the p5 row's 6.88 per GPU-hour
    assert small.prices_for("x9000")[0].usd_per_gpu_hour == pytest.approx(55.04 / 8)
    assert small.priced_gpus() == ["H100-SXM"]


def test_every_shipped_price_row_names_a_catalog_gpu(cat):
    assert {p.gpu for p in cat.prices} <= set(cat.gpus)
    assert cat.prices_for("B300")[0].usd_per_gpu_hour == pytest.approx(17.802)  # 142.416 / 8
    assert {"B300", "GB200", "GH200"} <= set(cat.priced_gpus())


# --------------------------------------------------------------------------- user overrides


def _write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data), encoding="utf-8")


def test_user_overrides_merge(tmp_path):
    _write(
        tmp_path / "gpus.json",
        [
            {
                "id": "MY-GPU",
                "memory_gb": 32,
                "bf16_tflops": 100,
                "intra_node_gbs": 10,
                "source": "my bench",
            },
            {"id": "h100", "bf16_tflops": 900, "source": "measured"},
        ],
    )
    _write(
        tmp_path / "prices.json",
        [
            {
                "provider": "Lambda",
                "instance": "8x NVIDIA H100 SXM",
                "gpu": "H100-SXM",
                "on_demand": 3.5,
                "date": "2026-11-01",
            },
            {"provider": "MyCloud", "instance": "box", "gpu": "my-gpu", "on_demand": 1.0},
        ],
    )
    _write(tmp_path / "discounts.json", {"aws": 0.1})
    cat = load_catalog(tmp_path)

    mine = cat.gpu("my_gpu")
    assert mine.memory_bytes == 32_000_000_000
    assert mine.sources["bf16_tflops"] == "my bench"
    h100 = cat.gpu("H100-SXM")
    assert h100.bf16_tflops == 900
    assert h100.sources["bf16_tflops"] == "measured"
    assert h100.memory_bytes == 80_000_000_000  # untouched fields kept

    lam = [p for p in cat.prices_for("H100-SXM", "lambda") if p.instance == "8x NVIDIA H100 SXM"]
    assert len(lam) == 1 and lam[0].usd_per_gpu_hour == 3.5 and lam[0].pricing_model == "on_demand"
    assert lam[0].source.startswith("user override") and lam[0].origin == "user"
    assert cat.prices_for("MY-GPU", "mycloud")[0].usd_per_gpu_hour == 1.0
    assert "mycloud" in cat.providers()

    p5 = _one(cat, "H100-SXM", "aws", "p5.48xlarge", "on_demand")
    assert p5.usd_per_gpu_hour == pytest.approx(6.88 * 0.9)
    assert _one(cat, "H100-SXM", "aws", "p5.48xlarge", "spot").usd_per_gpu_hour == pytest.approx(
        2.2036 * 0.9
    )
    assert p5.user_discount == 0.1
    assert "user discount 10%" in p5.notes
    # the shipped catalog is not changed by a merge
    assert shipped_catalog().gpu("H100-SXM").bf16_tflops == 989.5


def test_no_override_files_gives_the_shipped_catalog(tmp_path):
    assert load_catalog(tmp_path) is shipped_catalog()
    assert load_catalog(tmp_path / "missing") is shipped_catalog()


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("gpus.json", "[{", "is not valid JSON"),
        ("gpus.json", '{"id": "x"}', "must be a JSON list"),
        ("gpus.json", '[{"id": "X", "memory_gb": 8, "bogus": 1}]', "unknown keys bogus"),
        ("gpus.json", '[{"id": "NEW"}]', "needs memory_gb"),
        ("gpus.json", '[{"id": "h100", "bf16_tflops": "fast"}]', "bf16_tflops"),
        (
            "prices.json",
            '[{"provider": "aws", "instance": "x", "gpu": "h10", "on_demand": 1}]',
            "unknown GPU 'h10'",
        ),
        ("prices.json", '[{"provider": "aws", "instance": "x", "gpu": "h100"}]', "at least one of"),
        (
            "prices.json",
            '[{"provider": "aws", "instance": "x", "gpu": "h100", "pricing_model": "spot"}]',
            "needs both 'pricing_model'",
        ),
        (
            "prices.json",
            '[{"provider": "aws", "instance": "x", "gpu": "h100", "pricing_model": "hourly",'
            ' "usd_per_gpu_hour": 1}]',
            "pricing_model",
        ),
        (
            "prices.json",
            '[{"provider": "aws", "instance": "x", "gpu": "h100", "spot": 1, "date": "soon"}]',
            "YYYY-MM-DD",
        ),
        ("discounts.json", '{"aws": 1.5}', "fraction from 0"),
        ("discounts.json", '{"awz": 0.1}', "did you mean aws"),
        ("discounts.json", "[0.1]", "must be a JSON object"),
        # a line break in a name is echoed escaped: the sentence stays on one line
        ("discounts.json", '{"\\n": 0.1}', r"unknown provider '\\n'"),
    ],
)
def test_malformed_override_names_the_file(tmp_path, name, content, match):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(CatalogError, match=match) as err:
        load_catalog(tmp_path)
    assert str(tmp_path / name) in str(err.value)
    assert "\n" not in str(err.value)


def test_save_user_overrides_round_trip(tmp_path):
    folder = tmp_path / "cfg"
    save_user_overrides(
        folder,
        discounts={"nebius": 0.2},
        prices=[{"provider": "runpod", "instance": "mine", "gpu": "a100", "spot": 0.5}],
    )
    assert json.loads((folder / "discounts.json").read_text()) == {"nebius": 0.2}
    # no temp files left
    assert sorted(p.name for p in folder.iterdir()) == ["discounts.json", "prices.json"]
    cat = load_catalog(folder)
    assert cat.prices_for("H100-SXM", "nebius")[0].usd_per_gpu_hour == pytest.approx(4.5 * 0.8)
    assert _one(cat, "A100-80GB-SXM", "runpod", "mine", "spot").usd_per_gpu_hour == 0.5
    # a later save of one file keeps the other and the cache notices the change
    save_user_overrides(folder, discounts={"nebius": 0.5})
    again = load_catalog(folder)
    assert again.prices_for("H100-SXM", "nebius")[0].usd_per_gpu_hour == pytest.approx(4.5 * 0.5)
    assert _one(again, "A100-80GB-SXM", "runpod", "mine", "spot").usd_per_gpu_hour == 0.5


def test_save_rejects_bad_overrides_without_writing(tmp_path):
    with pytest.raises(CatalogError, match="discount for 'aws'"):
        save_user_overrides(tmp_path, discounts={"aws": -0.2})
    assert not (tmp_path / "discounts.json").exists()


def test_default_user_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_user_dir() == tmp_path / "tuneplan"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_user_dir() == tmp_path / "home" / ".config" / "tuneplan"


# --------------------------------------------------------------------------- resources and speed


def test_resources_env_override(monkeypatch, tmp_path):
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "x.json").write_text('{"a": 1}', encoding="utf-8")
    monkeypatch.setenv("TUNEPLAN_RESOURCES", str(tmp_path))
    assert resource_path("catalog", "x.json") == tmp_path / "catalog" / "x.json"
    assert read_json("catalog", "x.json") == {"a": 1}
    with pytest.raises(FileNotFoundError, match="missing"):
        read_json("catalog", "nope.json")
    (tmp_path / "catalog" / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json is not valid JSON"):
        read_json("catalog", "bad.json")


def test_shipped_resources_found_next_to_core():
    assert resource_path("catalog", "gpus.json").is_file()
    assert resource_path("catalog", "SOURCES.md").is_file()


def test_loading_is_fast_and_cached():
    shipped_catalog.cache_clear()
    start = time.perf_counter()
    first = shipped_catalog()
    elapsed = time.perf_counter() - start
    assert elapsed < 0.2  # typically ~5 ms; budget 50 ms, slack for slow CI machines
    start = time.perf_counter()
    assert shipped_catalog() is first
    assert time.perf_counter() - start < 0.001
