"""The application: `tuneplan` and `python -m tuneplan` (launch.py: the window, or the command line
with arguments).

The code lives in core (no Qt), gui (the window) and cli (the command line); this package decides
which one runs.
"""

from core import __version__

__all__ = ["__version__"]
