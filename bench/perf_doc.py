"""docs/performance.md: one `## ` section per area, each rewritten by its own benchmark."""

from __future__ import annotations

from pathlib import Path

PREAMBLE = (
    "# Performance\n\n"
    "Measured figures against the budgets in DESIGN §7, one `## ` section per area. Each section is\n"
    "written by its benchmark under `bench/`; rerun the benchmark rather than editing its section by hand.\n"
)


def write_section(path: Path, title: str, section: str) -> None:
    """Replace the section headed `title` (e.g. '## Planner') in `path`, or add it; other sections stay as they are."""
    text = path.read_text(encoding="utf-8") if path.exists() else PREAMBLE
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == title), None)
    if start is None:
        body = text.rstrip("\n") + "\n\n" + section
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        after = "".join(lines[end:])
        body = "".join(lines[:start]) + section + ("\n" + after if after else "")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
