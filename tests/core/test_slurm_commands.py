"""The Slurm command lines tuneplan sends to a login node, and its reading of ``scontrol`` output,
without a Slurm.

The ``-o`` lines below are what Debian's slurm-wlm 22.05.8 printed on the test Slurm of
tests/integration/slurm.py (two slurmds on one host); the block form is the same partition laid out
as ``scontrol show partition`` prints it without ``-o`` (one ``Key=Value`` group per indented line).
The real commands run against a real Slurm in tests/integration/test_slurm_transport.py.
"""

from __future__ import annotations

import shlex

import pytest

from core.probes.transport.local import LocalTransport
from core.probes.transport.scontrol import parse_node_addresses, parse_node_gpus, parse_partitions
from core.probes.transport.slurm import salloc_command
from core.probes.transport.srun import SrunTransport

PARTITION_ONE_LINE = (
    "PartitionName=tptest AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=YES QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED "
    "Nodes=tpnode[1-2] PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO "
    "OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=4 TotalNodes=2 "
    "SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED "
    "TRES=cpu=4,mem=1000M,node=2,billing=4\n"
)
PARTITIONS_BLOCKS = """PartitionName=cpu
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   AllocNodes=ALL Default=YES QoS=N/A
   Nodes=cpu-[1-13]
   State=UP TotalCPUs=1472 TotalNodes=13 SelectTypeParameters=NONE
   TRES=cpu=1472,mem=24552361M,node=13,billing=1472

PartitionName=gpu
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   AllocNodes=ALL Default=NO QoS=N/A
   Nodes=gpu-a-[1-4],gpu-b-[1-6]
   State=UP TotalCPUs=3104 TotalNodes=10 SelectTypeParameters=NONE
   TRES=cpu=3104,node=10,gres/gpu=80
"""
NODE_LINE = (
    "NodeName=tpnode1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=4.78 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 "
    "NodeHostName=vm Port=58221 Version=22.05.8 OS=Linux 6.18.44-fc-v973 #1 SMP PREEMPT_DYNAMIC "
    "@0  RealMemory=500 AllocMem=0 FreeMem=17036 Sockets=2 Boards=1 State=IDLE ThreadsPerCore=1 "
    "TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=tptest  BootTime=2026-12-01T08:52:07 "
    "CfgTRES=cpu=2,mem=500M,billing=2 AllocTRES= CapWatts=n/a\nNodeName=gpu-node-07 Arch=x86_64 "
    "NodeAddr=10.1.2.7 NodeHostName=gpu-node-07 State=IDLE\n"
)


def test_partitions_one_line_each() -> None:
    (part,) = parse_partitions(PARTITION_ONE_LINE).values()
    assert (part.name, part.total_nodes, part.default) == ("tptest", 2, True)


def test_partitions_in_blocks() -> None:
    parts = parse_partitions(PARTITIONS_BLOCKS)
    assert {name: (p.total_nodes, p.default) for name, p in parts.items()} == {
        "cpu": (13, True),
        "gpu": (10, False),
    }


def test_node_addresses() -> None:
    assert parse_node_addresses(NODE_LINE) == {"tpnode1": "127.0.0.1", "gpu-node-07": "10.1.2.7"}


def test_node_gpus_as_a_step_asks_for_them() -> None:
    text = (
        "NodeName=g1 Gres=gpu:h100:8(S:0-1) NodeAddr=10.0.0.1\n"
        "NodeName=g2 Gres=gpu:a100:4(S:0),gpu:v100:2(S:1),nic:2 NodeAddr=10.0.0.2\n"
        "NodeName=g3 Gres=gpu:4 NodeAddr=10.0.0.3\n"
        "NodeName=c1 Gres=(null) NodeAddr=10.0.0.4\n"
    )
    assert parse_node_gpus(text) == {
        "g1": "gpu:h100:8",
        "g2": "gpu:a100:4,gpu:v100:2",
        "g3": "gpu:4",
    }
    assert parse_node_gpus(NODE_LINE) == {}


def test_salloc_asks_for_whole_nodes_and_holds_them_without_a_shell() -> None:
    line = salloc_command(4, "gpu", 90, extra_args=["--account=proj x"])
    assert line.endswith(" 2>&1")
    assert shlex.split(line.removesuffix(" 2>&1")) == [
        "salloc",
        "--no-shell",
        "--nodes",
        "4",
        "--time",
        "90",
        "--job-name",
        "tuneplan-probe",
        "--partition",
        "gpu",
        "--exclusive",
        "--mem=0",
        "--account=proj x",
    ]
    assert "--exclusive" not in salloc_command(2, None, 5, exclusive=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 0}, "the node count must be 1 or more, not 0"),
        ({"time_limit_min": 0}, "the allocation's time limit must be 1 minute or more, not 0"),
        (
            {"partition": "gpu,cpu"},
            "partition 'gpu,cpu' is not a partition name (one word, no commas)",
        ),
        (
            {"extra_args": ["account=x"]},
            "salloc argument 'account=x' must be one option on one line, such as --account=NAME",
        ),
    ],
)
def test_salloc_refuses_what_slurm_would(kwargs: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"nodes": 2, "partition": None, "time_limit_min": 10, **kwargs}
    with pytest.raises(ValueError) as caught:
        salloc_command(**values)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_srun_line_names_the_job_node_and_step_and_bounds_the_command() -> None:
    transport = SrunTransport(LocalTransport(), "1234", "gpu-node-07")
    line = transport.srun_command("echo 'a b'", "tuneplan-step-x", 30)
    words = shlex.split(line)
    assert words[:15] == [
        "exec",
        "srun",
        "--jobid",
        "1234",
        "--nodelist",
        "gpu-node-07",
        "--nodes",
        "1",
        "--ntasks",
        "1",
        "--overlap",
        "--quiet",
        "--job-name",
        "tuneplan-step-x",
        "bash",
    ]
    assert words[15] == "-c"
    assert "timeout -k 5 36 bash -c 'echo '\"'\"'a b'\"'\"''" in words[16]
    assert "timeout" not in shlex.split(transport.srun_command("true", "s", None))[16]
    assert not any(word.startswith("--gres") for word in words)
    with_gpus = SrunTransport(LocalTransport(), "1234", "g1", gpus="gpu:h100:8")
    assert shlex.split(with_gpus.srun_command("true", "s", None))[14:16] == [
        "--gres=gpu:h100:8",
        "bash",
    ]


@pytest.mark.parametrize(
    ("job", "node", "gpus"),
    [
        ("12; rm", "n1", None),
        ("12", "n1;reboot", None),
        ("12", "", None),
        ("12", "n1", "gpu:8 --x"),
    ],
)
def test_srun_transport_refuses_odd_ids(job: str, node: str, gpus: str | None) -> None:
    with pytest.raises(ValueError):
        SrunTransport(LocalTransport(), job, node, gpus=gpus)
