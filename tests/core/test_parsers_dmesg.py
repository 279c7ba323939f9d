"""Kernel log scan: Xid, SXid and other events. Expected values read by hand from the fixtures."""

from __future__ import annotations

from pathlib import Path

from core.probes.parsers.dmesg import parse_dmesg
from core.probes.parsers.xid_catalog import XID_CATALOG, classify_xid

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_xid_119_gsp_timeout():
    result = parse_dmesg(fixture("dmesg_xid119_gsp_rpc_timeout_H100_XE9680.log"))
    assert result.warnings == []
    scan = result.value
    assert scan is not None
    assert scan.xid_codes == [119]
    assert [x.line_no for x in scan.xids] == [3, 38, 40, 42, 43]
    first = scan.xids[0]
    assert first.pci == "0000:9b:00"  # line 3
    assert (first.pid, first.process) == (2024380, "nvidia-smi")  # line 3
    assert first.message.startswith("Timeout after 6s of waiting for RPC response from GPU4 GSP!")
    assert first.timestamp == "Sun Feb 23 16:24:18 2025"
    assert (first.severity, first.action) == ("FAIL", "RESET_GPU")  # catalog: GSP RPC timeout
    assert first.meaning is not None and "GSP" in first.meaning
    assert (scan.xids[3].pid, scan.xids[3].process) == (1263500, "cache_mgr_main")  # line 42
    assert scan.gpu_uuids == {"0000:9b:00": "GPU-509665ad-b600-ac93-3616-d754b23d636d"}  # line 1
    reset = [e for e in scan.events if e.kind == "gpu_reset_needed"]
    assert [e.line_no for e in reset] == [41]  # 'The GPU likely needs to be reset.'


def test_xid_13_burst_then_43_and_oom():
    scan = parse_dmesg(fixture("dmesg_iso_xid13_xid43_app_fault_plus_oom.log")).value
    assert scan is not None
    assert scan.xid_codes == [13, 43]
    assert sum(x.code == 13 for x in scan.xids) == 16  # lines 1-16
    x13 = scan.xids[0]
    assert x13.pid is None and x13.process is None  # pid='<unknown>', name=<unknown>
    assert x13.severity == "WARN"
    assert x13.timestamp == "2025-01-21T04:41:44,283302+00:00"  # line 1
    assert "Out Of Range Address" in scan.xids[2].message  # line 3
    x43 = scan.xids[16]
    assert (x43.code, x43.pid, x43.process, x43.message) == (
        43,
        2924364,
        "pt_main_thread",
        "Ch 00000008",
    )
    assert x43.severity == "INFO"
    oom = [e for e in scan.events if e.kind == "oom"]
    assert [e.line_no for e in oom] == [18, 19, 20, 21, 22, 23, 24]


def test_other_formats_and_events():
    # lines typed from the documented kernel formats
    text = "\n".join(
        [
            "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
            "[ 1300.000001] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 "
            "egress error",
            "[ 1301.000001] nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 10 "
            "LTSSM Fault Up",
            "[   2.000000] nvidia 0000:3b:00.0: 63.012 Gb/s available PCIe bandwidth, limited by "
            "16.0 GT/s PCIe x4 link at 0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe "
            "x16 link)",
            "[ 1400.000000] NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 "
            "(None) to 0x1 (GPU Reset Required)",
            "[ 1500.000000] NVRM: Xid (PCI:0000:3b:00): 999, pid=12, name=x, something new",
        ]
    )
    scan = parse_dmesg(text).value
    assert scan is not None
    assert scan.xid_codes == [79, 154, 999]
    assert scan.xids[0].severity == "FAIL" and scan.xids[0].timestamp == "1234.567890"
    assert scan.xids[1].action == "GPU Reset Required" and scan.xids[1].severity == "FAIL"
    assert scan.xids[2].severity == "UNKNOWN"
    assert [(s.switch, s.code, s.fatal) for s in scan.sxids] == [
        (3, 12028, False),
        (0, 20034, True),
    ]
    assert [e.kind for e in scan.events] == ["pcie_downtrained"]


def test_catalog_covers_brief_codes_and_xid_154_none():
    for code in (
        13,
        31,
        43,
        45,
        48,
        61,
        62,
        63,
        64,
        74,
        79,
        92,
        94,
        95,
        119,
        120,
        121,
        136,
        140,
        143,
        154,
        155,
        156,
    ):
        assert code in XID_CATALOG
    assert (
        classify_xid(
            154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"
        ).severity
        == "INFO"
    )


def test_clean_log_and_permission_error():
    clean = parse_dmesg("[    0.000000] Linux version 5.15.0\n[    1.0] usb 1-1: new device\n")
    assert clean.value is not None and clean.value.xids == [] and clean.value.events == []
    denied = parse_dmesg("dmesg: read kernel buffer failed: Operation not permitted\n")
    assert any("root" in w for w in denied.warnings)
