"""tuneplan core: the planner and the probes over one catalog, with a command line on top. Pure
Python; never imports Qt (docs/architecture.md is the map).

Each domain (planner, catalog, launch, library, probes) has one front door, its package's
``__init__``, and the window and the command line import a domain only through it. The heavy ones
are lazy (PEP 562): a face names each public name's module in a table, and the module is imported
the first time the name is read; the name is read from its module on every use, so a name replaced
there (a test's stand-in) is replaced for every caller. `tuneplan plan` and the window's start-up
are measured (bench/bench_cli.py, tests/gui/test_start_up.py), and a face that imported its whole
domain would load the report builder, NumPy or SQLite for a caller that wanted one request model.
``lazy_names`` lives here, not in a module of its own, because every caller has already loaded this
package: the faces add no module to start-up.

No public name may equal a submodule's name (``plan`` beside ``core/planner/plan.py``): importing
the submodule binds the module under that name in the package and would hide the function
(tests/core/test_faces.py checks it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

# The one place the version is written: pyproject reads it (tool.setuptools.dynamic), `tuneplan
# --version` prints it.
__version__ = "0.1.0"


def lazy_names(package: str, table: Mapping[str, str | tuple[str, str]]) -> Callable[[str], Any]:
    """The ``__getattr__`` of `package`'s face: `table` maps each public name to its module (or to
    the module and the name it has there), imported when the name is first read."""

    def __getattr__(name: str) -> Any:
        entry = table.get(name)
        if entry is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = (entry, name) if isinstance(entry, str) else entry
        return getattr(importlib.import_module(module), attr)

    return __getattr__
