"""tuneplan core: the planner and the probes over one catalog, with a command line on top. Pure Python; never
imports Qt (docs/architecture.md is the map).
"""

# The one place the version is written: pyproject reads it (tool.setuptools.dynamic), `tuneplan --version` prints it.
__version__ = "0.1.0"
