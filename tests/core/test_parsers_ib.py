"""ibstat, ibstatus, perftest sweeps and link flaps. Expected values read by hand from the
fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.probes.parsers.ib import parse_ibstat, parse_ibstatus, parse_link_flaps, parse_perftest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_ibstat_h100_all_active_roce():
    result = parse_ibstat(fixture("ibstat_H100_node_CX7_all_active.txt"))
    assert result.warnings == []
    inv = result.value
    assert inv is not None and inv.errors == []
    assert len(inv.ports) == 12  # 12 'CA' blocks
    assert {(p.state, p.phys_state, p.link_layer) for p in inv.ports} == {
        ("Active", "LinkUp", "Ethernet")
    }
    rates = {p.device: p.rate_gbps for p in inv.ports}
    assert rates["mlx5_0"] == 400  # line 11
    assert rates["mlx5_1"] == 100  # line 28 (MT4125 = ConnectX-6 Dx)
    assert list(rates.values()).count(400) == 8
    assert list(rates.values()).count(100) == 4
    assert inv.ports[0].ca_type == "MT4129"  # line 2
    assert inv.ports[0].firmware == "28.39.1002"  # line 4


def test_ibstat_some_ports_down():
    inv = parse_ibstat(fixture("ibstat_H100_node_some_ports_down.txt")).value
    assert inv is not None
    down = [
        (p.device, p.state, p.phys_state, p.rate_gbps) for p in inv.ports if p.state != "Active"
    ]
    assert down == [
        ("mlx5_2", "Down", "Disabled", 40),  # lines 77-79
        ("mlx5_7", "Down", "Disabled", 40),  # lines 162-164
        ("mlx5_8", "Down", "Disabled", 40),  # lines 179-181
    ]
    by_name = {p.device: p for p in inv.ports}
    assert by_name["mlx5_0"].link_layer == "InfiniBand"  # line 17
    assert by_name["mlx5_1"].rate_gbps == 100  # line 28


def test_ibstat_ibpanic_exit_255():
    inv = parse_ibstat(fixture("ibstat_A100_node_ibpanic_exit255.txt")).value
    assert inv is not None
    assert len(inv.ports) == 8  # mlx5_0 .. mlx5_7 printed before the panic
    assert {p.rate_gbps for p in inv.ports} == {200}
    assert {p.ca_type for p in inv.ports} == {"MT4124"}
    assert inv.errors == [
        "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory"
    ]


def test_ibstatus_rates_and_widths():
    result = parse_ibstatus(fixture("ibstatus_A100_node_all_active.txt"))
    assert result.warnings == []
    inv = result.value
    assert inv is not None
    assert len(inv.ports) == 9
    first = inv.ports[0]
    # l.1-6
    assert (first.device, first.port, first.state, first.phys_state) == (
        "mlx5_0",
        1,
        "Active",
        "LinkUp",
    )
    assert (first.rate_gbps, first.width, first.speed) == (200, "4X", "HDR")  # line 7
    last = inv.ports[-1]
    assert (last.device, last.rate_gbps, last.speed, last.link_layer) == (
        "mlx5_8",
        40,
        "QDR",
        "Ethernet",
    )


def test_ib_write_bw_host_memory_sweep():
    result = parse_perftest(fixture("ib_write_bw_roce400_hostmem_1qp_sweep.log"))
    assert result.warnings == []
    run = result.value
    assert run is not None
    assert run.test == "RDMA_Write BW Test"  # line 2
    assert (run.device, run.qps, run.link_type, run.gid_index, run.mtu_bytes) == (
        "mlx5_2",
        1,
        "Ethernet",
        3,
        4096,
    )
    assert run.unit == "Gb/sec" and run.use_cuda is False
    assert len(run.rows) == 23  # 2 B .. 8 MiB, lines 24-46
    assert (run.rows[0].size_bytes, run.rows[0].bw_avg) == (2, 0.032099)  # line 24
    dip = next(r for r in run.rows if r.size_bytes == 16384)  # line 37: peak 125.02, avg 44.97
    assert (dip.bw_peak, dip.bw_avg) == (125.02, 44.97)
    assert run.rows[-1].bw_avg == 224.14  # line 46
    assert run.best_avg_gbps == 224.14


def test_ib_read_bw_gpudirect_16qp():
    run = parse_perftest(fixture("ib_read_bw_roce400_H100_gpudirect_dmabuf_16qp_sweep.log")).value
    assert run is not None
    assert run.test == "RDMA_Read BW Test" and run.qps == 16  # lines 17, 19
    assert run.use_cuda is True  # lines 1-15 CUDA preamble
    assert run.best_avg_gbps == 167.69  # line 115 '131072 16000 167.69 167.69'
    mib = next(r for r in run.rows if r.size_bytes == 1048576)  # line 118
    assert mib.bw_avg == 153.53 and mib.iterations == 16000


def test_perftest_mb_per_s_has_no_gbps_summary():
    text = (
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        " 65536      5000             11000.00           10990.00           0.175840\n"
    )
    run = parse_perftest(text).value
    assert run is not None and run.unit == "MB/sec"
    assert run.rows[0].bw_avg == 10990.00
    assert run.best_avg_gbps is None


def test_link_flaps_in_syslog():
    flaps = parse_link_flaps(fixture("syslog_ib_link_flapping_ib6.txt")).value
    assert flaps is not None and len(flaps) == 1
    assert (flaps[0].interface, flaps[0].lost, flaps[0].gained) == ("ib6", 6, 6)  # lines 3-8, 9-14
    assert flaps[0].first_seen == "Aug 17 06:18:01"  # line 3
    assert flaps[0].last_seen == "Aug 17 06:18:06"


@pytest.mark.parametrize("parser", [parse_ibstat, parse_ibstatus, parse_perftest])
def test_command_missing(parser):
    result = parser("bash: line 1: ibstat: command not found\n")
    assert result.value is None
    assert any("command not found" in w for w in result.warnings)
