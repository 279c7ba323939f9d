"""What a healthy box of this kind should reach: the public home of the expected figures.

The achievable matmul TFLOP/s (``matmul_reference``), the busbw the interconnect found should reach
(``BusbwExpectation``, ``expected_busbw``), the busbw a run reached (``busbw_at_largest``) and the
catalog GPU the box reports (``probed_gpu``). They are kept apart from the grading so
``core.probes.apply`` tunes a plan with the same figures the scorecard grades against.
"""

from __future__ import annotations

import math
import re
from typing import Literal, NamedTuple

from core.catalog import GPU, Catalog, CatalogError, load_catalog, network
from core.catalog.network import PCIE_ACHIEVED_GBS
from core.probes.evidence import ComputeResult, ProbeEvidence
from core.probes.samples import CollectiveResult, CollectiveRow
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import Box, is_finite

# --------------------------------------------------------------------------- matmul


_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
}


def matmul_reference(compute: ComputeResult, gpu: GPU | None) -> tuple[float, str] | None:
    """Achievable matmul TFLOP/s for the GPU found and where the figure comes from."""
    dtype = _DTYPES.get(compute.dtype.lower().removeprefix("torch."), compute.dtype.lower())
    if gpu is not None and gpu.id in T.MAMF_TFLOPS and dtype in ("bf16", "fp16"):
        return T.MAMF_TFLOPS[gpu.id], T.MAMF_SOURCE
    peak: float | None = None
    label = ""
    if gpu is not None:
        try:
            peak = gpu.peak_tflops(dtype)
            label = f"catalog peak {peak:g} of {gpu.id}"
        except CatalogError:
            peak = None
    if peak is None and compute.reference_tflops:
        peak = compute.reference_tflops
        label = f"peak {peak:g} ({compute.reference_source or 'runner'})"
    if peak is None:
        return None
    return (
        peak * T.MAMF_FRACTION_OF_PEAK,
        f"{T.MAMF_FRACTION_OF_PEAK:.0%} of {label}; {T.MAMF_SOURCE}",
    )


# --------------------------------------------------------------------------- collectives


_NET_DEVICE = re.compile(r"\[\d+\]\s*([A-Za-z0-9_]+)")


class BusbwExpectation(NamedTuple):
    """What busbw the interconnect found should reach, and how to grade against it."""

    kind: Literal["intra", "inter", "tcp", "pcie"]
    reference: float  # GB/s the bands apply to
    high: float  # GB/s, top of the typical range
    band: T.Band
    label: str  # e.g. '8× H100-SXM over NVLink/NVSwitch'
    source: str
    assumed: bool  # the NIC rate or count was not measured: never FAIL on it


def busbw_at_largest(coll: CollectiveResult) -> tuple[float, int] | None:
    """In-place busbw at the largest message (nccl-tests' verdict point), else out-of-place, else
    the average."""
    rows = sorted((r for r in coll.rows if _row_busbw(r) is not None), key=lambda r: r.size_bytes)
    if rows:
        value = _row_busbw(rows[-1])
        assert value is not None
        return value, rows[-1].size_bytes
    if coll.avg_busbw is not None and math.isfinite(coll.avg_busbw):
        return coll.avg_busbw, 0
    return None


def _row_busbw(row: CollectiveRow) -> float | None:
    for timing in (row.in_place, row.out_of_place):
        if timing is not None and is_finite(timing.busbw_gbps):
            return timing.busbw_gbps
    return None


def nodes_and_ranks(box: Box, coll: CollectiveResult) -> tuple[int, int]:
    """Nodes and ranks the collective run spanned: its host names, else inferred from the
    interconnect."""
    hosts = {d.host for d in coll.devices if d.host}
    nranks = coll.nranks or len(coll.devices) or box.count or 1
    if hosts:
        return len(hosts), nranks
    ic = box.e.collective_interconnect
    if ic in ("infiniband", "roce", "efa", "ethernet"):
        local = box.count or 8
        return max(2, math.ceil(nranks / local)), nranks
    return 1, nranks


def _interconnect(box: Box, gpu: GPU | None, coll: CollectiveResult, nodes: int) -> str:
    ic = (box.e.collective_interconnect or "").lower()
    net = coll.net or ""
    if nodes > 1:
        if "Socket" in net:
            return "ethernet"
        if "NET/IB" in net:
            return "roce" if "roce" in net.lower() else "infiniband"
        if "OFI" in net or "Libfabric" in net:
            return "efa"
        if ic:
            return ic
        ports = box.rdma_ports_up()
        if ports:
            return (
                "roce"
                if all((p.link_layer or "").lower() == "ethernet" for p in ports)
                else "infiniband"
            )
        return "unknown"
    if gpu is not None and gpu.intra_node_link in ("nvlink", "infinity_fabric"):
        # the hardware has NVLink: a run that did not use it is a finding, not a new baseline
        return "nvlink"
    return ic or (gpu.intra_node_link if gpu is not None else "unknown")


def _rails(box: Box, coll: CollectiveResult, per_node: int) -> tuple[int, float | None]:
    """NICs NCCL used per node and their rate in Gb/s (None when no inventory says)."""
    used = _NET_DEVICE.findall(coll.net or "")
    ports = box.rdma_ports_up()
    rate_of = {p.device: p.rate_gbps for p in ports if p.rate_gbps}
    if used:
        rates = [rate_of[d] for d in used if d in rate_of]
        return len(used), (min(rates) if rates else None)
    if ports:
        fastest = max(p.rate_gbps or 0.0 for p in ports)
        rails = [p for p in ports if p.rate_gbps == fastest]
        return max(1, min(len(rails), per_node)), fastest or None
    return max(1, per_node), None


def probed_gpu(evidence: ProbeEvidence, catalog: Catalog | None = None) -> GPU | None:
    """The catalog GPU the box reports (by nvidia-smi name, else the collective benchmark's device
    names)."""
    return Box(evidence, catalog or load_catalog(), []).gpu


def expected_busbw(
    evidence: ProbeEvidence, catalog: Catalog | None = None
) -> BusbwExpectation | None:
    """The busbw the interconnect found should reach (None: no reference, e.g. gloo on a CPU-only
    host)."""
    box = Box(evidence, catalog or load_catalog(), [])
    return (
        busbw_expectation(box, evidence.collectives) if evidence.collectives is not None else None
    )


def busbw_expectation(box: Box, coll: CollectiveResult) -> BusbwExpectation | None:
    """The busbw this collective run should reach on this box (None: no reference for its
    interconnect)."""
    nodes, nranks = nodes_and_ranks(box, coll)
    per_node = max(1, nranks // nodes)
    gpu = box.collective_gpu() or box.gpu  # grade the run against the GPUs it ran on
    ic = _interconnect(box, gpu, coll, nodes)
    torch = coll.tool == "torch_all_reduce_bench"
    scale = T.TORCH_BENCH_FACTOR if torch else 1.0
    extra = f"; blocking torch benchmark −5 % ({T.TORCH_BENCH_SOURCE})" if torch else ""
    if nodes == 1:
        if ic == "nvlink" and gpu is not None:
            ring = (coll.algo or "").lower() == "ring"
            table = T.NVLINK_8GPU_BUSBW.get(gpu.id) if nranks == 8 and not ring else None
            if table is not None:
                return BusbwExpectation(
                    "intra",
                    table.low * scale,
                    table.high * scale,
                    T.NCCL_INTRA_BAND,
                    f"{nranks}× {gpu.id} over NVLink/NVSwitch",
                    table.source + extra,
                    False,
                )
            line = gpu.intra_node_bandwidth_gbs(nranks)
            return BusbwExpectation(
                "intra",
                line * T.LINK_EFFICIENCY * scale,
                line * scale,
                T.NCCL_INTRA_BAND,
                f"{nranks}× {gpu.id} over {gpu.intra_node_link} ({line:g} GB/s per direction)",
                T.LINK_EFFICIENCY_SOURCE + extra,
                False,
            )
        if ic == "pcie":
            gens = [g.pcie_gen_max for g in box.gpus if g.pcie_gen_max]
            top = (
                gpu.intra_node_bandwidth_gbs(nranks)
                if gpu is not None
                else PCIE_ACHIEVED_GBS.get(min(gens) if gens else 4, 25.0)
            )
            return BusbwExpectation(
                "pcie",
                top * T.PCIE_LOW_FRACTION * scale,
                top * scale,
                T.Band(1.0, 0.0),
                f"{nranks} GPUs over PCIe",
                T.PCIE_SOURCE + extra,
                True,
            )
        return None
    if ic in ("infiniband", "roce", "efa"):
        rails, rate = _rails(box, coll, per_node)
        assumed = rate is None
        if rate is None:
            rate = _typical_rail_gbps(gpu, ic, per_node)
        per_nic = rate / 8 * T.NCCL_PER_NIC_EFFICIENCY
        ref = rails * per_nic * scale
        how = (
            ""
            if not assumed
            else " (NIC rate assumed for this GPU class: no NIC inventory)"
            if gpu
            else " (NIC rate assumed: no NIC inventory)"
        )
        return BusbwExpectation(
            "inter",
            ref,
            rails * rate / 8 * scale,
            T.NCCL_INTER_BAND,
            f"{nodes} nodes, {rails} × {rate:g} Gb/s {ic} per node{how}",
            T.NCCL_INTER_SOURCE + extra,
            assumed,
        )
    if ic == "ethernet":
        speeds = [
            _speed_gbps(n.get("speed")) for n in (box.e.inventory.nics if box.e.inventory else [])
        ]
        known = [s for s in speeds if s]
        rate = max(known) if known else 100.0
        ref = rate / 8 * T.TCP_EFFICIENCY * scale
        return BusbwExpectation(
            "tcp",
            ref,
            rate / 8 * 0.6 * scale,
            T.NCCL_INTER_BAND,
            f"{nodes} nodes over {rate:g} Gb/s TCP" + ("" if known else " (NIC speed assumed)"),
            T.TCP_SOURCE + extra,
            not known,
        )
    return None


def _typical_rail_gbps(gpu: GPU | None, ic: str, per_node: int) -> float:
    """The planner's typical network per GPU for this GPU class (or for the network type when the
    GPU is unknown)."""
    if gpu is not None:
        return float(network.typical_gpu_net_gbps(gpu.intra_node_link, gpu.architecture, per_node))
    return network.DEFAULT_GPU_GBPS[ic]


def _speed_gbps(text: str | None) -> float | None:
    """NIC speed as sysfs (Mb/s, '100000') or ethtool ('100000Mb/s', '100G') print it, in Gb/s."""
    if not text:
        return None
    match = re.match(r"^\s*([0-9.]+)\s*([MG]?)", text)
    if not match:
        return None
    value = float(match.group(1))
    unit = match.group(2).upper() or ("M" if value >= 1000 else "G")
    return value / 1000 if unit == "M" else value
