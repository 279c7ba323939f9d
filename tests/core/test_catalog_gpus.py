"""The GPUs people rent for fine-tuning: vendor figures, names, sources, MI250X as GCDs, the catalog
listing, and the price rows for the new cards.

Every expected figure below is copied by hand from the vendor sheet named in the comment (sparse
figures halved by hand where the sheet quotes sparsity), never read back from
resources/catalog/gpus.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.catalog import shipped_catalog
from core.catalog.lookup import Catalog
from core.catalog.network import typical_gpu_gbps
from core.catalog.records import CatalogError
from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.resources import read_json

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return shipped_catalog()


# (id, memory GB, memory bandwidth GB/s, dense bf16 TFLOP/s)
VENDOR_FIGURES = [
    # nvidia.com GA102 whitepaper (nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf),
    # appendix: RTX 3090 24 GB GDDR6X, 936 GB/s, BF16 tensor with FP32 accumulate 71 dense (142
    # sparse)
    ("RTX-3090", 24, 936, 71),
    # nvidia.com/en-us/design-visualization/rtx-a6000: 48 GB, 768 GB/s, Tensor 309.7 TFLOPS (sparse)
    # / 2 = 154.85
    ("RTX-A6000", 48, 768, 154.8),
    # images.nvidia.com .../a40/nvidia-a40-datasheet.pdf: 48 GB, 696 GB/s, BF16 tensor 149.7 | 299.4
    # sparse
    ("A40", 48, 696, 149.7),
    # nvidia.com/en-us/design-visualization/rtx-a4000: 16 GB, 448 GB/s, Tensor 153.4 TFLOPS (sparse)
    # / 2 = 76.7
    ("RTX-A4000", 16, 448, 76.7),
    # nvidia.com/en-us/design-visualization/rtx-a5000: 24 GB, 768 GB/s, Tensor 222.2 TFLOPS (sparse)
    # / 2 = 111.1
    ("RTX-A5000", 24, 768, 111.1),
    # nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5090: 32 GB GDDR7, 1,792 GB/s; RTX
    # Blackwell whitepaper: FP16 tensor 838 (FP16 accumulate, sparse) -> 419 dense -> 209.5 with
    # FP32 accumulate (GeForce half rate)
    ("RTX-5090", 32, 1792, 209.5),
    # nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition: 96 GB GDDR7, 1,792 GB/s;
    # 4,000 AI TOPS (FP4 sparse) / 8 ~ 500 BF16 dense; the whitepaper prints 503.8
    ("RTX-PRO-6000", 96, 1792, 503.8),
    # nvidia.com/en-us/data-center/h200 (H200 NVL column): 141 GB, 4.8 TB/s, BF16 1,671 (sparse) / 2
    # = 835.5
    ("H200-NVL", 141, 4800, 835.5),
    # nvidia.com/en-us/data-center/grace-hopper-superchip: 96 GB HBM3 version, 4 TB/s, BF16 1,979
    # (sparse) / 2
    ("GH200", 96, 4000, 989.5),
    # HGX B300: 2.3 TB / 8 = 288 GB per GPU, 8 TB/s; FP16/BF16 36 PFLOPS sparse / 8 GPUs / 2 = 2,250
    ("B300", 288, 8000, 2250),
    # nvidia.com/en-us/data-center/gb200-nvl72: 13.4 TB / 72 = 186 GB, 576 TB/s / 72 = 8 TB/s, 360
    # PF sparse / 72 / 2
    ("GB200", 186, 8000, 2500),
    # amd.com/en/products/accelerators/instinct/mi300/mi325x.html: 256 GB HBM3E, 6 TB/s, BF16
    # 1,307.4 dense
    ("MI325X", 256, 6000, 1307.4),
    # amd.com/en/products/accelerators/instinct/mi350/mi355x.html: 288 GB HBM3E, 8 TB/s, BF16 2.5
    # PFLOPS dense
    ("MI355X", 288, 8000, 2500),
]


@pytest.mark.parametrize(("gid", "memory_gb", "bandwidth_gbs", "bf16"), VENDOR_FIGURES)
def test_new_cards_carry_the_vendor_figures(cat, gid, memory_gb, bandwidth_gbs, bf16) -> None:
    g = cat.gpu(gid)
    assert g.memory_bytes == memory_gb * 10**9
    assert g.memory_bandwidth_gbs == pytest.approx(bandwidth_gbs)
    assert g.bf16_tflops == pytest.approx(bf16, abs=0.06)
    assert g.peak_tflops("amp_bf16") == pytest.approx(bf16, abs=0.06)  # plannable in bf16
    for field in ("memory_bytes", "memory_bandwidth_gbs", "bf16_tflops"):
        assert g.sources[field].startswith("https://"), (gid, field)


def test_geforce_cards_get_the_fp32_accumulate_rate_professional_cards_the_full_rate(cat) -> None:
    # GA102 whitepaper: RTX 3090 FP16 tensor 142 dense with FP16 accumulate, 71 with FP32
    # accumulate; the A6000 (same GA102 die, full rate) is 154.8. A bf16 plan accumulates in FP32,
    # so the 3090 gets the half rate.
    assert cat.gpu("RTX-3090").bf16_tflops == pytest.approx(142 / 2)
    assert "FP32 accumulate" in cat.gpu("RTX-3090").notes["bf16_tflops"]
    assert cat.gpu("RTX-A6000").bf16_tflops == pytest.approx(309.7 / 2, abs=0.06)
    assert "full rate" in cat.gpu("RTX-A6000").notes["bf16_tflops"]


def test_nvlink_bridged_pairs_of_pcie_cards(cat) -> None:
    # NVLink bridge 112.5 GB/s bidirectional (GA102 whitepaper; A6000/A40 datasheets) = 56.25 per
    # direction for a pair; more cards fall back to PCIe Gen4 (~25 GB/s achieved). The A4000 and the
    # 5090 have no NVLink.
    for gid in ("RTX-3090", "RTX-A6000", "A40", "RTX-A5000"):
        g = cat.gpu(gid)
        assert g.intra_node_bandwidth_gbs(2) == pytest.approx(112.5 / 2), gid
        assert g.intra_node_bandwidth_gbs(4) == pytest.approx(25.0), gid
    for gid in ("RTX-A4000", "RTX-5090", "RTX-PRO-6000"):
        assert cat.gpu(gid).nvlink_pair_gbs is None, gid
    # H200 NVL: 900 GB/s NVLink bridge per GPU (nvidia.com/en-us/data-center/h200) -> 450 per
    # direction
    assert cat.gpu("H200-NVL").intra_node_bandwidth_gbs(2) == pytest.approx(900 / 2)


@pytest.mark.parametrize(
    ("name", "gid"),
    [
        ("3090", "RTX-3090"),
        ("rtx 3090", "RTX-3090"),
        ("GeForce RTX 3090", "RTX-3090"),
        ("a6000", "RTX-A6000"),
        ("RTX A6000", "RTX-A6000"),
        ("a40", "A40"),
        ("NVIDIA A40", "A40"),
        ("a4000", "RTX-A4000"),
        ("rtx a5000", "RTX-A5000"),
        ("5090", "RTX-5090"),
        ("RTX 5090", "RTX-5090"),
        ("rtx pro 6000", "RTX-PRO-6000"),
        ("RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
        ("h200 nvl", "H200-NVL"),
        ("H200-NVL", "H200-NVL"),
        ("gh200", "GH200"),
        ("NVIDIA GH200", "GH200"),
        ("b300", "B300"),
        ("HGX B300", "B300"),
        ("gb200", "GB200"),
        ("GB200 NVL72", "GB200"),
        ("mi325x", "MI325X"),
        ("AMD Instinct MI325X", "MI325X"),
        ("mi355x", "MI355X"),
        ("mi355", "MI355X"),
        ("mi250", "MI250X"),
    ],
)
def test_names_people_type_resolve(cat, name, gid) -> None:
    assert cat.gpu_id(name) == gid


def test_h200_still_means_the_sxm_card_and_a_typo_gets_a_suggestion(cat) -> None:
    assert cat.gpu_id("h200") == "H200-SXM"
    with pytest.raises(CatalogError, match=r"did you mean .*RTX-3090"):
        cat.gpu_id("RTX-3909")


def test_every_figure_of_every_gpu_has_a_source_url() -> None:
    doc = read_json("catalog", "gpus.json")
    ids = {g["id"] for g in doc["gpus"]}
    assert {gid for gid, *_ in VENDOR_FIGURES} <= ids
    for g in doc["gpus"]:
        for key, fig in g.items():
            if isinstance(fig, dict) and fig.get("value") is not None:
                assert str(fig.get("source_url", "")).startswith("http"), (g["id"], key)
            if isinstance(fig, dict) and fig.get("value") is None:
                assert fig.get("note"), (g["id"], key)  # an empty figure says why it is empty


def test_mamf_only_where_ml_engineering_measured_it(cat) -> None:
    # stas00/ml-engineering MAMF table BF16 rows: GH200 828.6/989, B300 1769/2250, GB200 1822/2500,
    # MI325X 784.9 (÷ 1307.4), MI355X 1565 (÷ 2500). No row for the RTX/A40/H200 NVL cards.
    assert cat.gpu("GH200").matmul_efficiency_bf16 == pytest.approx(828.6 / 989, abs=5e-4)
    assert cat.gpu("B300").matmul_efficiency_bf16 == pytest.approx(1769 / 2250, abs=5e-4)
    assert cat.gpu("GB200").matmul_efficiency_bf16 == pytest.approx(1822 / 2500, abs=5e-4)
    assert cat.gpu("MI325X").matmul_efficiency_bf16 == pytest.approx(784.9 / 1307.4, abs=5e-4)
    assert cat.gpu("MI355X").matmul_efficiency_bf16 == pytest.approx(1565 / 2500, abs=5e-4)
    for gid in (
        "RTX-3090",
        "RTX-A6000",
        "A40",
        "RTX-A4000",
        "RTX-A5000",
        "RTX-5090",
        "RTX-PRO-6000",
        "H200-NVL",
    ):
        assert cat.gpu(gid).matmul_efficiency_bf16 is None, gid


def test_a10g_bf16_is_derived_from_its_sms_and_clock_and_says_how(cat) -> None:
    # 80 SMs × 512 dense FLOPs/clock/SM (GA102 with FP32 accumulate, as the RTX 3090's 71 TFLOPS) ×
    # 1.710 GHz
    g = cat.gpu("A10G")
    assert g.supports("amp_bf16") and g.supports("pure_bf16")
    assert g.bf16_tflops == pytest.approx(80 * 512 * 1.710e9 / 1e12, rel=1e-3)
    # NVIDIA's A10 sheet: 125 TFLOPS, the full GA102 rate
    assert g.bf16_tflops < cat.gpu("A10").bf16_tflops
    assert "derived" in g.notes["bf16_tflops"] and "80 x 512 x 1.710" in g.notes["bf16_tflops"]
    # Baseten's A10 vs A10G comparison: same 600 GB/s as the A10
    assert g.memory_bandwidth_gbs == 600


# --------------------------------------------------------------------------- MI250X: what PyTorch
# calls a device


def test_mi250x_is_one_gcd_of_64_gb(cat) -> None:
    # amd.com MI250X: 128 GB HBM2e, 3.2768 TB/s, 383 TFLOPS BF16 for the card's two GCDs; PyTorch
    # counts GCDs
    g = cat.gpu("MI250X")
    assert g.memory_bytes == 64 * 10**9
    assert g.memory_bandwidth_gbs == pytest.approx(3276.8 / 2)
    assert g.bf16_tflops == pytest.approx(383 / 2)
    assert "GCD" in g.name and "torch.cuda.device_count()" in g.notes["memory_bytes"]
    assert not cat.prices_for("MI250X")  # no price rows to halve


def test_an_mi250x_node_network_is_split_per_gcd(cat) -> None:
    # OLCF Frontier user guide: 4 MI250X (8 GCDs) and 4 Slingshot NICs of 200 Gbit/s per node -> 800
    # / 8 = 100 per GCD
    assert typical_gpu_gbps("MI250X", 8, cat) == pytest.approx(4 * 200 / 8)


def test_the_planner_sees_64_gb_per_mi250x_device() -> None:
    result = plan(
        PlanRequest.model_validate(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "2e8"},
                "training": {"method": "lora"},
                "hardware": {"gpu": "MI250X", "gpus_per_node": 8},
            }
        )
    )
    assert result.memory.gpu_memory == 64 * 10**9
    assert result.hardware.gpu == "MI250X"


# --------------------------------------------------------------------------- `tuneplan catalog
# gpus`


def tuneplan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_catalog_gpus_lists_every_card_with_its_figures_and_sources() -> None:
    proc = tuneplan("catalog", "gpus")
    assert proc.returncode == 0, proc.stderr
    header, _, *lines = proc.stdout.splitlines()
    assert header.split()[:3] == ["id", "name", "memory"]
    for word in ("bandwidth", "bf16", "fp16", "source"):
        assert word in header
    rows = {line.split()[0]: line for line in lines}
    # RTX 3090: 24 GB, 936 GB/s, 71 / 71 (GA102 whitepaper, nvidia.com)
    assert (
        "24 GB" in rows["RTX-3090"]
        and "936 GB/s" in rows["RTX-3090"]
        and "nvidia.com" in rows["RTX-3090"]
    )
    assert rows["RTX-3090"].count(" 71 ") == 2  # bf16 and fp16 columns
    # MI355X: 288 GB, 8000 GB/s, 2500 (amd.com)
    assert "288 GB" in rows["MI355X"] and "8000 GB/s" in rows["MI355X"] and "2500" in rows["MI355X"]
    assert rows["MI355X"].rstrip().endswith("amd.com")
    # T4: no bf16 figure (Turing has none) is printed as a dash, not a number
    assert "—" in rows["T4"]
    for gid, *_ in VENDOR_FIGURES:
        assert gid in rows, gid


def test_catalog_gpus_json_keeps_full_records_with_sources() -> None:
    proc = tuneplan("catalog", "gpus", "--json")
    assert proc.returncode == 0, proc.stderr
    records = {r["id"]: r for r in json.loads(proc.stdout)}
    pro = records["RTX-PRO-6000"]
    assert pro["memory_bytes"] == 96 * 10**9
    assert pro["sources"]["bf16_tflops"].startswith("https://images.nvidia.com/")
    assert records["MI250X"]["memory_bytes"] == 64 * 10**9


# --------------------------------------------------------------------------- the new price rows


PRICE_KEYS = {
    "provider",
    "provider_name",
    "instance",
    "gpu",
    "gpus_per_instance",
    "gpu_counts",
    "pricing_model",
    "usd_per_gpu_hour",
    "region",
    "term",
    "upfront",
    "reserved_basis",
    "date",
    "fetched",
    "origin",
    "source",
    "confidence",
    "notes",
    "snapshot",
    "tier",
    "user_discount",
}
REQUIRED = {
    "provider",
    "provider_name",
    "instance",
    "gpu",
    "pricing_model",
    "usd_per_gpu_hour",
    "source",
}
MODELS = {"on_demand", "spot", "reserved", "marketplace", "auction", "serverless"}


NEW_CARDS = {
    "RTX-3090",
    "RTX-A6000",
    "A40",
    "RTX-A4000",
    "RTX-A5000",
    "RTX-5090",
    "RTX-PRO-6000",
    "H200-NVL",
    "RTX-6000-ADA",
    "MI325X",
}


def _new_rows() -> list[dict]:
    """The shipped price rows of the cards this catalog added, prices.json's sheet keys (date_seen,
    source_url) read under the record's names (date, source)."""
    rows = json.loads((ROOT / "resources" / "catalog" / "prices.json").read_text())["rows"]
    renamed = {"date_seen": "date", "source_url": "source"}
    return [{renamed.get(k, k): v for k, v in r.items()} for r in rows if r["gpu"] in NEW_CARDS]


def test_new_price_rows_have_the_price_record_shape(cat) -> None:
    rows = _new_rows()
    assert rows
    for r in rows:
        assert REQUIRED <= set(r) <= PRICE_KEYS | {"spot_range", "corroborating_source"}, r[
            "instance"
        ]
        assert r["pricing_model"] in MODELS
        assert r["gpu"] in cat.gpus, r["gpu"]
        assert r["usd_per_gpu_hour"] > 0
        assert r["source"].startswith("https://")
        assert r["date"] is None or len(r["date"]) == 10
        # undated rows name their snapshot
        assert r["date"] is not None or r["snapshot"], r["instance"]
        assert r["gpus_per_instance"] >= 1
        assert not r.get("gpu_counts") or r["gpus_per_instance"] in r["gpu_counts"]
    assert {r["gpu"] for r in rows} == NEW_CARDS


def test_new_price_rows_are_instance_price_over_gpus() -> None:
    rows = _new_rows()
    by = {(r["instance"], r["pricing_model"]): r["usd_per_gpu_hour"] for r in rows}
    # skypilot-catalog runpod/vms.csv @46062acb: 8x_RTX3090_SECURE Price 3.68, SpotPrice 1.76
    assert by[("8x_RTX3090_SECURE", "on_demand")] == pytest.approx(3.68 / 8)
    assert by[("8x_RTX3090_SECURE", "spot")] == pytest.approx(1.76 / 8)
    # 4x_RTXPRO6000_SECURE Price 7.36; 4x_NVIDIA-H200-NVL_SECURE Price 13.56 and no spot
    assert by[("4x_RTXPRO6000_SECURE", "on_demand")] == pytest.approx(7.36 / 4)
    assert by[("4x_NVIDIA-H200-NVL_SECURE", "on_demand")] == pytest.approx(13.56 / 4)
    assert ("4x_NVIDIA-H200-NVL_SECURE", "spot") not in by
    # RunPod Secure Cloud is the provider's own list price: on_demand, never marketplace
    runpod = [r for r in rows if r["provider"] == "runpod"]
    assert {r["pricing_model"] for r in runpod} == {"on_demand", "spot"}
    assert all(r["tier"] == "secure" for r in runpod)
