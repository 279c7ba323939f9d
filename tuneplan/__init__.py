"""`python -m tuneplan`: the same as the `tuneplan` command (the window, or the command line with arguments).

The code lives in core (no Qt) and gui; this package only gives the module the name people type.
"""

from core import __version__

__all__ = ["__version__"]
