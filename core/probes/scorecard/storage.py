"""Can storage feed the job? Sequential read, random-read latency, small files and free capacity per
probed path.

Sequential read is graded against the plan's read need per node when one is given, else against a
local NVMe drive (never failing, since the need is unknown); network and object storage are named as
such because small-file access on them is the usual slowdown. Capacity is graded because checkpoints
need room. Each check is named after the role and the path it measured; ``check_key`` drops the
path, so runs compare by role.
"""

from __future__ import annotations

import re
from typing import Literal

from core.probes.evidence import Check, StorageResult
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import (
    FAIL,
    INFO,
    NOT_MEASURED,
    PASS,
    WARN,
    Box,
    cap,
    check,
    grade,
)
from core.units import parse_bytes


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB/s"


def _fs_kind(fs: str | None) -> Literal["local", "network", "object", "unknown"]:
    if not fs:
        return "unknown"
    low = fs.lower()
    if low.startswith("fuse") and any(k in low for k in T.OBJECT_FILESYSTEMS):
        return "object"
    if any(k in low for k in T.NETWORK_FILESYSTEMS):
        return "network"
    return "local"


def _fs_size(box: Box, path: str) -> int | None:
    inv = box.e.inventory
    best: tuple[int, int] | None = None
    for fs in inv.filesystems if inv else []:
        mount = fs.get("mount") or ""
        if mount and (path == mount or path.startswith(mount.rstrip("/") + "/")):
            try:
                size = parse_bytes(fs.get("size") or "")
            except ValueError:
                continue
            if best is None or len(mount) > best[0]:
                best = (len(mount), size)
    return best[1] if best else None


# A storage check's name ends with the role and the path it measured: 'Sequential read, data
# (/data)'.
_ROLE_AND_PATH = re.compile(r"^(?P<name>.*\b(?:data|checkpoint|scratch)) \((?P<path>.*)\)$")


def check_key(c: Check) -> tuple[str, str]:
    """What a check is, whichever run it comes from: (area, name), with a storage check's path left
    out, so that two runs' checks of the same role line up although the scratch directory has a new
    random name each run."""
    match = _ROLE_AND_PATH.match(c.name) if c.area == "storage" else None
    return c.area, match.group("name") if match else c.name


def check_path(c: Check) -> str | None:
    """The path a storage check measured ('/data' of 'Sequential read, data (/data)'); None for
    other checks."""
    match = _ROLE_AND_PATH.match(c.name) if c.area == "storage" else None
    return match.group("path") if match else None


def check_storage(box: Box, need: float | None) -> list[Check]:
    out: list[Check] = []
    for s in box.e.storage:
        label = f"{s.role} ({s.path})"
        if s.skipped_reason:
            # WARN, not INFO: the user named this path (or the run's scratch directory stood in for
            # one) and it was not measured, so the card must not read READY as if storage had been
            # seen to work.
            out.append(
                check(
                    "storage",
                    f"Storage {label}",
                    WARN,
                    NOT_MEASURED,
                    "a storage measurement",
                    T.STORAGE_SOURCE,
                    f"storage at {s.path} was not measured: {s.skipped_reason}",
                )
            )
            continue
        kind = _fs_kind(s.filesystem)
        planned = (
            (f"Sequential read, {label}", "sequential read", _seq_read(s, label, kind, need)),
            (f"Random-read latency, {label}", "random read", _p99(s, label, kind)),
            (f"Random-read IOPS, {label}", "random read", _rand_iops(s, label)),
            (f"Small files, {label}", "small files", _small_files(s, label, kind)),
        )
        out += [
            found or _failed_step(s, name, step)
            for name, step, found in planned
            if found or step in s.step_failures
        ]
        # graded only where the inventory gave the filesystem's size
        capacity = _capacity(box, s, label)
        out += [capacity] if capacity else []
    return out


def _failed_step(s: StorageResult, name: str, step: str) -> Check:
    """The check of a step that ran and gave no figure (a disk that filled up): a FAIL "not
    measured", never left off the card, which would then read READY on the steps that worked. (A
    step the tool at hand cannot take, such as random reads under dd, is not planned and has no
    line.)"""
    return check(
        "storage",
        name,
        FAIL,
        NOT_MEASURED,
        f"the {step} test to finish",
        T.STORAGE_SOURCE,
        f"the {step} test failed at {s.path}: {s.step_failures[step]}",
    )


def _seq_read(s: StorageResult, label: str, kind: str, need: float | None) -> Check | None:
    value = s.seq_read_bytes_per_s
    if value is None:
        return None
    name = f"Sequential read, {label}"
    measured = f"{_gb(value)} ({s.tool}, {s.filesystem or 'filesystem unknown'})"
    if need is not None and need > 0:
        status = grade(value / need, T.SEQ_READ_BAND)
        return check(
            "storage",
            name,
            status,
            measured,
            f"≥ {_gb(need)} (the plan's read need per node)",
            T.STORAGE_SOURCE,
            f"{value / need:.1f}× the job's read need",
        )
    if kind in ("local", "unknown"):
        ref = T.LOCAL_SEQ_READ_BYTES_PER_S
        status = cap(grade(value / ref, T.SEQ_READ_BAND), WARN)
        reason = (
            "as fast as a local NVMe drive"
            if status is PASS
            else f"{value / ref:.0%} of a local Gen4 NVMe drive; give the job's read need to "
            "grade it"
        )
        return check(
            "storage",
            name,
            status,
            measured,
            f"≥ {_gb(ref)} (local NVMe, per Gen4 drive)",
            T.STORAGE_SOURCE,
            reason,
        )
    return check(
        "storage",
        name,
        INFO,
        measured,
        "≥ 90 % of the provisioned tier figure",
        T.STORAGE_SOURCE,
        f"{kind} storage: compare with the provisioned throughput, or give the job's read need",
    )


def _p99(s: StorageResult, label: str, kind: str) -> Check | None:
    """One read at a time (queue depth 1): how long a data loader's single read waits."""
    value = s.rand_read_p99_ms
    if value is None:
        return None
    measured = f"p99 {value:.2f} ms, 4 KiB reads at queue depth 1"
    expected = (
        f"< {T.P99_PASS_MS:g} ms (local NVMe < 0.2 ms); warn to {T.P99_FAIL_MS:g} ms, fail above"
    )
    status = PASS if value < T.P99_PASS_MS else WARN if value <= T.P99_FAIL_MS else FAIL
    reason = (
        "random reads are fast"
        if status is PASS
        else f"4 KiB random-read p99 latency is {value:.1f} ms at queue depth 1"
    )
    return check(
        "storage",
        f"Random-read latency, {label}",
        status,
        measured,
        expected,
        T.STORAGE_SOURCE,
        reason,
    )


def _rand_iops(s: StorageResult, label: str) -> Check | None:
    """Many reads in flight (queue depth 32 with fio; one at a time with the Python fallback): how
    many small reads per second the path sustains, graded against a baseline network block
    volume."""
    value = s.rand_read_iops
    # 0: the job was cut short before a read completed (a dropped connection)
    if not value or value < 0:
        return None
    depth = 32 if s.tool == "fio" else 1
    measured = f"{value:,.0f} IOPS, 4 KiB reads at queue depth {depth}"
    expected = (
        f"≥ {T.RAND_IOPS_PASS:,.0f} IOPS (a network block volume's baseline); fail below "
        f"{T.RAND_IOPS_FAIL:,.0f}"
    )
    status = PASS if value >= T.RAND_IOPS_PASS else WARN if value >= T.RAND_IOPS_FAIL else FAIL
    reason = (
        "random reads keep up"
        if status is PASS
        else f"{value:,.0f} random 4 KiB reads/s at queue depth {depth}, "
        f"{value / T.RAND_IOPS_PASS:.0%} of a baseline network block volume"
    )
    return check(
        "storage",
        f"Random-read IOPS, {label}",
        status,
        measured,
        expected,
        T.RAND_IOPS_SOURCE,
        reason,
    )


def _small_files(s: StorageResult, label: str, kind: str) -> Check | None:
    ops = s.small_file_ops_per_s
    name = f"Small files, {label}"
    if kind == "object" and s.role == "data":
        measured = f"{ops:,.0f} files/s" if ops else "object storage mount"
        return check(
            "storage",
            name,
            WARN,
            measured,
            "packed shards on object storage",
            T.STORAGE_SOURCE,
            "many small files on object storage are slow and billed per request: pack them into "
            "shards",
        )
    if not ops:
        return None
    ms = 1000.0 / ops
    measured = f"{ops:,.0f} small-file operations/s ({ms:.2f} ms each)"
    expected = (
        f"≤ {T.SMALL_FILE_PASS_MS:g} ms per operation (fail above {T.SMALL_FILE_FAIL_MS:g} ms)"
    )
    status = PASS if ms <= T.SMALL_FILE_PASS_MS else WARN if ms <= T.SMALL_FILE_FAIL_MS else FAIL
    if status is PASS:
        reason = "small-file metadata is fast"
    elif kind == "network":
        reason = (
            f"{ms:.1f} ms per small-file operation on network storage: pack the dataset into shards"
        )
    else:
        reason = f"{ms:.1f} ms per small-file operation"
    return check("storage", name, status, measured, expected, T.STORAGE_SOURCE, reason)


def _capacity(box: Box, s: StorageResult, label: str) -> Check | None:
    size = _fs_size(box, s.path)
    if s.free_bytes is None or not size:
        return None
    used = max(0.0, 1.0 - s.free_bytes / size)
    status = PASS if used < T.CAPACITY_WARN_USED else WARN if used < T.CAPACITY_FAIL_USED else FAIL
    measured = f"{used:.0%} used ({s.free_bytes / 1e9:,.0f} GB free of {size / 1e9:,.0f} GB)"
    expected = f"< {T.CAPACITY_WARN_USED:.0%} used (fail from {T.CAPACITY_FAIL_USED:.0%})"
    reason = "room to write checkpoints" if status is PASS else f"the filesystem is {used:.0%} full"
    return check(
        "storage", f"Free capacity, {label}", status, measured, expected, T.CAPACITY_SOURCE, reason
    )
