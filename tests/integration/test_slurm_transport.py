"""SlurmAllocation and SrunTransport on a real Slurm (tests/integration/slurm.py: munged, slurmctld,
two slurmds).

The login node is this machine (`LocalTransport`, which hands its environment, SLURM_CONF included,
to every command); the compute nodes are the harness's two slurmds, so every command really goes
salloc -> slurmctld -> slurmd -> slurmstepd; one test reaches the login node over SSH
(tests/integration/sshd.py) as on a real cluster, and the last ones run ``tuneplan probe --slurm``
end to end. What a test expects comes from outside the code under test: Slurm's own ``squeue``, the
node's ``sha256sum`` and ``stat``, and /proc.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli.main import main as cli_main
from core.probes.cluster.run import ClusterNode, run_cluster
from core.probes.history.store import ProbeStore
from core.probes.run.options import RunOptions
from core.probes.transport.base import Disconnected
from core.probes.transport.hostkeys import known_hosts_name
from core.probes.transport.local import LocalTransport
from core.probes.transport.slurm import JOB_NAME, AllocationCancelled, SlurmAllocation, SlurmError
from core.probes.transport.srun import SrunTransport
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

try:
    from tests.integration.slurm import PARTITION, SlurmCluster, SlurmUnavailable
    from tests.integration.sshd import SshdServer, unavailable
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from slurm import PARTITION, SlurmCluster, SlurmUnavailable  # type: ignore[no-redef]
    from sshd import SshdServer, unavailable  # type: ignore[no-redef]


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One Slurm for the module; its SLURM_CONF in the environment, so LocalTransport's commands
    find it."""
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except SlurmUnavailable as exc:
        unavailable(f"a test Slurm cannot start here: {exc}")
    saved = os.environ.get("SLURM_CONF")
    os.environ.update(cluster.env)
    try:
        yield cluster
    finally:
        cluster.stop()
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved


@pytest.fixture
def login(slurm_cluster: SlurmCluster) -> Iterator[LocalTransport]:
    transport = LocalTransport()
    yield transport
    transport.close()


@pytest.fixture
def allocation(slurm_cluster: SlurmCluster, login: LocalTransport) -> Iterator[SlurmAllocation]:
    alloc = SlurmAllocation(login)
    alloc.allocate(2, time_limit_min=5, queue_timeout_s=30)
    yield alloc
    alloc.release()
    assert slurm_cluster.jobs() == []


def _gone(pid: int, within_s: float = 10.0) -> bool:
    """True once ``pid`` is no longer a live process (gone, or a zombie nobody has reaped yet)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        if stat[stat.rfind(")") + 2 :].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False


def _alive(pid: int) -> bool:
    return not _gone(pid, within_s=0)


def test_allocation_holds_the_nodes_slurm_lists(
    slurm_cluster: SlurmCluster, allocation: SlurmAllocation
) -> None:
    assert sorted(allocation.nodes) == sorted(slurm_cluster.nodes)
    listed = slurm_cluster.run(
        "squeue", "-h", "-j", str(allocation.job_id), "-o", "%j %T %D"
    ).stdout.split()
    assert listed == [JOB_NAME, "RUNNING", "2"]
    assert allocation.addresses == dict.fromkeys(slurm_cluster.nodes, "127.0.0.1")


def test_commands_run_on_the_node_they_name(allocation: SlurmAllocation) -> None:
    for node in allocation.nodes:
        transport = allocation.transport(node)
        result = transport.run(
            'echo "$SLURMD_NODENAME $SLURM_JOB_ID"; echo to-stderr >&2; exit 3', timeout=30
        )
        assert result.exit_code == 3
        assert result.stdout == f"{node} {allocation.job_id}\n"
        # srun's own "task 0: Exited with exit code 3" line is dropped
        assert result.stderr == "to-stderr\n"
        assert result.command.startswith('echo "$SLURMD_NODENAME')
        assert transport.is_alive()


def test_put_file_round_trip(allocation: SlurmAllocation, tmp_path: Path) -> None:
    transport = allocation.transport(allocation.nodes[1])
    payload = os.urandom(300_000) + b"\x00\xff\n no newline at the end"
    local = tmp_path / "payload.bin"
    local.write_bytes(payload)
    workdir = transport.make_workdir()
    try:
        remote = f"{workdir}/payload.bin"
        transport.put_file(local, remote, mode=0o640)
        check = transport.run(
            f"sha256sum {remote} | cut -d' ' -f1; stat -c %a {remote}", timeout=30
        )
        assert check.ok, check.stderr
        digest, mode = check.stdout.split()
        assert digest == hashlib.sha256(payload).hexdigest()
        assert mode == "640"
    finally:
        transport.remove_workdir(workdir)


def test_workdir_is_private_and_removed(allocation: SlurmAllocation) -> None:
    transport = allocation.transport(allocation.nodes[0])
    workdir = transport.make_workdir()
    assert transport.run(f"stat -c %a {workdir}", timeout=30).stdout.strip() == "700"
    transport.remove_workdir(workdir)
    assert transport.run(f"test -e {workdir}", timeout=30).exit_code == 1
    transport.remove_workdir(workdir)  # already gone: fine
    with pytest.raises(ValueError, match="not one this app created"):
        transport.remove_workdir("/tmp")


def test_stream_yields_lines_as_they_come(allocation: SlurmAllocation) -> None:
    transport = allocation.transport(allocation.nodes[0])
    started = time.monotonic()
    seen: list[tuple[str, float]] = []
    stream = transport.stream(
        "echo first; sleep 1.5; echo second; exit 5", timeout=30, cancel=threading.Event()
    )
    for line in stream:
        seen.append((line, time.monotonic() - started))
    assert [line for line, _ in seen] == ["first", "second"]
    # the first line came before the command slept, not at the end
    assert seen[1][1] - seen[0][1] > 1.0
    assert stream.result is not None and stream.result.exit_code == 5


def _start_sleeper(
    transport: SrunTransport, cancel: threading.Event, timeout: float
) -> tuple[threading.Thread, dict[str, object]]:
    """Run ``sleep 300`` (its pid printed first) on the node in a thread; the pid is read from the
    step's stdout through a stream, so the test knows which process must die."""
    box: dict[str, object] = {}

    def work() -> None:
        stream = transport.stream("sh -c 'echo $$; exec sleep 300'", timeout=timeout, cancel=cancel)
        for line in stream:
            box["pid"] = int(line)
        box["result"] = stream.result

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while "pid" not in box and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "pid" in box, "the sleeper did not start on the node"
    return thread, box


def test_cancel_kills_the_task_on_the_node(
    slurm_cluster: SlurmCluster, allocation: SlurmAllocation
) -> None:
    transport = allocation.transport(allocation.nodes[1])
    cancel = threading.Event()
    thread, box = _start_sleeper(transport, cancel=cancel, timeout=120)
    pid = box["pid"]
    assert isinstance(pid, int) and _alive(pid)
    cancel.set()
    thread.join(20)
    assert not thread.is_alive()
    assert _gone(pid), f"sleep 300 (pid {pid}) still runs on the node after cancel"
    result = box["result"]
    assert getattr(result, "cancelled", False) and getattr(result, "exit_code", 0) is None
    assert slurm_cluster.steps() == []


def test_timeout_kills_the_task_on_the_node(allocation: SlurmAllocation) -> None:
    transport = allocation.transport(allocation.nodes[0])
    started = time.monotonic()
    result = transport.run("echo $$; exec sleep 300", timeout=2)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 15
    assert _gone(int(result.stdout.split()[0])), (
        "sleep 300 still runs on the node after the timeout"
    )


def test_kill_step_ends_a_step_whose_srun_died(
    slurm_cluster: SlurmCluster, login: LocalTransport, allocation: SlurmAllocation
) -> None:
    """A lost login connection kills srun with no word to the step: the task keeps running until
    kill_step."""
    transport = allocation.transport(allocation.nodes[0])
    step = "tuneplan-step-killtest"
    srun = subprocess.Popen(
        ["bash", "-c", transport.srun_command("echo $$; exec sleep 300", step, None)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert srun.stdout is not None
    pid = int(srun.stdout.readline())
    os.killpg(srun.pid, signal.SIGKILL)
    srun.wait(10)
    time.sleep(1)
    assert _alive(pid), "the task died with srun: this test would not show what kill_step does"
    transport.kill_step(step)
    assert _gone(pid), f"sleep 300 (pid {pid}) survived kill_step"
    deadline = time.monotonic() + 10
    while slurm_cluster.steps() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert slurm_cluster.steps() == []


def test_release_frees_the_job(slurm_cluster: SlurmCluster, login: LocalTransport) -> None:
    alloc = SlurmAllocation(login)
    with alloc:
        alloc.allocate(1, time_limit_min=5, queue_timeout_s=30)
        job = alloc.job_id
        assert slurm_cluster.jobs() == [job]
        node = alloc.nodes[0]
    assert slurm_cluster.jobs() == []
    alloc.release()  # twice: fine
    with pytest.raises(SlurmError, match="no Slurm job is allocated"):
        alloc.transport(node)


def test_unknown_partition_is_one_sentence(
    slurm_cluster: SlurmCluster, login: LocalTransport
) -> None:
    with pytest.raises(SlurmError) as caught:
        SlurmAllocation(login).allocate(1, partition="gpu-h100", queue_timeout_s=10)
    message = str(caught.value)
    assert (
        message == f"partition 'gpu-h100' is not one of the Slurm partitions on local ({PARTITION})"
    )
    assert slurm_cluster.jobs() == []


def test_more_nodes_than_the_partition_has(
    slurm_cluster: SlurmCluster, login: LocalTransport
) -> None:
    with pytest.raises(
        SlurmError, match=rf"^partition '{PARTITION}' on local has 2 node\(s\); 3 were asked for$"
    ):
        SlurmAllocation(login).allocate(3, queue_timeout_s=10)
    assert slurm_cluster.jobs() == []


def test_no_slurm_on_the_login_node(
    login: LocalTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bash", "sh"):
        (bare / tool).symlink_to(
            subprocess.run(
                ["which", tool], capture_output=True, text=True, check=True
            ).stdout.strip()
        )
    monkeypatch.setenv("PATH", str(bare))
    with pytest.raises(
        SlurmError,
        match=r"^no Slurm on the login node local: salloc, srun, scancel, squeue, "
        r"scontrol, sinfo not found on its PATH$",
    ):
        SlurmAllocation(login).allocate(1)


def _hold_every_node(slurm_cluster: SlurmCluster) -> str:
    """A job of the test's own holding every node whole, so that the next allocation must wait."""
    held = slurm_cluster.run("salloc", "--no-shell", "--exclusive", "--nodes", "2", "--time", "5")
    match = re.search(r"Granted job allocation (\d+)", held.stderr)
    assert match, held.stderr
    return match.group(1)


def test_queue_wait_times_out_and_leaves_no_job(
    slurm_cluster: SlurmCluster, login: LocalTransport
) -> None:
    holder = _hold_every_node(slurm_cluster)
    try:
        with pytest.raises(
            SlurmError, match=r"did not grant 2 node\(s\) within 2 s; the job waited in the queue"
        ):
            SlurmAllocation(login).allocate(2, queue_timeout_s=2)
        assert slurm_cluster.jobs() == [holder]
    finally:
        slurm_cluster.run("scancel", holder)


def test_cancel_while_queued_leaves_no_job(
    slurm_cluster: SlurmCluster, login: LocalTransport
) -> None:
    holder = _hold_every_node(slurm_cluster)
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    try:
        started = time.monotonic()
        with pytest.raises(AllocationCancelled, match="cancelled while it waited in the queue"):
            SlurmAllocation(login).allocate(2, queue_timeout_s=60, cancel=cancel)
        assert time.monotonic() - started < 10
        assert slurm_cluster.jobs() == [holder]
    finally:
        slurm_cluster.run("scancel", holder)


def test_through_an_ssh_login_node(
    slurm_cluster: SlurmCluster, sshd_factory: Callable[..., SshdServer], tmp_path: Path
) -> None:
    """The way a real cluster is reached: SSH to the login node, srun from there; cancel still kills
    the task."""
    server = sshd_factory(session_env=slurm_cluster.env)
    key_type, key_b64 = server.host_public_key.split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"{known_hosts_name(server.host, server.port)} {key_type} {key_b64}\n")
    target = SshTarget(
        host=server.host,
        port=server.port,
        user=server.user,
        identity_files=[str(server.client_key_path)],
        identities_only=True,
    )
    with (
        SshTransport(
            target,
            known_hosts_file=known,
            user_known_hosts_file=tmp_path / "absent",
            allow_agent=False,
            look_for_keys=False,
            connect_timeout=5,
        ) as ssh_login,
        SlurmAllocation(ssh_login) as alloc,
    ):
        alloc.allocate(2, time_limit_min=5, queue_timeout_s=30)
        transport = alloc.transport(alloc.nodes[1])
        assert transport.run("echo $SLURMD_NODENAME", timeout=30).stdout == f"{alloc.nodes[1]}\n"
        cancel = threading.Event()
        thread, box = _start_sleeper(transport, cancel=cancel, timeout=120)
        pid = box["pid"]
        assert isinstance(pid, int)
        cancel.set()
        thread.join(20)
        assert _gone(pid), f"sleep 300 (pid {pid}) still runs on the node after cancel over SSH"
    assert slurm_cluster.jobs() == []


# -------------------------------------------------------------------------- tuneplan probe --slurm,
# end to end


def test_probe_slurm_runs_the_cluster_probe_on_the_allocation(
    slurm_cluster: SlurmCluster,
    need_torch: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`tuneplan probe --local --slurm`: the login node is this machine; every node's suite, then
    torchrun across the two slurmds' nodes (gloo), all through srun; the history has the cluster run
    and each node's run."""
    db = tmp_path / "probes.db"
    node_tmp = tmp_path / "node-tmp"
    node_tmp.mkdir()
    # where the nodes' work directories go (srun passes it on)
    monkeypatch.setenv("TMPDIR", str(node_tmp))
    code = cli_main(
        [
            "probe",
            "--local",
            "--slurm",
            "--nodes",
            "2",
            "--partition",
            PARTITION,
            "--suite",
            "inventory",
            "--python",
            sys.executable,
            "--json",
            "--db",
            str(db),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["status"] == "completed"
    cluster = doc["evidence"]["cluster"]
    job = cluster["slurm_job"]
    assert job and job.isdigit()
    assert sorted(n["node"] for n in cluster["nodes"]) == sorted(slurm_cluster.nodes)
    steps = {o["name"]: o["status"] for o in doc["outcomes"]}
    assert (
        steps["rendezvous"] == "ok" and steps["distributed"] == "ok" and steps["allreduce"] == "ok"
    ), steps
    assert sorted((r["host"], r["status"]) for r in doc["node_runs"]) == [
        (n, "completed") for n in sorted(slurm_cluster.nodes)
    ]
    store = ProbeStore(db)
    try:
        history = {run.host: run.status for run in store.runs()}
    finally:
        store.close()
    assert history == {
        f"Slurm at this machine, partition {PARTITION}": "completed",
        **dict.fromkeys(slurm_cluster.nodes, "completed"),
    }
    assert f"Slurm job {job}: " in err
    assert slurm_cluster.jobs() == []  # released
    assert slurm_cluster.steps() == []
    assert list(node_tmp.iterdir()) == []  # every work directory removed on every node
    workdirs = {r["summary"]["workdir"] for r in doc["node_runs"]}
    # they were made there
    assert all(w and w.startswith(f"{node_tmp}/tuneplan.") for w in workdirs), workdirs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--local", "--slurm", "--nodes", "1"],
            "--nodes 1: a cluster run needs 2 nodes or more; probe one node as a single host",
        ),
        (["--local", "--partition", "debug"], "--partition only applies to --slurm LOGIN"),
        (
            ["--slurm"],
            "--slurm needs a login node: --slurm LOGIN, or --local --slurm for this machine",
        ),
        (
            ["--slurm", "login1", "node2"],
            "--slurm takes the login node as its value; TARGET 'node2' cannot be given with it",
        ),
    ],
)
def test_probe_slurm_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["probe", *argv]) == 2
    assert capsys.readouterr().err == f"tuneplan: {message}\n"


def test_probe_slurm_unknown_partition_is_one_sentence(
    slurm_cluster: SlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(
        [
            "probe",
            "--local",
            "--slurm",
            "--partition",
            "h100",
            "--suite",
            "inventory",
            "--db",
            str(tmp_path / "probes.db"),
        ]
    )
    assert code == 1
    assert capsys.readouterr().err == (
        f"tuneplan: partition 'h100' is not one of the Slurm partitions on local ({PARTITION})\n"
    )
    assert slurm_cluster.jobs() == []


def _job_processes(job: str) -> list[int]:
    """Live processes on this machine (every test node is this machine) that run inside Slurm job
    ``job``: slurmstepd hands each task SLURM_JOB_ID in its environment, and what the task starts
    inherits it."""
    mark = f"SLURM_JOB_ID={job}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if mark in environ and stat[stat.rfind(")") + 2 :].split()[0] != "Z":
            found.append(int(entry.name))
    return found


def test_cancel_mid_cluster_run_kills_every_task_and_removes_every_workdir(
    slurm_cluster: SlurmCluster,
    allocation: SlurmAllocation,
    need_torch: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cancel while torchrun runs across the nodes: before the allocation is even released, no
    process of the job is left on any node and every work directory the run made on them is gone."""
    node_tmp = tmp_path / "node-tmp"
    node_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(node_tmp))  # srun hands the login's environment to the step
    job = allocation.job_id
    assert job is not None
    nodes = [
        ClusterNode(label=n, transport=allocation.transport(n), address=allocation.addresses[n])
        for n in allocation.nodes
    ]
    cancel = threading.Event()
    store = ProbeStore(tmp_path / "probes.db")
    seen_running: list[int] = []
    seen_workdirs: list[Path] = []

    def cancel_now() -> None:
        seen_running.extend(_job_processes(job))
        seen_workdirs.extend(node_tmp.iterdir())
        cancel.set()

    try:
        last = None
        for event in run_cluster(
            nodes,
            RunOptions(suite="inventory", python=sys.executable),
            store,
            cancel,
            "slurm cancel test",
            slurm_job=job,
        ):
            if event.kind == "probe_started" and event.name == "distributed":
                threading.Timer(2.0, cancel_now).start()
            last = event
    finally:
        store.close()
    assert last is not None and last.kind == "run_finished" and last.status == "cancelled"
    assert seen_running, "nothing of the job ran when cancel came: the test shows nothing"
    assert seen_workdirs, (
        "the run made no work directory under the nodes' TMPDIR: the test shows nothing"
    )
    deadline = time.monotonic() + 10
    while _job_processes(job) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _job_processes(job) == []
    assert list(node_tmp.iterdir()) == []


def test_a_job_that_ended_is_a_lost_node(
    slurm_cluster: SlurmCluster, allocation: SlurmAllocation
) -> None:
    """The allocation's time limit or an admin's scancel ends the job under the run: the node is
    lost (the runner keeps what it measured), not a probe that failed on it."""
    transport = allocation.transport(allocation.nodes[0])
    assert transport.run("true", timeout=30).ok
    slurm_cluster.run("scancel", str(allocation.job_id))
    deadline = time.monotonic() + 10
    while slurm_cluster.jobs() and time.monotonic() < deadline:
        time.sleep(0.1)
    with pytest.raises(
        Disconnected,
        match=rf"^Slurm job {allocation.job_id} has ended \(its time limit, or "
        rf"scancel\), so {allocation.nodes[0]} cannot be reached through it",
    ):
        transport.run("echo hi", timeout=30)
    assert not transport.is_alive()
