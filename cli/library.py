"""`tuneplan library list | show ID | export ID -o FILE | import FILE | delete ID`: the window's
plan library (core.library.store, the same file) from the command line, so saved plans can be
scripted, versioned and shared.

`show ID --json` prints the plan as it was saved, the shape `tuneplan plan --json` and the window's
Export JSON print; `export` writes its request as the user set it, which `tuneplan plan` plans into
the same figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import CliError, add_command
from cli.table import table

if TYPE_CHECKING:
    from core.library import PlanRecord, PlanStore


def register(subparsers: Any) -> None:
    """Add the `library` subcommand and its actions (called by cli.main)."""
    p = add_command(
        subparsers,
        "library",
        help="list, show, export, import or delete the plans saved in the window",
        examples=(
            "tuneplan library list",
            "tuneplan library show 3",
            "tuneplan library --db team/tuneplan.db list   # another library file",
        ),
    )
    p.add_argument("--db", help="plan library file (default: the window's tuneplan.db)")
    actions = p.add_subparsers(
        dest="action", title="actions (each has --help)", metavar="ACTION", required=True
    )
    listed = actions.add_parser("list", help="the saved plans, most recently changed first")
    listed.add_argument("--json", action="store_true", help="print them as JSON")
    listed.set_defaults(func=cmd_list)
    show = actions.add_parser(
        "show", help="one plan: its settings (set, chosen by the planner, default) and figures"
    )
    show.add_argument("id", type=int, help="plan id (`tuneplan library list`)")
    show.add_argument(
        "--json",
        action="store_true",
        help="print the saved plan JSON only (as `tuneplan plan --json`)",
    )
    show.set_defaults(func=cmd_show)
    export = actions.add_parser(
        "export", help="write a plan's request as set, for `tuneplan plan` or another user"
    )
    export.add_argument("id", type=int, help="plan id (`tuneplan library list`)")
    export.add_argument(
        "-o", "--output", required=True, help="request JSON file to write (- for standard output)"
    )
    export.set_defaults(func=cmd_export)
    imported = actions.add_parser(
        "import", help="plan a request JSON file and save it in the library"
    )
    imported.add_argument("file", help="plan request JSON file (`tuneplan schema` describes it)")
    imported.add_argument("--name", help="the plan's name (default: the file's name)")
    imported.set_defaults(func=cmd_import)
    delete = actions.add_parser("delete", help="delete a plan (export it first to keep a copy)")
    delete.add_argument("id", type=int, help="plan id (`tuneplan library list`)")
    delete.set_defaults(func=cmd_delete)


@contextmanager
def _opened(args: argparse.Namespace) -> Iterator[PlanStore]:
    """The library named by --db or the window's; its faults (full disk, lock, newer schema) as
    CliError."""
    from core.library import PlanStore, StoreError

    try:
        store = PlanStore(Path(args.db).expanduser() if args.db else None)
    except StoreError as exc:
        raise CliError(str(exc)) from None
    if store.notice:  # a damaged file was moved aside: said, as the window says it
        print(f"tuneplan: {store.notice}", file=sys.stderr)
    try:
        yield store
    except StoreError as exc:
        raise CliError(str(exc)) from None
    finally:
        store.close()


def _record(store: PlanStore, plan_id: int) -> PlanRecord:
    try:
        return store.get(plan_id)
    except KeyError:
        raise CliError(
            f"no plan with id {plan_id} in the library {store.path}; `tuneplan library list` shows "
            "the ids"
        ) from None


def _warn(record: PlanRecord) -> None:
    for problem in record.problems:
        print(f"tuneplan: {problem}", file=sys.stderr)


def cmd_list(args: argparse.Namespace) -> int:
    with _opened(args) as store:
        records = store.list()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": r.id,
                        "name": r.name,
                        "model": r.model,
                        "method": r.method,
                        "gpu": r.gpu,
                        "cost_usd": r.cost_usd,
                        "hours": r.hours,
                        "created": r.created,
                        "updated": r.updated,
                    }
                    for r in records
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
    elif records:
        print(
            table(
                [(str(r.id), *r.cells()) for r in records],
                header=("id", "name", "model", "method", "GPU", "cost", "time", "updated"),
                align="text",
            )
        )
    else:
        print(
            "The library holds no plan yet: save one in the window or `tuneplan library import "
            "FILE`."
        )
    return 0


def settings_lines(record: PlanRecord) -> list[str]:
    """'training.sharding  zero3  chosen by the planner' for each setting the user set or the
    planner chose; the defaults are counted, not listed (`show --json` has them all)."""
    from core.library import SOURCE_WORDS, flatten, settings_in_effect

    result = record.result()
    settings = (
        settings_in_effect(record.request, result)
        if result is not None
        else {path: (value, "set") for path, value in flatten(record.request).items()}
    )
    rows = [
        (path, value if isinstance(value, str) else json.dumps(value), SOURCE_WORDS[source])
        for path, (value, source) in settings.items()
        if source != "default"
    ]
    defaults = len(settings) - len(rows)
    return [
        *(
            table(rows, header=("setting", "value", "from"), align="text").splitlines()
            if rows
            else []
        ),
        *([f"(and {defaults} settings at their defaults)"] if defaults else []),
    ]


def cmd_show(args: argparse.Namespace) -> int:
    with _opened(args) as store:
        record = _record(store, args.id)
    _warn(record)
    result = record.result()
    if args.json:
        if result is None:
            raise CliError(
                record.result_problem
                or f"plan “{record.name}” (id {record.id}) has no result: it was "
                "not planned; `tuneplan library export` its request and `tuneplan plan` it"
            )
        print(result.model_dump_json(indent=2))
        return 0
    from cli.plan import render_plan

    print(
        f"Plan {record.id} “{record.name}”, saved {record.created.replace('T', ' ')}, "
        f"changed {record.updated.replace('T', ' ')}"
    )
    print("\n".join(["", *settings_lines(record), ""]))
    print(render_plan(result) if result is not None else "Not planned.")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    with _opened(args) as store:
        record = _record(store, args.id)
    if record.request_problem:
        raise CliError(record.request_problem)
    text = json.dumps(record.request, indent=2, ensure_ascii=False) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    path = Path(args.output).expanduser()
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(f"Exported plan {record.id} “{record.name}” to {path}.")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from core.library import request_to_dict
    from core.planner import PlanError, PlanRequest, RequestFileError, make_plan, read_request_file
    from core.validation import validation_message

    path = Path(args.file).expanduser()
    try:
        request = PlanRequest.model_validate(read_request_file(path))
    except RequestFileError as exc:
        raise CliError(str(exc)) from None
    except ValidationError as exc:
        raise CliError(
            f"{path.name} is not a valid plan request: {validation_message(exc)}"
        ) from None
    try:
        result, problem = make_plan(request), ""
    # kept, as the window keeps it: the request is the user's, planned once it can be
    except PlanError as exc:
        result, problem = None, str(exc)
    name = args.name or path.stem
    with _opened(args) as store:
        plan_id = store.save(name, request_to_dict(request), result)
    print(
        f"Imported {path.name} as plan {plan_id} “{name.strip() or 'untitled plan'}”"
        + (f" (not planned: {problem})" if problem else "")
        + "."
    )
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with _opened(args) as store:
        record = _record(store, args.id)
        store.delete(record.id)
    print(f"Deleted plan {record.id} “{record.name}”.")
    return 0
