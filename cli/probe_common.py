"""What the probe commands share: exit codes, connecting to a host, progress lines, Ctrl-C, the
scorecard's text.

`tuneplan probe` (cli/probe.py) runs one host; a cluster run (probe_cluster.py) and a Slurm
allocation (probe_slurm.py) run several with the same connection, progress, cancel and output. They
live here so that the three commands import this module rather than each other.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import getpass
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from cli.common import EXIT_ERROR, EXIT_USAGE
from cli.table import table

# the probe modules load when a probe runs, not when `tuneplan plan` builds its parser
if TYPE_CHECKING:
    from core.probes import ProbeStore, StoredRun

EXIT_OK = 0
EXIT_HOST_KEY = 3
EXIT_AUTH = 4
EXIT_UNREACHABLE = 5
EXIT_INTERRUPTED = 6
EXIT_CANCELLED = 130
LOCAL_LABEL = "This machine"  # the GUI files runs of the local machine under the same name


class ProbeExit(Exception):
    """A probe command's end: the exit code and the one sentence the user reads."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _prompt(label: str) -> str | None:
    """Ask on the terminal (never stored); None when there is no terminal to ask on."""
    if not sys.stdin.isatty():
        return None
    try:
        return getpass.getpass(f"tuneplan: {label} ")
    except (EOFError, KeyboardInterrupt):
        return None


def connect(args: argparse.Namespace, target_text: str | None = None) -> tuple[Any, str]:
    """A connected transport and the label runs are filed under; `ProbeExit` with one sentence on
    failure (naming the host when several are probed)."""
    from core.probes import (
        AuthenticationFailed,
        HostKeyChanged,
        HostKeyRevoked,
        HostKeyUnknown,
        LocalTransport,
        TransportError,
        Unreachable,
    )

    if args.local:
        return LocalTransport(), LOCAL_LABEL
    from core.probes import HostOverrides, open_ssh, resolve

    text = target_text if target_text is not None else args.targets[0]
    where = f"{text}: " if len(args.targets) > 1 else ""
    if args.port is not None and not 1 <= args.port <= 65535:
        raise ProbeExit(EXIT_USAGE, f"--port {args.port} is not a port number from 1 to 65535")
    try:
        target = resolve(text, HostOverrides(port=args.port, identity_files=tuple(args.identity)))
    except ValueError as exc:
        raise ProbeExit(EXIT_USAGE, f"{where}{exc}") from None
    options: dict[str, Any] = {
        "accept_new_host_key": _accepted(args.accept_new_host_key),
        "password_cb": _prompt,
        "passphrase_cb": _prompt,
    }
    if args.known_hosts:
        options["known_hosts_file"] = Path(args.known_hosts).expanduser()
    try:
        transport = open_ssh(target, notes=_print_notes, **options)
    except HostKeyRevoked as exc:
        raise ProbeExit(EXIT_HOST_KEY, f"{where}{exc}") from None
    except HostKeyUnknown as exc:
        more = " adding" if args.accept_new_host_key else " with"
        hint = (
            ""
            if exc.expected
            else f"; if it is right, run again{more} --accept-new-host-key {exc.fingerprint}"
        )
        raise ProbeExit(EXIT_HOST_KEY, f"{where}{exc}{hint}") from None
    except HostKeyChanged as exc:
        raise ProbeExit(
            EXIT_HOST_KEY,
            f"{where}{exc} (the host was reinstalled, or someone is in the middle; if you "
            "know it was reinstalled, remove its old line from the known-hosts file)",
        ) from None
    except AuthenticationFailed as exc:
        raise ProbeExit(EXIT_AUTH, f"{where}{exc}") from None
    except Unreachable as exc:
        raise ProbeExit(EXIT_UNREACHABLE, f"{where}{exc}") from None
    except TransportError as exc:
        raise ProbeExit(EXIT_ERROR, f"{where}{exc}") from None
    return transport, text.strip()


def _print_notes(notes: list[str]) -> None:
    """Known-hosts lines skipped, one line each, as OpenSSH would skip them."""
    for note in notes:
        print(f"tuneplan: note: {note}", file=sys.stderr, flush=True)


def _accepted(values: list[bool | str]) -> bool | tuple[str, ...]:
    """--accept-new-host-key as given: True when once without a fingerprint (any new key), else the
    fingerprints (each host of the run must have one of them), else False."""
    if True in values:
        return True
    return tuple(v for v in values if isinstance(v, str)) or False


class Progress:
    """Human progress lines: one per probe start and end, warnings and log events indented."""

    def __init__(self, stream: TextIO) -> None:
        self.out = stream

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def event(self, ev: Any) -> None:
        kind = ev.kind
        if kind == "run_started":
            from core.probes import python_used

            self.say(f"probing {ev.host}: {', '.join(ev.probes)} (run {ev.run_id})")
            if ev.facts is not None:
                self.say(f"      {python_used(ev.facts)}")
        elif kind == "probe_started":
            eta = f", about {ev.eta_s:.0f} s" if ev.eta_s else ""
            self.say(f"[{ev.index}/{ev.total}] {ev.name}{eta}")
        elif kind == "probe_finished":
            outcome = ev.outcome
            took = max(0.0, outcome.ended - outcome.started)
            detail = f": {outcome.error}" if outcome.error else ""
            self.say(f"      {outcome.name} {outcome.status.value} ({took:.1f} s){detail}")
            for warning in outcome.warnings:
                self.say(f"        - {warning}")
        elif kind == "log" and ev.level != "info":
            self.say(f"      ! {ev.message}")


def render_scorecard(doc: dict[str, Any]) -> str:
    card = doc.get("scorecard")
    lines = [f"run {doc['run_id']} on {doc['host']}: {doc['status']}"]
    if not card:
        lines.append("no scorecard (the run has no evidence)")
        return "\n".join(lines)
    if not card["checks"]:
        lines.append(card["summary"])  # "No verdict: …" and why
        return "\n".join(lines)
    # the summary opens with the verdict, or says there is none
    lines += [f"verdict: {card['summary']}" if card["verdict"] else card["summary"], ""]
    rows = [
        [c["status"], c["area"], c["name"], c["measured"], c["expected"]] for c in card["checks"]
    ]
    lines.append(
        table(rows, ["status", "area", "check", "measured", "expected"], align="text", max_cell=48)
    )
    reasons = [
        f"  {c['name']}: {c['reason']}" for c in card["checks"] if c["status"] in ("FAIL", "WARN")
    ]
    if reasons:
        lines += ["", "why:", *reasons]
    partial = (doc.get("evidence") or {}).get("partial") or {}
    if partial:
        lines += [
            "",
            "partial (these stopped before their end, by a dropped connection or a cut sweep; "
            "their figures above are what came before, and a cut sweep is not graded):",
            *(f"  {name}: {what}" for name, what in partial.items()),
        ]
    return "\n".join(lines)


@contextlib.contextmanager
def sigint_cancels(cancel: threading.Event, say: Callable[[str], None]) -> Iterator[None]:
    """First Ctrl-C cancels the run cleanly (remote processes killed, work directory removed); a
    second one interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        say(
            "cancelling: stopping remote processes and removing the work directory (Ctrl-C again "
            "to quit now)"
        )

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def mark_stale(store: ProbeStore, progress: Progress) -> None:
    """Runs left ``running`` by a dead client become ``interrupted`` (core.probes.history.leases),
    said on one line."""
    from core.probes import mark_stale_runs

    try:
        stale = mark_stale_runs(store)
    except Exception as exc:  # by design: a history that cannot be tidied must not stop a new run
        progress.say(f"tuneplan: could not check the history for interrupted runs: {exc}")
        return
    if stale:
        ids = ", ".join(str(i) for i in stale)
        progress.say(
            f"run{'s' if len(stale) > 1 else ''} {ids} stopped without an end (the tuneplan "
            f"running {'them' if len(stale) > 1 else 'it'} was killed): marked interrupted, "
            "samples kept"
        )


def load_explained(store: ProbeStore, run_id: int) -> StoredRun:
    """A stored run whose scorecard, when it graded nothing, says what became of its probes."""
    from core.probes import explain_no_verdict

    run = store.load_run(run_id)
    if run.scorecard is None:
        return run
    return dataclasses.replace(
        run, scorecard=explain_no_verdict(run.scorecard, run.outcomes, run.summary.status)
    )
