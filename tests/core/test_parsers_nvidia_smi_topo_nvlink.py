"""nvidia-smi topo -m and nvlink --status. Expected values read by hand from the fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.probes.parsers.nvidia_smi_nvlink import parse_nvlink_status
from core.probes.parsers.nvidia_smi_topo import parse_topo_matrix
from core.probes.samples import TopologyMatrix

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_topo_8x_h100_all_nv18():
    result = parse_topo_matrix(fixture("nvidia_smi_topo_m_8xH100_SXM_NV18_noNICs.txt"))
    assert result.warnings == []
    topo = result.value
    assert topo is not None
    assert [g.index for g in topo.gpus] == list(range(8))
    assert topo.link(0, 1) == "NV18"  # line 2, column GPU1
    assert topo.link(3, 7) == "NV18"  # line 5, column GPU7
    assert topo.link(5, 5) == "X"  # diagonal
    assert len(topo.links) == 64
    assert topo.gpus[0].cpu_affinity == "0-51,104-155"  # line 2
    assert topo.gpus[4].cpu_affinity == "52-103,156-207"  # line 6
    assert (topo.gpus[0].numa_affinity, topo.gpus[7].numa_affinity) == ("0", "1")
    assert topo.nics == []


def test_topo_8x_a100_space_aligned():
    topo = parse_topo_matrix(fixture("nvidia_smi_topo_m_8xA100_SXM_NV12_noNICs_spaces.txt")).value
    assert topo is not None
    assert topo.link(0, 7) == "NV12"  # line 2, last link cell
    assert topo.link(6, 2) == "NV12"  # line 8
    assert topo.gpus[7].cpu_affinity == "24-47"  # line 9


def test_topo_pcie_box_without_nvlink_and_four_nics():
    result = parse_topo_matrix(fixture("nvidia_smi_topo_m_4xRTX6000Ada_PCIe_no_NVLink_4NICs.txt"))
    assert result.warnings == []
    topo = result.value
    assert topo is not None
    assert topo.link(0, 1) == "NODE"  # line 2
    assert topo.link(0, 2) == "SYS"  # line 2: crosses the socket interconnect
    assert topo.link(2, 3) == "NODE"  # line 4
    # NIC Legend, lines 23-26
    assert [n.device for n in topo.nics] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert topo.gpu_nic_links[(0, 0)] == "NODE"  # line 2, column NIC0
    assert topo.gpu_nic_links[(0, 3)] == "SYS"  # line 2, column NIC3
    assert topo.gpu_nic_links[(3, 2)] == "NODE"  # line 5, column NIC2
    assert topo.gpus[2].numa_affinity == "1"  # line 4
    assert topo.gpus[0].gpu_numa_id is None  # 'N/A'
    assert not any(t.startswith("NV") for t in topo.links.values())


def test_topo_workstation_phb_with_code_fence_tail():
    topo = parse_topo_matrix(fixture("nvidia_smi_topo_m_2GPU_PCIe_PHB_workstation_2NICs.txt")).value
    assert topo is not None
    assert topo.link(0, 1) == "PHB" and topo.link(1, 0) == "PHB"  # lines 2-3
    assert [n.label for n in topo.nics] == ["NIC0", "NIC1"]
    assert topo.gpu_nic_links[(1, 1)] == "NODE"  # line 3


def test_topo_ansi_header_in_vm():
    result = parse_topo_matrix(fixture("nvidia_smi_topo_m_1xH100_VM_with_ANSI_escapes.txt"))
    assert result.warnings == []
    topo = result.value
    assert topo is not None
    assert topo.links == {(0, 0): "X"}  # line 2
    assert topo.gpus[0].cpu_affinity == "0-19"
    assert topo.gpus[0].numa_affinity == "0"


def test_topo_old_driver_nic_names_as_columns():
    # older drivers print mlx5_k as column labels instead of NICk; typed from that layout
    text = (
        "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
        "GPU0\t X \tNV4\tPIX\t0-19\n"
        "GPU1\tNV4\t X \tPHB\t0-19\n"
        "mlx5_0\tPIX\tPHB\t X \t\n"
    )
    topo = parse_topo_matrix(text).value
    assert topo is not None
    assert topo.link(0, 1) == "NV4"
    assert topo.nics[0].device == "mlx5_0"
    assert topo.gpu_nic_links == {(0, 0): "PIX", (1, 0): "PHB"}


def test_topo_cut_output_and_json_round_trip():
    lines = fixture("nvidia_smi_topo_m_8xH100_SXM_NV18_noNICs.txt").split("\n")
    result = parse_topo_matrix("\n".join(lines[:4]))  # header + GPU0..GPU2
    topo = result.value
    assert topo is not None and len(topo.gpus) == 3
    assert any("GPU3" in w for w in result.warnings)
    again = TopologyMatrix.model_validate_json(topo.model_dump_json())
    assert again.link(2, 1) == "NV18"


@pytest.mark.parametrize("text", ["", "Legend:\n  X = Self\n", "GPU0 X NV18 NV18\n"])
def test_topo_without_header(text):
    assert parse_topo_matrix(text).value is None


def test_nvlink_8x_a100_twelve_links():
    result = parse_nvlink_status(fixture("nvidia_smi_nvlink_status_8xA100.txt"))
    assert result.warnings == []
    gpus = result.value
    assert gpus is not None
    assert [g.gpu for g in gpus] == list(range(8))
    assert gpus[0].name == "NVIDIA A100-SXM4-80GB"  # line 1
    assert gpus[0].uuid == "GPU-5269b708-678a-b1a8-60f0-c90406537486"  # line 1
    assert all(g.link_speeds_gbps == [25.0] * 12 for g in gpus)  # 'Link 0..11: 25 GB/s'
    assert all(not g.all_inactive and g.inactive_links == [] for g in gpus)


def test_nvlink_all_links_inactive():
    gpus = parse_nvlink_status(
        fixture("nvidia_smi_nvlink_status_A100_all_links_inactive.txt")
    ).value
    assert gpus is not None and len(gpus) == 1
    assert gpus[0].gpu == 6  # line 1
    assert gpus[0].all_inactive is True  # line 2
    assert gpus[0].link_speeds_gbps == []


def test_nvlink_some_links_inactive_h100():
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n"
        "\t Link 0: 26.562 GB/s\n"
        "\t Link 1: <inactive>\n"
        "\t Link 2: 26.562 GB/s\n"
    )
    gpus = parse_nvlink_status(text).value
    assert gpus is not None
    assert gpus[0].link_speeds_gbps == [26.562, None, 26.562]
    assert gpus[0].inactive_links == [1]
