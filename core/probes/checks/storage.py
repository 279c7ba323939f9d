"""Storage: fio sequential read/write, 4 KiB random read IOPS (QD32) and p99 latency (QD1),
small-file create/stat/read, at the data and checkpoint paths the user names (default: the run's
work directory).

Safety: every file lives in a private ``tuneplan.io.*`` directory made inside the named path and
removed afterwards, even on cancel; free space is checked first and the test refuses to run when the
filesystem has less than twice the test size plus a margin. Without fio, the standard-library
``iobench.py`` measures the same things at queue depth 1 (or ``dd`` measures sequential throughput
when there is no Python either).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from core.probes.checks.base import ProbeContext, ProbeFailed, ProbeSkipped, q, short_error
from core.probes.checks.compute import as_float
from core.probes.evidence import StorageResult
from core.probes.parsers import parse_fio_json
from core.probes.samples import FioJob, FioResult
from core.probes.transport.base import Disconnected, TransportError, last_output_line, line_break_in

MARGIN_BYTES = 256 << 20
SMALL_FILE_BYTES = 4096
SEQ_FILE = "tuneplan_seq.dat"
TEST_DIR_PREFIX = "tuneplan.io."
_DOC_START = re.compile(r"^\{\s*$")

Role = Literal["data", "checkpoint", "scratch"]
Tool = Literal["fio", "dd", "python"]


def required_bytes(fio_size: int, small_files: int) -> int:
    """Free space needed before writing anything: twice the test file plus a margin plus the small
    files."""
    return 2 * fio_size + MARGIN_BYTES + small_files * SMALL_FILE_BYTES


def targets(ctx: ProbeContext) -> list[tuple[Role, str]]:
    """(role, path) pairs to test; the same path named twice is tested once (see `run`)."""
    named: list[tuple[Role, str | None]] = [
        ("data", ctx.options.data_path),
        ("checkpoint", ctx.options.checkpoint_path),
    ]
    out: list[tuple[Role, str]] = [(role, path.rstrip("/") or "/") for role, path in named if path]
    return out or [("scratch", ctx.workdir)]


def choose_tool(ctx: ProbeContext) -> Tool:
    if ctx.facts.has("fio"):
        return "fio"
    return "python" if ctx.facts.python is not None else "dd"


def fio_filename(path: str) -> str:
    """A path as fio's ``filename`` option takes it: fio splits ``filename`` (and ``directory``) on
    ':' to name several files, so a ':' that is part of the path is escaped as '\\:' ("If the wanted
    filename does need to include a colon, then escape that with a \\ character",
    https://fio.readthedocs.io/en/latest/fio_doc.html, option filename). The whole path goes in
    ``filename`` and ``directory`` is not used, since the docs give the escape for ``filename``
    only."""
    return path.replace(":", "\\:")


def fio_command(ctx: ProbeContext, directory: str, *, engine: str, direct: bool) -> str:
    """One fio run, four stonewalled jobs, JSON every second (for the live chart) and at the end."""
    size, runtime = ctx.options.fio_size, max(1, round(ctx.options.fio_runtime_s))
    common = ["--filename=" + fio_filename(f"{directory}/{SEQ_FILE}"), f"--size={size}"]
    args = [
        "fio",
        "--output-format=json",
        "--status-interval=1",
        f"--ioengine={engine}",
        f"--direct={int(direct)}",
        "--group_reporting",
        "--randrepeat=0",
        "--name=seq_write",
        "--rw=write",
        "--bs=1M",
        "--iodepth=16",
        "--end_fsync=1",
        f"--runtime={runtime * 10 + 30}",
        *common,
        "--name=seq_read",
        "--stonewall",
        "--rw=read",
        "--bs=1M",
        "--iodepth=16",
        "--time_based",
        f"--runtime={runtime}",
        *common,
        "--name=rand_read_qd32",
        "--stonewall",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=32",
        "--time_based",
        f"--runtime={runtime}",
        *common,
        "--name=rand_read_qd1",
        "--stonewall",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=1",
        "--time_based",
        f"--runtime={runtime}",
        *common,
    ]
    return " ".join(q(a) for a in args)


class _Docs:
    """Splits fio's --status-interval output into JSON documents and charts each interval's
    throughput."""

    def __init__(self, ctx: ProbeContext, role: str) -> None:
        self.ctx = ctx
        self.role = role
        self.current: list[str] | None = None
        self.docs: list[str] = []
        # job -> (read bytes, write bytes, ios, t)
        self.last: dict[str, tuple[float, float, float, float]] = {}

    def feed(self, line: str) -> None:
        if self.current is None:
            if _DOC_START.match(line):
                self.current = [line]
            return
        self.current.append(line)
        if line.rstrip() == "}":
            doc = "\n".join(self.current)
            self.current = None
            self.docs.append(doc)
            self._chart(doc)

    def _chart(self, doc: str) -> None:
        parsed = parse_fio_json(doc).value
        if parsed is None:
            return
        now = self.ctx.clock()
        for job in parsed.jobs:
            read_bytes = float(job.read.io_bytes or 0) if job.read else 0.0
            write_bytes = float(job.write.io_bytes or 0) if job.write else 0.0
            ios = float((job.read.total_ios or 0) if job.read else 0)
            runtime = job.runtime_s or 0.0
            before = self.last.get(job.name)
            self.last[job.name] = (read_bytes, write_bytes, ios, runtime)
            if before is None or runtime <= before[3]:
                continue
            span = runtime - before[3]
            label = f"{self.role} {job.name}"
            if write_bytes > before[1]:
                self.ctx.point("fio_write", now, (write_bytes - before[1]) / span / 1e6, label)
            if read_bytes > before[0]:
                self.ctx.point("fio_read", now, (read_bytes - before[0]) / span / 1e6, label)
                if job.name.startswith("rand") and ios > before[2]:
                    self.ctx.point("fio_iops", now, (ios - before[2]) / span, label)

    def final(self) -> str:
        if self.current:  # cut off: hand the partial document to the parser, which repairs it
            return "\n".join(self.current)
        return self.docs[-1] if self.docs else ""


def _depth(job: FioJob) -> int:
    return (job.iodepth or 1) * (job.numjobs or 1)


def apply_fio(storage: StorageResult, result: FioResult) -> None:
    """Headline figures, chosen by what each job did (not by its name, so any fio JSON can be read):
    sequential write and read bandwidth from ``write``/``read`` jobs, random-read IOPS from the most
    parallel ``randread`` job, p99 latency from the least parallel one (queue depth 1 in our own
    run)."""
    jobs = [j for j in result.jobs if not j.error]
    seq_write = [j for j in jobs if j.rw == "write" and j.write is not None]
    seq_read = [j for j in jobs if j.rw == "read" and j.read is not None]
    rand = sorted((j for j in jobs if j.rw == "randread" and j.read is not None), key=_depth)
    if seq_write and seq_write[0].write is not None:
        storage.seq_write_bytes_per_s = seq_write[0].write.bw_bytes_per_s
    if seq_read and seq_read[0].read is not None:
        storage.seq_read_bytes_per_s = seq_read[0].read.bw_bytes_per_s
    if rand:
        widest, narrowest = rand[-1].read, rand[0].read
        if widest is not None:
            storage.rand_read_iops = widest.iops
        if narrowest is not None and narrowest.clat_p99_ns is not None:
            storage.rand_read_p99_ms = narrowest.clat_p99_ns / 1e6


def _run_fio(ctx: ProbeContext, storage: StorageResult, directory: str, role: str) -> None:
    attempts = [("libaio", True), ("psync", True), ("psync", False)]
    last_error = ""
    for engine, direct in attempts:
        docs = _Docs(ctx, role)
        stream = ctx.stream(
            fio_command(ctx, directory, engine=engine, direct=direct),
            timeout=ctx.options.timeouts.storage_s,
        )
        try:
            for line in stream:
                docs.feed(line)
        except Disconnected:
            _keep_partial(ctx, storage, docs)
            raise
        result = stream.result
        text = docs.final()
        parsed = parse_fio_json(text) if text else None
        job_errors = (
            [j.error for j in parsed.value.jobs if j.error] if parsed and parsed.value else []
        )
        stderr = result.stderr if result is not None else ""
        if (
            parsed is not None
            and parsed.value is not None
            and parsed.value.jobs
            and not job_errors
            and result is not None
            and result.exit_code == 0
        ):
            ctx.warnings.extend(
                f"fio at {storage.path}: {w}"
                for w in parsed.warnings
                if not w.startswith("text before")
            )
            storage.fio.append(parsed.value)
            apply_fio(storage, parsed.value)
            if not direct:
                ctx.warn(
                    f"O_DIRECT is not supported at {storage.path} "
                    f"({storage.filesystem or 'unknown fs'}); "
                    "fio ran through the page cache, so its figures are optimistic"
                )
            return
        last_error = short_error(result) if result is not None else "no output"
        if result is not None and result.timed_out:
            break
        engine_problem = "libaio" in stderr or "engine" in stderr.lower()
        direct_problem = (
            "direct" in stderr.lower() or "invalid argument" in stderr.lower() or 22 in job_errors
        )
        if engine == "libaio" and not engine_problem and not direct_problem:
            break
        ctx.run(f"rm -f -- {q(directory + '/' + SEQ_FILE)}", timeout=ctx.options.timeouts.command_s)
    raise ProbeFailed(f"fio failed at {storage.path}: {last_error}")


def _keep_partial(ctx: ProbeContext, storage: StorageResult, docs: _Docs) -> None:
    """The connection dropped while fio ran: keep fio's last interval report (the parser repairs a
    cut-off one) as this path's figures, marked partial in the evidence."""
    text = docs.final()
    parsed = parse_fio_json(text).value if text else None
    kept = "no fio report had arrived"
    if parsed is not None and parsed.jobs:
        storage.fio.append(parsed)
        apply_fio(storage, parsed)
        kept = "fio's last report before the drop (" + ", ".join(j.name for j in parsed.jobs) + ")"
    ctx.evidence.partial["storage"] = f"{storage.role} ({storage.path}): {kept}"


def _json_line(text: str) -> dict[str, Any] | None:
    for line in reversed(text.split("\n")):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _run_python(ctx: ProbeContext, storage: StorageResult, directory: str) -> None:
    script = ctx.upload("iobench.py")
    python = ctx.python()
    seq = ctx.run(
        f"{q(python)} {q(script)} seq {q(directory)} --size {ctx.options.fio_size}",
        timeout=ctx.options.timeouts.storage_s,
    )
    seq_data = _json_line(seq.stdout)
    if seq.exit_code != 0 or seq_data is None:
        raise ProbeFailed(f"the Python storage test failed at {storage.path}: {short_error(seq)}")
    storage.seq_write_bytes_per_s = as_float(seq_data.get("write_bytes_per_s"))
    storage.seq_read_bytes_per_s = as_float(seq_data.get("read_bytes_per_s"))
    rand = ctx.run(
        f"{q(python)} {q(script)} rand {q(directory)} --seconds {ctx.options.fio_runtime_s}",
        timeout=ctx.options.timeouts.storage_s,
    )
    rand_data = _json_line(rand.stdout)
    if rand.exit_code == 0 and rand_data is not None:
        storage.rand_read_iops = as_float(rand_data.get("iops"))
        storage.rand_read_p99_ms = as_float(rand_data.get("p99_ms"))
    else:
        storage.step_failures["random read"] = short_error(rand)
        ctx.warn(f"random reads could not be measured at {storage.path}: {short_error(rand)}")
    if not seq_data.get("direct"):
        ctx.warn(
            f"O_DIRECT is not supported at {storage.path}; reads went through the page cache "
            f"({'after dropping it with fadvise' if seq_data.get('cache_dropped') else 'possibly cached'})"  # noqa: E501
        )
    ctx.warn(
        f"fio is not installed: storage at {storage.path} was measured with Python at queue depth "
        "1, "
        "which understates what a parallel loader gets"
    )


def _run_dd(ctx: ProbeContext, storage: StorageResult, directory: str) -> None:
    path = f"{directory}/{SEQ_FILE}"
    count = max(1, ctx.options.fio_size >> 20)
    write = ctx.run(
        f"LC_ALL=C dd if=/dev/zero of={q(path)} bs=1M count={count} conv=fsync 2>&1",
        timeout=ctx.options.timeouts.storage_s,
    )
    read = ctx.run(
        f"LC_ALL=C dd if={q(path)} of=/dev/null bs=1M iflag=direct 2>&1 || "
        f"LC_ALL=C dd if={q(path)} of=/dev/null bs=1M 2>&1",
        timeout=ctx.options.timeouts.storage_s,
    )
    storage.seq_write_bytes_per_s = dd_rate(write.stdout)
    storage.seq_read_bytes_per_s = dd_rate(read.stdout)
    if storage.seq_write_bytes_per_s is None:
        raise ProbeFailed(f"dd could not write at {storage.path}: {short_error(write)}")
    if storage.seq_read_bytes_per_s is None:
        storage.step_failures["sequential read"] = short_error(read)
    ctx.warn(
        "neither fio nor Python is available: only sequential throughput was measured at "
        f"{storage.path}"
    )


def dd_rate(text: str) -> float | None:
    """Bytes per second from dd's summary line ('... copied, 0.5 s, 134 MB/s')."""
    match = re.search(r"(\d+) bytes .*? copied, ([0-9.]+) s", text)
    if not match or float(match.group(2)) <= 0:
        return None
    return int(match.group(1)) / float(match.group(2))


def _small_files(ctx: ProbeContext, storage: StorageResult, directory: str) -> None:
    if ctx.facts.python is None:
        ctx.warn(
            f"no Python on the host: small-file operations were not measured at {storage.path}"
        )
        return
    script = ctx.upload("iobench.py")
    result = ctx.run(
        f"{q(ctx.python())} {q(script)} smallfiles {q(directory)} --count "
        f"{ctx.options.small_files}",
        timeout=ctx.options.timeouts.storage_s,
    )
    data = _json_line(result.stdout)
    if result.exit_code != 0 or data is None:
        storage.step_failures["small files"] = short_error(result)
        ctx.warn(f"the small-file test failed at {storage.path}: {short_error(result)}")
        return
    storage.small_file_ops_per_s = as_float(data.get("ops_per_s"))


def _free_space(ctx: ProbeContext, directory: str) -> tuple[int | None, str | None]:
    result = ctx.run(
        f"df -P -T -B1 -- {q(directory)} | tail -n 1", timeout=ctx.options.timeouts.command_s
    )
    parts = result.stdout.split()
    if result.exit_code != 0 or len(parts) < 6 or not parts[4].isdigit():
        return None, None
    return int(parts[4]), parts[1]


def test_path(
    ctx: ProbeContext, role: Role, path: str, storage: StorageResult | None = None
) -> StorageResult:
    """Measure one path inside a private directory that is removed afterwards whatever happens
    (``storage``, when given, is filled in place: the caller has put it in the evidence already, so
    a drop keeps what it holds).

    The directory is resolved on the host (``..`` and symlinks in the named path: realpath) and
    written in the ledger before anything is put in it, so a drop or a killed client leaves nothing
    the next run cannot find."""
    tool = choose_tool(ctx)
    storage = storage or StorageResult(path=path, role=role, tool=tool)
    found = line_break_in(path)
    # RunOptions refuses these paths: the directory made in one would read back as another path
    if found:
        storage.skipped_reason = (
            f"the {role} path {path!a} holds a line break ({found}), so it was not tested"
        )
        return storage
    made = ctx.run(
        f"umask 077 && d=$(mktemp -d -- {q(path + '/' + TEST_DIR_PREFIX + 'XXXXXXXX')}) && "
        '{ realpath -e -- "$d" 2>/dev/null || readlink -f -- "$d"; }',
        timeout=ctx.options.timeouts.command_s,
    )
    directory = last_output_line(made.stdout)
    name = directory.rsplit("/", 1)[-1]
    if made.exit_code != 0 or not directory.startswith("/") or not name.startswith(TEST_DIR_PREFIX):
        storage.skipped_reason = f"cannot create a test directory in {path}: {short_error(made)}"
        return storage
    ctx.remember(directory, "storage")
    try:
        storage.free_bytes, storage.filesystem = _free_space(ctx, directory)
        need = required_bytes(ctx.options.fio_size, ctx.options.small_files)
        if storage.free_bytes is None:
            storage.skipped_reason = (
                f"the free space at {path} could not be read, so nothing was written there"
            )
            return storage
        if storage.free_bytes < need:
            storage.skipped_reason = (
                f"only {storage.free_bytes / 2**30:.2f} GiB free at {path}; the storage test needs "
                f"{need / 2**30:.2f} GiB (twice the {ctx.options.fio_size / 2**20:.0f} MiB test "
                f"size plus {MARGIN_BYTES >> 20} MiB margin), so it refused to run"
            )
            return storage
        if tool == "fio":
            _run_fio(ctx, storage, directory, role)
        elif tool == "python":
            _run_python(ctx, storage, directory)
        else:
            _run_dd(ctx, storage, directory)
        _small_files(ctx, storage, directory)
    finally:
        _remove(ctx, directory)
    return storage


def _remove(ctx: ProbeContext, directory: str) -> None:
    """Remove the private test directory even after a cancel (the workdir check guards the path)."""
    try:
        ctx.transport.remove_workdir(directory)
    except (Disconnected, TransportError, ValueError) as exc:
        ctx.log(
            "warning",
            f"could not remove the storage test directory {directory} (it is in the ledger: the "
            f"next connection to this host removes it): {exc}",
        )
        return
    ctx.forget(directory)


def run(ctx: ProbeContext) -> None:
    done: dict[str, StorageResult] = {}
    errors: list[str] = []
    for role, path in targets(ctx):
        ctx.check_cancel()
        if path in done:
            ctx.evidence.storage.append(done[path].model_copy(update={"role": role}))
            continue
        storage = StorageResult(path=path, role=role, tool=choose_tool(ctx))
        ctx.evidence.storage.append(storage)  # now, so a drop mid-test keeps what it measured
        try:
            test_path(ctx, role, path, storage)
        except ProbeFailed as exc:
            storage.skipped_reason = str(exc)
            errors.append(str(exc))
        done[path] = storage
        if storage.skipped_reason:
            ctx.log("warning", f"storage test at {path}: {storage.skipped_reason}")
    if errors and len(errors) == len(done):
        raise ProbeFailed("; ".join(errors))
    if all(s.skipped_reason for s in ctx.evidence.storage):
        raise ProbeSkipped("; ".join(s.skipped_reason or "" for s in ctx.evidence.storage))
