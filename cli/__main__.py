"""`python -m cli ARGS`: the command line without the window (what `tuneplan ARGS` runs)."""

from cli.main import process_main

if __name__ == "__main__":  # not when a tool walks the package
    raise SystemExit(process_main())
