"""Are the links up? NVLink between the GPUs (every link active, at the speed of the others) and the
InfiniBand/RoCE ports (every port Active/LinkUp, at its peers' rate), from the inventory's link
state.

A card can be healthy and its links not: a dead NVLink or a port down halves what the network checks
(core.probes.scorecard.network) then measure, so the link state is graded on its own, before any
traffic, and apart from the GPUs' own health counters (core.probes.scorecard.health).
"""

from __future__ import annotations

from collections import Counter

from core.probes.evidence import Check
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import FAIL, INFO, PASS, WARN, Box, check, gpus_text


def check_nvlink(box: Box) -> Check | None:
    inv = box.e.inventory
    if inv is None or inv.nvlink is None:
        return None
    statuses = inv.nvlink
    has_nvlink = box.gpu is None or box.gpu.intra_node_link == "nvlink"
    dead = [s.gpu for s in statuses if s.all_inactive]
    partial = [s.gpu for s in statuses if not s.all_inactive and s.inactive_links]
    speeds = [v for s in statuses for v in s.link_speeds_gbps if v is not None]
    per_gpu = Counter(len([v for v in s.link_speeds_gbps if v is not None]) for s in statuses)
    measured = (
        ", ".join(f"{n} links up on {k} GPUs" for n, k in per_gpu.most_common())
        if speeds
        else "all links inactive"
        if dead
        else "no NVLink reported"
    )
    if speeds:
        measured += (
            f" at {min(speeds):g}–{max(speeds):g} GB/s"
            if min(speeds) != max(speeds)
            else f" at {speeds[0]:g} GB/s"
        )
    expected = "every link up at nominal speed (H100 18 × 26.562 GB/s, A100 12 × 25 GB/s)"
    if not statuses or (dead and not has_nvlink):
        return check(
            "network",
            "NVLink",
            INFO,
            measured,
            "—",
            T.NVLINK_SOURCE,
            "this GPU model has no NVLink between cards",
        )
    if dead or partial:
        which = sorted(set(dead) | set(partial))
        return check(
            "network",
            "NVLink",
            FAIL,
            measured,
            expected,
            T.NVLINK_SOURCE,
            f"inactive NVLink links on {gpus_text(which)}",
        )
    slow = [
        s.gpu
        for s in statuses
        if any(v is not None and v < 0.95 * max(speeds) for v in s.link_speeds_gbps)
    ]
    if slow:
        return check(
            "network",
            "NVLink",
            WARN,
            measured,
            expected,
            T.NVLINK_SOURCE,
            f"some NVLink links of {gpus_text(slow)} run below the others' speed",
        )
    return check(
        "network", "NVLink", PASS, measured, expected, T.NVLINK_SOURCE, "all NVLink links up"
    )


def check_ib_ports(box: Box) -> Check | None:
    inv = box.e.inventory
    if inv is None or inv.infiniband is None:
        return None
    ports = inv.infiniband.ports
    if not ports and not inv.infiniband.errors:
        return None
    down = [
        p
        for p in ports
        if (p.state or "").lower() != "active"
        or (p.phys_state is not None and p.phys_state.lower() != "linkup")
    ]
    groups: dict[tuple[str | None, str | None], float] = {}
    for p in ports:
        if p not in down and p.rate_gbps is not None:
            key = (p.ca_type, p.link_layer)
            groups[key] = max(groups.get(key, 0.0), p.rate_gbps)
    slow = [
        p
        for p in ports
        if p not in down
        and p.rate_gbps is not None
        and p.rate_gbps < groups[(p.ca_type, p.link_layer)]
    ]
    rates = Counter(
        f"{p.rate_gbps:g} Gb/s {p.link_layer or ''}".strip()
        for p in ports
        if p not in down and p.rate_gbps is not None
    )
    measured = f"{len(ports) - len(down)} of {len(ports)} ports Active/LinkUp"
    if rates:
        measured += " (" + ", ".join(f"{n}× {r}" for r, n in rates.most_common()) + ")"
    expected = "every port Active/LinkUp at the rate of its peers"
    if down:
        names = ", ".join(
            f"{p.device}/{p.port} {p.state or '?'}/{p.phys_state or '?'}" for p in down
        )
        return check(
            "network",
            "InfiniBand/RoCE ports",
            FAIL,
            measured,
            expected,
            T.IB_SOURCE,
            f"{len(down)} RDMA ports are not up ({names})",
        )
    if slow:
        names = ", ".join(f"{p.device} at {p.rate_gbps:g} Gb/s" for p in slow)
        return check(
            "network",
            "InfiniBand/RoCE ports",
            FAIL,
            measured,
            expected,
            T.IB_SOURCE,
            f"ports run below their peers' rate ({names})",
        )
    if inv.infiniband.errors:
        return check(
            "network",
            "InfiniBand/RoCE ports",
            WARN,
            measured,
            expected,
            T.IB_SOURCE,
            f"ibstat reported an error: {inv.infiniband.errors[0][:120]}",
        )
    return check(
        "network",
        "InfiniBand/RoCE ports",
        PASS,
        measured,
        expected,
        T.IB_SOURCE,
        "all RDMA ports up",
    )


__all__ = ["check_ib_ports", "check_nvlink"]
