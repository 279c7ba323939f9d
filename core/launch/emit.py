"""The one quoting layer between a plan and the text of a launch file: comments, YAML documents,
JSON.

A launch file is run or loaded by someone else's program, so no string from the user (a plan's name,
a model's ``_name_or_path``, a folder name) may leave the place it was put in. Each kind of position
has one rule here and nowhere else:

- **Comments** (``#`` in shell and YAML, lines of a Markdown note): every character that any of the
  consumers reads as the end of a line is replaced by a space. Bash ends a comment at ``\\n`` only,
  but YAML also breaks lines at ``\\r``, NEL (U+0085) and the Unicode line and paragraph separators
  (U+2028/2029, YAML 1.1 §5.4), so a name holding one of them would end the comment and become a
  key. Other control and format characters (NUL, ESC, bidirectional overrides) are replaced too:
  PyYAML refuses a stream holding them, and they make a file show one thing and say another.
- **YAML values**: PyYAML's ``safe_dump``, a real emitter that quotes whatever needs quoting (a path
  that starts with a space, holds a newline or looks like a number), with multi-line scripts as
  literal blocks (``|``) only where the emitter says a literal block can hold them exactly.
- **JSON**: ``json.dumps``.
- **Shell code**: no user text at all; the formats put only tuneplan's own words and slugs
  (``plan_view.slug``) in code positions, and ``shlex.quote`` the rest.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import yaml


def _breaks(ch: str) -> bool:
    """A character some consumer ends a line at, or one that should not be in a text file at all."""
    if ch == "\t":
        return False
    if len(f"a{ch}b".splitlines()) > 1:  # \n \r \v \f \x1c-\x1e \x85 \u2028 \u2029
        return True
    category = unicodedata.category(ch)
    # Cc controls, Cf format characters (bidi overrides, BOM), Cs lone surrogates (not encodable as
    # UTF-8), Cn unassigned code points (U+FFFE, U+FFFF are among them: PyYAML refuses those).
    return category in ("Cc", "Cf", "Cs", "Cn")


def one_line(text: str) -> str:
    """`text` with every line break of any kind and every control or format character replaced by a
    space."""
    return "".join(" " if _breaks(ch) else ch for ch in str(text))


def comment_lines(lines: list[str], marker: str = "#") -> list[str]:
    """Each line as one comment line (``# text``; an empty line is the bare marker)."""
    out = []
    for line in lines:
        text = one_line(line).rstrip()
        out.append(f"{marker} {text}" if text else marker)
    return out


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as literal blocks where the emitter allows it."""


# Line breaks YAML reads but folds or normalises inside plain, single-quoted and literal scalars (a
# NEL in a plain scalar comes back as a space, a CR in a literal block as LF): a string holding one
# is written double-quoted, the one style whose escapes (\r, \N, \L, \P) carry them exactly.
_FOLDED = frozenset("\r\x85\u2028\u2029")


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # style "|" is a request: the emitter checks (analyze_scalar -> allow_block) that a literal
    # block can carry the string exactly and falls back to a quoted scalar when it cannot (leading
    # spaces, trailing blanks, special characters).
    style: str | None = None
    if any(ch in _FOLDED for ch in value):
        style = '"'
    elif "\n" in value:
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def yaml_document(data: dict[str, Any], header: list[str]) -> str:
    """``# header`` comment lines, then the mapping as PyYAML's safe emitter writes it (keys in
    order)."""
    body = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
    return "\n".join([*comment_lines(header), body.rstrip("\n")]) + "\n"


def json_document(data: dict[str, Any]) -> str:
    """The JSON text of a config (no NaN or infinity: strict JSON, as DeepSpeed's loader
    expects)."""
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def yaml_documents(documents: list[dict[str, Any]], header: list[str]) -> str:
    """Several mappings as one YAML stream (``---`` between them, as ``kubectl apply -f`` reads a
    file of manifests), under one comment header; each document written as `yaml_document` writes
    one."""
    bodies = [yaml_document(doc, []).rstrip("\n") for doc in documents]
    return "\n".join([*comment_lines(header), "\n---\n".join(bodies)]) + "\n"
