"""The tree keeps its shape: docs/architecture.md names what is there, and no module grows past 600 lines.

docs/architecture.md is the map a new engineer reads first; a module added without a line there makes the map
wrong in silence. Folders of one module per tool or per probe (parsers/, checks/, the window's places) are
described as a group, so only their folder must appear; the modules of the domain packages and the shared
utilities must each be named.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAP = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
MAX_LINES = 600
DATA_TABLES: set[str] = set()  # modules allowed past MAX_LINES, each named in docs/architecture.md
NAMED_ONE_BY_ONE = ["core", "core/catalog", "core/planner", "core/probes", "core/probes/transport",
                    "core/probes/scorecard", "core/cli", "gui"]


def modules(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).glob("*.py") if p.name not in ("__init__.py", "__main__.py"))


def packages() -> list[Path]:
    return sorted(p.parent for top in ("core", "gui") for p in (ROOT / top).rglob("__init__.py"))


@pytest.mark.parametrize("folder", NAMED_ONE_BY_ONE)
def test_the_map_names_every_module_of_the_domain_packages(folder: str) -> None:
    missing = [p.name for p in modules(folder) if not re.search(rf"(?<![\w/]){re.escape(p.name)}", MAP)]
    assert not missing, f"docs/architecture.md does not name {', '.join(missing)} of {folder}/"


def test_the_map_names_every_package() -> None:
    missing = [str(p.relative_to(ROOT)) for p in packages() if f"{p.name}/" not in MAP]
    assert not missing, f"docs/architecture.md does not name the packages {', '.join(missing)}"


def test_no_module_is_over_600_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for top in ("core", "gui") for p in (ROOT / top).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert set(long) <= DATA_TABLES, f"modules over {MAX_LINES} lines: {long}"


def test_the_check_sees_a_missing_module() -> None:
    """The name search must not match a name that is only part of a longer one (store.py in probe_store.py)."""
    assert not re.search(rf"(?<![\w/]){re.escape('store.py')}", "the old probe_store.py and plan_store.py")
    assert re.search(rf"(?<![\w/]){re.escape('store.py')}", "    store.py   the plan library")
