"""Kernel log (``dmesg``, ``dmesg -T``, ``dmesg --time-format=iso``, ``journalctl -k``) scan.

Finds ``NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., <text>`` lines (meaning and verdict from
the Xid catalog), NVSwitch ``SXid`` lines, and other events a fresh node must not show: OOM kills,
"GPU likely needs to be reset", GPU fallen off the bus, PCIe links trained below their width/speed.
"""

from __future__ import annotations

import re

from core.probes.parsers._common import clean_text, never_raises
from core.probes.parsers.xid_catalog import classify_xid
from core.probes.samples import (
    KernelEvent,
    KernelEventKind,
    KernelLogScan,
    ParseResult,
    SxidEvent,
    XidEvent,
)

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\):\s*(\d{1,9})\b\s*,?\s*(.*)$")
_SXID = re.compile(
    r"nvidia-nvswitch(\d{1,9}): SXid \((?:PCI:)?([0-9A-Fa-f:.]+)\):\s*(\d{1,9})\b\s*,?\s*(.*)$"
)
_PID = re.compile(r"^pid=['\"]?(<unknown>|\d{1,18})['\"]?\s*,\s*")
_NAME = re.compile(r"^name=([^,]*),\s*")
_UUID = re.compile(r"NVRM: GPU at PCI:([0-9A-Fa-f:.]+): (GPU-[0-9a-fA-F-]+)")
_TIMESTAMP = re.compile(
    r"^\s*(?:\[([^\]]+)\]"  # [Sun Feb 23 16:24:18 2025] or [ 1234.567890]
    # iso, --decode
    r"|(?:\w+\s*:\s*\w+\s*:\s*)?(\d{4}-\d{2}-\d{2}T[0-9:.,]+(?:[+-]\d{2}:?\d{2}|Z)?)"
    r"|([A-Z][a-z]{2}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}))"  # syslog / journalctl
)
_EVENTS: list[tuple[KernelEventKind, re.Pattern[str]]] = [
    ("oom", re.compile(r"Out of memory:|oom-kill:|oom_reaper:|invoked oom-killer", re.IGNORECASE)),
    (
        "gpu_reset_needed",
        re.compile(
            r"GPU likely needs to be reset|GPU Reset Required|needs to be reset", re.IGNORECASE
        ),
    ),
    ("gpu_fell_off_bus", re.compile(r"fallen off the bus", re.IGNORECASE)),
    ("pcie_downtrained", re.compile(r"available PCIe bandwidth, limited by", re.IGNORECASE)),
    ("segfault", re.compile(r"\bsegfault at\b", re.IGNORECASE)),
    ("hung_task", re.compile(r"blocked for more than \d+ seconds", re.IGNORECASE)),
    (
        "machine_check",
        re.compile(r"\bmce: \[Hardware Error\]|Machine check events logged", re.IGNORECASE),
    ),
    ("nvlink_error", re.compile(r"NVRM: .*NVLink.*(error|fatal)", re.IGNORECASE)),
]


def _timestamp(line: str) -> str | None:
    match = _TIMESTAMP.match(line)
    if not match:
        return None
    return next((g.strip() for g in match.groups() if g), None)


def _xid(line: str, match: re.Match[str], line_no: int) -> XidEvent:
    rest = match.group(3).strip()
    pid: int | None = None
    process: str | None = None
    if pid_match := _PID.match(rest):
        pid = int(pid_match.group(1)) if pid_match.group(1).isdigit() else None
        rest = rest[pid_match.end() :]
        if name_match := _NAME.match(rest):
            name = name_match.group(1).strip()
            process = None if name in {"", "<unknown>"} else name
            rest = rest[name_match.end() :]
    code = int(match.group(2))
    info = classify_xid(code, rest)
    return XidEvent(
        code=code,
        pci=match.group(1),
        pid=pid,
        process=process,
        message=rest.strip(),
        meaning=info.meaning,
        action=info.action,
        severity=info.severity,
        timestamp=_timestamp(line),
        line_no=line_no,
    )


def _sxid(line: str, match: re.Match[str], line_no: int) -> SxidEvent:
    rest = match.group(4).strip()
    fatal: bool | None = None
    if rest.lower().startswith("non-fatal"):
        fatal = False
    elif rest.lower().startswith("fatal"):
        fatal = True
    return SxidEvent(
        code=int(match.group(3)),
        switch=int(match.group(1)),
        pci=match.group(2),
        fatal=fatal,
        message=rest,
        timestamp=_timestamp(line),
        line_no=line_no,
    )


@never_raises
def parse_dmesg(text: str) -> ParseResult[KernelLogScan]:
    """Scan kernel log text; an empty scan (no events) is a valid, clean result."""
    scan = KernelLogScan()
    warnings: list[str] = []
    text = clean_text(text)
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if xid := _XID.search(line):
            scan.xids.append(_xid(line, xid, line_no))
            continue
        if sxid := _SXID.search(line):
            scan.sxids.append(_sxid(line, sxid, line_no))
            continue
        if "Xid" in line and "NVRM" in line:
            warnings.append(
                f"line {line_no}: Xid line in an unknown format: {line.strip()[:120]!r}"
            )
        if uuid := _UUID.search(line):
            scan.gpu_uuids[uuid.group(1)] = uuid.group(2)
        for kind, pattern in _EVENTS:
            if pattern.search(line):
                scan.events.append(
                    KernelEvent(
                        kind=kind,
                        message=line.strip()[:300],
                        timestamp=_timestamp(line),
                        line_no=line_no,
                    )
                )
                break
    if "operation not permitted" in text.lower() or "read kernel buffer failed" in text.lower():
        warnings.append(
            "dmesg could not read the kernel buffer (needs root or kernel.dmesg_restrict=0)"
        )
    return ParseResult(value=scan, warnings=warnings)
