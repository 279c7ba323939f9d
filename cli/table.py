"""The one plain-text table writer of the command line: `tuneplan plan`, `tuneplan catalog` and the
probe scorecard.

Two layouts, because the tables hold two kinds of columns. ``figures`` (plan, catalog): the first
column is a name and every other column a figure, right-aligned so that amounts line up at their
units; rows are printed as padded, blanks included. ``text`` (the scorecard): every column is words,
left-aligned, trailing blanks dropped, and long cells can be cut to ``max_cell`` characters so that
one verbose cell does not widen the whole table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Align = Literal["figures", "text"]


def table(
    rows: Sequence[Sequence[str]],
    header: Sequence[str] | None = None,
    *,
    align: Align = "figures",
    max_cell: int | None = None,
) -> str:
    """Rows (and an optional header, underlined with dashes) as aligned text, columns two spaces
    apart."""
    allrows = [list(header)] + [list(r) for r in rows] if header else [list(r) for r in rows]
    if max_cell is not None:
        allrows = [
            [c if len(c) <= max_cell else c[: max_cell - 1] + "…" for c in row] for row in allrows
        ]
    widths = [max(len(r[i]) for r in allrows) for i in range(len(allrows[0]))]
    if align == "text":
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in allrows
        ]
    else:
        lines = [
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
            for r in allrows
        ]
    if header:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
