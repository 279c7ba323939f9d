"""Does the network between the nodes deliver? HCA ports across nodes, GPU–NIC affinity, NCCL's
transport and the busbw of the collectives between the nodes, and ib_write_bw between node pairs.

The seed's central warning is graded here: a multi-node job over plain TCP sockets is
communication-bound, and the only way to know is the collective across the nodes. Inter-node ring
busbw is graded against the NICs NCCL can use (the Active RDMA ports of a node at its fastest rate,
or the HCAs NCCL named) × the per-NIC figure sjeaugey gives in nccl-tests#119 (about 48 GB/s per 400
Gb/s port, 24 per 200, 12 per 100): ≥ 80 % passes, 60–80 % warns, below fails. gloo between CPUs
moves data through host TCP stacks, so it is reported, never graded against NIC figures.
"""

from __future__ import annotations

from collections import Counter

from core.catalog import Catalog, CatalogError, network
from core.probes.cluster.evidence import ClusterEvidence, NcclTransport, NodeReport, PairBandwidth
from core.probes.evidence import Check, CheckStatus
from core.probes.samples import CollectiveResult, IbPort
from core.probes.scorecard import common
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import (
    FAIL,
    INFO,
    PASS,
    WARN,
    cap,
    check,
    gpus_text,
    grade,
    plural,
    size_label,
    worst,
)
from core.probes.scorecard.expectations import busbw_at_largest

# NCCL's own RDMA transport; anything not IB and not Socket is a net plugin (OFI, TCPX)
RDMA_NETWORKS = ("IB",)


def network_checks(cluster: ClusterEvidence, catalog: Catalog) -> list[Check]:
    """The network lines of the cluster card, in card order."""
    found = [
        check_hca_ports(cluster),
        check_gpu_nic_affinity(cluster),
        check_transport(cluster),
        check_inter_node_busbw(cluster, catalog),
        check_nccl_tests(cluster, catalog),
        check_ib_write_bw(cluster),
    ]
    return [c for c in found if c is not None]


# --------------------------------------------------------------------------- what each node has


def active_ports(node: NodeReport) -> list[IbPort]:
    return [p for p in node.facts.hca_ports if (p.state or "").lower() == "active"]


def _signature(ports: list[IbPort]) -> str:
    """'8 × 400 Gb/s + 4 × 100 Gb/s' (Active ports by rate, fastest first); 'none' when there is
    none."""
    rates = Counter(p.rate_gbps for p in ports)
    if not rates:
        return "none"
    ordered = sorted(rates.items(), key=lambda kv: -(kv[0] or 0.0))
    return " + ".join(
        f"{n} × {f'{rate:g} Gb/s' if rate else 'rate not reported'}" for rate, n in ordered
    )


def nccl_devices(transport: NcclTransport | None) -> set[str]:
    """The HCAs NCCL said it uses ('mlx5_5:1/RoCE' -> 'mlx5_5'); empty when it did not say or used
    sockets."""
    if transport is None or transport.network != "IB":
        return set()
    return {d.split(":", 1)[0] for d in transport.devices}


def rails(cluster: ClusterEvidence, transport: NcclTransport | None) -> tuple[int, float] | None:
    """NICs per node NCCL can drive and their rate in Gb/s: the Active ports at each node's fastest
    rate (only the HCAs NCCL named, when it named some), the smallest count over the nodes. None
    without a port inventory."""
    named = nccl_devices(transport)
    per_node: list[tuple[int, float]] = []
    for node in cluster.nodes:
        ports = [p for p in active_ports(node) if p.rate_gbps and (not named or p.device in named)]
        if not ports:
            continue
        fastest = max(p.rate_gbps or 0.0 for p in ports)
        per_node.append((sum(1 for p in ports if p.rate_gbps == fastest), fastest))
    if not per_node:
        return None
    return min(n for n, _ in per_node), min(rate for _, rate in per_node)


def assumed_rails(cluster: ClusterEvidence, catalog: Catalog) -> tuple[int, float] | None:
    """Without a port inventory: one NIC per GPU at the typical rate of the nodes' GPU class (the
    planner's own table, core.catalog.network), or None when no node names a GPU the catalog
    knows."""
    for node in cluster.nodes:
        if not node.facts.gpu_model:
            continue
        try:
            gpu = catalog.gpu(node.facts.gpu_model)
        except CatalogError:
            continue
        per_node = max(1, node.facts.gpu_count or 1)
        rate = float(network.typical_gpu_net_gbps(gpu.intra_node_link, gpu.architecture, per_node))
        return per_node, rate
    return None


def rdma_nodes(cluster: ClusterEvidence) -> list[str]:
    return [n.node for n in cluster.nodes if active_ports(n)]


def cluster_transport(cluster: ClusterEvidence) -> NcclTransport | None:
    """NCCL's transport between the nodes: the all_reduce sweep's, the sanity check's, else
    nccl-tests' own lines."""
    for run in (cluster.allreduce, cluster.distributed):
        if run is not None and run.backend == "nccl" and run.transport is not None:
            return run.transport
    coll = cluster.nccl_tests
    if coll is None or coll.net is None:
        return None
    kind = "Socket" if "NET/Socket" in coll.net else "IB" if "NET/IB" in coll.net else coll.net
    devices = [
        part.split("]", 1)[1].split()[0]
        for part in coll.net.split("[")[1:]
        if "]" in part and part.split("]", 1)[1].split()
    ]
    if kind == "Socket":
        devices = [d.split(":", 1)[0] for d in devices]
    return NcclTransport(
        network=kind, devices=devices, gdr=coll.gdr, nccl_version=coll.nccl_version
    )


# --------------------------------------------------------------------------- ports and affinity


def check_hca_ports(cluster: ClusterEvidence) -> Check | None:
    """Every node has the same Active RDMA ports at the same rates (a slower node slows every ring
    through it)."""
    with_ports = [n for n in cluster.nodes if n.facts.hca_ports]
    if not with_ports:
        return None
    signatures = {
        n.node: _signature(active_ports(n))
        for n in cluster.nodes
        if n.state == "completed" or n.facts.hca_ports
    }
    measured = "; ".join(f"{node}: {sig}" for node, sig in signatures.items())
    expected = "the same Active RDMA ports at the same rate on every node"
    name = "RDMA ports across nodes"
    if len(set(signatures.values())) > 1:
        common, _ = Counter(signatures.values()).most_common(1)[0]
        odd = [f"{node} has {sig}" for node, sig in signatures.items() if sig != common]
        return check(
            "network",
            name,
            FAIL,
            measured,
            expected,
            T.IB_SOURCE,
            f"{'; '.join(odd)} where the others have {common}: rings run at the slowest node's "
            "rate",
        )
    down = [
        f"{n.node} {p.device}/{p.port} {p.state or '?'}"
        for n in with_ports
        for p in n.facts.hca_ports
        if (p.state or "").lower() != "active"
    ]
    if down:
        return check(
            "network",
            name,
            WARN,
            measured,
            expected,
            T.IB_SOURCE,
            f"ports not Active ({', '.join(down[:6])}{' …' if len(down) > 6 else ''}); "
            "each node's own card has its port check",
        )
    return check(
        "network",
        name,
        PASS,
        measured,
        expected,
        T.IB_SOURCE,
        f"every node has {next(iter(signatures.values()))} Active",
    )


def check_gpu_nic_affinity(cluster: ClusterEvidence) -> Check | None:
    """From ``nvidia-smi topo -m``: a GPU whose nearest RDMA NIC is NODE/SYS away crosses the CPU on
    every send."""
    far: dict[str, list[int]] = {}
    looked = 0
    for node in cluster.nodes:
        topo = node.facts.topology
        if topo is None or not topo.nics or not topo.gpu_nic_links:
            continue
        rdma = {p.device for p in node.facts.hca_ports}
        nics = {
            nic.index for nic in topo.nics if not rdma or nic.device is None or nic.device in rdma
        }
        gpus = sorted({g for g, _ in topo.gpu_nic_links})
        if not nics or not gpus:
            continue
        looked += 1
        close = {
            g
            for (g, nic), link in topo.gpu_nic_links.items()
            if nic in nics and link in T.CLOSE_NIC_LINKS
        }
        if [g for g in gpus if g not in close]:
            far[node.node] = [g for g in gpus if g not in close]
    if looked == 0:
        return None
    expected = "a NIC on the same PCIe root complex (PIX/PXB/PHB) for every GPU"
    name = "GPU–NIC affinity"
    measured = f"{looked - len(far)} of {plural(looked, 'node')} with a close NIC for every GPU"
    if far:
        named = "; ".join(f"{node}: {gpus_text(g)}" for node, g in far.items())
        return check(
            "network",
            name,
            WARN,
            measured,
            expected,
            T.AFFINITY_SOURCE,
            f"GPUs reach their nearest NIC only across the CPU (NODE/SYS): {named}",
        )
    return check(
        "network", name, PASS, measured, expected, T.AFFINITY_SOURCE, "every GPU has a close NIC"
    )


# --------------------------------------------------------------------------- NCCL's transport


def check_transport(cluster: ClusterEvidence) -> Check | None:
    """RDMA (NET/IB or a net plugin) passes; TCP sockets fail where RDMA ports are up, and warn
    where there are none."""
    transport = cluster_transport(cluster)
    if transport is None or transport.network is None:
        return None
    net = transport.network
    via = ", ".join(transport.devices) or ", ".join(transport.channels_via) or "devices not listed"
    gdr = {True: "on", False: "off", None: "unknown"}[transport.gdr]
    measured = f"{net} ({via}); GPUDirect RDMA {gdr}" + (
        f"; bootstrap over {transport.oob_interface}" if transport.oob_interface else ""
    )
    expected = "NET/IB or an RDMA net plugin (OFI/EFA, TCPX) between the nodes"
    name = "NCCL transport between nodes"
    up = rdma_nodes(cluster)
    if net == "Socket":
        if up:
            return check(
                "network",
                name,
                FAIL,
                measured,
                expected,
                T.IFACE_SOURCE,
                f"NCCL fell back to TCP sockets although RDMA ports are Active on {', '.join(up)} "
                "(check NCCL_IB_HCA, NCCL_IB_DISABLE, the container's /dev/infiniband)",
            )
        return check(
            "network",
            name,
            WARN,
            measured,
            expected,
            T.TCP_SOURCE,
            f"{T.TCP_ONLY_VERDICT} (about 4–6 GB/s over 100G TCP)",
        )
    if net in RDMA_NETWORKS and transport.gdr is False and up:
        return check(
            "network",
            name,
            WARN,
            measured,
            expected,
            T.IFACE_SOURCE,
            "GPUDirect RDMA is off (GDR 0): every send is staged through host memory",
        )
    what = "NET/IB" if net in RDMA_NETWORKS else f"its {net} net plugin"
    return check(
        "network",
        name,
        PASS,
        measured,
        expected,
        T.IFACE_SOURCE,
        f"NCCL uses {what} between the nodes",
    )


# --------------------------------------------------------------------------- busbw between the
# nodes


def _grade_busbw(
    name: str, coll: CollectiveResult, cluster: ClusterEvidence, backend: str, catalog: Catalog
) -> Check:
    """One inter-node busbw line: in-place busbw at the largest size against NICs × per-NIC figure
    (the NICs assumed from the GPU class when no node reported its ports: then it warns at worst,
    never fails)."""
    found = busbw_at_largest(coll)
    if found is None:
        return check(
            "network",
            name,
            FAIL if coll.failures else INFO,
            "no bandwidth figure",
            "—",
            T.NCCL_INTER_SOURCE,
            "the collective across the nodes printed no result",
        )
    value, size = found
    measured = f"{value:,.1f} GB/s" + (f" at {size_label(size)}" if size else " (average)")
    cut = common.sweep_cut(coll)
    if cut:
        return common.partial_line("network", name, measured, cut)
    if backend == "gloo":
        return check(
            "network",
            name,
            INFO,
            measured,
            "—",
            T.NCCL_INTER_SOURCE,
            "gloo on CPUs: the data goes through the hosts' TCP stacks, so this is not a NIC test "
            "and is not graded against NIC figures",
        )
    transport = cluster_transport(cluster)
    sockets = transport is not None and transport.network == "Socket"
    found_rails = rails(cluster, transport)
    assumed = found_rails is None and not sockets
    if assumed:
        found_rails = assumed_rails(cluster, catalog)
    if found_rails is None:
        why = (
            "over TCP sockets with no RDMA port to grade against (see the transport line)"
            if sockets
            else "no node reported its RDMA ports or a GPU the catalog knows, so there is no NIC "
            "figure to grade against"
        )
        return check("network", name, INFO, measured, "—", T.NCCL_INTER_SOURCE, why)
    count, rate = found_rails
    torch_bench = coll.tool == "torch_all_reduce_bench"
    reference = (
        count
        * rate
        / 8
        * T.NCCL_PER_NIC_EFFICIENCY
        * (T.TORCH_BENCH_FACTOR if torch_bench else 1.0)
    )
    expected = (
        f"≥ {T.NCCL_INTER_BAND.pass_at * reference:,.0f} GB/s ({T.NCCL_INTER_BAND.pass_at:.0%} of "
        f"{count} × {rate:g} Gb/s per node ≈ {reference:,.0f} GB/s)"
    )
    ratio = value / reference
    status: CheckStatus = grade(ratio, T.NCCL_INTER_BAND)
    reason = (
        f"{ratio:.0%} of the {reference:,.0f} GB/s that {plural(count, 'NIC')} of {rate:g} Gb/s "
        "carry"
    )
    if status is not PASS and size and size < T.NCCL_PLATEAU_BYTES:
        status = cap(status, WARN)
        reason += (
            f"; the largest message ({size_label(size)}) is below 1 GiB, so the curve has not "
            "reached its peak"
        )
    if assumed:
        expected += " (NICs assumed for this GPU class: no node reported its ports)"
        if status is FAIL:
            status = WARN
            reason += "; the NIC rate was assumed, so this is not graded as a failure"
    source = T.NCCL_INTER_SOURCE + (
        f"; blocking torch benchmark −5 % ({T.TORCH_BENCH_SOURCE})" if torch_bench else ""
    )
    return check("network", name, status, measured, expected, source, reason)


def check_inter_node_busbw(cluster: ClusterEvidence, catalog: Catalog) -> Check | None:
    """The all_reduce sweep torchrun ran across all nodes (NCCL on GPUs, gloo without)."""
    run = cluster.allreduce
    if run is None:
        return None
    if run.collective is None:
        return check(
            "network",
            "All-reduce busbw between nodes",
            FAIL if run.error else INFO,
            "no result",
            "—",
            T.NCCL_INTER_SOURCE,
            run.error or "the sweep across the nodes gave no figure",
        )
    return _grade_busbw(
        "All-reduce busbw between nodes", run.collective, cluster, run.backend, catalog
    )


def _integrity(coll: CollectiveResult) -> list[str]:
    problems = []
    if coll.wrong_total > 0:
        problems.append(f"{coll.wrong_total} wrong results (#wrong)")
    if coll.out_of_bounds_ok is False:
        problems.append(f"out-of-bounds values: {coll.out_of_bounds}")
    if coll.failures:
        problems.append(f"error: {coll.failures[0][:100]}")
    if (
        coll.tool in ("nccl-tests", "rccl-tests")
        and not coll.completed
        and not common.sweep_cut(coll)
    ):
        problems.append("no footer: the run did not finish or the output was cut")
    return problems


def check_nccl_tests(cluster: ClusterEvidence, catalog: Catalog) -> Check | None:
    """nccl-tests under mpirun/srun across the nodes, when the nodes have it: integrity first, then
    busbw."""
    coll = cluster.nccl_tests
    if coll is None:
        return None
    launcher = f" ({cluster.nccl_tests_launcher})" if cluster.nccl_tests_launcher else ""
    name = f"nccl-tests between nodes{launcher}"
    graded = _grade_busbw(name, coll, cluster, "nccl", catalog)
    problems = _integrity(coll)
    if problems:
        return graded.model_copy(update={"status": FAIL, "reason": "; ".join(problems)})
    return graded


# --------------------------------------------------------------------------- ib_write_bw between
# node pairs


def _port_rate(node: NodeReport | None, device: str | None) -> float | None:
    if node is None:
        return None
    ports = active_ports(node)
    named = [p.rate_gbps for p in ports if device and p.device == device and p.rate_gbps]
    if named:
        return named[0]
    rates = [p.rate_gbps for p in ports if p.rate_gbps]
    return max(rates) if rates else None


def _pair_status(cluster: ClusterEvidence, pair: PairBandwidth) -> tuple[CheckStatus, str]:
    label = f"{pair.client}→{pair.server}" + (f" {pair.device}" if pair.device else "")
    if pair.error or pair.result is None:
        return FAIL, f"{label}: {(pair.error or 'no result').rstrip('.')}"
    measured = pair.result.best_avg_gbps
    if measured is None:
        return INFO, f"{label}: bandwidth not in Gb/s (run with --report_gbits)"
    rate = _port_rate(cluster.node(pair.client), pair.device or pair.result.device)
    if rate is None:
        return INFO, f"{label}: {measured:,.1f} Gb/s (port rate not reported)"
    ratio = measured / rate
    return grade(
        ratio, T.IB_WRITE_BW_BAND
    ), f"{label}: {measured:,.1f} of {rate:g} Gb/s ({ratio:.0%})"


def check_ib_write_bw(cluster: ClusterEvidence) -> Check | None:
    """ib_write_bw between node pairs against the port rate: ≥ 90 % passes, 75–90 % warns, below
    fails."""
    if not cluster.ib_write_bw:
        return None
    graded = [_pair_status(cluster, pair) for pair in cluster.ib_write_bw]
    status = worst(s for s, _ in graded)
    if all(s is INFO for s, _ in graded):
        status = INFO
    measured = "; ".join(text for _, text in graded)
    expected = f"≥ {T.IB_WRITE_BW_BAND.pass_at:.0%} of the port rate on every pair"
    bad = [text for s, text in graded if s in (FAIL, WARN)]
    reason = (
        ("below line rate: " + "; ".join(bad))
        if bad
        else (
            "every pair near line rate"
            if status is PASS
            else "no pair could be graded against a port rate"
        )
    )
    return check(
        "network",
        "ib_write_bw between nodes",
        status,
        measured,
        expected,
        T.IB_WRITE_BW_SOURCE,
        reason,
    )


__all__ = [
    "active_ports",
    "assumed_rails",
    "cluster_transport",
    "nccl_devices",
    "network_checks",
    "rails",
    "rdma_nodes",
]
