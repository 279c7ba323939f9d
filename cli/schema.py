"""`tuneplan schema`: the plan request's JSON Schema, generated from the pydantic models
(core.planner.request).

docs/request.schema.json is this output, kept in the repository so that an editor can validate and
complete a request file that names it in its "$schema" key; tests/cli/test_cli_conventions.py checks
that the two agree.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from cli.common import add_command

DIALECT = "https://json-schema.org/draft/2020-12/schema"  # what pydantic generates


def request_schema() -> dict[str, Any]:
    """The schema of what `tuneplan plan REQUEST.json` reads (validation mode: '200M' is a token
    count too)."""
    from core.planner import PlanRequest

    schema = PlanRequest.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": DIALECT, **schema, "title": "tuneplan plan request"}


def schema_text() -> str:
    """The schema as docs/request.schema.json holds it: two-space indents and a final newline."""
    return json.dumps(request_schema(), indent=2, ensure_ascii=False) + "\n"


def register(subparsers: Any) -> None:
    """Add the `schema` subcommand (called by cli.main)."""
    p = add_command(
        subparsers,
        "schema",
        help="print the plan request's JSON Schema (docs/request.schema.json)",
        examples=(
            "tuneplan schema > request.schema.json",
            "tuneplan schema | jq '.properties | keys'   # the request's sections",
        ),
    )
    p.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    del args  # no options: the schema is one
    print(schema_text(), end="")
    return 0
