"""The `tuneplan` command line: everything the window shows, computable headless.

Errors are one sentence on stderr with a non-zero exit code; `--json` prints only JSON on stdout.
Each command lives in its own module (plan, catalog, report, probe, probe-report) and adds itself to
the parser with its ``register``; this module only builds the parser and turns errors into exit
codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from cli import catalog, desktop_entry, launch, library, plan, probe, probe_report, report, schema
from cli.common import EXIT_ERROR, EXIT_USAGE, CliError
from core import __version__
from core.validation import one_sentence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuneplan",
        description=(
            "Plan what an LLM fine-tune needs and costs; probe a rented GPU box. Without "
            "arguments, opens the window."
        ),
        epilog="examples:\n  tuneplan plan --model llama-3.1-8b --tokens 200M --method qlora\n"
        "  tuneplan probe ubuntu@203.0.113.7\n  tuneplan plan --help   # each command's own "
        "options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"tuneplan {__version__}",
        help="print the version and exit",
    )
    desktop_entry.add_argument(parser)
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    for command in (plan, catalog, report, probe, probe_report, launch, library, schema):
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.install_desktop_entry:
        args.func = desktop_entry.cmd_install
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except (CliError, ValueError) as exc:  # catalog and planner errors are written as sentences
        # one line, whatever it echoes
        print(f"tuneplan: {one_sentence(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `tuneplan catalog gpus | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def process_main(argv: Sequence[str] | None = None) -> int:
    """`main` as a new process's whole life (`tuneplan ARGS`, `python -m cli ARGS`), which may set
    what only a process's start can: no command but the probe does more than small element-wise
    NumPy work, so NumPy's BLAS need not start a thread per core (threads that spin at start-up and
    take the CPU from the command: about 100 ms of CPU of every `tuneplan plan` on a 2-core machine,
    docs/performance.md). The probe keeps every core for the benchmarks it runs in child processes;
    a user's own OPENBLAS_NUM_THREADS is kept."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "probe" not in args:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return main(args)


if __name__ == "__main__":
    # Run the importable module, not __main__, so that sys.modules holds one cli.main.
    from cli.main import process_main

    raise SystemExit(process_main())
