"""A small YAML writer for the launch files: block mappings and lists, JSON-quoted strings.

The project does not depend on PyYAML at run time for four small files. Every scalar is written as JSON
(``"text"``, ``3``, ``true``, ``null``), which YAML 1.2 reads identically (JSON is a subset of YAML); strings
that hold newlines become literal blocks (``|``) so a SkyPilot ``run`` script stays readable.
"""

from __future__ import annotations

import json
from typing import Any


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def _block(text: str, indent: int) -> list[str]:
    pad = " " * indent
    return ["|"] + [f"{pad}{line}" if line else "" for line in text.rstrip("\n").split("\n")]


def _lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            k = _scalar(key) if not str(key).replace("_", "").replace("-", "").isalnum() else str(key)
            if (isinstance(item, dict) and item) or (isinstance(item, list) and item):
                out.append(f"{pad}{k}:")
                out += _lines(item, indent + 2)
            elif isinstance(item, str) and "\n" in item:
                block = _block(item, indent + 2)
                out.append(f"{pad}{k}: {block[0]}")
                out += block[1:]
            else:
                out.append(f"{pad}{k}: {_empty(item) if isinstance(item, dict | list) else _scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                inner = _lines(item, indent + 2)
                out.append(f"{pad}- {inner[0].lstrip()}")
                out += inner[1:]
            else:
                out.append(f"{pad}- {_scalar(item)}")
    else:
        out.append(f"{pad}{_scalar(value)}")
    return out


def _empty(value: dict[Any, Any] | list[Any]) -> str:
    return "{}" if isinstance(value, dict) else "[]"


def dump(data: dict[str, Any], header: list[str]) -> str:
    """The document: ``# header`` comment lines, then the mapping."""
    comments = [f"# {line}" if line else "#" for line in header]
    return "\n".join([*comments, *_lines(data, 0)]) + "\n"
