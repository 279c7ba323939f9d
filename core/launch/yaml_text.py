"""A small YAML writer for the launch files: block mappings and lists, JSON-quoted strings.

The project does not depend on PyYAML at run time for four small files. Every scalar is written as JSON
(``"text"``, ``3``, ``true``, ``null``), which YAML 1.2 reads identically (JSON is a subset of YAML), floats
in the form YAML 1.1 also reads (``2.0e-05``, see `_float`); strings
that hold newlines become literal blocks (``|``) so a SkyPilot ``run`` script stays readable.
"""

from __future__ import annotations

import json
import re
from typing import Any


def _float(value: float) -> str:
    """A float both YAML 1.2 and PyYAML's YAML 1.1 resolver read as a float.

    YAML 1.1 (what PyYAML, OmegaConf and so torchtune and axolotl load with) takes ``2e-05`` for a string: its
    float needs a dot and a signed exponent (``2.0e-05``), https://yaml.org/type/float.html.
    """
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        if exponent[0] not in "+-":
            exponent = "+" + exponent
        text = f"{mantissa}e{exponent}"
    return text


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


# Words YAML 1.1 resolves to booleans or null (https://yaml.org/type/bool.html, /null.html): quoted as keys.
_SPECIAL = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _key(key: str) -> str:
    """A mapping key: plain when it is a name YAML reads back as that string, else JSON-quoted."""
    return key if _PLAIN_KEY.fullmatch(key) and key.lower() not in _SPECIAL else json.dumps(key, ensure_ascii=False)


def _block(text: str, indent: int) -> list[str]:
    pad = " " * indent
    return ["|"] + [f"{pad}{line}" if line else "" for line in text.rstrip("\n").split("\n")]


def _lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            k = _key(str(key))
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
