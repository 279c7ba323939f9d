"""A real single-machine Slurm for integration tests: munged, slurmctld and one slurmd per node, all
on this host.

Debian's slurm-wlm (22.05) is built with multiple-slurmd support, so each test "node" is a slurmd of
its own (``slurmd -N NAME``) on its own port, all with ``NodeAddr=127.0.0.1``: a 2-node allocation
runs its steps on two real slurmd/slurmstepd pairs. Everything lives in one temporary folder
(config, state, spool, logs, a munge key and munged's socket), nothing touches /etc; Slurm's
commands find the config through ``SLURM_CONF``, which `SlurmCluster.env` gives and the tests put in
the environment. Process tracking is ``proctrack/linuxproc``: no cgroup setup is needed (cgroup.conf
only lets slurmd start on a cgroup v2 host without systemd). The daemons are started in the
foreground and stopped by PID.

A cluster for judging GPU jobs (``SlurmCluster(gpus=8, cpus=64)``) gives each node ``Gres=gpu:N``
and a gres.conf line ``Name=gpu File=<workdir>/dev/gpu[0-N-1]`` naming N empty files made there. The
files are needed: slurmd 22.05 drops a GPU without ``File`` ("Removing file-less GPU gpu:(null) from
final GRES list", gres/gpu), and slurmctld then drains the node (gres/gpu count reported lower than
configured); it only checks that a File exists. With ``proctrack/linuxproc`` and ``task/none``
nothing opens them, so ``--gpus-per-node`` is scheduled and checked as on a real cluster. ``cpus``
above what this machine has needs ``SlurmdParameters=config_overrides``, which makes slurmd report
the configured node instead of draining it for missing CPUs (slurm.conf(5)).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.probes.transport.local import proc_stats

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("salloc", "srun", "scancel", "squeue", "scontrol", "sinfo")
START_TIMEOUT_S = 30.0
PARTITION = "tptest"


class SlurmUnavailable(RuntimeError):
    """The Slurm or munge programs are missing, or the cluster did not come up; the message says
    which."""


def find_missing_tools() -> str | None:
    """A sentence naming what is missing to run a test Slurm here, or None when everything is
    there."""
    for tool in DAEMONS + CLIENTS:
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            return (
                f"{tool} is not installed (apt-get install --no-install-recommends "
                f"slurmctld slurmd slurm-client munge)"
            )
    if os.geteuid() != 0:
        return "a test Slurm needs root: slurmd starts job steps as the job's user"
    return None


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _cpus() -> int:
    """The CPU count slurmd itself sees (``slurmd -C``): a node configured with more would be
    drained."""
    out = subprocess.run(
        [_tool("slurmd"), "-C"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    for part in out.split():
        if part.startswith("CPUs="):
            return int(part.removeprefix("CPUs="))
    return 1


@dataclass
class SlurmCluster:
    """One Slurm under ``workdir`` with ``nodes`` nodes. Call `start()`; `stop()` ends it by PID."""

    workdir: Path
    nodes: tuple[str, ...] = ("tpnode1", "tpnode2")
    gpus: int = 0  # GPUs per node as a counted GRES (0: none configured)
    cpus: int | None = None  # CPUs per node as configured (None: what slurmd sees here)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf_path(self) -> Path:
        return self.workdir / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.workdir / "munge" / "munge.socket"

    @property
    def env(self) -> dict[str, str]:
        """What Slurm's commands need in their environment to find this cluster."""
        return {"SLURM_CONF": str(self.conf_path)}

    def start(self) -> SlurmCluster:
        """Write the configuration, start munged, slurmctld and the slurmds, and wait until every
        node is idle; raises `SlurmUnavailable` with the logs' tail when it does not come up."""
        missing = find_missing_tools()
        if missing:
            raise SlurmUnavailable(missing)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_munge_key()
        self._write_config()
        try:
            self._launch(
                "munged",
                [
                    _tool("munged"),
                    "--foreground",
                    "--force",
                    f"--socket={self.munge_socket}",
                    f"--key-file={self.workdir / 'munge' / 'munge.key'}",
                    f"--pid-file={self.workdir / 'munge' / 'munged.pid'}",
                    f"--log-file={self.workdir / 'munge' / 'munged.log'}",
                    f"--seed-file={self.workdir / 'munge' / 'munged.seed'}",
                ],
            )
            self._wait_for(lambda: self.munge_socket.exists(), "munged did not create its socket")
            self._launch("slurmctld", [_tool("slurmctld"), "-D", "-i", "-f", str(self.conf_path)])
            for node in self.nodes:
                (self.workdir / f"spool.{node}").mkdir(exist_ok=True)
                self._launch(
                    f"slurmd.{node}", [_tool("slurmd"), "-D", "-N", node, "-f", str(self.conf_path)]
                )
            self._wait_for(self._all_idle, "the Slurm nodes did not become idle")
        except BaseException:
            self.stop()
            raise
        return self

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one Slurm client command against this cluster."""
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={**os.environ, **self.env},
        )

    def jobs(self) -> list[str]:
        """The ids of the jobs Slurm still knows as pending, running or completing."""
        return self.run("squeue", "-h", "-o", "%i").stdout.split()

    def steps(self) -> list[str]:
        """The job steps still running (``J.S``)."""
        return self.run("squeue", "-h", "-s", "-o", "%i").stdout.split()

    def logs(self) -> str:
        """The tail of every daemon's log, for a failure message."""
        parts = []
        for log in sorted(self.workdir.glob("*.log")) + sorted(
            (self.workdir / "munge").glob("*.log")
        ):
            parts.append(f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel every job, then stop the slurmds, slurmctld and munged (TERM, then KILL); safe
        twice."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            for job in self.jobs():
                self.run("scancel", job)
        stepds = self._stepds()
        for name in sorted(self.processes, key=lambda n: ("slurmd" not in n, n != "slurmctld")):
            process = self.processes.pop(name)
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
        for pid in stepds:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    # -- inside
    # ---------------------------------------------------------------------------------------------

    def _write_munge_key(self) -> None:
        munge = self.workdir / "munge"
        munge.mkdir(mode=0o700, exist_ok=True)
        os.chmod(munge, 0o711)  # clients must reach the socket; munged warns but runs
        key = munge / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            os.chmod(key, 0o400)

    def _write_config(self) -> None:
        ctld_port, *node_ports = _free_ports(1 + len(self.nodes))
        host = socket.gethostname().split(".")[0]
        cpus = self.cpus or _cpus()
        gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
        node_lines = "\n".join(
            f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs={cpus}{gres} "
            f"RealMemory=500 State=UNKNOWN"
            for node, port in zip(self.nodes, node_ports, strict=True)
        )
        work = self.workdir
        extra = ""
        if self.gpus:
            extra += "GresTypes=gpu\n"
            devices = work / "dev"
            devices.mkdir(exist_ok=True)
            for i in range(self.gpus):
                (devices / f"gpu{i}").touch()
            (work / "gres.conf").write_text(f"Name=gpu File={devices}/gpu[0-{self.gpus - 1}]\n")
        if self.cpus:
            extra += "SlurmdParameters=config_overrides\n"
        self.conf_path.write_text(f"""ClusterName=tuneplantest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={work / "state"}
SlurmdSpoolDir={work}/spool.%n
SlurmctldPidFile={work / "slurmctld.pid"}
SlurmdPidFile={work}/slurmd.%n.pid
SlurmctldLogFile={work / "slurmctld.log"}
SlurmdLogFile={work}/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=5
{extra}{node_lines}
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        # slurmd 22.05 starts its cgroup plugin whatever the process tracking; on a cgroup v2 host
        # without a systemd to ask (a container), it builds its own hierarchy instead of failing
        # (cgroup.conf(5)).
        (work / "cgroup.conf").write_text("CgroupPlugin=autodetect\nIgnoreSystemdOnFailure=yes\n")
        (work / "state").mkdir(exist_ok=True)

    def _launch(self, name: str, argv: list[str]) -> None:
        log = (self.workdir / f"{name}.out").open("ab")
        try:
            self.processes[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, **self.env},
            )
        finally:
            log.close()

    def _wait_for(self, ready: object, what: str) -> None:
        assert callable(ready)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            dead = [name for name, p in self.processes.items() if p.poll() is not None]
            if dead:
                raise SlurmUnavailable(f"{', '.join(dead)} exited at start-up: {self._outputs()}")
            if ready():
                return
            time.sleep(0.2)
        raise SlurmUnavailable(f"{what} within {START_TIMEOUT_S:g} s: {self._outputs()}")

    def _all_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t").stdout.split()
        states = dict(zip(out[::2], out[1::2], strict=False))
        return all(states.get(node) == "idle" for node in self.nodes)

    def _outputs(self) -> str:
        outs = [
            f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
            for p in sorted(self.workdir.glob("*.out"))
        ]
        return "\n".join(outs) + "\n" + self.logs()

    def _stepds(self) -> list[int]:
        """slurmstepd processes of this cluster: they carry its SLURM_CONF from the slurmd that
        started them."""
        mark = f"SLURM_CONF={self.conf_path}".encode()
        found = []
        for pid, _ in proc_stats():
            try:
                if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"slurmstepd"):
                    continue
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark in environ:
                found.append(pid)
        return found
