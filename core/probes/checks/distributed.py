"""Distributed environment: torchrun gives every rank a consistent
RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR, an all_reduce of known tensors sums exactly, and which
network interfaces NCCL/gloo were told to use.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.probes.checks.base import ProbeContext, short_error
from core.probes.checks.torchrun import plan_launch, torchrun_command
from core.probes.evidence import DistributedResult

_MARK = re.compile(r"TUNEPLAN_(RANK|DIST) ")


def parse_sanity(text: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(per-rank records, rank 0's summary) from ``dist_sanity.py`` output; tolerant of other
    lines."""
    ranks: list[dict[str, Any]] = []
    summary: dict[str, Any] | None = None
    decoder = json.JSONDecoder()
    for line in text.splitlines():
        for match in _MARK.finditer(line):
            try:
                value, _ = decoder.raw_decode(line[match.end() :])
            except ValueError:
                continue
            if not isinstance(value, dict):
                continue
            if match.group(1) == "RANK":
                ranks.append(value)
            else:
                summary = value
    ranks.sort(key=lambda r: r.get("rank", 0) if isinstance(r.get("rank"), int) else 0)
    return ranks, summary


def _env(record: dict[str, Any]) -> dict[str, Any]:
    env = record.get("env")
    return env if isinstance(env, dict) else {}


def consistency_problems(ranks: list[dict[str, Any]], world: int) -> list[str]:
    """Why the ranks' environments disagree (empty when they agree and ranks 0..n-1 are each seen
    once)."""
    problems = []
    seen = sorted(int(r["rank"]) for r in ranks if isinstance(r.get("rank"), int))
    if seen != list(range(world)):
        problems.append(f"ranks seen {seen}, expected 0..{world - 1} once each")
    for key in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        values = {str(_env(r).get(key)) for r in ranks}
        if len(values) > 1:
            problems.append(f"{key} differs between ranks: {sorted(values)}")
    for record in ranks:
        env = _env(record)
        if str(env.get("RANK")) != str(record.get("rank")):
            problems.append(f"rank {record.get('rank')} has RANK={env.get('RANK')}")
        if str(env.get("WORLD_SIZE")) != str(world):
            problems.append(
                f"rank {record.get('rank')} has WORLD_SIZE={env.get('WORLD_SIZE')}, expected "
                f"{world}"
            )
    return problems


def rank_row(record: dict[str, Any]) -> dict[str, str]:
    """One rank's line of the check: what torchrun told it, where it ran, its interfaces and its
    sum."""
    env = _env(record)
    row = {
        key: str(env.get(key))
        for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    }
    row.update(
        {
            "host": str(record.get("host")),
            "device": str(record.get("device")),
            "GLOO_SOCKET_IFNAME": str(env.get("GLOO_SOCKET_IFNAME") or ""),
            "NCCL_SOCKET_IFNAME": str(env.get("NCCL_SOCKET_IFNAME") or ""),
            "sum": str(record.get("sum_first")),
            "expected": str(record.get("expected")),
        }
    )
    return row


def run(ctx: ProbeContext) -> None:
    launch = plan_launch(ctx, what="torch.distributed check")
    script = ctx.upload("dist_sanity.py")
    timeout_s = max(30, int(ctx.options.timeouts.distributed_s) - 30)
    command = torchrun_command(
        ctx, launch, script, ["--backend", launch.backend, "--timeout", str(timeout_s)]
    )
    result = ctx.run(command, timeout=ctx.options.timeouts.distributed_s)
    ranks, summary = parse_sanity(result.stdout)
    world = (
        int(summary["world_size"])
        if summary and isinstance(summary.get("world_size"), int)
        else launch.nproc
    )
    problems = consistency_problems(ranks, world)
    error = None
    if summary is None:
        error = f"torchrun did not finish the check: {short_error(result)}"
    elif problems:
        error = "; ".join(problems)
    all_ok = bool(summary and summary.get("all_reduce_ok")) and not problems
    if not all_ok:
        ctx.log(
            "error",
            f"torch.distributed sanity check failed: {error or 'all_reduce gave a wrong sum'}",
        )
    ifnames = sorted({str(v) for r in ranks if (v := _env(r).get("NCCL_SOCKET_IFNAME"))})
    gloo_ifnames = sorted({str(v) for r in ranks if (v := _env(r).get("GLOO_SOCKET_IFNAME"))})
    ctx.evidence.distributed = DistributedResult(
        backend=str(summary.get("backend")) if summary else launch.backend,
        world_size=world,
        ranks=[rank_row(r) for r in ranks],
        all_reduce_ok=all_ok,
        nccl_socket_ifname=",".join(ifnames) or None,
        error=error,
    )
    if gloo_ifnames:
        ctx.log("info", f"gloo used GLOO_SOCKET_IFNAME={','.join(gloo_ifnames)}")
    if not ifnames and launch.backend == "nccl":
        ctx.warn(
            "NCCL_SOCKET_IFNAME is not set: NCCL picks the bootstrap interface itself (fine on "
            "one host; set it on multi-node runs to avoid docker0/lo)"
        )
