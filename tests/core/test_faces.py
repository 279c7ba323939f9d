"""Each domain's face (its package __init__) gives every name it lists, lazily where the domain is
heavy.

The window and the command line import the planner, the catalog, launch files and the library only
through these faces (an import contract in pyproject.toml), so a name listed and not delivered, a
name shadowed by a submodule of the same name, or a face that loads its whole domain on import would
each break them or their measured start-up.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
FACES = ("core.planner", "core.catalog", "core.launch", "core.library")
LAZY = ("core.planner", "core.library")


@pytest.mark.parametrize("face", FACES)
def test_every_listed_name_is_delivered_and_none_is_a_module(face: str) -> None:
    module = importlib.import_module(face)
    names = module.__all__
    assert len(names) == len(set(names)), face
    for name in names:
        value = getattr(module, name)
        assert not isinstance(value, ModuleType), f"{face}.{name} is a module"
        # A submodule of the same name would replace the name with the module once something imports
        # it.
        assert importlib.util.find_spec(f"{face}.{name}") is None, (
            f"{face}.{name} is also a submodule"
        )


def test_an_unlisted_name_is_an_attribute_error() -> None:
    planner = importlib.import_module("core.planner")
    with pytest.raises(AttributeError, match="no attribute 'resolve_model'"):
        _ = planner.resolve_model


def test_the_faces_name_the_objects_of_their_modules() -> None:
    from core.catalog.refresh import SOURCES, refresh
    from core.library.store import PlanStore
    from core.planner.analysis import analyse
    from core.planner.plan import plan
    from core.planner.request import PlanRequest

    planner, catalog, library = (
        importlib.import_module(f) for f in ("core.planner", "core.catalog", "core.library")
    )
    assert (
        planner.make_plan is plan
        and planner.analyse is analyse
        and planner.PlanRequest is PlanRequest
    )
    assert catalog.refresh_prices is refresh and catalog.REFRESH_SOURCES is SOURCES
    assert library.PlanStore is PlanStore


def test_the_lazy_faces_load_no_module_of_their_domain_until_a_name_is_read() -> None:
    child = (
        "import json, sys\n"
        f"faces = {LAZY!r}\n"
        "for f in faces: __import__(f)\n"
        "before = sorted(m for m in sys.modules if m.startswith(tuple(f + '.' for f in faces)))\n"
        "from core.planner import PlanRequest\n"
        "after = sorted(m for m in sys.modules if m.startswith(tuple(f + '.' for f in faces)))\n"
        "print(json.dumps([before, after]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", child],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    before, after = json.loads(out)
    assert before == []
    # The request model brings its own modules (the choices, the field validators), never the
    # analysis or report.
    assert "core.planner.request" in after
    assert not {"core.planner.analysis", "core.planner.report", "core.planner.plan"} & set(after)
