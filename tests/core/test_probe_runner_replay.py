"""The GPU paths of the probe runner, replayed from real tool outputs (tests/fixtures/probes/).

This machine has no NVIDIA GPU, no InfiniBand and no Xid in its kernel log, so the test double is a
local transport that puts fake ``nvidia-smi``, ``all_reduce_perf``, ``ibstat``, ``fio`` and
``dmesg`` first on PATH; each prints a real captured output from the fixtures (see
tests/fixtures/probes/SOURCES.md). Everything else (work directory, uploads, facts, df, the
small-file test, the runner's threads and store) is real. Expected values were read by hand from the
fixture files, quoted next to each assertion.
"""

from __future__ import annotations

import shlex
import stat
import threading
import time
from pathlib import Path

import pytest

from core.probes.checks import compute
from core.probes.checks.base import HostFacts, ProbeCallbacks, ProbeContext, PythonInfo
from core.probes.checks.compute import LINK_QUERY
from core.probes.evidence import ProbeEvidence, ProbeStatus
from core.probes.history.store import ProbeStore
from core.probes.run.events import (
    LogEvent,
    MetricsBatch,
    ProbeFinished,
    ProbeStarted,
    RunFinished,
    RunStarted,
    SeriesPoint,
)
from core.probes.run.options import RunOptions
from core.probes.run.runner import run_suite
from core.probes.transport.base import ExecGenerator
from core.probes.transport.local import LocalTransport
from core.resources import resource_path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes"
Q = FIXTURES / "nvidia_smi_q_8xH100_535.183.01.txt"
TOPO = FIXTURES / "nvidia_smi_topo_m_8xH100_SXM_NV18_noNICs.txt"
NVLINK = FIXTURES / "nvidia_smi_nvlink_status_8xA100.txt"
QUERY = FIXTURES / "nvidia_smi_query_gpu_csv_1xH100_under_gpuburn_590.48.01.csv"
NCCL = FIXTURES / "nccl_allreduce_1x8xA100_SXM4_40GB_single_node_10GiB.txt"
DMESG = FIXTURES / "dmesg_xid119_gsp_rpc_timeout_H100_XE9680.log"
IBSTAT = FIXTURES / "ibstat_H100_node_CX7_all_active.txt"
FIO = FIXTURES / "fio_json_fio3.1_randread_4k_qd1_32jobs_SATA_SSD_PM883.json"

# The PCIe link query has no fixture of its own: this is the query-gpu CSV fixture's GPU 0 in the
# same fields (its columns index 0, pci.bus_id 00000000:00:09.0, pcie.link.gen.current 5, .max 5,
# width.current 16, .max 16).
LINK_ARGS = LINK_QUERY.split(" ", 1)[1]
LINK_CSV = (
    "index, pci.bus_id, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, "
    "pcie.link.width.max\n0, 00000000:00:09.0, 5, 5, 16, 16"
)

# `nvidia-smi -L` has no fixture; these lines repeat the product name and UUIDs of the -q fixture
# (lines 9, 25...).
UUIDS = [
    "566e6f65-c38e-b12f-4824-6944218668b9",
    "9930d717-21dd-7692-054e-3d0a2bae76b5",
    "973565ff-45cf-12ea-4e91-33386720f7bb",
    "6b932a61-abfd-5ea1-b26a-7dea7f2fa601",
    "726d356b-f548-bbfd-c81e-b9c68f2f1587",
    "06db64f6-6181-5a90-cf95-5ce52a58c4e5",
    "a5271aa6-4cdb-28c7-0ef5-5da271d0caae",
    "7e78e6c8-c71c-66c7-9ded-f8836cecab32",
]


def write_tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def make_fake_tools(bin_dir: Path) -> None:
    """Fake GPU-node tools that answer with the real fixture outputs."""
    bin_dir.mkdir()
    gpu_lines = "\n".join(
        f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{u})" for i, u in enumerate(UUIDS)
    )
    write_tool(
        bin_dir,
        "nvidia-smi",
        f"""case "$*" in
  -L) printf '%s\\n' {shlex.quote(gpu_lines)} ;;
  --help-query-gpu) echo '"clocks_event_reasons.active"' ;;
  -q) cat {shlex.quote(str(Q))} ;;
  "topo -m") cat {shlex.quote(str(TOPO))} ;;
  "nvlink --status") cat {shlex.quote(str(NVLINK))} ;;
  {shlex.quote(LINK_ARGS)}) printf '%s\\n' {shlex.quote(LINK_CSV)} ;;
  --query-gpu=*)
    head -n 1 {shlex.quote(str(QUERY))}
    while true; do tail -n +2 {shlex.quote(str(QUERY))}; sleep 0.2; done ;;
  *) echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 9 ;;
esac
""",
    )
    write_tool(bin_dir, "all_reduce_perf", f"cat {shlex.quote(str(NCCL))}\n")
    write_tool(bin_dir, "ibstat", f"cat {shlex.quote(str(IBSTAT))}\n")
    write_tool(bin_dir, "fio", f"cat {shlex.quote(str(FIO))}\n")
    write_tool(bin_dir, "dmesg", f"cat {shlex.quote(str(DMESG))}\n")


class ReplayTransport(LocalTransport):
    """Local transport whose commands find the fake GPU tools first on PATH."""

    def __init__(self, bin_dir: Path) -> None:
        super().__init__()
        self.prefix = f'export PATH={shlex.quote(str(bin_dir))}:"$PATH"; '

    def _execute(
        self,
        command: str,
        *,
        timeout: float | None,
        cancel: threading.Event | None,
        input: bytes | None,
    ) -> ExecGenerator:
        return super()._execute(self.prefix + command, timeout=timeout, cancel=cancel, input=input)


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One replayed run shared by the tests below (it takes a few seconds)."""
    root = tmp_path_factory.mktemp("replay")
    make_fake_tools(root / "bin")
    store = ProbeStore(root / "probes.db")
    options = RunOptions(
        suite=["inventory", "health", "collectives", "storage", "gpu_metrics"],
        python="python3",
        fio_size=8 << 20,
        fio_runtime_s=1,
        small_files=50,
        metrics_seconds=1.5,
    )
    events = list(
        run_suite(ReplayTransport(root / "bin"), options, store, threading.Event(), "replay-h100")
    )
    return {"events": events, "store": store, "root": root}


def replay_events(replay: dict[str, object]) -> list[object]:
    events = replay["events"]
    assert isinstance(events, list)
    return events


def finished(replay: dict[str, object]) -> RunFinished:
    events = replay["events"]
    assert isinstance(events, list)
    last = events[-1]
    assert isinstance(last, RunFinished)
    return last


def outcomes(replay: dict[str, object]) -> dict[str, ProbeStatus]:
    events = replay["events"]
    assert isinstance(events, list)
    return {e.outcome.name: e.outcome.status for e in events if isinstance(e, ProbeFinished)}


def test_run_completes_and_every_probe_reports(replay: dict[str, object]) -> None:
    run = finished(replay)
    assert run.status == "completed"
    assert run.workdir_removed is True
    assert outcomes(replay) == {
        "inventory": ProbeStatus.ok,
        "health": ProbeStatus.ok,
        "collectives": ProbeStatus.ok,
        "storage": ProbeStatus.ok,
        "gpu_metrics": ProbeStatus.ok,
    }
    events = replay["events"]
    assert isinstance(events, list)
    assert isinstance(events[0], RunStarted)
    started = [e for e in events if isinstance(e, ProbeStarted)]
    assert [(e.index, e.total) for e in started] == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]


def test_inventory_from_nvidia_smi_q_topo_nvlink_and_ibstat(replay: dict[str, object]) -> None:
    inventory = finished(replay).evidence.inventory
    assert inventory is not None and inventory.nvidia is not None
    # nvidia_smi_q_8xH100_535.183.01.txt lines 4, 7, 9, 14, 47, 63-64 (PCIe gen), 69-70 (width 16x).
    assert inventory.nvidia.driver_version == "535.183.01"
    assert len(inventory.nvidia.gpus) == 8
    gpu0 = inventory.nvidia.gpus[0]
    assert gpu0.name == "NVIDIA H100 80GB HBM3"
    assert gpu0.persistence_mode is True
    assert gpu0.virtualization_mode == "Pass-Through"
    assert (gpu0.pcie_gen_current, gpu0.pcie_gen_max, gpu0.pcie_width_current) == (5, 5, 16)
    # topo: every GPU pair is NV18.
    assert inventory.topology is not None
    assert inventory.topology.link(0, 7) == "NV18"
    # nvlink --status fixture: 8 GPUs x 12 links of 25 GB/s.
    assert inventory.nvlink is not None and len(inventory.nvlink) == 8
    assert inventory.nvlink[0].link_speeds_gbps == [25.0] * 12
    # ibstat: 12 CAs, 8 at rate 400 and 4 at rate 100.
    assert inventory.infiniband is not None
    rates = sorted(p.rate_gbps for p in inventory.infiniband.ports if p.rate_gbps is not None)
    assert rates == [100.0] * 4 + [400.0] * 8


def test_health_reads_counters_and_xid_from_the_kernel_log(replay: dict[str, object]) -> None:
    evidence = finished(replay).evidence
    assert evidence.health is not None and len(evidence.health.health) == 8
    gpu0, gpu1 = evidence.health.health[0], evidence.health.health[1]
    assert gpu0.pcie_replays == 120 and gpu1.pcie_replays == 111  # lines 74 and 279
    # lines 152-153
    assert gpu0.remapped_rows_pending is False and gpu0.remapped_rows_failure is False
    assert gpu0.remap_histogram.get("max") == 2560  # line 155
    assert evidence.kernel_log is not None
    assert evidence.kernel_log.xid_codes == [119]  # dmesg fixture: five "Xid ... 119" lines
    logs = [e for e in replay_events(replay) if isinstance(e, LogEvent)]
    xid_logs = [e for e in logs if e.message.startswith("Xid 119")]
    assert xid_logs and all(e.level == "error" for e in xid_logs)


def test_collectives_from_all_reduce_perf(replay: dict[str, object]) -> None:
    evidence = finished(replay).evidence
    collective = evidence.collectives
    assert collective is not None and collective.tool == "nccl-tests"
    # fixture row: 10737418240 B, out-of-place busbw 232.20, in-place 232.13; "Avg bus bandwidth :
    # 232.167".
    assert collective.nranks == 8
    assert collective.peak_busbw == pytest.approx(232.20)
    assert collective.avg_busbw == pytest.approx(232.167)
    assert evidence.collective_interconnect == "nvlink"  # topo fixture is all NV18
    points = [
        e for e in replay_events(replay) if isinstance(e, SeriesPoint) and e.series == "busbw"
    ]
    assert [(p.x, p.y) for p in points] == [(10737418240.0, 232.13)]


def test_storage_from_fio_json_and_a_real_small_file_test(replay: dict[str, object]) -> None:
    storage = finished(replay).evidence.storage
    assert len(storage) == 1
    result = storage[0]
    assert result.role == "scratch" and result.tool == "fio" and result.skipped_reason is None
    # fio 3.1 fixture: randread, "iops" : 45419.109682, clat "99.000000" : 790528 (ns).
    assert result.rand_read_iops == pytest.approx(45419.109682)
    assert result.rand_read_p99_ms == pytest.approx(0.790528)
    assert result.seq_read_bytes_per_s is None  # the fixture has no sequential job
    assert result.small_file_ops_per_s is not None and result.small_file_ops_per_s > 0
    assert result.free_bytes is not None and result.free_bytes > 0


def test_gpu_samples_stream_into_events_and_the_store(replay: dict[str, object]) -> None:
    batches = [e for e in replay_events(replay) if isinstance(e, MetricsBatch)]
    assert batches
    sample = batches[0].metrics[0]
    # query-gpu CSV fixture row: 100 %, 19818 MiB of 81559 MiB, 59 C, 631.95 W, SM 1980 MHz, mem
    # 2619 MHz.
    assert (sample.gpu, sample.util_pct, sample.temp_c, sample.power_w) == (0, 100.0, 59.0, 631.95)
    assert (sample.sm_clock_mhz, sample.mem_clock_mhz) == (1980.0, 2619.0)
    assert sample.mem_used_bytes == 19818 * 2**20
    run = finished(replay)
    store = replay["store"]
    assert isinstance(store, ProbeStore)
    stored = store.load_run(run.run_id)
    sent = sum(len(b.metrics) for b in batches)
    # metrics_seconds=1.5 at a 0.2 s fake tick, plus the other probes
    assert len(stored.samples) == sent >= 5
    assert set(stored.samples.power.tolist()) == {631.95}
    assert stored.summary.status == "completed"
    assert {o.name for o in stored.outcomes} == {
        "inventory",
        "health",
        "collectives",
        "storage",
        "gpu_metrics",
    }
    commands = [r.command for r in stored.raw_outputs]
    assert "nvidia-smi -q" in commands and any(c.startswith("dmesg") for c in commands)
    raw_q = next(r for r in stored.raw_outputs if r.command == "nvidia-smi -q")
    assert raw_q.stdout.rstrip("\n") == Q.read_text().rstrip("\n")
    assert stored.evidence is not None and stored.evidence.collectives is not None


def test_work_directory_is_gone(replay: dict[str, object]) -> None:
    started = replay_events(replay)[0]
    assert isinstance(started, RunStarted) and started.workdir
    assert not Path(started.workdir).exists()


# Stand-in for the host's torch (this machine has no CUDA): matmul.py's JSON lines, one GPU. Only
# the event kinds matter here; the compute test asserts on the PCIe link the fake nvidia-smi
# reports, not on these figures.
FAKE_TORCH = """case "$2" in
  measure) echo '{"event": "result", "device": "cuda", "index": 0, "dtype": "bfloat16", "n": 8192, "tflops": 1.0}' ;;
  burn) echo '{"event": "tick", "t": 0.5, "device": "cuda", "index": 0, "tflops": 1.0}'; sleep 0.3
        echo '{"event": "done"}' ;;
  *) exit 9 ;;
esac
"""  # noqa: E501


def test_compute_reads_the_pcie_link_while_the_gpus_are_loaded(tmp_path: Path) -> None:
    make_fake_tools(tmp_path / "bin")
    write_tool(tmp_path / "bin", "fake-torch-python", FAKE_TORCH)
    commands: list[str] = []
    workdir = tmp_path / "work"
    workdir.mkdir()
    facts = HostFacts(
        tools={"nvidia-smi": "nvidia-smi"},
        gpu_lines=[f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-{UUIDS[0]})"],
        python=PythonInfo(
            path=str(tmp_path / "bin" / "fake-torch-python"),
            torch="2.4.0",
            cuda=True,
            cuda_devices=1,
        ),
    )
    ctx = ProbeContext(
        transport=ReplayTransport(tmp_path / "bin"),
        options=RunOptions(),
        workdir=str(workdir),
        facts=facts,
        evidence=ProbeEvidence(),
        cancel=threading.Event(),
        callbacks=ProbeCallbacks(
            log=lambda *a: None,
            point=lambda *a: None,
            raw=lambda _probe, result: commands.append(result.command),
        ),
        clock=time.monotonic,
        resources=resource_path("probes"),
        name="compute",
    )
    compute.run(ctx)
    links = ctx.evidence.pcie_under_load
    assert links is not None and len(links) == 1, ctx.warnings
    # query-gpu CSV fixture (H100 under gpu-burn): bus 00000000:00:09.0, Gen 5 of 5, x16 of x16.
    gpu = links[0]
    assert (gpu.index, gpu.pci_bus_id) == (0, "00000000:00:09.0")
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (
        5,
        5,
        16,
        16,
    )
    # The link was read while the load ran: the query was recorded before the streamed burn command
    # ended.
    assert LINK_QUERY in commands
    assert commands.index(LINK_QUERY) < next(i for i, c in enumerate(commands) if " burn " in c)
