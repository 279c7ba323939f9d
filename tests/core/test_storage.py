"""Dataset sizes, object-store requests, checkpoint write times and storage cost lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.catalog.records import StorageTier
from core.planner.money.storage import (
    GbMonthPrice,
    checkpoint_write_seconds,
    data_stall_warning,
    dataset_bytes,
    object_request_counts,
    read_bytes_per_s_needed,
    request_cost,
    storage_cost,
    tier_figures,
    tier_read_bytes_per_s,
)

TIERS_JSON = Path(__file__).resolve().parents[2] / "resources" / "catalog" / "storage_tiers.json"


# --------------------------------------------------------------------------- catalog


def test_catalog_has_every_tier_with_source_and_date_on_each_figure():
    raw = json.loads(TIERS_JSON.read_text(encoding="utf-8"))
    assert set(raw["tiers"]) == {t.value for t in StorageTier}
    for name, tier in raw["tiers"].items():
        for key, fig in tier.items():
            if isinstance(fig, dict):
                assert fig["source"], f"{name}.{key} has no source"
                assert fig["date"], f"{name}.{key} has no date"
                assert fig["value"] > 0, f"{name}.{key} is not positive"


def test_local_nvme_figures_are_the_stas00_measurements():
    # PROBES.md §2.2: Samsung 980 PRO seq read 2.76 GB/s, write 1.94 GB/s; open() 11 us.
    spec = tier_figures("local_nvme")
    assert spec.read_bytes_per_s == pytest.approx(2.76e9)
    assert spec.write_bytes_per_s == pytest.approx(1.94e9)
    assert spec.per_file_latency_s.value == pytest.approx(11e-6)


def test_unknown_tier_lists_allowed_values():
    with pytest.raises(ValueError, match="local_nvme, parallel_fs, block, nfs, object"):
        tier_figures("tape")


# --------------------------------------------------------------------------- dataset


def test_dataset_bytes_uint32_for_llama3_vocab():
    # 2e8 tokens x 4 raw bytes = 8e8; vocab 128,256 > 65,536 -> uint32 ids -> 8e8 bytes.
    assert dataset_bytes(2e8, 4.0, 128_256) == (800_000_000, 800_000_000)


def test_dataset_bytes_uint16_for_small_vocab():
    assert dataset_bytes(2e8, 4.0, 32_000) == (800_000_000, 400_000_000)


@pytest.mark.parametrize(("vocab", "tokenized"), [(65_536, 2_000), (65_537, 4_000)])
def test_uint16_boundary(vocab, tokenized):
    assert dataset_bytes(1_000, 1.0, vocab)[1] == tokenized


def test_read_rate_needed_scalar_and_array():
    assert read_bytes_per_s_needed(1e5, 32_000) == pytest.approx(2e5)
    out = read_bytes_per_s_needed(np.array([1e5, 2e5]), 151_936)
    assert out.tolist() == pytest.approx([4e5, 8e5])


def test_nfs_read_is_a_shared_total():
    # Filestore: 260 MiB/s per TiB (0.273 GB/s) for the whole share, however many nodes read.
    assert tier_read_bytes_per_s("nfs", 4) == pytest.approx(0.273e9)
    assert tier_read_bytes_per_s("local_nvme", 4) == pytest.approx(4 * 2.76e9)


# --------------------------------------------------------------------------- object requests


def test_object_request_counts_default_file_size_and_8mib_parts():
    # raw 2e9 B / 50 KB typical file = 40,000 files, read twice -> 80,000 GETs.
    # tokenized 1e9 B in 256 MB shards: 3 full + one of 232 MB.
    # GETs per shard: 256e6 / 8 MiB = 30.5 -> 31; 232e6 / 8 MiB = 27.7 -> 28; per epoch 3*31 + 28 =
    # 121.
    counts = object_request_counts(1e9, 2, raw_bytes=2e9)
    assert counts.file_count == 40_000
    assert counts.shard_count == 4
    assert counts.unpacked_gets == 80_000
    assert counts.packed_gets == 242
    # Uploads: one PUT per file; multipart per shard = create + parts + complete: 3*(31+2) + (28+2)
    # = 129.
    assert counts.unpacked_puts == 40_000
    assert counts.packed_puts == 129


def test_object_request_counts_given_file_count_and_small_shards():
    counts = object_request_counts(4e6, 3, file_count=1_000, shard_bytes=1e6)
    assert counts.unpacked_gets == 3_000
    assert counts.shard_count == 4
    assert counts.packed_gets == 12  # 1 MB shards are below the 8 MiB part size: one GET each


def test_object_request_counts_needs_file_count_or_raw_bytes():
    with pytest.raises(ValueError, match="file_count or raw_bytes"):
        object_request_counts(1e9, 1)


def test_request_cost_s3_get_price():
    # S3 Standard GET $0.0004 per 1,000 -> 1e6 GETs = $0.40.
    assert request_cost(1_000_000, 0.0004) == pytest.approx(0.40)
    assert request_cost(1_000_000, None) is None


# --------------------------------------------------------------------------- checkpoint writes


def test_checkpoint_write_local_nvme():
    # 97 GB at 1.94 GB/s = 50 s.
    assert checkpoint_write_seconds(97e9, StorageTier.local_nvme) == pytest.approx(50.0)


def test_checkpoint_write_scales_with_writers_on_parallel_fs():
    # 1 GB/s per node x 4 nodes: 4e9 B in 1 s.
    assert checkpoint_write_seconds(4e9, "parallel_fs", writers=4) == pytest.approx(1.0)


def test_checkpoint_write_nfs_is_capped_by_the_share():
    # Filestore write 88 MiB/s per TiB = 0.0923 GB/s in total: 9.23 GB takes 100 s with 1 or 4
    # writers.
    assert checkpoint_write_seconds(9.23e9, "nfs", writers=1) == pytest.approx(100.0)
    assert checkpoint_write_seconds(9.23e9, "nfs", writers=4) == pytest.approx(100.0)


def test_checkpoint_write_vectorised_and_override():
    out = checkpoint_write_seconds(np.array([1.94e9, 3.88e9]), "local_nvme")
    assert out.tolist() == pytest.approx([1.0, 2.0])
    assert checkpoint_write_seconds(
        5e9, "object", write_bytes_per_s_per_node=2.5e9
    ) == pytest.approx(2.0)


def test_checkpoint_write_rejects_zero_writers():
    with pytest.raises(ValueError, match="writers"):
        checkpoint_write_seconds(1e9, "object", writers=0)


# --------------------------------------------------------------------------- cost lines


def test_storage_cost_lines_hand_values():
    lines = storage_cost(
        dataset_bytes=100e9,
        data_tier="object",
        data_price=GbMonthPrice(0.023, "https://aws.amazon.com/s3/pricing/", "2026-01-01"),
        checkpoint_bytes=50e9,
        checkpoints_kept=2,
        checkpoint_tier="parallel_fs",
        checkpoint_price=0.145,
        archive_final=True,
        object_price=0.023,
        months=2,
        get_requests=1_000_000,
        get_usd_per_1000=0.0004,
    )
    by_item = {line.item: line for line in lines}
    # 100 GB x 0.023 x 2 = 4.60; 2 x 50 GB x 0.145 x 2 = 29.00; 50 GB x 0.023 x 2 = 2.30; 1e6 GET =
    # 0.40
    assert by_item["Dataset storage"].usd == pytest.approx(4.60)
    assert by_item["Dataset storage"].source == "https://aws.amazon.com/s3/pricing/"
    assert by_item["Dataset storage"].date == "2026-01-01"
    assert by_item["Hot checkpoints"].usd == pytest.approx(29.00)
    assert by_item["Final checkpoint archive"].usd == pytest.approx(2.30)
    assert by_item["Object GET requests"].usd == pytest.approx(0.40)
    assert "Object PUT requests" not in by_item


def test_storage_cost_local_nvme_is_free_and_missing_price_is_none():
    lines = storage_cost(
        dataset_bytes=1e9,
        data_tier="block",
        data_price=None,
        checkpoint_bytes=1e9,
        checkpoints_kept=3,
        checkpoint_tier="local_nvme",
        checkpoint_price=None,
        archive_final=False,
        object_price=None,
        months=1,
    )
    by_item = {line.item: line for line in lines}
    assert by_item["Dataset storage"].usd is None
    assert "no price" in by_item["Dataset storage"].detail
    assert by_item["Hot checkpoints"].usd == 0.0
    assert "Final checkpoint archive" not in by_item


# --------------------------------------------------------------------------- stall warnings


def test_no_warning_for_packed_text_on_object_storage():
    # 100k tokens/s x 2 bytes = 200 KB/s: far below 1 GB/s.
    assert data_stall_warning(2e5, "object", unpacked=False) is None


def test_bandwidth_warning_when_tier_too_slow():
    message = data_stall_warning(5e9, "object", unpacked=False)
    assert message is not None and "stall" in message


def test_nfs_shared_by_nodes_warns():
    # 0.5 GB/s across 4 nodes exceeds the 0.273 GB/s share.
    assert data_stall_warning(0.5e9, "nfs", unpacked=False, nodes=4) is not None


def test_small_files_on_object_storage_warn_but_local_nvme_does_not():
    # 1e7 B/s / 50 KB = 200 files/s; 8 readers / 0.1 s = 80 files/s per node on object storage.
    message = data_stall_warning(1e7, "object", unpacked=True)
    assert message is not None and "small files" in message
    assert data_stall_warning(1e7, "local_nvme", unpacked=True) is None


def test_prefix_rate_limit_warning():
    # 100 nodes x 80 files/s = 8,000 files/s of latency capacity, but 6,000 GET/s > 5,500 per
    # prefix.
    message = data_stall_warning(6_000 * 50e3, "object", unpacked=True, nodes=100)
    assert message is not None and "prefix" in message
