"""``nvidia-smi nvlink --status`` (``-s``): per-GPU NVLink speeds.

Healthy output lists ``Link k: 26.562 GB/s`` under each ``GPU n: <name> (UUID: ...)``; a down link
prints ``<inactive>``, and a GPU whose links are all down prints ``NVML: Unable to retrieve NVLink
information as all links are inactive`` instead of any link line.
"""

from __future__ import annotations

import re

from core.probes.parsers._common import clean_text, never_raises, to_float
from core.probes.samples import NvlinkStatus, ParseResult

_GPU = re.compile(r"^GPU\s+(\d{1,9}):\s*(.*?)\s*(?:\(UUID:\s*([^)]+)\))?\s*$")
_LINK = re.compile(r"^Link\s+(\d{1,9})\s*:\s*(.*)$", re.IGNORECASE)


@never_raises
def parse_nvlink_status(text: str) -> ParseResult[list[NvlinkStatus]]:
    """Parse ``nvlink --status``; an 'all links are inactive' GPU has ``all_inactive=True``."""
    warnings: list[str] = []
    gpus: list[NvlinkStatus] = []
    for raw in clean_text(text).split("\n"):
        line = raw.strip()
        if not line:
            continue
        gpu_match = _GPU.match(line)
        if gpu_match:
            gpus.append(
                NvlinkStatus(
                    gpu=int(gpu_match.group(1)),
                    name=gpu_match.group(2) or None,
                    uuid=gpu_match.group(3),
                )
            )
            continue
        link_match = _LINK.match(line)
        if link_match and gpus:
            link, value = int(link_match.group(1)), link_match.group(2)
            if link > 64:
                warnings.append(f"implausible NVLink number {link}: {line[:120]!r}")
                continue
            speeds = gpus[-1].link_speeds_gbps
            while len(speeds) <= link:
                speeds.append(None)
            speeds[link] = None if "inactive" in value.lower() else to_float(value)
            if speeds[link] is None and "inactive" not in value.lower():
                warnings.append(f"GPU {gpus[-1].gpu} link {link}: unreadable speed {value!r}")
            continue
        if "all links are inactive" in line.lower() and gpus:
            gpus[-1].all_inactive = True
            continue
        warnings.append(f"unexpected nvlink line: {line[:120]!r}")
    if not gpus:
        return ParseResult(
            value=None, warnings=[*warnings, "no 'GPU n: ...' line in nvlink --status output"]
        )
    return ParseResult(value=gpus, warnings=warnings)
