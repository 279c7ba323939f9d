"""The frozen app's entry point: the same `tuneplan` command the wheel installs
(tuneplan.launch.main).

PyInstaller needs a script, not a console-scripts entry; this is that script and nothing else.
"""

import sys

from tuneplan.launch import main

if __name__ == "__main__":
    sys.exit(main())
