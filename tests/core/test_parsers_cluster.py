"""NCCL's transport from NCCL_DEBUG=INFO, ibv_devinfo and dcgmi diag. Expected values read by hand
from the fixtures (line numbers in the comments); nothing here is computed by the code under
test."""

from __future__ import annotations

from pathlib import Path

from core.probes.parsers import parse_dcgmi_diag, parse_ibv_devinfo, parse_nccl_debug

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- NCCL_DEBUG=INFO


def test_nccl_debug_roce_run_with_gdr_off():
    result = parse_nccl_debug(
        fixture("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    )
    assert result.warnings == []
    t = result.value
    assert t is not None
    assert t.network == "IB"  # line 16 'Using network IB'
    assert t.devices == ["mlx5_5:1/RoCE"]  # line 14
    assert t.oob_interface == "eno7np0"  # line 14 '; OOB eno7np0:169.254.103.56<0>'
    assert t.channels_via == ["NET/IB/1"]  # lines 50-53
    assert t.gdr is False  # line 55 'Connected all rings, use ring PXN 0 GDR 0'
    assert t.nccl_version == "2.26.2+cuda"  # line 9 'NCCL version 2.26.2+cuda.'
    assert t.plugin == "internal"  # line 10 'Using internal net plugin.'


def test_nccl_debug_forced_socket_on_a_dgx():
    t = parse_nccl_debug(fixture("nccl_debug_2node_DGX-A100_NET_Socket_forced_nccl676.log")).value
    assert t is not None
    assert t.network == "Socket"  # 'Using network Socket'
    assert t.devices == ["enp225s0f1"]  # 'NET/Socket : Using [0]enp225s0f1:10.10.10.2<0>'
    # 'Bootstrap : Using enp225s0f1:...' (no OOB on the Socket line)
    assert t.oob_interface == "enp225s0f1"
    assert t.nccl_version == "2.11.4+cuda11.4"  # the line without a host prefix
    assert t.gdr is None and t.channels_via == []


def test_nccl_debug_socket_fallback_without_a_using_network_line():
    t = parse_nccl_debug(
        fixture("nccl_debug_2node_A100_NET_Socket_bond0_no_IB_device_nccl-tests136.log")
    ).value
    assert t is not None
    # NET/IB found no device; NET/Socket is the only transport with one
    assert t.network == "Socket"
    assert t.devices == ["bond0"]
    assert t.plugin == "IBext"  # 'P2P plugin IBext' (HPC-X)
    assert t.nccl_version is None


def test_nccl_debug_srun_prefixed_lines_read_the_same():
    text = fixture("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    prefixed = "\n".join(f"0: {line}" for line in text.split("\n"))
    assert parse_nccl_debug(prefixed).value == parse_nccl_debug(text).value


def test_nccl_debug_efa_plugin_with_gdr_disabled():
    t = parse_nccl_debug(fixture("nccl_debug_2node_g5_EFA_aws-ofi-nccl_GDR_disabled.log")).value
    assert t is not None
    assert t.network == "AWS Libfabric"  # line 26 'Using network AWS Libfabric'
    # line 11 'NET/OFI Initializing aws-ofi-nccl 1.12.1-aws'
    assert t.plugin == "aws-ofi-nccl 1.12.1-aws"
    assert t.channels_via == ["NET/AWS Libfabric/0"]  # lines 84-97: the plugin's name has a space
    # line 22 'NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR'
    assert t.gdr is False
    assert t.nccl_version == "2.23.4+cuda12.4" and t.oob_interface == "ens5"  # lines 2 and 4
    assert t.devices == []  # a plugin lists no NET/IB or NET/Socket devices


def test_nccl_debug_gdrdma_path_and_plugin_name():
    # Line formats as NCCL prints them (transport/net.cc 'via NET/%s/%d%s'; the plugin loader's
    # 'Loaded net plugin'): the '/GDRDMA' suffix and the 'Loaded net plugin' line are not in any
    # capture kept here.
    text = (
        "host-a:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v6)\n"
        "host-a:1:2 [0] NCCL INFO Using network AWS Libfabric\n"
        "host-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS "
        "Libfabric/0/GDRDMA\n"
    )
    t = parse_nccl_debug(text).value
    assert t is not None
    assert t.network == "AWS Libfabric" and t.plugin == "AWS Libfabric (v6)"
    assert t.gdr is True and t.devices == []


def test_nccl_debug_without_info_lines_is_none():
    result = parse_nccl_debug(fixture("nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt"))
    assert result.value is None
    assert "NCCL_DEBUG=INFO" in result.warnings[-1]


# --------------------------------------------------------------------------- ibv_devinfo


def test_ibv_devinfo_two_hcas_port_two_down():
    result = parse_ibv_devinfo(fixture("ibv_devinfo_2x_ConnectX3_mlx4_port2_down.txt"))
    assert result.warnings == []
    inv = result.value
    assert inv is not None and inv.errors == []
    assert [(p.device, p.port, p.state) for p in inv.ports] == [
        ("mlx4_1", 1, "Active"),
        ("mlx4_1", 2, "Down"),
        ("mlx4_0", 1, "Active"),
        ("mlx4_0", 2, "Down"),
    ]
    assert {p.link_layer for p in inv.ports} == {"InfiniBand"}
    assert {p.firmware for p in inv.ports} == {"2.42.5000"}
    assert all(p.rate_gbps is None for p in inv.ports)  # no active_width/active_speed without -v


def test_ibv_devinfo_verbose_gives_width_speed_and_rate():
    inv = parse_ibv_devinfo(fixture("ibv_devinfo_v_ConnectX3_mlx4_port2_polling.txt")).value
    assert inv is not None and len(inv.ports) == 1
    port = inv.ports[0]
    assert (port.device, port.port, port.state, port.phys_state) == ("mlx4_1", 2, "Down", "Polling")
    # 'active_width: 4X (2)', 'active_speed: 2.5 Gbps (1)'
    assert (port.width, port.speed) == ("4X", "SDR")
    assert port.rate_gbps == 10.0  # 4 lanes x 2.5 Gb/s, what ibstat calls 'Rate: 10'


def test_ibv_devinfo_failure_text_is_an_error():
    inv = parse_ibv_devinfo("Failed to get IB devices list: Function not implemented\n").value
    assert inv is not None and inv.ports == [] and inv.errors


# --------------------------------------------------------------------------- dcgmi diag


def test_dcgmi_diag_level4_all_pass():
    result = parse_dcgmi_diag(fixture("dcgmi_diag_r4_all_pass_gcm.txt"))
    assert result.warnings == []
    tests = result.value
    # 9 Deployment + 1 Integration + 3 Hardware + 5 Stress rows
    assert tests is not None and len(tests) == 18
    assert tests["Blacklist"] == "Pass" and tests["Memtest"] == "Pass - All"
    assert {v.split()[0] for v in tests.values()} == {"Pass"}


def test_dcgmi_diag_fail_on_a_continuation_row_wins():
    tests = parse_dcgmi_diag(
        fixture("dcgmi_diag_r2_gpu_memory_fail_gpu0_thermal_warning_stas00.txt")
    ).value
    # line 2 continues line 1; the Warning rows are notes
    assert tests == {"GPU Memory": "Fail - GPU: 0"}


def test_dcgmi_diag_error_row_is_a_failure():
    tests = parse_dcgmi_diag(
        fixture("dcgmi_diag_r3_deployment_error_row_remap_pending_stas00.txt")
    ).value
    assert tests is not None and list(tests) == ["Error 1"]
    assert tests["Error 1"].startswith("Fail")
    assert "row remappings are pending" in tests["Error 1"]  # the wrapped second line joined


def test_dcgmi_diag_not_a_table():
    result = parse_dcgmi_diag(
        "Error: unable to establish a connection to the specified host: localhost\n"
    )
    assert result.value is None
    assert any("dcgmi reported" in w for w in result.warnings)
