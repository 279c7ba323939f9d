"""Does the interconnect deliver? The PCIe link under load, the NVSwitch fabric and the collective
benchmark.

The collective checks grade the all-reduce busbw against the figure ``expectations`` derives for the
interconnect found, then check the run's integrity (#wrong, out of bounds, footer) and NCCL's
transport (RDMA and GPUDirect rather than TCP sockets). A PCIe reading taken at idle never fails:
idle links downshift.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from core.probes.evidence import Check
from core.probes.samples import CollectiveResult
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import (
    FAIL,
    INFO,
    NO_GPU,
    PASS,
    WARN,
    Box,
    cap,
    check,
    gpus_text,
    grade,
    partial_line,
    plural,
    size_label,
    sweep_cut,
)
from core.probes.scorecard.expectations import busbw_at_largest, busbw_expectation, nodes_and_ranks

# --------------------------------------------------------------------------- PCIe link and NVSwitch
# fabric


def _under_load(box: Box, index: int) -> bool | None:
    utils = [m.util_pct for m in box.snapshot if m.gpu == index and m.util_pct is not None]
    return None if not utils else max(utils) >= 50.0


class _Link(NamedTuple):
    """One GPU's PCIe link reading and whether the GPU was busy when it was taken."""

    gpu: int
    gen: int
    gen_max: int
    width: int | None
    width_max: int | None
    loaded: bool


def _pcie_links(box: Box) -> list[_Link]:
    """Per GPU the reading taken under load (compute/burn probe) when there is one, else the
    snapshot's."""
    loaded = list(box.e.pcie_under_load or [])
    by_bus = {g.pci_bus_id.lower(): g for g in loaded if g.pci_bus_id}
    by_index = {g.index: g for g in loaded}
    links: list[_Link] = []
    used: set[int] = set()
    for g in box.gpus:
        busy = (by_bus.get(g.pci_bus_id.lower()) if g.pci_bus_id else None) or by_index.get(g.index)
        gen_max = (busy.pcie_gen_max if busy is not None else None) or g.pcie_gen_max
        width_max = (busy.pcie_width_max if busy is not None else None) or g.pcie_width_max
        if busy is not None and busy.pcie_gen_current is not None and gen_max is not None:
            used.add(id(busy))
            links.append(
                _Link(
                    g.index,
                    busy.pcie_gen_current,
                    gen_max,
                    busy.pcie_width_current,
                    width_max,
                    True,
                )
            )
        elif g.pcie_gen_current is not None and g.pcie_gen_max is not None:
            links.append(
                _Link(
                    g.index,
                    g.pcie_gen_current,
                    g.pcie_gen_max,
                    g.pcie_width_current,
                    g.pcie_width_max,
                    bool(_under_load(box, g.index)),
                )
            )
    for busy in loaded:  # no inventory to match (the inventory probe did not run)
        if (
            id(busy) not in used
            and not box.gpus
            and busy.pcie_gen_current is not None
            and busy.pcie_gen_max
        ):
            links.append(
                _Link(
                    busy.index,
                    busy.pcie_gen_current,
                    busy.pcie_gen_max,
                    busy.pcie_width_current,
                    busy.pcie_width_max,
                    True,
                )
            )
    return links


def check_pcie(box: Box) -> Check | None:
    """Grade the link read under load; an idle reading never fails, since idle links downshift to
    save power."""
    known = _pcie_links(box)
    downtrained = [
        ev
        for ev in (box.e.kernel_log.events if box.e.kernel_log else [])
        if ev.kind == "pcie_downtrained"
    ]
    if not known and not downtrained:
        return None
    narrow = [g for g in known if g.width and g.width_max and g.width < g.width_max]
    slow = [g for g in known if g.gen < g.gen_max]
    links = Counter(
        f"Gen{g.gen} x{g.width} {'under load' if g.loaded else 'at idle'}" for g in known
    )
    measured = (
        "; ".join(f"{link} on {plural(n, 'GPU')}" for link, n in links.most_common())
        or "not reported"
    )
    maxes = Counter(f"Gen{g.gen_max} x{g.width_max}" for g in known)
    expected = (
        "current = max under load (" + ", ".join(maxes) + ")"
        if maxes
        else "current = max under load"
    )
    name, source = "PCIe link", T.PCIE_SOURCE_LINK
    if downtrained:
        return check(
            "inventory",
            name,
            FAIL,
            measured,
            expected,
            source,
            f"the kernel log says a PCIe link is limited: {downtrained[0].message[:120]}",
        )
    loaded_narrow = [g.gpu for g in narrow if g.loaded]
    if loaded_narrow:
        return check(
            "inventory",
            name,
            FAIL,
            measured,
            expected,
            source,
            f"{gpus_text(loaded_narrow)} run on a narrower PCIe link than they support under load",
        )
    loaded_slow = [g.gpu for g in slow if g.loaded]
    if loaded_slow:
        return check(
            "inventory",
            name,
            FAIL,
            measured,
            expected,
            source,
            f"{gpus_text(loaded_slow)} run a slower PCIe generation than they support under load",
        )
    idle = "read at idle; links downshift to save power, re-check under load"
    if narrow:
        return check(
            "inventory",
            name,
            WARN,
            measured,
            expected,
            source,
            f"{gpus_text(g.gpu for g in narrow)} show a narrower PCIe link than they support "
            f"({idle})",
        )
    if slow:
        return check(
            "inventory",
            name,
            INFO,
            measured,
            expected,
            source,
            f"{gpus_text(g.gpu for g in slow)} show a lower PCIe generation than they support "
            f"({idle})",
        )
    when = "under load" if all(g.loaded for g in known) else "(some read at idle)"
    return check("inventory", name, PASS, measured, expected, source, f"full PCIe links {when}")


def check_fabric(box: Box) -> Check | None:
    known = [
        g
        for g in box.gpus
        if g.fabric_state and g.fabric_state.upper() not in ("N/A", "NOT SUPPORTED")
    ]
    if not known:
        return None
    bad = [
        g.index
        for g in known
        if g.fabric_state != "Completed" or (g.fabric_status not in (None, "Success", "N/A"))
    ]
    measured = ", ".join(sorted({f"{g.fabric_state}/{g.fabric_status}" for g in known}))
    if bad:
        return check(
            "network",
            "NVSwitch fabric",
            FAIL,
            measured,
            "Completed/Success",
            T.FABRIC_SOURCE,
            f"the NVSwitch fabric is not ready on {gpus_text(bad)} (fabric manager down?)",
        )
    return check(
        "network",
        "NVSwitch fabric",
        PASS,
        measured,
        "Completed/Success",
        T.FABRIC_SOURCE,
        "NVSwitch fabric ready",
    )


# --------------------------------------------------------------------------- collectives


def check_collectives(box: Box) -> list[Check]:
    coll = box.e.collectives
    if coll is None:
        return []
    out = [
        c
        for c in (_check_busbw(box, coll), _check_nccl_run(coll), _check_transport(box, coll))
        if c
    ]
    return out


def _check_busbw(box: Box, coll: CollectiveResult) -> Check:
    name = "All-reduce busbw"
    found = busbw_at_largest(coll)
    if found is None:
        return check(
            "network",
            name,
            FAIL if coll.failures else INFO,
            "no bandwidth figure",
            "—",
            T.NCCL_INTER_SOURCE,
            "the collective benchmark printed no result",
        )
    value, size = found
    where = f" at {size_label(size)}" if size else " (average)"
    measured = f"{value:,.1f} GB/s{where}" + (
        f"; peak {coll.peak_busbw:,.1f}"
        if coll.peak_busbw and coll.peak_busbw > value * 1.01
        else ""
    )
    cut = sweep_cut(coll)
    if cut:
        return partial_line("network", name, measured, cut)
    if (coll.nranks or 0) == 1:
        return check(
            "network",
            name,
            INFO,
            measured,
            "—",
            f"nccl-tests#71 ({T.NCCL_TESTS_71})",
            "a single rank moves no data: busbw is 0 by definition",
        )
    exp = busbw_expectation(box, coll)
    ic = (box.e.collective_interconnect or "").lower()
    if exp is None:
        why = (
            NO_GPU
            if box.no_gpu or ic in ("loopback", "")
            else f"no reference for the '{ic}' interconnect"
        )
        return check("network", name, INFO, measured, "—", T.NCCL_INTER_SOURCE, why)
    ratio = value / exp.reference
    status = grade(ratio, exp.band)
    typical = (
        f"{exp.reference:,.0f}–{exp.high:,.0f} GB/s"
        if exp.high > exp.reference * 1.01
        else f"{exp.reference:,.0f} GB/s"
    )
    expected = f"{typical} for {exp.label}"
    if exp.kind == "pcie":
        reason = (
            f"{value:,.1f} GB/s is within the typical PCIe range"
            if status is PASS
            else f"{value:,.1f} GB/s is below the typical PCIe range ({typical}; an estimate)"
        )
        return check(
            "network",
            name,
            cap(status, WARN),
            measured,
            expected + " (estimate)",
            exp.source,
            reason,
        )
    reason = f"{ratio:.0%} of the {exp.reference:,.0f} GB/s expected for {exp.label}"
    if status is not PASS and size and size < T.NCCL_PLATEAU_BYTES:
        status = cap(status, WARN)
        reason += (
            f"; the largest message ({size_label(size)}) is below 1 GiB, so the curve has not "
            "reached its peak"
        )
    if exp.assumed and status is FAIL:
        status = WARN
        reason += "; the NIC rate was assumed, so this is not graded as a failure"
    return check("network", name, status, measured, expected, exp.source, reason)


def _check_nccl_run(coll: CollectiveResult) -> Check | None:
    problems = []
    if coll.wrong_total > 0:
        problems.append(f"{coll.wrong_total} wrong results (#wrong)")
    if coll.out_of_bounds_ok is False:
        problems.append(f"out-of-bounds values: {coll.out_of_bounds}")
    if coll.avg_busbw_ok is False:
        problems.append("the average busbw line says FAILED")
    if coll.failures:
        problems.append(f"error: {coll.failures[0][:100]}")
    nccl_tool = coll.tool in ("nccl-tests", "rccl-tests")
    cut = sweep_cut(coll)
    if nccl_tool and not coll.completed and not cut:
        problems.append("no footer: the run did not finish or the output was cut")
    expected = "#wrong 0, out of bounds OK, footer present, no failure lines"
    source = f"nccl-tests ({T.NCCL_TESTS_README}); DCGM nccl_tests plugin logic"
    measured = (
        f"{len(coll.rows)} size{'' if len(coll.rows) == 1 else 's'}, #wrong {coll.wrong_total}"
        + (f", out of bounds {coll.out_of_bounds}" if coll.out_of_bounds is not None else "")
    )
    if problems:
        return check(
            "network",
            "Collective run integrity",
            FAIL,
            measured,
            expected,
            source,
            "; ".join(problems),
        )
    if cut:
        return check(
            "network",
            "Collective run integrity",
            INFO,
            f"partial: {measured}",
            expected,
            source,
            f"the sweep was cut after {cut}: nothing wrong in what it measured, the rest unknown",
        )
    if not nccl_tool and coll.tool != "torch_all_reduce_bench":
        return None
    return check(
        "network",
        "Collective run integrity",
        PASS,
        measured,
        expected,
        source,
        "results validated and the run completed"
        if nccl_tool
        else "the benchmark reported no error",
    )


def _check_transport(box: Box, coll: CollectiveResult) -> Check | None:
    nodes, _ = nodes_and_ranks(box, coll)
    if nodes < 2 or (coll.net is None and coll.gdr is None):
        return None
    rdma = bool(box.rdma_ports_up())
    net = coll.net or "not reported"
    measured = (
        f"{net}; GPUDirect RDMA {'on' if coll.gdr else 'off' if coll.gdr is False else 'unknown'}"
    )
    expected = "NET/IB or OFI with GDR 1"
    if "Socket" in net and rdma:
        return check(
            "network",
            "NCCL transport",
            FAIL,
            measured,
            expected,
            T.IFACE_SOURCE,
            "NCCL fell back to TCP sockets although RDMA NICs are up",
        )
    if coll.gdr is False and "Socket" not in net:
        return check(
            "network",
            "NCCL transport",
            FAIL,
            measured,
            expected,
            T.IFACE_SOURCE,
            "GPUDirect RDMA is off (GDR 0): traffic is staged through host memory",
        )
    return check(
        "network",
        "NCCL transport",
        PASS,
        measured,
        expected,
        T.IFACE_SOURCE,
        "NCCL uses the RDMA path",
    )
