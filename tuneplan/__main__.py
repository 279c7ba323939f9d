"""`python -m tuneplan ARGS` runs what the `tuneplan` entry point runs (tuneplan.launch.main)."""

from tuneplan.launch import main

if __name__ == "__main__":  # not when a tool walks the package
    raise SystemExit(main())
