"""Plain ``nvidia-smi`` (the boxed table): a fallback inventory when ``-q``/``--query-gpu`` are
unusable.

Each GPU takes two lines: ``| 0  NVIDIA H100 80GB HBM3   On | 00000000:19:00.0 Off | 0 |`` (index,
name, persistence, bus id, display, volatile uncorrectable ECC) and ``| N/A 27C P0 72W / 700W | 1MiB
/ 81559MiB | 0% Default |``. Long names are cut with '...' by the tool itself.
"""

from __future__ import annotations

import re

from core.probes.parsers._common import (
    clean_text,
    is_missing,
    never_raises,
    to_bool,
    to_float,
    to_int,
)
from core.probes.samples import GpuHealth, GpuInfo, GpuMetric, NvidiaSmiReport, ParseResult

_VERSIONS = re.compile(r"Driver Version:\s*(\S+).*?CUDA Version:\s*(\S+)")
_FIRST = re.compile(
    r"^\|\s*(\d{1,9})\s+(.+?)\s+(On|Off)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])"
    r"\s+(\S+)\s*\|\s*(\S+)\s*\|"
)
_SECOND = re.compile(
    r"^\|\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*/\s*(\S+)\s*\|\s*(\d{1,15})\s*MiB\s*/\s*(\d{1,15})\s*MiB\s*\|"
    r"\s*(\S+)\s+(\S+)\s*\|"
)


@never_raises
def parse_nvidia_smi_table(text: str) -> ParseResult[NvidiaSmiReport]:
    """Parse the default ``nvidia-smi`` table into inventory, one metric sample and the ECC
    column."""
    warnings: list[str] = []
    text = clean_text(text)
    lines = text.split("\n")
    report = NvidiaSmiReport()
    for line in lines:
        versions = _VERSIONS.search(line)
        if versions:
            report.driver_version, report.cuda_version = versions.group(1), versions.group(2)
            break
    pending: GpuInfo | None = None
    for line in lines:
        first = _FIRST.match(line.strip())
        if first:
            index = int(first.group(1))
            pending = GpuInfo(
                index=index,
                name=first.group(2).strip(),
                pci_bus_id=first.group(4),
                driver=report.driver_version,
                cuda_version=report.cuda_version,
                persistence_mode=to_bool(first.group(3)),
            )
            report.gpus.append(pending)
            ecc = None if is_missing(first.group(6)) else to_int(first.group(6))
            report.health.append(
                GpuHealth(index=index, pci_bus_id=first.group(4), ecc_volatile_uncorrectable=ecc)
            )
            continue
        second = _SECOND.match(line.strip())
        if second and pending is not None:
            total = int(second.group(7)) * 2**20
            pending.memory_total_bytes = total
            pending.power_limit_w = to_float(second.group(5))
            pending.compute_mode = second.group(9)
            report.metrics.append(
                GpuMetric(
                    t=0.0,
                    gpu=pending.index,
                    temp_c=to_float(second.group(2)),
                    power_w=to_float(second.group(4)),
                    power_limit_w=pending.power_limit_w,
                    mem_used_bytes=int(second.group(6)) * 2**20,
                    mem_total_bytes=total,
                    util_pct=to_float(second.group(8)),
                )
            )
            pending = None
    if not report.gpus:
        if "no devices were found" in text.lower():
            warnings.append("nvidia-smi found no GPU")
        warnings.append("no GPU row found in the nvidia-smi table")
        if report.driver_version is None:
            return ParseResult(value=None, warnings=warnings)
    for gpu in report.gpus:
        if gpu.name and gpu.name.endswith("..."):
            warnings.append(f"GPU {gpu.index} name cut by nvidia-smi: {gpu.name!r}")
    missing = [g.index for g in report.gpus if g.memory_total_bytes is None]
    if missing:
        warnings.append(f"no usage line for GPU(s) {missing} (output cut?)")
    return ParseResult(value=report, warnings=warnings)
