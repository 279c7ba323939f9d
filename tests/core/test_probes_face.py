"""The probing domain's face (core/probes/__init__.py): lazy, complete, and over rooms that import
no circle.

The window and the command line import probe things only from ``core.probes`` (lint-imports checks
that); these tests check what the face promises them: importing it costs nothing until a name is
used (``tuneplan plan`` and the window's start-up must not load SSH, SQLite or a probe module), each
name is the one its module defines, and no two modules inside core/probes import each other, at
module level or inside a function.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import core.probes as face

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT / "core" / "probes"


def test_importing_the_face_loads_no_probe_module() -> None:
    code = (
        "import sys\nimport core.probes\n"
        "print(sorted(m for m in sys.modules if m.startswith(('core.probes.', 'paramiko', "
        "'sqlite_utils'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_name_loads_its_module_on_first_use() -> None:
    code = (
        "import sys\nfrom core.probes import HostOverrides\n"
        "print('core.probes.transport.connect' in sys.modules, 'core.probes.history.store' in "
        "sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("name", face.__all__)
def test_each_public_name_is_the_one_its_module_defines(name: str) -> None:
    module, attribute = face._WHERE[name]
    assert getattr(face, name) is getattr(importlib.import_module(module), attribute)


def test_the_face_lists_what_it_serves() -> None:
    assert sorted(face.__all__) == sorted(face._WHERE)
    with pytest.raises(AttributeError, match="no_such_name"):
        face.no_such_name  # noqa: B018


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each probes module -> the probes modules it imports anywhere in its text (the package's own
    face aside)."""

    def owner(name: str) -> str | None:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in modules and name != "core.probes" else None

    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names]
                targets = [owner(n) if n in modules else owner(node.module) for n in names]
            elif isinstance(node, ast.Import):
                targets = [owner(a.name) for a in node.names]
            else:
                continue
            edges[module].update(t for t in targets if t is not None and t != module)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_inside_probes() -> None:
    modules = {_module_name(p): p for p in PROBES.rglob("*.py")}
    assert _circles(_imports(modules)) == []


def test_the_circle_finder_finds_a_circle() -> None:
    """The finder itself, on a graph whose answer is written out by hand."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
