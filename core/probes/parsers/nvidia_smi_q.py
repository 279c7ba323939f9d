"""``nvidia-smi -q`` (also ``-q -d PAGE_RETIREMENT,ECC,...``): inventory, live state and health per
GPU.

The output is an indentation tree of ``Key : value`` lines and section titles, one block per GPU
starting ``GPU 00000000:53:00.0``. Section names change between drivers (Clocks Throttle Reasons ->
Clocks Event Reasons, Power Readings -> GPU Power Readings, Power Draw -> Average/Instantaneous
Power Draw), so lookups accept several paths and a missing section is simply ``None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.probes.parsers._common import (
    clean_text,
    is_missing,
    never_raises,
    to_bool,
    to_bytes,
    to_float,
    to_int,
)
from core.probes.samples import GpuHealth, GpuInfo, GpuMetric, NvidiaSmiReport, ParseResult

_GPU_HEADER = re.compile(
    r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$"
)
_KEY_VALUE = re.compile(r"^\s*([^:]+?)\s*:\s?(.*)$")

# '-q' label -> query-gpu reason name, so both sources report the same words.
_REASON_NAMES = {
    "idle": "gpu_idle",
    "applications clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "sync boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "display clock setting": "display_clock_setting",
}


@dataclass
class _Node:
    """One line of the tree: a key with a value, or a section title with children."""

    key: str
    value: str | None
    indent: int
    children: list[_Node] = field(default_factory=list)

    def find(self, *path: str) -> _Node | None:
        node: _Node | None = self
        for name in path:
            assert node is not None
            wanted = name.lower()
            node = next((c for c in node.children if c.key.lower() == wanted), None)
            if node is None:
                return None
        return node

    def get(self, *paths: tuple[str, ...] | str) -> str | None:
        """Value at the first of ``paths`` that exists and is not N/A."""
        for path in paths:
            node = self.find(*((path,) if isinstance(path, str) else path))
            if node is not None and not is_missing(node.value):
                return node.value
        return None


def _build_tree(lines: list[str]) -> _Node:
    root = _Node("", None, -1)
    stack = [root]
    for line in lines:
        if not line.strip() or line.lstrip().startswith("="):
            continue
        expanded = line.expandtabs()
        indent = len(expanded) - len(expanded.lstrip())
        match = _KEY_VALUE.match(line)
        key, value = (
            (match.group(1).strip(), match.group(2).strip()) if match else (line.strip(), None)
        )
        node = _Node(key, value, indent)
        while len(stack) > 1 and stack[-1].indent >= indent:
            stack.pop()
        stack[-1].children.append(node)
        stack.append(node)
    return root


def _split_gpus(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Header lines and (bus id, lines) per GPU block."""
    header: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        match = _GPU_HEADER.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if match:
            blocks.append((match.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            header.append(line)
    return header, blocks


def _ecc_sums(section: _Node | None) -> tuple[int | None, int | None, int | None, int | None]:
    """(correctable, uncorrectable, SRAM correctable, SRAM uncorrectable) of one Volatile/Aggregate
    node.

    Handles the current SRAM/DRAM layout and the older 'Single Bit'/'Double Bit' -> 'Total' layout.
    """
    if section is None:
        return None, None, None, None
    single, double = section.find("Single Bit", "Total"), section.find("Double Bit", "Total")
    if single is not None or double is not None:
        return (
            to_int(single.value) if single else None,
            to_int(double.value) if double else None,
            None,
            None,
        )
    corr = uncorr = sram_corr = sram_uncorr = None
    for child in section.children:
        number = to_int(child.value)
        name = child.key.lower()
        if number is None or "threshold" in name:
            continue
        if "uncorrectable" in name:
            uncorr = (uncorr or 0) + number
            if name.startswith("sram"):
                sram_uncorr = (sram_uncorr or 0) + number
        elif "correctable" in name:
            corr = (corr or 0) + number
            if name.startswith("sram"):
                sram_corr = (sram_corr or 0) + number
    return corr, uncorr, sram_corr, sram_uncorr


def _reasons(gpu: _Node, index: int, warnings: list[str]) -> list[str]:
    section = gpu.find("Clocks Event Reasons") or gpu.find("Clocks Throttle Reasons")
    if section is None:
        return []
    active: list[str] = []
    # 'HW Thermal Slowdown' and 'HW Power Brake Slowdown' are nested under 'HW Slowdown'.
    nodes = [
        *section.children,
        *(grandchild for child in section.children for grandchild in child.children),
    ]
    for node in nodes:
        name = _REASON_NAMES.get(node.key.lower())
        if name is None:
            warnings.append(f"GPU {index}: unrecognised clock event reason {node.key!r}")
        elif to_bool(node.value):
            active.append(name)
    return active


def _pcie(gpu: _Node, *leaf: str) -> int | None:
    return to_int(gpu.get(("PCI", "GPU Link Info", *leaf)))


def _power_draw(gpu: _Node) -> float | None:
    for section in ("GPU Power Readings", "Power Readings"):
        value = gpu.get(
            (section, "Power Draw"),
            (section, "Average Power Draw"),
            (section, "Instantaneous Power Draw"),
        )
        if value is not None:
            return to_float(value)
    return None


def _power_limit(gpu: _Node) -> float | None:
    for section in ("GPU Power Readings", "Power Readings"):
        value = gpu.get(
            (section, "Current Power Limit"),
            (section, "Enforced Power Limit"),
            (section, "Power Limit"),
        )
        if value is not None:
            return to_float(value)
    return None


def _gpu_models(
    gpu: _Node, index: int, bus_id: str, driver: str | None, cuda: str | None, warnings: list[str]
) -> tuple[GpuInfo, GpuMetric, GpuHealth]:
    info = GpuInfo(
        index=index,
        name=gpu.get("Product Name"),
        uuid=gpu.get("GPU UUID"),
        serial=gpu.get("Serial Number"),
        pci_bus_id=gpu.get(("PCI", "Bus Id")) or bus_id,
        driver=driver,
        cuda_version=cuda,
        vbios=gpu.get("VBIOS Version"),
        architecture=gpu.get("Product Architecture"),
        memory_total_bytes=to_bytes(gpu.get(("FB Memory Usage", "Total")), "MiB"),
        pcie_gen_current=_pcie(gpu, "PCIe Generation", "Current"),
        pcie_gen_max=_pcie(gpu, "PCIe Generation", "Max"),
        pcie_width_current=_pcie(gpu, "Link Width", "Current"),
        pcie_width_max=_pcie(gpu, "Link Width", "Max"),
        persistence_mode=to_bool(gpu.get("Persistence Mode")),
        mig_mode=gpu.get(("MIG Mode", "Current")),
        ecc_mode=gpu.get(("ECC Mode", "Current")),
        compute_mode=gpu.get("Compute Mode"),
        virtualization_mode=gpu.get(("GPU Virtualization Mode", "Virtualization Mode")),
        power_limit_w=_power_limit(gpu),
        max_sm_clock_mhz=to_float(gpu.get(("Max Clocks", "SM"))),
        max_mem_clock_mhz=to_float(gpu.get(("Max Clocks", "Memory"))),
        fabric_state=gpu.get(("Fabric", "State")),
        fabric_status=gpu.get(("Fabric", "Status")),
    )
    reasons = _reasons(gpu, index, warnings)
    metric = GpuMetric(
        t=0.0,
        gpu=index,
        util_pct=to_float(gpu.get(("Utilization", "Gpu"))),
        mem_util_pct=to_float(gpu.get(("Utilization", "Memory"))),
        mem_used_bytes=to_bytes(gpu.get(("FB Memory Usage", "Used")), "MiB"),
        mem_total_bytes=info.memory_total_bytes,
        temp_c=to_float(gpu.get(("Temperature", "GPU Current Temp"))),
        mem_temp_c=to_float(gpu.get(("Temperature", "Memory Current Temp"))),
        power_w=_power_draw(gpu),
        power_limit_w=info.power_limit_w,
        sm_clock_mhz=to_float(gpu.get(("Clocks", "SM"))),
        mem_clock_mhz=to_float(gpu.get(("Clocks", "Memory"))),
        clocks_event_reasons=reasons,
    )
    ecc = gpu.find("ECC Errors")
    v_corr, v_uncorr, _, _ = _ecc_sums(ecc.find("Volatile") if ecc else None)
    a_corr, a_uncorr, a_sram_corr, a_sram_uncorr = _ecc_sums(ecc.find("Aggregate") if ecc else None)
    histogram = {
        level.lower(): n
        for level in ("Max", "High", "Partial", "Low", "None")
        if (n := to_int(gpu.get(("Remapped Rows", "Bank Remap Availability Histogram", level))))
        is not None
    }
    health = GpuHealth(
        index=index,
        pci_bus_id=info.pci_bus_id,
        ecc_volatile_correctable=v_corr,
        ecc_volatile_uncorrectable=v_uncorr,
        ecc_aggregate_correctable=a_corr,
        ecc_aggregate_uncorrectable=a_uncorr,
        ecc_aggregate_sram_correctable=a_sram_corr,
        ecc_aggregate_sram_uncorrectable=a_sram_uncorr,
        sram_threshold_exceeded=to_bool(
            gpu.get(("ECC Errors", "Aggregate", "SRAM Threshold Exceeded"))
        ),
        retired_pages_sbe=to_int(gpu.get(("Retired Pages", "Single Bit ECC"))),
        retired_pages_dbe=to_int(gpu.get(("Retired Pages", "Double Bit ECC"))),
        retired_pages_pending=to_bool(
            gpu.get(("Retired Pages", "Pending Page Blacklist"), ("Retired Pages", "Pending"))
        ),
        remapped_rows_correctable=to_int(gpu.get(("Remapped Rows", "Correctable Error"))),
        remapped_rows_uncorrectable=to_int(gpu.get(("Remapped Rows", "Uncorrectable Error"))),
        remapped_rows_pending=to_bool(gpu.get(("Remapped Rows", "Pending"))),
        remapped_rows_failure=to_bool(gpu.get(("Remapped Rows", "Remapping Failure Occurred"))),
        remap_histogram=histogram,
        clocks_event_reasons=reasons,
        reset_required=to_bool(gpu.get(("GPU Reset Status", "Reset Required"))),
        drain_and_reset_recommended=to_bool(
            gpu.get(("GPU Reset Status", "Drain and Reset Recommended"))
        ),
        pcie_replays=to_int(gpu.get(("PCI", "Replays Since Reset"))),
        recovery_action=gpu.get("GPU Recovery Action"),
    )
    return info, metric, health


@never_raises
def parse_nvidia_smi_q(text: str) -> ParseResult[NvidiaSmiReport]:
    """Parse ``nvidia-smi -q`` text; a cut-off block still yields the fields read before the cut."""
    text = clean_text(text)
    warnings: list[str] = []
    header_lines, blocks = _split_gpus(text)
    header = _build_tree(header_lines)
    driver, cuda = header.get("Driver Version"), header.get("CUDA Version")
    attached = to_int(header.get("Attached GPUs"))
    if not blocks:
        failure = next(
            (
                ln.strip()
                for ln in text.split("\n")
                if "has failed" in ln.lower() or "unable to determine" in ln.lower()
            ),
            None,
        )
        if failure:
            warnings.append(f"nvidia-smi failed: {failure[:200]}")
        warnings.append("no 'GPU <bus id>' block found in nvidia-smi -q output")
        if driver is None and attached is None:
            return ParseResult(value=None, warnings=warnings)
    report = NvidiaSmiReport(driver_version=driver, cuda_version=cuda, attached_gpus=attached)
    for index, (bus_id, lines) in enumerate(blocks):
        info, metric, health = _gpu_models(
            _build_tree(lines), index, bus_id, driver, cuda, warnings
        )
        report.gpus.append(info)
        report.metrics.append(metric)
        report.health.append(health)
    if attached is not None and attached != len(blocks):
        warnings.append(
            f"'Attached GPUs : {attached}' but {len(blocks)} GPU blocks found (output cut?)"
        )
    return ParseResult(value=report, warnings=warnings)
