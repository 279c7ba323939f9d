"""`tuneplan probe TARGET|--local`: run a probe suite from the command line, print progress and the
scorecard.

Exit codes: 0 the run completed (every planned probe has an outcome and none was lost; whatever the
verdict); 1 other error; 2 usage; 3 unknown or changed host key; 4 authentication failed; 5 host
unreachable; 6 the run is incomplete or interrupted: the connection was lost mid-run and at least
one probe was not measured (what was measured is saved; the verdict is at best INCOMPLETE); 130
cancelled (Ctrl-C). Errors are one sentence on stderr, and nothing else goes there unless asked for
(``--verbose`` adds the SSH library's and the runner's log); ``--json`` prints only the run JSON on
stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import EXIT_ERROR, EXIT_USAGE, CliError, add_command
from cli.probe_common import (
    EXIT_CANCELLED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ProbeExit,
    Progress,
    connect,
    load_explained,
    mark_stale,
    render_scorecard,
    sigint_cancels,
)
from cli.probe_slurm import add_arguments as add_slurm_arguments
from cli.probe_step import options_step, step_lines
from core.units import parse_bytes

# the probe modules load when a probe runs, not when `tuneplan plan` builds its parser
if TYPE_CHECKING:
    from core.probes import ProbeStore


_EPILOG = """exit codes: 0 run completed (any verdict), 1 error, 2 usage, 3 unknown or changed host key,
4 authentication failed, 5 host unreachable, 6 connection lost mid-run: a probe was not measured (partial results
saved, verdict at best INCOMPLETE), 130 cancelled"""  # noqa: E501


def register(subparsers: Any) -> None:
    """Add `probe` to the `tuneplan` command line (called by cli.main)."""
    p = add_command(
        subparsers,
        "probe",
        help="probe a GPU box over SSH (or this machine) and print its readiness scorecard",
        description="Run a probe suite on TARGET ([user@]host[:port] or an ~/.ssh/config alias), "
        "on several TARGETs as one cluster, or, with --local, on this machine. Results are "
        "saved in the probe history.",
        epilog=_EPILOG,
        examples=(
            "tuneplan probe ubuntu@203.0.113.7 --suite full",
            "tuneplan probe node1 node2 --name pair --json > run.json",
            "tuneplan probe --slurm login.example.org --nodes 2",
        ),
    )
    p.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="[user@]host[:port] or an alias from ~/.ssh/config; two or more probe them as one "
        "cluster (each node's own suite in parallel, then agreement, rendezvous and the "
        "collectives between nodes)",
    )
    p.add_argument(
        "--name", metavar="NAME", help="the name a cluster run is filed under (default: its hosts)"
    )
    p.add_argument(
        "--local", action="store_true", help="probe this machine instead of a remote host"
    )

    add_slurm_arguments(p)
    p.add_argument(
        "--suite",
        default="quick",
        help="quick (about a minute), full (adds the burn, and the step with --plan), or probe "
        "names separated by commas: "
        "inventory,gpu_metrics,health,compute,collectives,storage,distributed,burn,step",
    )
    p.add_argument(
        "--json", action="store_true", help="print only the run JSON on stdout (progress on stderr)"
    )
    p.add_argument(
        "--accept-new-host-key",
        nargs="?",
        const=True,
        action="append",
        default=[],
        metavar="FINGERPRINT",
        help="accept an unknown host key into the app's known-hosts file: any new key without "
        "FINGERPRINT, else only a key with FINGERPRINT; repeatable, one per host, for a cluster "
        "of new hosts (each host's key must be one of those given); a changed key is always "
        "refused",
    )
    p.add_argument(
        "--known-hosts",
        metavar="FILE",
        help="the app's known-hosts file (default: in the data dir)",
    )
    p.add_argument(
        "-i",
        "--identity",
        action="append",
        default=[],
        metavar="KEY",
        help="private key file to offer",
    )
    p.add_argument(
        "--port",
        type=int,
        help="SSH port (wins over ~/.ssh/config; a target naming another port is refused)",
    )
    p.add_argument(
        "--data-path", metavar="P", help="absolute path on the host where training data lives"
    )
    p.add_argument(
        "--checkpoint-path", metavar="P", help="absolute path on the host for checkpoints"
    )
    p.add_argument("--duration", type=float, metavar="S", help="burn seconds (default 600)")
    p.add_argument(
        "--fio-size",
        metavar="SIZE",
        help="storage test file size: 256MB or 256M (10^6 bytes each), "
        "256MiB or 256Mi (2^20); default 256 MiB",
    )
    p.add_argument(
        "--fio-runtime", type=float, metavar="S", help="seconds per timed storage job (default 3)"
    )
    p.add_argument("--python", metavar="PATH", help="Python interpreter on the host that has torch")
    p.add_argument(
        "--plan",
        metavar="REQUEST.json",
        help="the plan whose model the step probe times (one layer)",
    )
    p.add_argument(
        "--step-scale",
        type=int,
        metavar="N",
        help="on a host without a GPU: the plan's shapes divided by N for the step probe (default "
        "32)",
    )
    p.add_argument(
        "--allow-root", action="store_true", help="allow `sudo -n` to read the kernel log"
    )
    p.add_argument(
        "--db",
        metavar="FILE",
        help="probe history file (default: $XDG_DATA_HOME/tuneplan/probes.db)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print the SSH library's and the runner's log on stderr (to debug a connection)",
    )
    p.set_defaults(func=cmd_probe)


MIN_FIO_BYTES = 1 << 20  # RunOptions.fio_size's floor


def parse_size(text: str) -> int:
    """'256MB' and '256M' (10⁶ bytes each), '256MiB' and '256Mi' (2²⁰), '1048576' (bytes) -> bytes:
    the one reading of a size every tuneplan field has (core.units.parse_bytes, as the README says);
    '80Gb' is refused as bits."""
    try:
        size = parse_bytes(text)
    except ValueError as exc:
        raise ProbeExit(EXIT_USAGE, f"--fio-size: {exc}") from None
    if size < MIN_FIO_BYTES:
        raise ProbeExit(
            EXIT_USAGE,
            f"--fio-size '{text}' is {size:,} bytes; the test file needs at least 1 MiB "
            "(1,048,576 bytes), e.g. 2M or 1MiB",
        )
    return size


def _options(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from core.probes import RunOptions
    from core.validation import validation_message

    values: dict[str, Any] = {
        "suite": args.suite,
        "data_path": args.data_path,
        "checkpoint_path": args.checkpoint_path,
        "python": args.python,
        "allow_root": args.allow_root,
    }
    if args.duration is not None:
        values["burn_seconds"] = args.duration
    if args.fio_size:
        values["fio_size"] = parse_size(args.fio_size)
    if args.fio_runtime is not None:
        values["fio_runtime_s"] = args.fio_runtime
    try:
        options_step(values, args.plan, args.step_scale)
    except CliError as exc:
        raise ProbeExit(EXIT_USAGE, str(exc)) from None
    try:
        return RunOptions(**values)
    except ValidationError as exc:
        message = validation_message(exc)
        flag = {
            "burn_seconds": "--duration",
            "fio_size": "--fio-size",
            "data_path": "--data-path",
            "checkpoint_path": "--checkpoint-path",
            "suite": "--suite",
            "python": "--python",
            "fio_runtime_s": "--fio-runtime",
            "step_cpu_scale": "--step-scale",
        }
        for name, cli_name in flag.items():
            if message.startswith(name + ":"):
                message = cli_name + message[len(name) :]
        raise ProbeExit(EXIT_USAGE, message) from None


def _label(store: ProbeStore, args: argparse.Namespace, default: str) -> str:
    """Runs of a saved host are filed under its profile name, so the window's history shows them."""
    with contextlib.suppress(Exception):
        for profile in store.hosts():
            if (args.local and profile.local) or (not args.local and profile.target == default):
                return profile.name
    return default


# ----------------------------------------------------------------------------------------- output


# -------------------------------------------------------------------------------------------
# command


def _logging(verbose: bool) -> None:
    """Only --verbose shows library logs: without it, a failed SSH handshake or a runner bug logged
    from a worker thread would reach stderr through Python's last-resort handler as a traceback,
    next to the one sentence the user gets anyway."""
    if verbose:
        logging.basicConfig(
            level=logging.DEBUG,
            stream=sys.stderr,
            format="%(asctime)s %(threadName)s %(name)s %(levelname)s: %(message)s",
        )
    else:
        for name in ("core", "paramiko"):
            logger = logging.getLogger(name)
            if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
                logger.addHandler(logging.NullHandler())


def cmd_probe(args: argparse.Namespace) -> int:
    _logging(args.verbose)
    try:
        return _probe(args)
    except ProbeExit as exc:
        print(f"tuneplan: {exc}", file=sys.stderr)
        return exc.code


def _probe(args: argparse.Namespace) -> int:
    from cli.probe_slurm import check_slurm_flags, probe_slurm
    from core.probes import ProbeStore, run_json, run_suite

    if args.slurm is not None:
        return probe_slurm(args, _options(args))
    check_slurm_flags(args)
    if bool(args.local) == bool(args.targets):
        raise ProbeExit(
            EXIT_USAGE,
            "probe needs either TARGET ([user@]host[:port]) or --local, not both"
            if args.local
            else "probe needs a TARGET ([user@]host[:port] or an ssh alias) or --local",
        )
    options = _options(args)
    if len(args.targets) > 1:
        from cli.probe_cluster import probe_cluster

        return probe_cluster(args, options)
    store = ProbeStore.open_or_memory(Path(args.db).expanduser() if args.db else None)
    # a damaged file moved aside; a history that cannot be kept
    for note in (store.notice, store.fault):
        if note:
            print(f"tuneplan: {note}", file=sys.stderr, flush=True)
    opened_fault = store.fault
    progress = Progress(sys.stderr if args.json else sys.stdout)
    mark_stale(store, progress)
    transport, default_label = connect(args)
    label = _label(store, args, default_label)
    cancel = threading.Event()
    finished: Any = None
    try:
        with sigint_cancels(cancel, lambda m: print(f"tuneplan: {m}", file=sys.stderr, flush=True)):
            for event in run_suite(transport, options, store, cancel, label):
                progress.event(event)
                if event.kind == "run_finished":
                    finished = event
    finally:
        transport.close()
    if finished is None:
        raise ProbeExit(EXIT_ERROR, "the probe run ended without a result")
    run = load_explained(store, finished.run_id)
    doc = run_json(run)
    store.close()
    if args.json:
        print(json.dumps(doc, indent=2, default=str))
    else:
        progress.say("")
        progress.say(render_scorecard(doc))
        for line in step_lines(doc):
            progress.say(line)
        if store.path is not None:
            progress.say(
                f"\nsaved as run {finished.run_id} in {store.path} "
                f"(report: tuneplan probe-report {finished.run_id} -o report.pdf)"
            )
    # the file failed mid-run: the run above is all there is
    if store.fault and store.fault != opened_fault:
        print(
            f"tuneplan: the probe history could not be kept: {store.fault}",
            file=sys.stderr,
            flush=True,
        )
    if finished.status == "completed":
        return EXIT_OK
    if finished.status == "cancelled":
        print("tuneplan: the probe run was cancelled; what was measured is saved", file=sys.stderr)
        return EXIT_CANCELLED
    if finished.status in ("interrupted", "incomplete"):
        lost = (
            ", ".join(o.name for o in run.outcomes if o.status.value in ("lost", "interrupted"))
            or "a probe"
        )
        print(
            f"tuneplan: the connection to {label} was lost mid-run: {lost} not measured; the run "
            f"is {finished.status} and what was measured is saved as run {finished.run_id}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(
        f"tuneplan: the probe run failed; see run {finished.run_id} for what was measured",
        file=sys.stderr,
    )
    return EXIT_ERROR
