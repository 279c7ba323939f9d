"""The probe history store, run options and the small readers of the probe scripts' own output.

Expected values are written out by hand (sample values chosen here, lines typed as the scripts print
them).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from cli.probe import parse_size
from core.probes.checks.collectives import live_row
from core.probes.checks.distributed import consistency_problems, parse_sanity
from core.probes.checks.facts import parse_facts
from core.probes.checks.inventory import parse_df, parse_inventory_sections
from core.probes.checks.storage import dd_rate, required_bytes
from core.probes.evidence import ProbeEvidence, ProbeOutcome, ProbeStatus
from core.probes.history.records import HostProfile, StoredSeriesPoint
from core.probes.history.store import ProbeStore, ProbeStoreError
from core.probes.output.run_json import samples_summary
from core.probes.run.options import RunOptions, resolve_probes
from core.probes.samples import GpuMetric
from core.probes.transport.base import CommandResult
from core.validation import validation_message

# -- store
# -------------------------------------------------------------------------------------------------


def metric(t: float, gpu: int, **values: object) -> GpuMetric:
    return GpuMetric(t=t, gpu=gpu, **values)


def test_samples_round_trip_as_columns_with_nan_for_missing(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "p.db")
    run_id = store.start_run("h1", "quick", ["inventory"])
    store.add_samples(
        run_id,
        [
            metric(
                0.0,
                0,
                util_pct=99.0,
                temp_c=61.0,
                power_w=650.5,
                sm_clock_mhz=1980.0,
                mem_used_bytes=2**34,
                mem_total_bytes=80 * 10**9,
                clocks_event_mask=0x4,
            ),
            metric(0.0, 1, util_pct=None, temp_c=58.0),
        ],
    )
    store.add_samples(
        run_id,
        [metric(0.5, 0, util_pct=100.0, clocks_event_reasons=["hw_slowdown", "sw_power_cap"])],
    )
    table = ProbeStore(tmp_path / "p.db").load_samples(run_id)  # a second connection sees it
    assert len(table) == 3
    assert table.t.tolist() == [0.0, 0.0, 0.5]
    assert table.gpu.tolist() == [0.0, 1.0, 0.0]
    assert table.util[0] == 99.0 and math.isnan(table.util[1])
    assert table.mem_used[0] == 2**34
    assert table.throttle[0] == 0x4 and math.isnan(table.throttle[1])
    # reasons without a mask become the mask: hw_slowdown + sw_power_cap
    assert table.throttle[2] == 0x8 | 0x4
    assert table.gpus() == [0, 1]
    assert table.for_gpu(0).power.tolist()[0] == 650.5


def test_load_run_returns_everything_written(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "p.db")
    run_id = store.start_run("gpu-box", "full", ["inventory", "burn"], {"burn_seconds": 60})
    store.set_workdir(run_id, "/tmp/tuneplan.abc")
    store.add_series(
        run_id, [StoredSeriesPoint(t=1.0, series="busbw", x=1048576.0, y=12.5, label="nccl-tests")]
    )
    store.add_raw_output(
        run_id,
        "health",
        CommandResult(
            command="nvidia-smi -q", exit_code=0, stdout="out", stderr="", duration_s=0.25
        ),
        t=2.0,
    )
    store.add_event(run_id, 3.0, "log", "warning", "Xid 79 on GPU 0000:9b:00", "health")
    store.add_outcome(
        run_id,
        ProbeOutcome(
            name="inventory", status=ProbeStatus.ok, started=1.0, ended=2.0, warnings=["w1"]
        ),
    )
    store.save_evidence(run_id, ProbeEvidence(collective_interconnect="nvlink"))
    store.finish_run(run_id, "interrupted")
    run = store.load_run(run_id)
    assert run.summary.status == "interrupted" and run.summary.workdir == "/tmp/tuneplan.abc"
    assert run.summary.probes == ["inventory", "burn"] and run.options == {"burn_seconds": 60}
    assert run.evidence is not None and run.evidence.collective_interconnect == "nvlink"
    assert run.scorecard is None
    assert [(p.series, p.x, p.y) for p in run.series] == [("busbw", 1048576.0, 12.5)]
    assert [(r.command, r.stdout, r.exit_code) for r in run.raw_outputs] == [
        ("nvidia-smi -q", "out", 0)
    ]
    assert [(e.level, e.probe) for e in run.events] == [("warning", "health")]
    assert run.outcomes[0].warnings == ["w1"]
    assert len(run.samples) == 0
    with pytest.raises(KeyError):
        store.load_run(run_id + 1)


def test_runs_for_host_newest_first_and_delete(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "p.db")
    first = store.start_run("a", "quick", [], started=100.0)
    second = store.start_run("a", "quick", [], started=200.0)
    store.start_run("b", "quick", [], started=300.0)
    assert [r.id for r in store.runs_for_host("a")] == [second, first]
    store.delete_run(second)
    assert [r.id for r in store.runs_for_host("a")] == [first]
    with pytest.raises(ValueError, match="run status 'weird'"):
        store.finish_run(first, "weird")


def test_host_profiles_hold_no_secrets_and_update_by_name(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "p.db")
    store.save_host(
        HostProfile(name="lambda", target="ubuntu@1.2.3.4", identity_file="~/.ssh/id_ed25519")
    )
    store.save_host(HostProfile(name="lambda", target="ubuntu@1.2.3.5", data_path="/data"))
    assert [(h.name, h.target, h.data_path) for h in store.hosts()] == [
        ("lambda", "ubuntu@1.2.3.5", "/data")
    ]
    columns = {
        row[1] for row in sqlite3.connect(tmp_path / "p.db").execute("PRAGMA table_info(hosts)")
    }
    assert not {c for c in columns if "pass" in c or "secret" in c}
    store.delete_host("lambda")
    assert store.hosts() == []


def test_a_host_keeps_its_python_and_an_older_file_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    store = ProbeStore(path)
    store.save_host(HostProfile(name="old", target="ubuntu@1.2.3.4"))
    store.close()
    conn = sqlite3.connect(path)  # the file as version 3 left it: no python column
    conn.execute("ALTER TABLE hosts DROP COLUMN python")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    store = ProbeStore(path)
    assert store.host("old").python is None
    store.save_host(HostProfile(name="venv", target="ubuntu@1.2.3.5", python="~/venv/bin/python"))
    store.close()
    assert ProbeStore(path).host("venv").python == "~/venv/bin/python"


def test_schema_version_and_newer_file_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    # v2: the run lease and the ledger of created paths; v3: host groups; v4: the host's Python
    assert ProbeStore(path).schema_version == 4
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(ProbeStoreError, match="newer tuneplan"):
        ProbeStore(path)


def test_store_usable_from_the_thread_that_iterates(tmp_path: Path) -> None:
    # made here, written by another thread (as the GUI worker does)
    store = ProbeStore(tmp_path / "p.db")
    run_id = store.start_run("h", "quick", [])
    worker = threading.Thread(
        target=lambda: store.add_samples(run_id, [metric(1.0, 0, util_pct=5.0)])
    )
    worker.start()
    worker.join()
    assert store.load_samples(run_id).util.tolist() == [5.0]


def test_samples_summary_per_gpu() -> None:
    store = ProbeStore(":memory:")
    run_id = store.start_run("h", "quick", [])
    store.add_samples(
        run_id,
        [
            metric(0.0, 0, util_pct=50.0, temp_c=60.0, clocks_event_mask=0x1),
            metric(1.0, 0, util_pct=100.0, temp_c=70.0, clocks_event_mask=0x40),
        ],
    )
    summary = samples_summary(store.load_samples(run_id))
    assert summary["0"]["samples"] == 2
    assert summary["0"]["util_pct_mean"] == 75.0 and summary["0"]["temp_c_max"] == 70.0
    # 0x40; idle (0x1) left out
    assert summary["0"]["clock_event_reasons"] == ["hw_thermal_slowdown"]
    assert summary["0"]["power_w_max"] is None


# -- options
# ---------------------------------------------------------------------------------------------


def test_suites_and_probe_lists() -> None:
    assert resolve_probes("quick") == [
        "inventory",
        "health",
        "compute",
        "collectives",
        "storage",
        "distributed",
    ]
    assert resolve_probes("full")[-1] == "burn"
    assert resolve_probes("storage, health,storage") == ["storage", "health"]
    with pytest.raises(ValueError, match="unknown probe or suite 'gpu'; use quick, full"):
        resolve_probes("gpu")


def test_run_options_reject_bad_values_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="suite"):
        RunOptions(suite="fast")
    with pytest.raises(ValidationError, match="must be an absolute path"):
        RunOptions(data_path="data/train")
    with pytest.raises(ValidationError, match="burn_seconds"):
        RunOptions(burn_seconds=0)
    assert RunOptions(suite=["burn"]).suite_label == "burn"


# Where Python's str.splitlines() ends a line (Python docs, str.splitlines), and NUL, which no path
# holds.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\0"


@given(
    field=st.sampled_from(["data_path", "checkpoint_path", "python"]),
    head=st.text(st.characters(blacklist_characters=LINE_BREAKS, codec="utf-8"), max_size=20),
    separator=st.sampled_from(LINE_BREAKS),
    tail=st.text(st.characters(codec="utf-8"), max_size=20),
)
def test_a_path_holding_any_line_break_is_refused_in_one_sentence_naming_the_field(
    field: str, head: str, separator: str, tail: str
) -> None:
    """A host prints such a path back as two lines, the last of them another path (which a run then
    removes)."""
    with pytest.raises(ValidationError) as caught:
        RunOptions(**{field: f"/{head}{separator}{tail}"})
    message = validation_message(caught.value)
    assert message.startswith(f"{field}: must be a path on one line")
    assert len(message.splitlines()) == 1


def test_parse_size() -> None:
    assert parse_size("256M") == 256 * 10**6  # decimal, as the README says 80G is 10^9 bytes
    assert parse_size("1G") == 10**9
    assert parse_size("512MiB") == 512 * 2**20
    assert parse_size("2097152") == 2 * 2**20


# -- readers of the probe scripts' output
# ----------------------------------------------------------------


def test_parse_facts() -> None:
    text = (
        "tool nvidia-smi /usr/bin/nvidia-smi\ntool fio /usr/bin/fio\nuid 1000\n"
        "gpu GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\ngpu GPU 1: NVIDIA H100 80GB HBM3 (UUID: "
        "GPU-2)\nevents 0\n"
        'python\t/usr/bin/python3\t{"version": "3.10.12", "numpy": "1.26.4", "torch": null, '
        '"nvml": false}\npython\t/opt/conda/bin/python\t{"version": "3.11.9", "torch": "2.4.0", '
        '"cuda": true, "cuda_devices": 2, "nccl": true, "gloo": true, "distributed": true}\n'
        "python\t/broken\tnot json\n"
    )
    facts, warnings = parse_facts(text)
    assert facts.tools == {"nvidia-smi": "/usr/bin/nvidia-smi", "fio": "/usr/bin/fio"}
    assert facts.uid == 1000 and not facts.is_root
    assert facts.gpu_count == 2 and facts.nvidia
    assert facts.query_fields_event_reasons is False
    # the CUDA torch one
    assert facts.python is not None and facts.python.path == "/opt/conda/bin/python"
    assert facts.cuda
    assert len(warnings) == 1 and "/broken" in warnings[0]


def test_inventory_sections_and_df() -> None:
    text = """
### hostname
gpu-node-7
### os-release
NAME="Ubuntu"
PRETTY_NAME="Ubuntu 22.04.4 LTS"
### uname
Linux 5.15.0-112-generic x86_64
### lscpu
Model name:            AMD EPYC 9654 96-Core Processor
CPU(s):                384
### meminfo
MemTotal:       2113507764 kB
### virt
kvm
### container
none
### df
Filesystem     Type      1-blocks         Used    Available Capacity Mounted on
/dev/nvme0n1p1 ext4   1000000000000 400000000000 600000000000      40% /
proc           proc               0            0            0       -  /proc
fs-1:/export   nfs4   9000000000000 1000000000  8999000000000       1% /mnt/data
### speeds
eth0 100000 up
lo - unknown
"""
    inventory = parse_inventory_sections(text)
    assert inventory.hostname == "gpu-node-7"
    assert inventory.os == "Ubuntu 22.04.4 LTS"
    assert inventory.cpu_model == "AMD EPYC 9654 96-Core Processor" and inventory.cpu_cores == 384
    assert inventory.ram_bytes == 2113507764 * 1024
    assert inventory.virtualization == "kvm"
    assert [(f["mount"], f["type"], f["free"]) for f in inventory.filesystems] == [
        ("/", "ext4", "600000000000"),
        ("/mnt/data", "nfs4", "8999000000000"),
    ]
    assert inventory.nics == [{"name": "eth0", "speed_mbps": "100000", "state": "up"}]
    assert parse_df("garbage\n\x00\nnot a df line") == []


def test_live_row_and_dd_rate() -> None:
    row = (
        "  1048576   262144   float   sum   -1   1343.3   0.78   0.78   0   1994.4   0.53   "
        "0.53   0"
    )
    assert live_row(row) == (1048576, 0.53, 0.53)
    assert live_row(
        "0:   8   2   float   sum   -1   30.1   0.00   0.00   0   29.9   0.00   0.00   0"
    ) == (8, 0.0, 0.0)
    assert live_row("# Avg bus bandwidth    : 0.4534") is None
    assert dd_rate("268435456 bytes (268 MB, 256 MiB) copied, 0.5 s, 537 MB/s") == 268435456 / 0.5
    assert dd_rate("dd: failed to open") is None
    assert required_bytes(256 << 20, 2000) == 2 * (256 << 20) + (256 << 20) + 2000 * 4096


def test_distributed_sanity_output() -> None:
    text = (
        'noise\nTUNEPLAN_RANK {"rank": 1, "env": {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": '
        '"h", "MASTER_PORT": "1"}, "sum_first": 3.0}\nTUNEPLAN_RANK {"rank": 0, "env": {"RANK": '
        '"0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "sum_first": '
        '3.0}\nTUNEPLAN_DIST {"backend": "gloo", "world_size": 2, "all_reduce_ok": true}\n'
    )
    ranks, summary = parse_sanity(text)
    assert [r["rank"] for r in ranks] == [0, 1]
    assert summary == {"backend": "gloo", "world_size": 2, "all_reduce_ok": True}
    assert consistency_problems(ranks, 2) == []
    assert consistency_problems(ranks[:1], 2) == ["ranks seen [0], expected 0..1 once each"]
    assert parse_sanity("TUNEPLAN_RANK {broken") == ([], None)


def test_sample_table_arrays_are_float64() -> None:
    store = ProbeStore(":memory:")
    run_id = store.start_run("h", "quick", [])
    store.add_samples(run_id, [metric(float(i), i % 2, util_pct=float(i)) for i in range(10)])
    table = store.load_samples(run_id)
    assert table.util.dtype == np.float64 and table.for_gpu(1).util.tolist() == [
        1.0,
        3.0,
        5.0,
        7.0,
        9.0,
    ]
