"""The tree keeps its shape: docs/architecture.md names what is there, and no module grows past 600
lines.

docs/architecture.md is the map a new engineer reads first; a module added without a line there, or
a line left behind by a module that moved, makes the map wrong in silence. The map's tree is read as
a tree: a folder line (``catalog/``) opens that folder for the lines indented under it, and every
``name.py`` on an entry (or on the lines that continue it in the description column) is a module of
the folder it stands in. Every module of core/, gui/, cli/ and tuneplan/ must be named in its own
folder, and every module the map names there must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
MAX_LINES = 600
DATA_TABLES: set[str] = set()  # modules allowed past MAX_LINES, each named in docs/architecture.md
# where an entry's description starts: a line indented this far continues the entry above
DESCRIPTION_COLUMN = 27
CHECKED = ("core", "gui", "cli", "tuneplan")
_MODULE = re.compile(r"(?<![\w/.*])(\w+\.py)\b")


def tree_block(text: str) -> list[str]:
    """The first fenced block of the map: the tree."""
    return text.split("```", 2)[1].splitlines()[1:]


def named_modules(lines: list[str]) -> set[str]:
    """Each module the tree names, as a path from the repository root
    (``core/catalog/records.py``)."""
    named: set[str] = set()
    folders: list[str] = []  # the open folder at each depth
    here = ""
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent < DESCRIPTION_COLUMN:
            depth, first = indent // 2, line.split()[0]
            folders = folders[:depth]
            if first.endswith("/"):
                folders.append(first.rstrip("/"))
                here = "/".join(folders)
            else:
                here = "/".join(folders)
        named.update(f"{here}/{name}" for name in _MODULE.findall(line))
    return named


def modules_on_disk() -> set[str]:
    return {
        str(p.relative_to(ROOT))
        for top in CHECKED
        for p in (ROOT / top).rglob("*.py")
        if p.name != "__init__.py"
    }


def test_the_map_names_every_module_in_its_own_folder() -> None:
    missing = sorted(modules_on_disk() - named_modules(tree_block(MAP)))
    assert not missing, (
        f"docs/architecture.md does not name {', '.join(missing)} (each in its own folder)"
    )


def test_every_module_the_map_names_exists() -> None:
    ghosts = sorted(
        m
        for m in named_modules(tree_block(MAP))
        if m.startswith(CHECKED) and not (ROOT / m).is_file()
    )
    assert not ghosts, f"docs/architecture.md names {', '.join(ghosts)}, which do not exist"


def test_the_map_names_every_package() -> None:
    packages = sorted(p.parent for top in CHECKED for p in (ROOT / top).rglob("__init__.py"))
    missing = [str(p.relative_to(ROOT)) for p in packages if f"{p.name}/" not in MAP]
    assert not missing, f"docs/architecture.md does not name the packages {', '.join(missing)}"


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for top in CHECKED
        for p in (ROOT / top).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert set(long) <= DATA_TABLES, f"modules over {MAX_LINES} lines: {long}"


SAMPLE = """\
core/                      the core
  units.py paths.py        utilities
  catalog/                 the catalog: feeds/ (skypilot.py)
    records.py             records; see resources/probes/step.py and page_*.py
  probes/                  probes
    transport/             base.py, ssh.py (paramiko),
                           target.py
    store.py               the history
gui/                       the window
  app.py                   start-up
"""


def test_the_reading_puts_each_name_in_its_folder() -> None:
    """The parser itself, on a small map whose answer is written out by hand."""
    assert named_modules(SAMPLE.splitlines()) == {
        "core/units.py",
        "core/paths.py",
        "core/catalog/skypilot.py",
        "core/catalog/records.py",
        "core/probes/transport/base.py",
        "core/probes/transport/ssh.py",
        "core/probes/transport/target.py",
        "core/probes/store.py",
        "gui/app.py",
    }


def test_a_name_counts_only_whole() -> None:
    """A name inside a longer one (store.py in probe_store.py) or a path (resources/x.py) is not a
    module named."""
    assert _MODULE.findall("    store.py   the plan library; probe_store.py") == [
        "store.py",
        "probe_store.py",
    ]
    assert _MODULE.findall("sent to resources/probes/step.py, one page_*.py a step") == []
