"""Meaning, NVIDIA action and our verdict for the Xid codes that matter on a freshly rented node.

Source: NVIDIA Xid catalog, https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
(mirrored in
https://github.com/leptonai/gpud/blob/4a8de33a3f02e207f39e9023d67125592d599731/components/
accelerator/nvidia/xid/catalog_generated.go); the verdict column is this project's scorecard choice,
informed by the Azure NHC, Imbue and AWS health-check lists.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from core.probes.samples import XidSeverity


class XidInfo(NamedTuple):
    meaning: str
    action: str
    severity: XidSeverity


XID_CATALOG: dict[int, XidInfo] = {
    13: XidInfo(
        "Graphics engine exception (SM warp exception, illegal address)", "RESTART_APP", "WARN"
    ),
    31: XidInfo("GPU memory page fault (MMU)", "RESTART_APP", "WARN"),
    43: XidInfo("GPU stopped processing (reset channel; application fault)", "IGNORE", "INFO"),
    45: XidInfo("Preemptive cleanup after previous errors", "WORKFLOW", "INFO"),
    48: XidInfo("Double-bit ECC error", "WORKFLOW_XID_48", "FAIL"),
    61: XidInfo("PMU breakpoint", "CONTACT_SUPPORT", "FAIL"),
    62: XidInfo("Internal micro-controller halt", "RESET_GPU", "FAIL"),
    63: XidInfo(
        "Row-remap / page-retirement recording event (pending until reset)", "IGNORE", "WARN"
    ),
    64: XidInfo("Row-remap / page-retirement failure", "RESET_GPU", "FAIL"),
    74: XidInfo("NVLink error", "WORKFLOW_NVLINK_ERR", "FAIL"),
    79: XidInfo("GPU has fallen off the bus", "RESTART_BM", "FAIL"),
    92: XidInfo("High single-bit ECC error rate", "IGNORE", "WARN"),
    94: XidInfo("Contained ECC error", "RESTART_APP", "WARN"),
    95: XidInfo("Uncontained ECC error", "RESET_GPU", "FAIL"),
    119: XidInfo("GSP RPC timeout", "RESET_GPU", "FAIL"),
    120: XidInfo("GSP error", "RESET_GPU", "FAIL"),
    121: XidInfo("C2C error", "IGNORE", "WARN"),
    136: XidInfo("Link training failure", "RESET_GPU", "FAIL"),
    140: XidInfo("Unrecovered ECC error escape", "RESET_GPU", "FAIL"),
    143: XidInfo("GPU initialisation error", "RESET_GPU", "FAIL"),
    154: XidInfo("GPU recovery action changed", "PER_TEXT", "FAIL"),
    155: XidInfo("NVLink software-defined error", "RESET_GPU", "FAIL"),
    156: XidInfo("Resource retirement event", "RESET_GPU", "FAIL"),
}


def classify_xid(code: int, message: str = "") -> XidInfo:
    """Catalog entry for ``code``; Xid 154 is only a failure when its text names an action."""
    info = XID_CATALOG.get(code)
    if info is None:
        return XidInfo("not in the app's Xid catalog", "UNKNOWN", "UNKNOWN")
    if code == 154:
        # e.g. "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"
        target = re.search(r"\bto\s+0x[0-9a-fA-F]+\s*\(([^)]*)\)", message)
        if target:
            action = target.group(1).strip()
            if action.lower() == "none":
                return XidInfo(info.meaning, "NONE", "INFO")
            return XidInfo(info.meaning, action, "FAIL")
    return info
