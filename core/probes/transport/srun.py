"""One compute node of a Slurm allocation as a `Transport`: `SrunTransport`, every command a job
step run through the login node's transport, ``srun --jobid J --nodelist NODE --overlap ... bash -c
CMD``.

``--overlap`` (Slurm ≥ 20.11) lets the steps share the allocation's CPUs, memory and GPUs, so the
metrics stream and the checks run side by side as they do over SSH. An exclusive job holds every GPU
of its nodes, but a step gets the GPUs an exclusive job holds implicitly only when it asks for them
(srun(1), ``--gres``), so every step asks for its node's GPUs as ``scontrol show node`` lists them
(``--gres=gpu:h100:8``); without that, nvidia-smi in a step would see none.

Killing: the login transport kills the ``srun`` it started on cancel or timeout, but a killed
``srun`` leaves its step running on the node (slurmstepd keeps the task alive). So each step gets a
name of its own, and after a cancel, a timeout or a stream closed early the transport finds that
step (``squeue -s``) and ends it: ``scancel --signal=KILL`` kills every process of the step on the
node, then ``scancel`` ends the step.

Apart from the allocation (core.probes.transport.slurm: asking for nodes, releasing them) because a
step is what runs on a node, and its quoting, GPUs and killing are the whole of it.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
import threading
from pathlib import Path

from core.probes.transport.base import (
    CommandResult,
    CommandStream,
    Disconnected,
    ExecGenerator,
    ExecOutcome,
    Transport,
    TransportError,
    failure_line,
    make_remote_workdir,
    remove_remote_workdir,
)

STEP_NAME_PREFIX = "tuneplan-step-"
_SCANCEL_TIMEOUT_S = 30.0
_REMOTE_KILL_GRACE_S = 5

# srun's words when the job itself is gone (time limit, scancel): no command can reach the node
# through it again.
_JOB_GONE_RE = re.compile(
    r"^srun: error: (?:Slurm job \d+ has expired|Unable to create step for job \d+: "
    r"(?:Invalid job id specified|Job/step already completing or completed))",
    re.MULTILINE,
)
# srun's own line for a task that exited non-zero, printed even with --quiet: the exit code already
# says it.
_TASK_EXIT_RE = re.compile(
    r"^srun: error: \S+: task \d+: Exited with exit code \d+\n?", re.MULTILINE
)


class SrunTransport(Transport):
    """One compute node of Slurm job ``job_id`` as a `Transport`: each command is an ``srun`` step
    on ``node``, run through the ``login`` transport. It does not own the login transport: `close`
    stops this node's use of it, and whoever made the allocation closes the login connection."""

    def __init__(
        self, login: Transport, job_id: str, node: str, *, gpus: str | None = None
    ) -> None:
        if not job_id.isdigit():
            raise ValueError(f"Slurm job id '{job_id}' is not a number")
        if not node or any(c.isspace() or c in "'\"\\$`;|&<>" for c in node):
            raise ValueError(f"Slurm node name '{node}' is not a plain node name")
        if gpus is not None and not re.fullmatch(r"[\w.:,-]+", gpus):
            raise ValueError(f"GPU request '{gpus}' is not a GRES such as gpu:8 or gpu:h100:8")
        self.login = login
        self.job_id = job_id
        self.node = node
        # asked for by every step: an exclusive job's GPUs reach a step only when it asks
        self.gpus = gpus
        self.description = f"{node} (Slurm job {job_id} via {login.description})"
        self._closed = False

    # -- commands
    # ---------------------------------------------------------------------------------------

    def srun_command(self, command: str, step_name: str, timeout: float | None) -> str:
        """The login-node command line that runs ``command`` with bash on this node as a step named
        ``step_name``. With a timeout, coreutils ``timeout`` also bounds it on the node, so a lost
        login connection cannot leave it running until the job ends."""
        inner = "bash -c " + shlex.quote(command)
        if timeout is not None:
            limit = int(timeout) + 1 + _REMOTE_KILL_GRACE_S
            inner = (
                "if command -v timeout >/dev/null 2>&1; then exec timeout -k "
                f"{_REMOTE_KILL_GRACE_S} {limit} {inner}; fi; exec {inner}"
            )
        return " ".join(
            [
                "exec srun",
                "--jobid",
                self.job_id,
                "--nodelist",
                self.node,
                "--nodes",
                "1",
                "--ntasks",
                "1",
                "--overlap",
                "--quiet",
                "--job-name",
                step_name,
                *([f"--gres={self.gpus}"] if self.gpus else []),
                "bash",
                "-c",
                shlex.quote(inner),
            ]
        )

    def run(
        self,
        command: str,
        *,
        timeout: float,
        input: bytes | None = None,
        cancel: threading.Event | None = None,
    ) -> CommandResult:
        self._check_open()
        step = _new_step_name()
        ended = False
        try:
            result = self.login.run(
                self.srun_command(command, step, timeout),
                timeout=timeout,
                input=input,
                cancel=cancel,
            )
            ended = not (result.timed_out or result.cancelled)
        finally:
            if not ended:
                self.kill_step(step)
        self._check_job(result)
        return result.model_copy(
            update={"command": command, "stderr": _TASK_EXIT_RE.sub("", result.stderr)}
        )

    def stream(
        self, command: str, *, timeout: float | None, cancel: threading.Event
    ) -> CommandStream:
        self._check_open()
        return CommandStream(command, self._stream_chunks(command, timeout, cancel))

    def _stream_chunks(
        self, command: str, timeout: float | None, cancel: threading.Event
    ) -> ExecGenerator:
        """The login stream's lines as raw chunks for `CommandStream`; closing it early kills the
        step."""
        step = _new_step_name()
        lines = self.login.stream(
            self.srun_command(command, step, timeout), timeout=timeout, cancel=cancel
        )
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
        return ExecOutcome(
            result.exit_code,
            _TASK_EXIT_RE.sub("", result.stderr).encode("utf-8"),
            result.timed_out,
            result.cancelled,
        )

    def _check_job(self, result: CommandResult) -> None:
        """`Disconnected` when srun says the job has ended: the runner then counts the node as lost
        (what it measured is kept), not as a probe that failed on it."""
        if result.exit_code not in (0, None) and _JOB_GONE_RE.search(result.stderr):
            self._closed = True
            raise Disconnected(
                f"Slurm job {self.job_id} has ended (its time limit, or scancel), so {self.node} "
                f"cannot be reached through it any more"
            )

    def kill_step(self, step_name: str) -> None:
        """Kill every process of the step named ``step_name`` on the node, then end the step. Best
        effort: with the login connection gone, the node's own ``timeout`` and the job's time limit
        end it."""
        script = (
            f"for s in $(squeue -h -s -j {self.job_id} -o '%i %j' | "
            f"awk -v n={shlex.quote(step_name)} '$2 == n {{print $1}}'); "
            'do scancel --signal=KILL "$s" 2>/dev/null; scancel "$s" 2>/dev/null; done; true'
        )
        with contextlib.suppress(TransportError):
            self.login.run(script, timeout=_SCANCEL_TIMEOUT_S)

    # -- files
    # ------------------------------------------------------------------------------------------

    def put_file(self, local: Path, remote_path: str, mode: int = 0o755) -> None:
        """Stream the file's bytes through srun's stdin into ``remote_path`` on the node (no SFTP to
        a compute node is needed)."""
        try:
            data = Path(local).read_bytes()
        except OSError as exc:
            raise TransportError(
                f"local file {local} could not be read: {exc.strerror or exc}"
            ) from exc
        path = shlex.quote(remote_path)
        script = f"cat > {path} && chmod {mode:o} {path}"
        result = self.run(script, timeout=120 + len(data) / 1e6, input=data or None)
        if not result.ok:
            raise TransportError(
                f"could not upload {local} to {self.description}:{remote_path}: "
                f"{failure_line(result)}"
            )

    def make_workdir(self) -> str:
        return make_remote_workdir(self, self.description)

    def remove_workdir(self, path: str) -> None:
        remove_remote_workdir(self, self.description, path)

    # -- life
    # -------------------------------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True

    def is_alive(self) -> bool:
        return not self._closed and self.login.is_alive()

    def _check_open(self) -> None:
        if self._closed:
            raise Disconnected(f"the transport to {self.description} was closed")


def _new_step_name() -> str:
    return STEP_NAME_PREFIX + secrets.token_hex(6)


__all__ = ["STEP_NAME_PREFIX", "SrunTransport"]
