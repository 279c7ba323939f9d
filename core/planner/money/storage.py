"""Dataset and checkpoint storage: sizes, throughput, object-store requests and what they cost.

Pure functions over the tier figures in resources/catalog/storage_tiers.json (each with a source and
a date, read by core.planner.money.storage_tiers). Prices come from the caller (the catalog, or the
user's overrides) as plain floats or any object with ``usd_per_gb_month``, ``source`` and ``date``,
so this module never depends on the catalog loader. Throughput functions take floats or NumPy
arrays, for the vectorised hardware search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, overload

import numpy as np
from numpy.typing import NDArray

from core.catalog.records import StorageTier
from core.planner.money.storage_tiers import GB, default_figure, tier_figures, tier_name
from core.planner.result import CostLine
from core.units import fmt_bytes

FloatArray = NDArray[np.float64]
Num = float | FloatArray

UINT16_VOCAB_LIMIT = 65_536  # token ids 0..65,535 fit in two bytes


def _arr(value: Any, name: str, *, positive: bool = False) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if np.any(~np.isfinite(arr)):
        raise ValueError(f"{name} must be a finite number")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be greater than 0")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be 0 or more")
    return arr


def _out(arr: Any) -> Num:
    result = np.asarray(arr, dtype=np.float64)
    return float(result) if result.ndim == 0 else result


# --------------------------------------------------------------------------- dataset


def token_id_bytes(vocab_size: int) -> int:
    """Bytes per stored token id: uint16 when every id fits (vocab <= 65,536), else uint32."""
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be at least 1 (got {vocab_size})")
    return 2 if vocab_size <= UINT16_VOCAB_LIMIT else 4


def dataset_bytes(tokens: float, bytes_per_token_raw: float, vocab_size: int) -> tuple[int, int]:
    """(raw text bytes, tokenized bytes) of one copy of the dataset."""
    if tokens < 0 or not math.isfinite(tokens):
        raise ValueError(f"tokens must be a finite number, 0 or more (got {tokens})")
    if bytes_per_token_raw <= 0:
        raise ValueError(f"bytes_per_token_raw must be greater than 0 (got {bytes_per_token_raw})")
    return round(tokens * bytes_per_token_raw), round(tokens * token_id_bytes(vocab_size))


@overload
def read_bytes_per_s_needed(tokens_per_s: float, vocab_size: int) -> float: ...  # type: ignore[overload-overlap]
@overload
def read_bytes_per_s_needed(tokens_per_s: Num, vocab_size: int) -> FloatArray: ...
def read_bytes_per_s_needed(tokens_per_s: Num, vocab_size: int) -> Num:
    """Tokenized bytes the whole job must read per second to keep the GPUs busy."""
    return _out(_arr(tokens_per_s, "tokens_per_s") * token_id_bytes(vocab_size))


@overload
def tier_read_bytes_per_s(
    tier: StorageTier | str, nodes: float = 1, read_bytes_per_s_per_node: float | None = None
) -> float: ...
@overload
def tier_read_bytes_per_s(
    tier: StorageTier | str, nodes: Num = 1, read_bytes_per_s_per_node: float | None = None
) -> FloatArray: ...
def tier_read_bytes_per_s(
    tier: StorageTier | str, nodes: Num = 1, read_bytes_per_s_per_node: float | None = None
) -> Num:
    """What the tier gives the whole job: per node x nodes, capped by a shared server's total.

    ``read_bytes_per_s_per_node`` replaces the catalog figure (e.g. with a fio probe's measurement).
    """
    spec = tier_figures(tier)
    per_node = (
        spec.read_bytes_per_s if read_bytes_per_s_per_node is None else read_bytes_per_s_per_node
    )
    total = _arr(per_node, "read_bytes_per_s_per_node", positive=True) * _arr(
        nodes, "nodes", positive=True
    )
    if spec.aggregate_read_gb_s is not None:
        total = np.minimum(total, spec.aggregate_read_gb_s.value * GB)
    return _out(total)


class ObjectRequests(NamedTuple):
    """Object-store requests to read (GET) and upload (PUT-class) the dataset, unpacked vs
    packed."""

    file_count: int
    shard_count: int
    unpacked_gets: int
    packed_gets: int
    unpacked_puts: int
    packed_puts: int


def _requests_per_object(size: float, part: float) -> int:
    """Ranged GETs (or upload parts) for one object: one when it is not above the multipart
    threshold."""
    return 1 if size <= part else math.ceil(size / part)


def object_request_counts(
    tokenized_bytes: float,
    epochs: float,
    file_count: int | None = None,
    shard_bytes: float = 256e6,
    raw_bytes: float | None = None,
    part_bytes: float | None = None,
) -> ObjectRequests:
    """Requests for many small files vs packed shards.

    Unpacked: the raw files are read once per epoch, one GET each; without ``file_count`` the raw
    bytes are assumed split into typical ~50 KB document files (catalog default
    ``typical_file_bytes``). Packed: tokenized shards of ``shard_bytes``, each fetched as ranged
    GETs of ``part_bytes`` (boto3's 8 MiB multipart_chunksize default) once per epoch. Uploads are
    counted once: one PUT per small file; a shard above the part size is a multipart upload (create
    + parts + complete, all PUT-class requests).
    """
    if epochs <= 0:
        raise ValueError(f"epochs must be greater than 0 (got {epochs})")
    if shard_bytes <= 0:
        raise ValueError(f"shard_bytes must be greater than 0 (got {shard_bytes})")
    if tokenized_bytes < 0:
        raise ValueError(f"tokenized_bytes must be 0 or more (got {tokenized_bytes})")
    part = default_figure("ranged_get_bytes").value if part_bytes is None else part_bytes
    if part <= 0:
        raise ValueError(f"part_bytes must be greater than 0 (got {part_bytes})")
    if file_count is None:
        if raw_bytes is None:
            raise ValueError("object_request_counts needs file_count or raw_bytes")
        file_count = max(1, math.ceil(raw_bytes / default_figure("typical_file_bytes").value))
    if file_count < 1:
        raise ValueError(f"file_count must be at least 1 (got {file_count})")

    full, rest = divmod(tokenized_bytes, shard_bytes)
    shard_count = int(full) + (1 if rest > 0 else 0)
    gets_per_epoch = int(full) * _requests_per_object(shard_bytes, part)
    puts = int(full) * _multipart_puts(shard_bytes, part)
    if rest > 0:
        gets_per_epoch += _requests_per_object(rest, part)
        puts += _multipart_puts(rest, part)
    return ObjectRequests(
        file_count=file_count,
        shard_count=shard_count,
        unpacked_gets=math.ceil(file_count * epochs),
        packed_gets=math.ceil(gets_per_epoch * epochs),
        unpacked_puts=file_count,
        packed_puts=puts,
    )


def _multipart_puts(size: float, part: float) -> int:
    return 1 if size <= part else math.ceil(size / part) + 2


def request_cost(requests: float, usd_per_1000: float | None) -> float | None:
    """Request charges: requests / 1000 x price (None when no price is known)."""
    if requests < 0:
        raise ValueError(f"requests must be 0 or more (got {requests})")
    if usd_per_1000 is None:
        return None
    if usd_per_1000 < 0:
        raise ValueError(f"usd_per_1000 must be 0 or more (got {usd_per_1000})")
    return requests / 1000.0 * usd_per_1000


# --------------------------------------------------------------------------- checkpoints


@overload
def checkpoint_write_seconds(  # type: ignore[overload-overlap]
    size_bytes: float,
    tier: StorageTier | str,
    writers: float = 1,
    write_bytes_per_s_per_node: float | None = None,
) -> float: ...
@overload
def checkpoint_write_seconds(
    size_bytes: Num,
    tier: StorageTier | str,
    writers: Num = 1,
    write_bytes_per_s_per_node: float | None = None,
) -> FloatArray: ...
def checkpoint_write_seconds(
    size_bytes: Num,
    tier: StorageTier | str,
    writers: Num = 1,
    write_bytes_per_s_per_node: float | None = None,
) -> Num:
    """Seconds to write one checkpoint: size / (per-node write bandwidth x writing nodes).

    A sharded checkpoint (FSDP/ZeRO) is written by every node at once, so bandwidth adds up across
    nodes, up to a shared server's total (NFS). ``write_bytes_per_s_per_node`` replaces the catalog
    figure.
    """
    spec = tier_figures(tier)
    per_node = (
        spec.write_bytes_per_s if write_bytes_per_s_per_node is None else write_bytes_per_s_per_node
    )
    bandwidth = _arr(per_node, "write_bytes_per_s_per_node", positive=True) * _arr(
        writers, "writers", positive=True
    )
    if spec.aggregate_write_gb_s is not None:
        bandwidth = np.minimum(bandwidth, spec.aggregate_write_gb_s.value * GB)
    return _out(_arr(size_bytes, "size_bytes") / bandwidth)


# --------------------------------------------------------------------------- cost


class GbMonthPriced(Protocol):
    """Anything priced per GB-month with provenance (the catalog's StoragePrice fits)."""

    @property
    def usd_per_gb_month(self) -> float | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def date(self) -> str | None: ...


@dataclass(frozen=True)
class GbMonthPrice:
    """A storage price with provenance, for callers that do not hold a catalog object."""

    usd_per_gb_month: float | None
    source: str | None = None
    date: str | None = None


PriceIn = GbMonthPriced | float | None


def _price(price: PriceIn) -> GbMonthPriced:
    if price is None or isinstance(price, int | float):
        return GbMonthPrice(None if price is None else float(price))
    return price


def _months(months: float) -> str:
    return f"{months:g} month" + ("" if months == 1 else "s")


def _stored_line(
    item: str, size_bytes: float, tier: StorageTier, price: PriceIn, months: float
) -> CostLine:
    spec = tier_figures(tier)
    if tier is StorageTier.local_nvme:
        return CostLine(
            item=item,
            usd=0.0,
            detail=f"{fmt_bytes(size_bytes)} on {spec.title}: {spec.billing}",
        )
    priced = _price(price)
    usd_gb = priced.usd_per_gb_month
    if usd_gb is None:
        return CostLine.cited(
            item,
            None,
            f"{fmt_bytes(size_bytes)} on {spec.title}: no price known (set one to include it)",
            priced,
        )
    if usd_gb < 0:
        raise ValueError(f"usd_per_gb_month for {tier.value} must be 0 or more (got {usd_gb})")
    usd = size_bytes / GB * usd_gb * months
    return CostLine.cited(
        item,
        usd,
        f"{fmt_bytes(size_bytes)} on {spec.title} x ${usd_gb:g}/GB-month x {_months(months)}",
        priced,
    )


def storage_cost(
    *,
    dataset_bytes: float,
    data_tier: StorageTier | str,
    data_price: PriceIn,
    checkpoint_bytes: float,
    checkpoints_kept: int,
    checkpoint_tier: StorageTier | str,
    checkpoint_price: PriceIn,
    archive_final: bool,
    object_price: PriceIn,
    months: float,
    get_requests: int = 0,
    get_usd_per_1000: float | None = None,
    put_requests: int = 0,
    put_usd_per_1000: float | None = None,
    request_source: str | None = None,
    request_date: str | None = None,
) -> list[CostLine]:
    """Cost lines for the dataset copy, the hot checkpoints, the final archive and object requests.

    Storage is billed per GB-month for ``months``; local NVMe is part of the instance price (USD 0
    here). A line with ``usd=None`` means no price was known, so the caller can say so instead of
    showing 0.
    """
    for name, value in (
        ("dataset_bytes", dataset_bytes),
        ("checkpoint_bytes", checkpoint_bytes),
        ("months", months),
    ):
        if value < 0 or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, 0 or more (got {value})")
    if checkpoints_kept < 0:
        raise ValueError(f"checkpoints_kept must be 0 or more (got {checkpoints_kept})")
    data_t, ckpt_t = tier_name(data_tier), tier_name(checkpoint_tier)

    lines = [_stored_line("Dataset storage", dataset_bytes, data_t, data_price, months)]
    if checkpoints_kept > 0:
        line = _stored_line(
            "Hot checkpoints", checkpoint_bytes * checkpoints_kept, ckpt_t, checkpoint_price, months
        )
        line.detail = f"{checkpoints_kept} x {fmt_bytes(checkpoint_bytes)} kept; " + line.detail
        lines.append(line)
    if archive_final:
        archive = _stored_line(
            "Final checkpoint archive", checkpoint_bytes, StorageTier.object, object_price, months
        )
        lines.append(archive)
    for item, count, price in (
        ("Object GET requests", get_requests, get_usd_per_1000),
        ("Object PUT requests", put_requests, put_usd_per_1000),
    ):
        if count > 0:
            usd = request_cost(count, price)
            rate = f" x ${price:g}/1,000" if price is not None else ": no price known"
            lines.append(
                CostLine(
                    item=item,
                    usd=usd,
                    detail=f"{count:,} requests{rate}",
                    source=request_source,
                    date=request_date,
                )
            )
    return lines


# --------------------------------------------------------------------------- warnings


def data_stall_warning(
    needed_bytes_per_s: float,
    tier: StorageTier | str,
    unpacked: bool,
    *,
    nodes: int = 1,
    file_bytes: float | None = None,
    readers_per_node: int | None = None,
    read_bytes_per_s_per_node: float | None = None,
) -> str | None:
    """One sentence when the tier cannot feed the GPUs, or when per-file latency of many small files
    will.

    Bandwidth: the job's need vs the tier's total (per node x nodes, capped by a shared server).
    Small files (unpacked): each file costs one request of ``per_file_latency_s``;
    ``readers_per_node`` parallel readers fetch at most readers / latency files per second per node.
    Object stores also limit GETs per second per key prefix.
    """
    if needed_bytes_per_s < 0:
        raise ValueError(f"needed_bytes_per_s must be 0 or more (got {needed_bytes_per_s})")
    if nodes < 1:
        raise ValueError(f"nodes must be at least 1 (got {nodes})")
    tier_t = tier_name(tier)
    spec = tier_figures(tier_t)
    available = tier_read_bytes_per_s(tier_t, nodes, read_bytes_per_s_per_node)
    if needed_bytes_per_s > available:
        return (
            f"The GPUs need {fmt_bytes(needed_bytes_per_s)}/s of data but {spec.title} gives about "
            f"{fmt_bytes(available)}/s here, so training will stall on reads: stage the dataset "
            "on local NVMe or a faster tier."
        )
    if not unpacked:
        return None
    size = default_figure("typical_file_bytes").value if file_bytes is None else file_bytes
    readers = (
        int(default_figure("readers_per_node").value)
        if readers_per_node is None
        else readers_per_node
    )
    if size <= 0 or readers < 1:
        raise ValueError("file_bytes must be greater than 0 and readers_per_node at least 1")
    latency = spec.per_file_latency_s.value
    files_per_s = needed_bytes_per_s / size
    capacity = readers / latency * nodes
    if files_per_s > capacity:
        return (
            f"Reading {files_per_s:,.0f} small files per second from {spec.title} at about "
            f"{latency * 1000:g} ms each needs more than {readers} parallel readers per node: "
            "pack the dataset into large shards or copy it to local NVMe first."
        )
    if spec.get_per_s_per_prefix is not None and files_per_s > spec.get_per_s_per_prefix.value:
        return (
            f"Reading {files_per_s:,.0f} small files per second exceeds the "
            f"~{spec.get_per_s_per_prefix.value:,.0f} GET/s one object-store prefix serves: "
            "spread the files over prefixes or pack them into shards."
        )
    return None
