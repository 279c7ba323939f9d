"""Probe the compute nodes of a Slurm allocation from its login node: `SlurmAllocation` and `SrunTransport`.

A Slurm cluster is reached through its login node only: compute nodes usually take no SSH from outside, and
what runs on them must run inside a job. So `SlurmAllocation` asks for an allocation on the login node's
`Transport` (``salloc --no-shell``: the job holds the nodes without running anything), reads which nodes it
got, and `SrunTransport` makes one of those nodes a `Transport` of its own: every command is a job step,
``srun --jobid J --nodelist NODE --overlap ... bash -c CMD``, run through the login transport. ``--overlap``
(Slurm ≥ 20.11) lets the steps share the allocation's CPUs, memory and GPUs, so the metrics stream and the
checks run side by side as they do over SSH.

Whole nodes: the allocation is ``--exclusive --mem=0`` by default, since the probes measure what a node can do.
An exclusive job holds every GPU of its nodes, but a step gets the GPUs an exclusive job holds implicitly only
when it asks for them (srun(1), ``--gres``), so every step asks for its node's GPUs as ``scontrol show node``
lists them (``--gres=gpu:h100:8``); without that, nvidia-smi in a step would see none.

Killing: the login transport kills the ``srun`` it started on cancel or timeout, but a killed ``srun`` leaves
its step running on the node (slurmstepd keeps the task alive). So each step gets a name of its own, and after
a cancel, a timeout or a stream closed early the transport finds that step (``squeue -s``) and ends it:
``scancel --signal=KILL`` kills every process of the step on the node, then ``scancel`` ends the step.
`SlurmAllocation.release` cancels the whole job (``scancel J``), which kills every step on every node: that is
how "cancel kills every remote process group on every node" holds under Slurm, and it runs always, after a
failure or a cancel too. The allocation's time limit bounds everything if the login connection is lost.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from core.probes.transport.base import (
    CommandResult,
    CommandStream,
    Disconnected,
    ExecGenerator,
    ExecOutcome,
    Transport,
    TransportError,
    make_remote_workdir,
    remove_remote_workdir,
)

JOB_NAME = "tuneplan-probe"
STEP_NAME_PREFIX = "tuneplan-step-"
SLURM_TOOLS = ("salloc", "srun", "scancel", "squeue", "scontrol", "sinfo")
DEFAULT_TIME_LIMIT_MIN = 60
DEFAULT_QUEUE_TIMEOUT_S = 600.0
_QUERY_TIMEOUT_S = 30.0
_RELEASE_WAIT_S = 15.0
_REMOTE_KILL_GRACE_S = 5

_GRANTED_RE = re.compile(r"Granted job allocation (\d+)")
_PENDING_RE = re.compile(r"Pending job allocation (\d+)")
_SALLOC_ERROR_RE = re.compile(r"^salloc: error: (.*)$")
# srun's words when the job itself is gone (time limit, scancel): no command can reach the node through it again.
_JOB_GONE_RE = re.compile(r"^srun: error: (?:Slurm job \d+ has expired|Unable to create step for job \d+: "
                          r"(?:Invalid job id specified|Job/step already completing or completed))", re.MULTILINE)
# srun's own line for a task that exited non-zero, printed even with --quiet: the exit code already says it.
_TASK_EXIT_RE = re.compile(r"^srun: error: \S+: task \d+: Exited with exit code \d+\n?", re.MULTILINE)


class SlurmError(TransportError):
    """The login node could not give or use an allocation; the message is one sentence fit to show the user."""


class AllocationCancelled(SlurmError):
    """The caller cancelled while the allocation waited in the queue; nothing is left allocated."""


class SlurmAllocation:
    """One Slurm job holding ``nodes`` compute nodes, asked for on the login node's transport.

    Use it as a context manager (or call `release` in a ``finally``): the job is cancelled on the way out
    whatever happened, which kills every step it still runs on every node.
    """

    def __init__(self, login: Transport) -> None:
        self.login = login
        self.job_id: str | None = None
        self.nodes: list[str] = []
        self.addresses: dict[str, str] = {}
        self.gpus: dict[str, str] = {}  # node -> its GPU GRES ("gpu:h100:8"), for every step to ask for
        self._exclusive = True

    def __enter__(self) -> SlurmAllocation:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def allocate(self, nodes: int, partition: str | None = None, time_limit_min: int = DEFAULT_TIME_LIMIT_MIN,
                 *, exclusive: bool = True, extra_args: Sequence[str] = (),
                 queue_timeout_s: float = DEFAULT_QUEUE_TIMEOUT_S,
                 cancel: threading.Event | None = None) -> list[str]:
        """Ask for ``nodes`` nodes (in ``partition``, or the default one) for ``time_limit_min`` minutes, wait
        at most ``queue_timeout_s`` in the queue, and return the node names. Raises `SlurmError` (one
        sentence: no Slurm, unknown partition, not enough nodes, refused, queue wait too long) or
        `AllocationCancelled`; nothing stays allocated after an error. ``exclusive`` (the default) asks for
        whole nodes, as a probe of what the nodes can do needs; ``extra_args`` go to salloc as they are
        (``--account``, ``--qos``, ``--constraint``, ``--gres``: what a site requires)."""
        if self.job_id is not None:
            raise SlurmError(f"this allocation already holds Slurm job {self.job_id}; release it first")
        command = salloc_command(nodes, partition, time_limit_min, exclusive=exclusive, extra_args=extra_args)
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
            raise SlurmError(f"node '{node}' is not in Slurm job {self.job_id}; its nodes are "
                             f"{', '.join(self.nodes)}")
        return SrunTransport(self.login, self.job_id, node, gpus=self.gpus.get(node))

    def release(self) -> None:
        """Cancel the job (every step on every node dies with it) and wait until Slurm has let it go. Safe to
        call twice, after a failure, or with the login connection gone (the time limit then ends the job)."""
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

    # -- the steps of allocate -------------------------------------------------------------------------

    def _check_tools(self, where: str) -> None:
        probe = " ".join(f"command -v {tool} >/dev/null || echo {tool};" for tool in SLURM_TOOLS)
        result = self.login.run(probe, timeout=_QUERY_TIMEOUT_S)
        missing = result.stdout.split()
        if not result.ok or missing:
            raise SlurmError(f"no Slurm on the login node {where}: {', '.join(missing) or 'salloc'} "
                             f"not found on its PATH")

    def _check_partition(self, where: str, nodes: int, partition: str | None) -> None:
        """Refuse an unknown partition or one with fewer nodes than asked, before anything waits in a queue
        (Slurm itself would queue a job larger than the partition until the time limit)."""
        result = self.login.run("scontrol show partition -o", timeout=_QUERY_TIMEOUT_S)
        if not result.ok:
            raise SlurmError(f"the login node {where} could not list its Slurm partitions: "
                             f"{_first_line(result)}")
        partitions = parse_partitions(result.stdout)
        if partition is None:
            chosen = next((p for p in partitions.values() if p.default), None)
            if chosen is None:
                return  # no default partition: salloc says what it does with the job
        elif partition not in partitions:
            known = ", ".join(sorted(partitions)) or "none"
            raise SlurmError(f"partition '{partition}' is not one of the Slurm partitions on {where} "
                             f"({known})")
        else:
            chosen = partitions[partition]
        if chosen.total_nodes < nodes:
            raise SlurmError(f"partition '{chosen.name}' on {where} has {chosen.total_nodes} node(s); "
                             f"{nodes} were asked for")

    def _salloc(self, where: str, command: str, nodes: int, partition: str | None, queue_timeout_s: float,
                cancel: threading.Event | None) -> None:
        """Run the ``salloc --no-shell`` line and follow what it says; a job left pending (timeout, cancel) is
        cancelled so that it cannot start later."""
        stream = self.login.stream(command, timeout=queue_timeout_s, cancel=cancel or threading.Event())
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
            self.job_id = pending  # release() cancels it: a pending job must not start after we left
            place = f" in partition '{partition}'" if partition else ""
            if result is not None and result.cancelled:
                raise AllocationCancelled(f"the Slurm allocation on {where} was cancelled while it waited "
                                          f"in the queue")
            if result is not None and result.timed_out:
                raise SlurmError(f"Slurm on {where} did not grant {nodes} node(s){place} within "
                                 f"{queue_timeout_s:g} s; the job waited in the queue and was cancelled")
            reason = errors[-1] if errors else "salloc gave no job allocation"
            raise SlurmError(f"Slurm on {where} refused {nodes} node(s){place}: {reason}")

    def _read_nodes(self, where: str) -> list[str]:
        result = self.login.run(f"scontrol show hostnames \"$(squeue -h -j {self.job_id} -o %N)\"",
                                timeout=_QUERY_TIMEOUT_S)
        names = result.stdout.split()
        if not result.ok or not names:
            raise SlurmError(f"the node list of Slurm job {self.job_id} on {where} could not be read: "
                             f"{_first_line(result)}")
        return names

    def _read_node_info(self, where: str) -> None:
        """Each node's NodeAddr (the address its peers reach it at: a node name need not resolve) and its GPUs
        (steps get an exclusive job's GPUs only when they ask for them: srun(1), --gres)."""
        result = self.login.run(f"scontrol show node -o {shlex.quote(','.join(self.nodes))}",
                                timeout=_QUERY_TIMEOUT_S)
        if not result.ok:
            raise SlurmError(f"the nodes of Slurm job {self.job_id} on {where} could not be read: "
                             f"{_first_line(result)}")
        found = parse_node_addresses(result.stdout)
        self.addresses = {node: found.get(node, node) for node in self.nodes}
        gpus = parse_node_gpus(result.stdout) if self._exclusive else {}  # a shared job holds only what it asked
        self.gpus = {node: gpus[node] for node in self.nodes if node in gpus}


def salloc_command(nodes: int, partition: str | None, time_limit_min: int, *, exclusive: bool = True,
                   extra_args: Sequence[str] = ()) -> str:
    """The login-node line asking for the allocation, every value shell-quoted, salloc's messages on stdout.
    ValueError (one sentence) for values Slurm would refuse anyway."""
    if nodes < 1:
        raise ValueError(f"the node count must be 1 or more, not {nodes}")
    if time_limit_min < 1:
        raise ValueError(f"the allocation's time limit must be 1 minute or more, not {time_limit_min}")
    if partition is not None and (not partition or any(c.isspace() or c == "," for c in partition)):
        raise ValueError(f"partition '{partition}' is not a partition name (one word, no commas)")
    for arg in extra_args:
        if not arg.startswith("-") or any(c in arg for c in "\n\r\0"):
            raise ValueError(f"salloc argument '{arg}' must be one option on one line, such as --account=NAME")
    args = ["salloc", "--no-shell", "--nodes", str(nodes), "--time", str(time_limit_min), "--job-name", JOB_NAME]
    if partition is not None:
        args += ["--partition", partition]
    if exclusive:
        args += ["--exclusive", "--mem=0"]  # whole nodes: every CPU, GPU and byte of memory the probes measure
    args += list(extra_args)
    return " ".join(shlex.quote(a) for a in args) + " 2>&1"


@dataclass(frozen=True)
class Partition:
    """What a partition line of ``scontrol show partition -o`` tells: its name, node count, default flag."""

    name: str
    total_nodes: int
    default: bool


def parse_partitions(text: str) -> dict[str, Partition]:
    """``scontrol show partition`` (``-o``: one line a partition; without: a block a partition) -> partitions by
    name."""
    partitions: dict[str, Partition] = {}
    for fields in _records(text, "PartitionName"):
        name = fields["PartitionName"]
        total = fields.get("TotalNodes", "0")
        partitions[name] = Partition(name, int(total) if total.isdigit() else 0, fields.get("Default") == "YES")
    return partitions


def parse_node_addresses(text: str) -> dict[str, str]:
    """``scontrol show node`` (one line or a block a node) -> NodeName: NodeAddr."""
    return {fields["NodeName"]: fields["NodeAddr"] for fields in _records(text, "NodeName") if fields.get("NodeAddr")}


def parse_node_gpus(text: str) -> dict[str, str]:
    """``scontrol show node`` -> NodeName: its GPU GRES as a step asks for it ("gpu:h100:8" from
    ``Gres=gpu:h100:8(S:0-1),nic:2``); nodes without GPUs are left out."""
    gpus: dict[str, str] = {}
    for fields in _records(text, "NodeName"):
        gres = re.sub(r"\([^)]*\)", "", fields.get("Gres", ""))
        wanted = [part for part in gres.split(",") if part.split(":")[0] == "gpu" and part[-1:].isdigit()]
        if wanted:
            gpus[fields["NodeName"]] = ",".join(wanted)
    return gpus


def _records(text: str, first_key: str) -> list[dict[str, str]]:
    """``Key=Value`` words grouped into records, each opened by ``first_key=``. Values never hold spaces in the
    keys read here (names, counts, YES/NO, addresses)."""
    records: list[dict[str, str]] = []
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep:
            continue
        if key == first_key:
            records.append({})
        if records:
            records[-1].setdefault(key, value)
    return [r for r in records if r.get(first_key)]


def _first_line(result: CommandResult) -> str:
    text = (result.stderr.strip() or result.stdout.strip()).splitlines()
    return text[0] if text else f"exit status {result.exit_code}"


class SrunTransport(Transport):
    """One compute node of Slurm job ``job_id`` as a `Transport`: each command is an ``srun`` step on
    ``node``, run through the ``login`` transport. It does not own the login transport: `close` stops this
    node's use of it, and whoever made the allocation closes the login connection."""

    def __init__(self, login: Transport, job_id: str, node: str, *, gpus: str | None = None) -> None:
        if not job_id.isdigit():
            raise ValueError(f"Slurm job id '{job_id}' is not a number")
        if not node or any(c.isspace() or c in "'\"\\$`;|&<>" for c in node):
            raise ValueError(f"Slurm node name '{node}' is not a plain node name")
        if gpus is not None and not re.fullmatch(r"[\w.:,-]+", gpus):
            raise ValueError(f"GPU request '{gpus}' is not a GRES such as gpu:8 or gpu:h100:8")
        self.login = login
        self.job_id = job_id
        self.node = node
        self.gpus = gpus  # asked for by every step: an exclusive job's GPUs reach a step only when it asks
        self.description = f"{node} (Slurm job {job_id} via {login.description})"
        self._closed = False

    # -- commands ---------------------------------------------------------------------------------------

    def srun_command(self, command: str, step_name: str, timeout: float | None) -> str:
        """The login-node command line that runs ``command`` with bash on this node as a step named
        ``step_name``. With a timeout, coreutils ``timeout`` also bounds it on the node, so a lost login
        connection cannot leave it running until the job ends."""
        inner = "bash -c " + shlex.quote(command)
        if timeout is not None:
            limit = int(timeout) + 1 + _REMOTE_KILL_GRACE_S
            inner = (f"if command -v timeout >/dev/null 2>&1; then exec timeout -k {_REMOTE_KILL_GRACE_S} "
                     f"{limit} {inner}; fi; exec {inner}")
        return " ".join([
            "exec srun", "--jobid", self.job_id, "--nodelist", self.node, "--nodes", "1", "--ntasks", "1",
            "--overlap", "--quiet", "--job-name", step_name,
            *([f"--gres={self.gpus}"] if self.gpus else []), "bash", "-c", shlex.quote(inner),
        ])

    def run(self, command: str, *, timeout: float, input: bytes | None = None,
            cancel: threading.Event | None = None) -> CommandResult:
        self._check_open()
        step = _new_step_name()
        ended = False
        try:
            result = self.login.run(self.srun_command(command, step, timeout), timeout=timeout, input=input,
                                    cancel=cancel)
            ended = not (result.timed_out or result.cancelled)
        finally:
            if not ended:
                self.kill_step(step)
        self._check_job(result)
        return result.model_copy(update={"command": command, "stderr": _TASK_EXIT_RE.sub("", result.stderr)})

    def stream(self, command: str, *, timeout: float | None, cancel: threading.Event) -> CommandStream:
        self._check_open()
        return CommandStream(command, self._stream_chunks(command, timeout, cancel))

    def _stream_chunks(self, command: str, timeout: float | None, cancel: threading.Event) -> ExecGenerator:
        """The login stream's lines as raw chunks for `CommandStream`; closing it early kills the step."""
        step = _new_step_name()
        lines = self.login.stream(self.srun_command(command, step, timeout), timeout=timeout, cancel=cancel)
        ended = False
        try:
            for line in lines:
                yield (line + "\n").encode("utf-8")
            result: CommandResult | None = getattr(lines, "result", None)
            ended = result is not None and not (result.timed_out or result.cancelled)
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()
            if not ended:
                self.kill_step(step)
        if result is None:
            return ExecOutcome(None, b"", False, False)
        self._check_job(result)
        return ExecOutcome(result.exit_code, _TASK_EXIT_RE.sub("", result.stderr).encode("utf-8"),
                           result.timed_out, result.cancelled)

    def _check_job(self, result: CommandResult) -> None:
        """`Disconnected` when srun says the job has ended: the runner then counts the node as lost (what it
        measured is kept), not as a probe that failed on it."""
        if result.exit_code not in (0, None) and _JOB_GONE_RE.search(result.stderr):
            self._closed = True
            raise Disconnected(f"Slurm job {self.job_id} has ended (its time limit, or scancel), so {self.node} "
                               f"cannot be reached through it any more")

    def kill_step(self, step_name: str) -> None:
        """Kill every process of the step named ``step_name`` on the node, then end the step. Best effort:
        with the login connection gone, the node's own ``timeout`` and the job's time limit end it."""
        script = (f"for s in $(squeue -h -s -j {self.job_id} -o '%i %j' | "
                  f"awk -v n={shlex.quote(step_name)} '$2 == n {{print $1}}'); "
                  "do scancel --signal=KILL \"$s\" 2>/dev/null; scancel \"$s\" 2>/dev/null; done; true")
        with contextlib.suppress(TransportError):
            self.login.run(script, timeout=_QUERY_TIMEOUT_S)

    # -- files ------------------------------------------------------------------------------------------

    def put_file(self, local: Path, remote_path: str, mode: int = 0o755) -> None:
        """Stream the file's bytes through srun's stdin into ``remote_path`` on the node (no SFTP to a
        compute node is needed)."""
        try:
            data = Path(local).read_bytes()
        except OSError as exc:
            raise TransportError(f"local file {local} could not be read: {exc.strerror or exc}") from exc
        path = shlex.quote(remote_path)
        script = f"cat > {path} && chmod {mode:o} {path}"
        result = self.run(script, timeout=120 + len(data) / 1e6, input=data or None)
        if not result.ok:
            raise TransportError(f"could not upload {local} to {self.description}:{remote_path}: "
                                 f"{_first_line(result)}")

    def make_workdir(self) -> str:
        return make_remote_workdir(self, self.description)

    def remove_workdir(self, path: str) -> None:
        remove_remote_workdir(self, self.description, path)

    # -- life -------------------------------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True

    def is_alive(self) -> bool:
        return not self._closed and self.login.is_alive()

    def _check_open(self) -> None:
        if self._closed:
            raise Disconnected(f"the transport to {self.description} was closed")


def _new_step_name() -> str:
    return STEP_NAME_PREFIX + secrets.token_hex(6)


__all__ = ["AllocationCancelled", "SlurmAllocation", "SlurmError", "SrunTransport", "parse_node_addresses",
           "parse_node_gpus", "parse_partitions", "salloc_command"]
