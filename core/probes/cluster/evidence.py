"""What a cluster run found: each node's own run in short, how far the nodes agree, and what crossed
the network.

A cluster run is one row in the probe history with this evidence (``ProbeEvidence.cluster``) beside
one row per node with that node's own single-host run, so a node's figures read exactly as a
single-host run's do and the cluster row holds only what needs more than one node: agreement, the
rendezvous, and the collectives between nodes. The scorecard's cluster checks
(core.probes.scorecard.cluster) read only this.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.probes.samples import CollectiveResult, IbPort, PerftestResult, TopologyMatrix

NodeState = Literal[
    "completed", "incomplete", "cancelled", "interrupted", "failed", "unreachable", "running"
]


class NodeFacts(BaseModel):
    """What the nodes must agree on, read from each node's own run (None: that node did not report
    it)."""

    hostname: str | None = None
    gpu_model: str | None = None
    gpu_count: int | None = None
    driver: str | None = None
    cuda: str | None = None
    nccl: str | None = None
    torch: str | None = None
    kernel: str | None = None
    clock_offset_s: float | None = Field(
        default=None,
        description="node clock minus this machine's clock, half the round trip taken off",
    )
    hca_ports: list[IbPort] = Field(
        default_factory=list, description="ibstat / ibv_devinfo: every HCA port"
    )
    topology: TopologyMatrix | None = Field(
        default=None, description="nvidia-smi topo -m: GPU <-> NIC/NUMA"
    )


class NodeReport(BaseModel):
    """One node of the cluster: its own run (a row of its own in the history) and what it told
    us."""

    node: str = Field(
        description="the label its run is filed under (the target as typed, or the Slurm node)"
    )
    run_id: int | None = Field(
        default=None, description="its single-host run; None when it never started"
    )
    state: NodeState
    verdict: str | None = Field(
        default=None, description="its own scorecard's verdict, e.g. 'READY'"
    )
    error: str | None = Field(default=None, description="why it failed or hung, in one sentence")
    address: str | None = Field(default=None, description="the address the other nodes reach it at")
    interface: str | None = Field(
        default=None, description="the interface that address is on (e.g. 'eth0')"
    )
    facts: NodeFacts = Field(default_factory=NodeFacts)


class AgreementRow(BaseModel):
    """One property compared across nodes: each node's value, and whether they all agree."""

    field: str = Field(description="a NodeFacts field name, e.g. 'driver'")
    values: dict[str, str | None] = Field(description="node -> its value (None: not reported)")
    agree: bool


class Rendezvous(BaseModel):
    """The rendezvous port on the first node, tried from every other node before torchrun is
    started."""

    host: str
    port: int
    node: str | None = Field(
        default=None, description="the node it runs on (the first node that answers)"
    )
    reached_from: dict[str, bool] = Field(
        default_factory=dict, description="node -> its TCP connect succeeded"
    )
    errors: dict[str, str] = Field(
        default_factory=dict, description="node -> why it could not connect"
    )

    @property
    def ok(self) -> bool:
        return bool(self.reached_from) and all(self.reached_from.values())


class NcclTransport(BaseModel):
    """Which network NCCL chose, from its ``NCCL_DEBUG=INFO`` lines (``NET/IB : Using
    [0]mlx5_0:1/IB``, ``NET/Socket : Using [0]eth0:10.0.0.1<0>``, ``Channel 00/0 : 0[0] -> 1[0]
    [send] via NET/IB/1``)."""

    network: str | None = Field(
        default=None, description="'IB', 'Socket', or a plugin's name (e.g. 'AWS Libfabric')"
    )
    devices: list[str] = Field(
        default_factory=list, description="what NCCL uses, e.g. ['mlx5_5:1/RoCE'] or ['eth0']"
    )
    oob_interface: str | None = Field(
        default=None, description="the bootstrap (out-of-band) interface"
    )
    channels_via: list[str] = Field(
        default_factory=list, description="distinct 'via' paths, e.g. ['NET/IB/1']"
    )
    gdr: bool | None = Field(
        default=None, description="GPUDirect RDMA on (GDR 1 / GDRDMA), off (GDR 0)"
    )
    plugin: str | None = Field(
        default=None, description="the net plugin line, when NCCL printed one"
    )
    nccl_version: str | None = None


class InterNodeRun(BaseModel):
    """One torchrun across all nodes (c10d rendezvous): the sanity check's ranks, or the all_reduce
    sweep."""

    backend: Literal["nccl", "gloo"]
    nnodes: int
    nproc_per_node: int
    world_size: int
    nodes: list[str] = Field(default_factory=list, description="the nodes that took part")
    ranks: list[dict[str, str]] = Field(
        default_factory=list,
        description="RANK, LOCAL_RANK, WORLD_SIZE, host per rank (sanity check)",
    )
    all_reduce_ok: bool | None = Field(
        default=None, description="the sanity check's exact sum (None: sweep)"
    )
    collective: CollectiveResult | None = Field(
        default=None, description="the all_reduce sweep (busbw)"
    )
    transport: NcclTransport | None = None
    error: str | None = None
    failed_node: str | None = Field(
        default=None, description="the node whose launch failed or hung first"
    )


class PairBandwidth(BaseModel):
    """``ib_write_bw`` from one node to another on one HCA."""

    client: str
    server: str
    device: str | None = None
    result: PerftestResult | None = None
    error: str | None = None


class DcgmDiag(BaseModel):
    """``dcgmi diag -r LEVEL`` on one node: each test's result as DCGM printed it."""

    node: str
    level: int
    results: dict[str, str] = Field(
        default_factory=dict, description="test -> 'Pass', 'Fail', 'Warn', 'Skip'"
    )
    error: str | None = None

    @property
    def passed(self) -> bool:
        # DCGM prints a cell as a word and its detail ("Pass - All", "Fail - GPU: 0"): the word
        # decides.
        return self.error is None and all(
            (v.split() or [""])[0].lower() in ("pass", "skip") for v in self.results.values()
        )


class ClusterEvidence(BaseModel):
    """The cluster row's evidence (``ProbeEvidence.cluster``); each part stays empty until its step
    ran."""

    nodes: list[NodeReport] = Field(default_factory=list)
    agreement: list[AgreementRow] = Field(default_factory=list)
    rendezvous: Rendezvous | None = None
    distributed: InterNodeRun | None = None
    allreduce: InterNodeRun | None = None
    nccl_tests: CollectiveResult | None = Field(
        default=None, description="nccl-tests under mpirun or srun"
    )
    nccl_tests_launcher: str | None = Field(default=None, description="'mpirun' or 'srun'")
    ib_write_bw: list[PairBandwidth] = Field(default_factory=list)
    dcgm: list[DcgmDiag] = Field(default_factory=list)
    slurm_job: str | None = Field(
        default=None, description="the allocation's job id (probe --slurm)"
    )

    def node(self, name: str) -> NodeReport | None:
        return next((n for n in self.nodes if n.node == name), None)

    @property
    def failed_nodes(self) -> dict[str, str]:
        """Nodes that did not run to their end -> why, in one sentence."""
        return {
            n.node: n.error or n.state
            for n in self.nodes
            if n.state not in ("completed", "running")
        }


__all__ = [
    "AgreementRow",
    "ClusterEvidence",
    "DcgmDiag",
    "InterNodeRun",
    "NcclTransport",
    "NodeFacts",
    "NodeReport",
    "NodeState",
    "PairBandwidth",
    "Rendezvous",
]
