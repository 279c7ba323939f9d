"""The command line's modules share cli/common.py and cli/probe_common.py, never each other's
private names.

A `_name` is its module's own business, free to change; a command that reaches into another
command's module for one (as `_connect`, `_Exit` and `_Progress` once were) ties the two together
where no reader looks. Every import between cli modules is read from the source, function-level
imports included.
"""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "cli"


def private_imports(source: str) -> list[str]:
    """Each `module.name` a source imports from a cli module whose name starts with an
    underscore."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "cli":
            found += [
                f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_")
            ]
    return found


def test_no_cli_module_imports_another_ones_private_name() -> None:
    modules = sorted(CLI.glob("*.py"))
    assert len(modules) >= 15, "the command line's modules were not found"
    crossings = {
        p.name: names for p in modules if (names := private_imports(p.read_text(encoding="utf-8")))
    }
    assert not crossings, f"cli modules import private names of other cli modules: {crossings}"


def test_the_reading_finds_a_private_import_at_any_depth() -> None:
    """The reader itself, on sources written by hand: a function-level import counts, a public one
    does not."""
    source = (
        "from cli.common import CliError\n\ndef f():\n    from cli.probe import _connect, render\n"
    )
    assert private_imports(source) == ["cli.probe._connect"]
    assert private_imports("from core.units import _scale\nfrom cli import table\n") == []
