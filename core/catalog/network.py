"""Networks: what a typical rented node of each GPU class has between nodes, and what a PCIe link
carries.

One home for these tables, shared by the planner (assumed bandwidth when the request names no
network), the window (saying what is assumed) and the probe scorecard (what a PCIe box should
reach). Keys of
:data:`DEFAULT_GPU_GBPS` are the ``hardware.interconnect`` values of a plan request.

The functions that look a GPU up take the catalog from their caller (``load_catalog()`` for the
user's): the override merge reads the PCIe table, so this module sits below it and does not load
catalogs itself.
"""

from __future__ import annotations

from typing import Any

from core.catalog.lookup import Catalog
from core.catalog.records import CatalogError

Num = Any

# Per-direction PCIe x16 bandwidth NCCL can use (~80 % of the x16 spec per direction), by PCIe
# generation.
PCIE_ACHIEVED_GBS = {3: 12.5, 4: 25.0, 5: 50.0, 6: 100.0}

# Network per GPU in Gbit/s when the user names a type but no speed: one 400G NDR/RoCE rail per GPU
# on H100-class nodes (AWS p5 EFA: 3200 Gbps per 8 GPUs); plain Ethernet clouds: one 100G NIC per
# 8-GPU node.
DEFAULT_GPU_GBPS = {
    "infiniband": 400.0,
    "roce": 400.0,
    "efa": 400.0,
    "ethernet": 12.5,
}
# What a rented node of each class usually has when the user names no network (per GPU, Gbit/s):
# HGX/DGX-class Hopper, Blackwell (B300 too), MI300X/MI325X, MI355X and Gaudi nodes: one 400G rail
# per GPU (for MI355X a heuristic, as for MI300X); A100 SXM: 200G HDR per GPU; V100 (AWS p3dn): 100G
# per 8 GPUs; PCIe cards (L40S, L4, A10, RTX): one 100G NIC per node, shared.
SCALE_OUT_GBPS_PER_GPU = {
    "hopper": 400.0,
    "blackwell": 400.0,
    "cdna3": 400.0,
    "cdna4": 400.0,
    # per MI250X GCD (the catalog's device): one 200G Slingshot NIC per two-GCD card on Frontier
    # (docs.olcf.ornl.gov/systems/frontier_user_guide.html: 4 MI250X and 4 NICs per node)
    "cdna2": 100.0,
    "gaudi2": 400.0,
    "gaudi3": 400.0,
    "ampere": 200.0,
    "volta": 12.5,
}
PCIE_NODE_GBPS = 100.0
# A named fabric is a fabric on an instance, not one speed: AWS EFA gives an A100 node (p4d/p4de) 4
# × 100 Gbit/s for 8 GPUs, 50 per GPU, an H100/H200 node (p5/p5e) 3,200 Gbit/s, 400 per GPU, a B200
# node (p6-b200) 3,200, a V100 node (p3dn) 100 for 8 (aws.amazon.com/ec2/instance-types/p4, /p5,
# /p6; p3dn on /p3). InfiniBand on an A100 node is HDR, 200 Gbit/s per GPU (DGX A100 user guide: 8 ×
# 200 Gb/s ConnectX-6), NDR 400 on Hopper and Blackwell.
NAMED_FABRIC_GBPS_PER_GPU = {
    "efa": {"ampere": 50.0, "hopper": 400.0, "blackwell": 400.0, "volta": 12.5},
    "infiniband": {"ampere": 200.0, "volta": 100.0 / 8 * 4},
    "roce": {"ampere": 200.0},
}

# GeForce cards have no peer-to-peer over PCIe (sjeaugey, NVIDIA/nccl-tests#287: "GeForce cards do
# not support P2P"), so NCCL's SHM transport stages every transfer in a host-memory buffer: the
# sender writes it across its PCIe link and the receiver reads it back across its own, and the CPU's
# memory carries both. PROBES.md §2.1 puts such boxes at the low end of the 10–25 GB/s PCIe range;
# we take half the link's achieved rate (12.5 GB/s busbw on Gen4 x16 after the 0.8 of
# comms.intra_bytes_per_s is undone), an estimate to replace with a measured intra-node busbw
# (hardware.intra_node_busbw_gbs) when one exists.
HOST_STAGED_FRACTION = 0.5


def peer_to_peer(gpu_name: str) -> bool:
    """Whether the card can write into another card's memory over PCIe: GeForce cards cannot
    (driver-disabled)."""
    return "geforce" not in gpu_name.lower()


def intra_node_gbs(gpu: Any, gpus_per_node: int) -> float:
    """The link figure collectives inside a node run on: NVLink, a bridged pair, PCIe peer-to-peer,
    or — on cards without peer-to-peer over PCIe — the host-memory path at HOST_STAGED_FRACTION of
    the PCIe link."""
    link = float(gpu.intra_node_bandwidth_gbs(gpus_per_node))
    bridged = gpus_per_node == 2 and gpu.nvlink_pair_gbs
    if gpu.intra_node_link == "pcie" and not bridged and not peer_to_peer(gpu.name):
        return link * HOST_STAGED_FRACTION
    return link


def typical_gpu_net_gbps(intra_node_link: str, architecture: str, gpus_per_node: Num) -> Num:
    """Per-GPU inter-node bandwidth of a typical node of this GPU class (see the table above)."""
    if intra_node_link == "pcie":
        return PCIE_NODE_GBPS / gpus_per_node
    key = architecture.lower().replace(" ", "")
    return SCALE_OUT_GBPS_PER_GPU.get(key, PCIE_NODE_GBPS / 8) + 0.0 * gpus_per_node


def named_gpu_gbps(interconnect: str, architecture: str) -> float:
    """Gbit/s per GPU of a named fabric on this GPU generation's instances (else the fabric's
    400G-rail default)."""
    key = architecture.lower().replace(" ", "")
    return NAMED_FABRIC_GBPS_PER_GPU.get(interconnect, {}).get(key, DEFAULT_GPU_GBPS[interconnect])


def typical_gpu_gbps(gpu_id: str, gpus_per_node: int, catalog: Catalog) -> float | None:
    """Inter-node Gbit/s per GPU the planner assumes for this GPU's class when the request names no
    network."""
    try:
        gpu = catalog.gpu(gpu_id)
    except CatalogError:
        return None
    return float(typical_gpu_net_gbps(gpu.intra_node_link, gpu.architecture, max(gpus_per_node, 1)))


def network_gbps(
    interconnect: str | None, gpu_id: str, gpus_per_node: int, catalog: Catalog
) -> float | None:
    """Gbit/s per GPU for a named network type, else the GPU class's typical one (None: unknown GPU
    or type)."""
    if not interconnect:
        return typical_gpu_gbps(gpu_id, gpus_per_node, catalog)
    if str(interconnect) not in DEFAULT_GPU_GBPS:
        return None
    try:
        return named_gpu_gbps(str(interconnect), catalog.gpu(gpu_id).architecture)
    except CatalogError:
        return DEFAULT_GPU_GBPS[str(interconnect)]


def typical_network(gpu_id: str, gpus_per_node: int, catalog: Catalog) -> str:
    """What the planner assumes between nodes when the request names no network, for the window to
    say."""
    per_gpu = typical_gpu_gbps(gpu_id, gpus_per_node, catalog)
    if per_gpu is None:
        return ""
    return (
        f"typical for {gpu_id} nodes: {per_gpu:,.4g} Gbit/s per GPU, "
        f"{per_gpu * gpus_per_node:,.4g} Gbit/s per node of {gpus_per_node}"
    )


def network_text(
    interconnect: str | None, gpu_id: str, gpus_per_node: int, catalog: Catalog, name: str = ""
) -> str:
    """The network the plan assumes: the GPU class's typical one, or a named type's usual speed."""
    if not interconnect:
        return typical_network(gpu_id, gpus_per_node, catalog)
    per_gpu = network_gbps(interconnect, gpu_id, gpus_per_node, catalog)
    if per_gpu is None:
        return ""
    return (
        f"{name or interconnect}: {per_gpu:g} Gbit/s per GPU assumed ({per_gpu * gpus_per_node:g} "
        "per node) "
        "unless you give the bandwidth"
    )


def network_node_gbps(
    interconnect: str | None, gpu_id: str, gpus_per_node: int, catalog: Catalog
) -> float | None:
    """Gbit/s per node the plan assumes when the request gives no inter-node bandwidth."""
    per_gpu = network_gbps(interconnect, gpu_id, gpus_per_node, catalog)
    return None if per_gpu is None else per_gpu * gpus_per_node
