"""A Slurm allocation asked for, read and released from its login node: `SlurmAllocation`,
`salloc_command`.

A Slurm cluster is reached through its login node only: compute nodes usually take no SSH from
outside, and what runs on them must run inside a job. So `SlurmAllocation` asks for an allocation on
the login node's `Transport` (``salloc --no-shell``: the job holds the nodes without running
anything), reads which nodes it got (core.probes.transport.scontrol reads scontrol's answers), and
gives a `SrunTransport` (core.probes.transport.srun) for each: every command there is a job step.

Whole nodes: the allocation is ``--exclusive --mem=0`` by default, since the probes measure what a
node can do; each node's GPUs are read so that every step can ask for them.

`SlurmAllocation.release` cancels the whole job (``scancel J``), which kills every step on every
node: that is how "cancel kills every remote process group on every node" holds under Slurm, and it
runs always, after a failure or a cancel too. The allocation's time limit bounds everything if the
login connection is lost.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Sequence
from types import TracebackType

from core.probes.transport.base import CommandResult, Transport, TransportError, failure_line
from core.probes.transport.scontrol import parse_node_addresses, parse_node_gpus, parse_partitions
from core.probes.transport.srun import SrunTransport

JOB_NAME = "tuneplan-probe"
SLURM_TOOLS = ("salloc", "srun", "scancel", "squeue", "scontrol", "sinfo")
DEFAULT_TIME_LIMIT_MIN = 60
DEFAULT_QUEUE_TIMEOUT_S = 600.0
_QUERY_TIMEOUT_S = 30.0
_RELEASE_WAIT_S = 15.0

_GRANTED_RE = re.compile(r"Granted job allocation (\d+)")
_PENDING_RE = re.compile(r"Pending job allocation (\d+)")
_SALLOC_ERROR_RE = re.compile(r"^salloc: error: (.*)$")


class SlurmError(TransportError):
    """The login node could not give or use an allocation; the message is one sentence fit to show
    the user."""


class AllocationCancelled(SlurmError):
    """The caller cancelled while the allocation waited in the queue; nothing is left allocated."""


class SlurmAllocation:
    """One Slurm job holding ``nodes`` compute nodes, asked for on the login node's transport.

    Use it as a context manager (or call `release` in a ``finally``): the job is cancelled on the
    way out whatever happened, which kills every step it still runs on every node.
    """

    def __init__(self, login: Transport) -> None:
        self.login = login
        self.job_id: str | None = None
        self.nodes: list[str] = []
        self.addresses: dict[str, str] = {}
        # node -> its GPU GRES ("gpu:h100:8"), for every step to ask for
        self.gpus: dict[str, str] = {}
        self._exclusive = True

    def __enter__(self) -> SlurmAllocation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def allocate(
        self,
        nodes: int,
        partition: str | None = None,
        time_limit_min: int = DEFAULT_TIME_LIMIT_MIN,
        *,
        exclusive: bool = True,
        extra_args: Sequence[str] = (),
        queue_timeout_s: float = DEFAULT_QUEUE_TIMEOUT_S,
        cancel: threading.Event | None = None,
    ) -> list[str]:
        """Ask for ``nodes`` nodes (in ``partition``, or the default one) for ``time_limit_min``
        minutes, wait at most ``queue_timeout_s`` in the queue, and return the node names. Raises
        `SlurmError` (one sentence: no Slurm, unknown partition, not enough nodes, refused, queue
        wait too long) or `AllocationCancelled`; nothing stays allocated after an error.
        ``exclusive`` (the default) asks for whole nodes, as a probe of what the nodes can do needs;
        ``extra_args`` go to salloc as they are (``--account``, ``--qos``, ``--constraint``,
        ``--gres``: what a site requires)."""
        if self.job_id is not None:
            raise SlurmError(
                f"this allocation already holds Slurm job {self.job_id}; release it first"
            )
        command = salloc_command(
            nodes, partition, time_limit_min, exclusive=exclusive, extra_args=extra_args
        )
        self._exclusive = exclusive
        where = self.login.description
        self._check_tools(where)
        self._check_partition(where, nodes, partition)
        try:
            self._salloc(where, command, nodes, partition, queue_timeout_s, cancel)
            self.nodes = self._read_nodes(where)
            self._read_node_info(where)
        except BaseException:
            self.release()
            raise
        return self.nodes

    def transport(self, node: str) -> SrunTransport:
        """A `Transport` running commands on ``node``, one of this allocation's nodes."""
        if self.job_id is None:
            raise SlurmError("no Slurm job is allocated; call allocate() first")
        if node not in self.nodes:
            raise SlurmError(
                f"node '{node}' is not in Slurm job {self.job_id}; its nodes are "
                f"{', '.join(self.nodes)}"
            )
        return SrunTransport(self.login, self.job_id, node, gpus=self.gpus.get(node))

    def release(self) -> None:
        """Cancel the job (every step on every node dies with it) and wait until Slurm has let it
        go. Safe to call twice, after a failure, or with the login connection gone (the time limit
        then ends the job)."""
        job, self.job_id = self.job_id, None
        if job is None:
            return
        try:
            self.login.run(f"scancel {job}", timeout=_QUERY_TIMEOUT_S)
            end = time.monotonic() + _RELEASE_WAIT_S
            while time.monotonic() < end:
                left = self.login.run(f"squeue -h -j {job} -o %T", timeout=_QUERY_TIMEOUT_S)
                if not left.ok or not left.stdout.strip():
                    return
                time.sleep(0.2)
        except TransportError:
            return  # the login node is gone: the job's time limit ends it

    # -- the steps of allocate
    # -------------------------------------------------------------------------

    def _check_tools(self, where: str) -> None:
        probe = " ".join(f"command -v {tool} >/dev/null || echo {tool};" for tool in SLURM_TOOLS)
        result = self.login.run(probe, timeout=_QUERY_TIMEOUT_S)
        missing = result.stdout.split()
        if not result.ok or missing:
            raise SlurmError(
                f"no Slurm on the login node {where}: {', '.join(missing) or 'salloc'} "
                f"not found on its PATH"
            )

    def _check_partition(self, where: str, nodes: int, partition: str | None) -> None:
        """Refuse an unknown partition or one with fewer nodes than asked, before anything waits in
        a queue (Slurm itself would queue a job larger than the partition until the time limit)."""
        result = self.login.run("scontrol show partition -o", timeout=_QUERY_TIMEOUT_S)
        if not result.ok:
            raise SlurmError(
                f"the login node {where} could not list its Slurm partitions: "
                f"{failure_line(result)}"
            )
        partitions = parse_partitions(result.stdout)
        if partition is None:
            chosen = next((p for p in partitions.values() if p.default), None)
            if chosen is None:
                return  # no default partition: salloc says what it does with the job
        elif partition not in partitions:
            known = ", ".join(sorted(partitions)) or "none"
            raise SlurmError(
                f"partition '{partition}' is not one of the Slurm partitions on {where} ({known})"
            )
        else:
            chosen = partitions[partition]
        if chosen.total_nodes < nodes:
            raise SlurmError(
                f"partition '{chosen.name}' on {where} has {chosen.total_nodes} node(s); "
                f"{nodes} were asked for"
            )

    def _salloc(
        self,
        where: str,
        command: str,
        nodes: int,
        partition: str | None,
        queue_timeout_s: float,
        cancel: threading.Event | None,
    ) -> None:
        """Run the ``salloc --no-shell`` line and follow what it says; a job left pending (timeout,
        cancel) is cancelled so that it cannot start later."""
        stream = self.login.stream(
            command, timeout=queue_timeout_s, cancel=cancel or threading.Event()
        )
        errors: list[str] = []
        pending: str | None = None
        try:
            for line in stream:
                if match := _GRANTED_RE.search(line):
                    self.job_id = match.group(1)
                elif match := _PENDING_RE.search(line):
                    pending = match.group(1)
                elif match := _SALLOC_ERROR_RE.match(line.strip()):
                    errors.append(match.group(1))
        finally:
            if hasattr(stream, "close"):
                stream.close()
        result: CommandResult | None = getattr(stream, "result", None)
        if self.job_id is None:
            # release() cancels it: a pending job must not start after we left
            self.job_id = pending
            place = f" in partition '{partition}'" if partition else ""
            if result is not None and result.cancelled:
                raise AllocationCancelled(
                    f"the Slurm allocation on {where} was cancelled while it waited in the queue"
                )
            if result is not None and result.timed_out:
                raise SlurmError(
                    f"Slurm on {where} did not grant {nodes} node(s){place} within "
                    f"{queue_timeout_s:g} s; the job waited in the queue and was cancelled"
                )
            reason = errors[-1] if errors else "salloc gave no job allocation"
            raise SlurmError(f"Slurm on {where} refused {nodes} node(s){place}: {reason}")

    def _read_nodes(self, where: str) -> list[str]:
        result = self.login.run(
            f'scontrol show hostnames "$(squeue -h -j {self.job_id} -o %N)"',
            timeout=_QUERY_TIMEOUT_S,
        )
        names = result.stdout.split()
        if not result.ok or not names:
            raise SlurmError(
                f"the node list of Slurm job {self.job_id} on {where} could not be read: "
                f"{failure_line(result)}"
            )
        return names

    def _read_node_info(self, where: str) -> None:
        """Each node's NodeAddr (the address its peers reach it at: a node name need not resolve)
        and its GPUs (steps get an exclusive job's GPUs only when they ask for them: srun(1),
        --gres)."""
        result = self.login.run(
            f"scontrol show node -o {shlex.quote(','.join(self.nodes))}", timeout=_QUERY_TIMEOUT_S
        )
        if not result.ok:
            raise SlurmError(
                f"the nodes of Slurm job {self.job_id} on {where} could not be read: "
                f"{failure_line(result)}"
            )
        found = parse_node_addresses(result.stdout)
        self.addresses = {node: found.get(node, node) for node in self.nodes}
        # a shared job holds only what it asked
        gpus = parse_node_gpus(result.stdout) if self._exclusive else {}
        self.gpus = {node: gpus[node] for node in self.nodes if node in gpus}


def salloc_command(
    nodes: int,
    partition: str | None,
    time_limit_min: int,
    *,
    exclusive: bool = True,
    extra_args: Sequence[str] = (),
) -> str:
    """The login-node line asking for the allocation, every value shell-quoted, salloc's messages on
    stdout. ValueError (one sentence) for values Slurm would refuse anyway."""
    if nodes < 1:
        raise ValueError(f"the node count must be 1 or more, not {nodes}")
    if time_limit_min < 1:
        raise ValueError(
            f"the allocation's time limit must be 1 minute or more, not {time_limit_min}"
        )
    if partition is not None and (not partition or any(c.isspace() or c == "," for c in partition)):
        raise ValueError(f"partition '{partition}' is not a partition name (one word, no commas)")
    for arg in extra_args:
        if not arg.startswith("-") or any(c in arg for c in "\n\r\0"):
            raise ValueError(
                f"salloc argument '{arg}' must be one option on one line, such as --account=NAME"
            )
    args = [
        "salloc",
        "--no-shell",
        "--nodes",
        str(nodes),
        "--time",
        str(time_limit_min),
        "--job-name",
        JOB_NAME,
    ]
    if partition is not None:
        args += ["--partition", partition]
    if exclusive:
        # whole nodes: every CPU, GPU and byte of memory the probes measure
        args += ["--exclusive", "--mem=0"]
    args += list(extra_args)
    return " ".join(shlex.quote(a) for a in args) + " 2>&1"


__all__ = ["AllocationCancelled", "SlurmAllocation", "SlurmError", "salloc_command"]
