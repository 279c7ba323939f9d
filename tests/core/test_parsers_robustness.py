"""Every parser on every fixture, cut, garbled, ANSI-wrapped or fed another tool's output: never
raises.

Parsers wrap themselves in a guard that turns an exception into an 'internal parser error' warning,
so these tests look for that warning rather than for an exception.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.probes import parsers
from core.probes.parsers._common import never_raises
from core.probes.parsers.nvidia_smi_query import QueryGpuStream
from core.probes.samples import ParseResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
FIXTURE_FILES = sorted(p for p in FIXTURES.iterdir() if p.name != "SOURCES.md")
FIXTURE_BYTES = {p.name: p.read_bytes() for p in FIXTURE_FILES}
PARSERS = [getattr(parsers, name) for name in sorted(parsers.__all__) if name.startswith("parse_")]
BUG = "internal parser error"


def assert_no_crash(parser, text):
    result = parser(text)
    assert not any(BUG in w for w in result.warnings), result.warnings
    return result


def test_every_fixture_is_listed_in_sources():
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert len(FIXTURE_FILES) == 46
    for path in FIXTURE_FILES:
        assert f"`{path.name}`" in sources, path.name


def test_all_parsers_exported():
    assert len(PARSERS) == 16


def test_guard_turns_a_bug_into_a_warning():
    @never_raises
    def broken(text: str) -> ParseResult[int]:
        raise KeyError(text)

    result = broken("x")
    assert result.value is None
    assert result.warnings == ["internal parser error in broken: KeyError('x')"]


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("name", sorted(FIXTURE_BYTES))
def test_whole_fixture_and_cuts(parser, name):
    text = FIXTURE_BYTES[name].decode("utf-8")
    assert_no_crash(parser, text)
    for k in range(1, 12):
        cut = len(text) * k // 12
        assert_no_crash(parser, text[:cut])
        assert_no_crash(parser, text[cut:])


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_slices_and_byte_noise(parser, data):
    name = data.draw(st.sampled_from(sorted(FIXTURE_BYTES)))
    blob = FIXTURE_BYTES[name]
    start = data.draw(st.integers(0, len(blob)))
    end = data.draw(st.integers(start, len(blob)))
    chunk = bytearray(blob[start:end])
    for _ in range(data.draw(st.integers(0, 8))):
        if chunk:
            chunk[data.draw(st.integers(0, len(chunk) - 1))] = data.draw(st.integers(0, 255))
    assert_no_crash(parser, bytes(chunk).decode("utf-8", errors="replace"))


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_arbitrary_text(parser, text):
    assert_no_crash(parser, text)


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00" * 64,
        "9" * 5000,
        " ".join(["9" * 5000] * 13),
        "{" * 2000,
        '"' * 999,
        "GPU " + "9" * 5000 + ": x\n\tLink " + "9" * 5000 + ": 25 GB/s",
        "NVRM: Xid (PCI:0000:00:00): " + "9" * 5000 + ", x",
        '{"fio version": "x", "jobs": [{"jobname": 1, "read": {"bw": 1e400, "iops": NaN}}]}',
        "| payload | busbw | algbw |\n| " + "9" * 400 + "GiB | 1 | 1 |",
    ],
)
def test_adversarial_inputs(parser, text):
    assert_no_crash(parser, text)


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
def test_non_text_input(parser):
    for value in (None, b"bytes \xff", 12345):
        assert_no_crash(parser, value)


def ansi_crlf(text: str) -> str:
    """What a TTY capture looks like: colour codes around each line and CRLF line ends."""
    return "\r\n".join(f"\x1b[1;32m{line}\x1b[0m" for line in text.split("\n"))


@pytest.mark.parametrize(
    ("parser", "name"),
    [
        (parsers.parse_nccl_tests, "nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt"),
        (parsers.parse_nvidia_smi_q, "nvidia_smi_q_8xH100_535.183.01.txt"),
        (parsers.parse_topo_matrix, "nvidia_smi_topo_m_4xRTX6000Ada_PCIe_no_NVLink_4NICs.txt"),
        (parsers.parse_ibstat, "ibstat_H100_node_some_ports_down.txt"),
        (parsers.parse_dmesg, "dmesg_xid119_gsp_rpc_timeout_H100_XE9680.log"),
        (parsers.parse_dmon, "nvidia_smi_dmon_1xH100_under_gpuburn_590.48.01.txt"),
        (parsers.parse_query_gpu, "nvidia_smi_query_gpu_csv_1xL40S_idle_595.80.csv"),
        (parsers.parse_perftest, "ib_write_bw_roce400_hostmem_1qp_sweep.log"),
        (parsers.parse_nccl_debug, "nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log"),
        (parsers.parse_ibv_devinfo, "ibv_devinfo_v_ConnectX3_mlx4_port2_polling.txt"),
        (parsers.parse_dcgmi_diag, "dcgmi_diag_r4_all_pass_gcm.txt"),
    ],
)
def test_ansi_and_crlf_give_the_same_value(parser, name):
    text = FIXTURE_BYTES[name].decode("utf-8")
    plain, wrapped = parser(text), parser(ansi_crlf(text))
    assert plain.value is not None
    assert wrapped.value == plain.value


@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(1, 200), max_size=40))
def test_stream_chunking_does_not_change_samples(cuts):
    text = FIXTURE_BYTES["nvidia_smi_query_gpu_csv_1xH100_under_gpuburn_590.48.01.csv"].decode(
        "utf-8"
    )
    text = text + re.sub(r"08:12:53\.353", "08:12:54.353", text.split("\n", 1)[1])  # a second tick
    stream = QueryGpuStream()
    samples, pos = [], 0
    for size in cuts:
        samples.extend(stream.feed(text[pos : pos + size]))
        pos += size
    samples.extend(stream.feed(text[pos:]))
    samples.extend(stream.flush())
    assert [s.t for s in samples] == [0.0, 1.0]
    assert not any(BUG in w for w in stream.warnings)
