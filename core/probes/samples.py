"""Typed results of the probe parsers.

Parsers read text that a remote tool printed; these models are what the rest of the app sees, so the
scorecard and the charts never touch tool-specific text. Units are in the field names (bytes, W, °C,
MHz, GB/s = 1e9 B/s as nccl-tests prints, Gb/s for NIC rates). ``None`` means the tool did not
report the value (``N/A``, ``[Not Supported]``, ``-``) or the output was cut before it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, field_validator

T = TypeVar("T")


class ParseResult(BaseModel, Generic[T]):
    """What a parser could read, plus why it could not read the rest.

    ``value`` is ``None`` only when nothing usable was found; partial output gives a partial value
    and at least one warning.
    """

    value: T | None = None
    warnings: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when a value was read and nothing looked wrong with the text."""
        return self.value is not None and not self.warnings


# --------------------------------------------------------------------------------------------- GPUs


class GpuInfo(BaseModel):
    """Inventory of one GPU: what the box claims to be."""

    index: int
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    driver: str | None = None
    cuda_version: str | None = None
    vbios: str | None = None
    architecture: str | None = None
    compute_cap: str | None = None
    memory_total_bytes: int | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    persistence_mode: bool | None = None
    mig_mode: str | None = Field(default=None, description="'Enabled', 'Disabled' or None when N/A")
    ecc_mode: str | None = None
    compute_mode: str | None = None
    virtualization_mode: str | None = Field(
        default=None, description="e.g. 'Pass-Through' inside a VM"
    )
    power_limit_w: float | None = None
    max_sm_clock_mhz: float | None = None
    max_mem_clock_mhz: float | None = None
    fabric_state: str | None = None
    fabric_status: str | None = None


class GpuMetric(BaseModel):
    """One sample of one GPU's live state (a dmon line, a query-gpu CSV row, a -q snapshot)."""

    t: float = Field(description="seconds since the first sample of the same output or stream")
    gpu: int = Field(description="GPU index as the tool printed it (or order of appearance)")
    wall_time: datetime | None = Field(
        default=None, description="tool timestamp when it printed one"
    )
    util_pct: float | None = None
    mem_util_pct: float | None = Field(
        default=None, description="memory-controller busy %, not bytes"
    )
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    temp_c: float | None = None
    mem_temp_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    clocks_event_mask: int | None = Field(
        default=None, description="clocks_event_reasons.active bitmask"
    )
    clocks_event_reasons: list[str] = Field(
        default_factory=list, description="active reasons, query-gpu names such as 'hw_slowdown'"
    )


class GpuHealth(BaseModel):
    """Error counters of one GPU: ECC, retired pages, remapped rows, throttling, reset state."""

    index: int
    pci_bus_id: str | None = None
    ecc_volatile_correctable: int | None = Field(
        default=None, description="SBE: SRAM + DRAM correctable"
    )
    ecc_volatile_uncorrectable: int | None = Field(default=None, description="DBE: SRAM + DRAM")
    ecc_aggregate_correctable: int | None = None
    ecc_aggregate_uncorrectable: int | None = None
    ecc_aggregate_sram_correctable: int | None = None
    ecc_aggregate_sram_uncorrectable: int | None = None
    sram_threshold_exceeded: bool | None = None
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = Field(default=None, description="'Pending Page Blacklist'")
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    remap_histogram: dict[str, int] = Field(
        default_factory=dict, description="bank remap availability: max/high/partial/low/none"
    )
    clocks_event_reasons: list[str] = Field(default_factory=list)
    reset_required: bool | None = None
    drain_and_reset_recommended: bool | None = None
    pcie_replays: int | None = None
    recovery_action: str | None = None


class NvidiaSmiReport(BaseModel):
    """Everything one nvidia-smi invocation told us (-q, --query-gpu CSV or the default table)."""

    driver_version: str | None = None
    cuda_version: str | None = None
    attached_gpus: int | None = Field(default=None, description="count the tool announced, if any")
    gpus: list[GpuInfo] = Field(default_factory=list)
    health: list[GpuHealth] = Field(default_factory=list)
    metrics: list[GpuMetric] = Field(default_factory=list)


# ----------------------------------------------------------------------------------- kernel log


XidSeverity = Literal["FAIL", "WARN", "INFO", "UNKNOWN"]


class XidEvent(BaseModel):
    """One ``NVRM: Xid`` kernel line with its meaning from NVIDIA's Xid catalog."""

    code: int
    pci: str | None = None
    pid: int | None = None
    process: str | None = None
    message: str = ""
    meaning: str | None = None
    action: str | None = Field(
        default=None, description="NVIDIA's resolution bucket, e.g. RESET_GPU"
    )
    severity: XidSeverity = "UNKNOWN"
    timestamp: str | None = Field(default=None, description="as printed (dmesg -T, ISO or uptime)")
    line_no: int = Field(default=0, description="1-based line in the scanned text")


class SxidEvent(BaseModel):
    """One NVSwitch ``SXid`` kernel line."""

    code: int
    switch: int | None = None
    pci: str | None = None
    fatal: bool | None = None
    message: str = ""
    timestamp: str | None = None
    line_no: int = 0


KernelEventKind = Literal[
    "oom",
    "gpu_reset_needed",
    "gpu_fell_off_bus",
    "pcie_downtrained",
    "segfault",
    "hung_task",
    "machine_check",
    "nvlink_error",
]


class KernelEvent(BaseModel):
    """A non-Xid kernel line that matters for node readiness."""

    kind: KernelEventKind
    message: str
    timestamp: str | None = None
    line_no: int = 0


class KernelLogScan(BaseModel):
    """Result of scanning ``dmesg`` / ``journalctl -k`` text."""

    xids: list[XidEvent] = Field(default_factory=list)
    sxids: list[SxidEvent] = Field(default_factory=list)
    events: list[KernelEvent] = Field(default_factory=list)
    gpu_uuids: dict[str, str] = Field(default_factory=dict, description="PCI address -> GPU UUID")

    @property
    def xid_codes(self) -> list[int]:
        """Distinct Xid codes, ascending."""
        return sorted({x.code for x in self.xids})


# ------------------------------------------------------------------------------------- topology


def _pair_key(value: Any) -> Any:
    """JSON turns (i, j) keys into 'i,j' strings; turn them back."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and "," in key:
                left, _, right = key.partition(",")
                out[(int(left), int(right))] = item
            else:
                out[key] = item
        return out
    return value


class TopoGpu(BaseModel):
    index: int
    cpu_affinity: str | None = None
    numa_affinity: str | None = None
    gpu_numa_id: str | None = None


class TopoNic(BaseModel):
    index: int
    label: str = Field(description="column label, e.g. 'NIC0' (or 'mlx5_0' on old drivers)")
    device: str | None = Field(default=None, description="from the NIC Legend, e.g. 'mlx5_0'")


class TopologyMatrix(BaseModel):
    """``nvidia-smi topo -m``: how each GPU reaches every other GPU and each NIC."""

    gpus: list[TopoGpu] = Field(default_factory=list)
    nics: list[TopoNic] = Field(default_factory=list)
    links: dict[tuple[int, int], str] = Field(
        default_factory=dict,
        description="(gpu i, gpu j) -> 'NV18', 'PIX', 'PXB', 'PHB', 'NODE', 'SYS'",
    )
    gpu_nic_links: dict[tuple[int, int], str] = Field(
        default_factory=dict, description="(gpu i, nic j) -> link type"
    )

    @field_validator("links", "gpu_nic_links", mode="before")
    @classmethod
    def _normalise_links(cls, value: Any) -> Any:
        return _pair_key(value)

    def link(self, i: int, j: int) -> str | None:
        """Link type between GPU i and GPU j ('X' on the diagonal)."""
        return self.links.get((i, j))


class NvlinkStatus(BaseModel):
    """``nvidia-smi nvlink --status`` for one GPU."""

    gpu: int
    name: str | None = None
    uuid: str | None = None
    link_speeds_gbps: list[float | None] = Field(
        default_factory=list, description="GB/s per link, index = link number, None = inactive"
    )
    all_inactive: bool = False

    @property
    def inactive_links(self) -> list[int]:
        return [i for i, speed in enumerate(self.link_speeds_gbps) if speed is None]


# --------------------------------------------------------------------------------- collectives


class CollectiveTiming(BaseModel):
    time_us: float | None = None
    algbw_gbps: float | None = Field(default=None, description="GB/s, 1e9 bytes")
    busbw_gbps: float | None = Field(default=None, description="GB/s, 1e9 bytes")
    wrong: int | None = Field(default=None, description="#wrong; None when the tool printed N/A")


class CollectiveRow(BaseModel):
    size_bytes: int
    count: int | None = None
    dtype: str | None = None
    redop: str | None = None
    root: int | None = None
    out_of_place: CollectiveTiming | None = None
    in_place: CollectiveTiming | None = None


class CollectiveDevice(BaseModel):
    rank: int
    host: str | None = None
    device: int | None = None
    pci: str | None = None
    name: str | None = None


class CollectiveResult(BaseModel):
    """One collective benchmark run (nccl-tests, rccl-tests or the torch fallback table)."""

    tool: Literal["nccl-tests", "rccl-tests", "torch_all_reduce_bench", "unknown"] = "unknown"
    op: str | None = Field(default=None, description="e.g. 'all_reduce'")
    nranks: int | None = None
    nranks_inferred: bool = Field(default=False, description="True when derived from busbw/algbw")
    devices: list[CollectiveDevice] = Field(default_factory=list)
    rows: list[CollectiveRow] = Field(default_factory=list)
    avg_busbw: float | None = Field(
        default=None, description="the '# Avg bus bandwidth' line, GB/s"
    )
    avg_busbw_ok: bool | None = Field(default=None, description="False when the line says FAILED")
    peak_busbw: float | None = Field(default=None, description="max busbw over all rows, GB/s")
    peak_busbw_size_bytes: int | None = None
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    wrong_total: int = 0
    completed: bool = Field(default=False, description="the footer was seen")
    failures: list[str] = Field(
        default_factory=list, description="'Test NCCL failure ...' and alike"
    )
    nccl_version: str | None = None
    tests_version: str | None = None
    net: str | None = Field(
        default=None, description="NCCL INFO 'NET/IB : Using ...' line, trimmed"
    )
    gdr: bool | None = Field(default=None, description="GPUDirect RDMA, from NCCL_DEBUG=INFO lines")
    algo: str | None = Field(default=None, description="NCCL_ALGO when set by environment")
    planned_sizes: list[int] = Field(
        default_factory=list,
        description="the message sizes the sweep was started "
        "with, from its header line (minBytes, maxBytes, step); empty: not known",
    )

    @property
    def unreached_sizes(self) -> list[int]:
        """The planned sizes beyond the largest result row: the sweep was cut before them (a sweep
        runs its sizes in order). Empty for a whole sweep, or when the plan is not known. A tool
        rounds a size down to whole elements (nccl-tests: count = bytes / word size), so a size up
        to 8 bytes above the last row is reached."""
        largest = max((row.size_bytes for row in self.rows), default=0)
        return [size for size in self.planned_sizes if size > largest + 8]


# ------------------------------------------------------------------------------------- storage


class FioDirection(BaseModel):
    """Read or write side of one fio job."""

    io_bytes: int | None = None
    bw_bytes_per_s: float | None = None
    iops: float | None = None
    runtime_s: float | None = None
    total_ios: int | None = None
    clat_mean_ns: float | None = None
    clat_p50_ns: float | None = None
    clat_p99_ns: float | None = None
    clat_p999_ns: float | None = None
    lat_mean_ns: float | None = None


class FioJob(BaseModel):
    name: str
    rw: str | None = None
    bs: str | None = None
    iodepth: int | None = None
    numjobs: int | None = None
    error: int | None = None
    runtime_s: float | None = None
    read: FioDirection | None = None
    write: FioDirection | None = None


class FioResult(BaseModel):
    fio_version: str | None = None
    jobs: list[FioJob] = Field(default_factory=list)
    disk_util_pct: dict[str, float] = Field(default_factory=dict)
    truncated: bool = Field(default=False, description="the JSON was cut and repaired")


# ------------------------------------------------------------------------------------- network


class IbPort(BaseModel):
    device: str
    port: int
    ca_type: str | None = None
    firmware: str | None = None
    state: str | None = Field(default=None, description="'Active', 'Down', 'Initializing', 'Armed'")
    phys_state: str | None = Field(default=None, description="'LinkUp', 'Disabled', 'Polling'")
    rate_gbps: float | None = None
    width: str | None = Field(default=None, description="ibstatus only, e.g. '4X'")
    speed: str | None = Field(default=None, description="ibstatus only, e.g. 'HDR'")
    link_layer: str | None = Field(default=None, description="'InfiniBand' or 'Ethernet' (RoCE)")


class IbInventory(BaseModel):
    ports: list[IbPort] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list, description="e.g. the 'ibpanic:' line")


class PerftestRow(BaseModel):
    size_bytes: int
    iterations: int | None = None
    bw_peak: float | None = None
    bw_avg: float | None = None
    msg_rate_mpps: float | None = None


class PerftestResult(BaseModel):
    """``ib_write_bw`` / ``ib_read_bw`` (perftest) sweep, bandwidth in the unit the tool printed."""

    test: str | None = Field(default=None, description="e.g. 'RDMA_Write BW Test'")
    device: str | None = None
    qps: int | None = None
    link_type: str | None = None
    connection_type: str | None = None
    mtu_bytes: int | None = None
    gid_index: int | None = None
    use_cuda: bool = False
    unit: Literal["Gb/sec", "MB/sec"] | None = None
    rows: list[PerftestRow] = Field(default_factory=list)

    @property
    def best_avg_gbps(self) -> float | None:
        """Highest average bandwidth in Gb/s, only when the run used --report_gbits."""
        values = [r.bw_avg for r in self.rows if r.bw_avg is not None]
        return max(values) if values and self.unit == "Gb/sec" else None


class LinkFlap(BaseModel):
    interface: str
    lost: int = 0
    gained: int = 0
    first_seen: str | None = None
    last_seen: str | None = None


__all__ = [
    "CollectiveDevice",
    "CollectiveResult",
    "CollectiveRow",
    "CollectiveTiming",
    "FioDirection",
    "FioJob",
    "FioResult",
    "GpuHealth",
    "GpuInfo",
    "GpuMetric",
    "IbInventory",
    "IbPort",
    "KernelEvent",
    "KernelLogScan",
    "LinkFlap",
    "NvidiaSmiReport",
    "NvlinkStatus",
    "ParseResult",
    "PerftestResult",
    "PerftestRow",
    "SxidEvent",
    "TopoGpu",
    "TopoNic",
    "TopologyMatrix",
    "XidEvent",
    "XidSeverity",
]
