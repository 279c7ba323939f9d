"""What a probe run found, as typed evidence: the contract between the runner, the scorecard,
reports and the GUI.

The runner fills a `ProbeEvidence` probe by probe (each part stays None until its probe ran); the
scorecard reads only this, so it can be tested on replayed fixtures and real runs alike. Events
stream to the GUI and CLI while the run goes on.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from core.probes.cluster.evidence import ClusterEvidence
from core.probes.samples import (
    CollectiveResult,
    FioResult,
    GpuInfo,
    IbInventory,
    KernelLogScan,
    NvidiaSmiReport,
    NvlinkStatus,
    TopologyMatrix,
)
from core.probes.step_spec import StepResult


class HostInventory(BaseModel):
    """The box as it describes itself (OS, CPU, RAM, disks, container/VM, accelerators)."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    cpu_model: str | None = None
    cpu_cores: int | None = None
    ram_bytes: int | None = None
    virtualization: str | None = None  # e.g. "kvm", "docker", "none"
    python: str | None = None
    torch: str | None = None
    cuda_available: bool | None = None
    nvidia: NvidiaSmiReport | None = None  # None: no NVIDIA GPU / driver found
    topology: TopologyMatrix | None = None
    nvlink: list[NvlinkStatus] | None = None
    infiniband: IbInventory | None = None
    filesystems: list[dict[str, str]] = Field(default_factory=list)  # mount, type, size, free
    nics: list[dict[str, str]] = Field(default_factory=list)  # name, speed, state


class ComputeResult(BaseModel):
    """Dense matmul throughput per device (bf16 on GPUs, fp32 on a CPU-only host)."""

    device: str  # "cuda" or "cpu"
    dtype: str
    matrix_size: int
    tflops_per_device: list[float]
    reference_tflops: float | None = None  # catalog peak for the GPU found
    reference_source: str | None = None


class StorageResult(BaseModel):
    """fio (or the fallback) at one path the user named."""

    path: str
    role: Literal["data", "checkpoint", "scratch"]
    tool: Literal["fio", "dd", "python"]
    free_bytes: int | None = None
    filesystem: str | None = None
    seq_read_bytes_per_s: float | None = None
    seq_write_bytes_per_s: float | None = None
    rand_read_iops: float | None = None
    rand_read_p99_ms: float | None = None
    small_file_ops_per_s: float | None = None  # create + stat + read of small files
    fio: list[FioResult] = Field(default_factory=list)
    skipped_reason: str | None = None
    # A step that ran and gave no figure ('small files': 'OSError: [Errno 28] No space left on
    # device'): its check is a FAIL "not measured" on the card, never left out.
    step_failures: dict[str, str] = Field(default_factory=dict)


class DistributedResult(BaseModel):
    """torchrun sanity: every rank saw the right environment and the all_reduce sum was exact."""

    backend: str
    world_size: int
    # RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR per rank
    ranks: list[dict[str, str]] = Field(default_factory=list)
    all_reduce_ok: bool
    nccl_socket_ifname: str | None = None
    error: str | None = None


class BurnResult(BaseModel):
    """Stability burn: sustained load while sampling health."""

    duration_s: float
    completed: bool
    samples: int
    max_temp_c: float | None = None
    min_sm_clock_mhz: float | None = None
    throttle_reasons_seen: list[str] = Field(default_factory=list)
    xid_codes: list[int] = Field(default_factory=list)
    tflops_first_minute: float | None = None
    tflops_last_minute: float | None = None


class ProbeEvidence(BaseModel):
    inventory: HostInventory | None = None
    health: NvidiaSmiReport | None = None
    kernel_log: KernelLogScan | None = None
    compute: ComputeResult | None = None
    collectives: CollectiveResult | None = None
    # "nvlink", "pcie", "infiniband", "roce", "ethernet", "loopback"
    collective_interconnect: str | None = None
    storage: list[StorageResult] = Field(default_factory=list)
    distributed: DistributedResult | None = None
    burn: BurnResult | None = None
    # What a probe had gathered when its connection dropped (probe name -> what is kept, in words):
    # the figures beside it are partial. Empty when every probe that produced evidence ran to its
    # end.
    partial: dict[str, str] = Field(default_factory=dict)
    # The PCIe link read while every GPU ran matmuls (index, bus id, gen and width): links downshift
    # at idle to save power, so only this reading can show a downtrained link. None: not read (no
    # GPU, no CUDA).
    pcie_under_load: list[GpuInfo] | None = None
    # A cluster run's own row (core.probes.cluster): agreement and what crossed the network; each
    # node's figures are in that node's own run. None on a single-host run.
    cluster: ClusterEvidence | None = None
    # The training-step probe: one layer of the planned model timed on this box
    # (core.probes.step_spec).
    step: StepResult | None = None


class ProbeStatus(StrEnum):
    """How a planned probe ended. ``lost``: the connection dropped while (or before) it ran and it
    was not resumed, so what it would have measured is unknown (evidence it gathered before the drop
    is kept, marked partial). ``interrupted`` is how runs recorded before ``lost`` existed spelled
    it; it reads as ``lost``."""

    ok = "ok"
    failed = "failed"
    skipped = "skipped"
    cancelled = "cancelled"
    lost = "lost"
    interrupted = "interrupted"  # older runs only: the same as lost


class ProbeOutcome(BaseModel):
    name: str
    status: ProbeStatus
    started: float
    ended: float
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None


class Verdict(StrEnum):
    """INCOMPLETE: a planned probe was not measured (lost, cancelled, or the run was interrupted)
    and nothing that was measured failed; it is never READY, since the card cannot vouch for what it
    did not see."""

    ready = "READY"
    ready_with_warnings = "READY WITH WARNINGS"
    incomplete = "INCOMPLETE"
    not_ready = "NOT READY"


class CheckStatus(StrEnum):
    passed = "PASS"
    warn = "WARN"
    fail = "FAIL"
    info = "INFO"  # not applicable here (e.g. no NVIDIA GPU found)


class Check(BaseModel):
    """One scorecard line: what was measured, what was expected, and who says so."""

    area: Literal[
        "inventory", "health", "performance", "network", "storage", "stability", "distributed"
    ]
    name: str
    status: CheckStatus
    measured: str
    expected: str
    source: str
    reason: str


class Scorecard(BaseModel):
    # None: nothing was graded (no evidence, or only INFO lines), so there is no verdict
    verdict: Verdict | None
    checks: list[Check]
    summary: str  # one sentence: the verdict and its main reasons, or why there is no verdict
