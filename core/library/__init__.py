"""The plan library: saved plans on disk (SQLite), not planning.

This is the domain's front door: the window and the command line import the library from here only
(an import contract in pyproject.toml). It is lazy (core/__init__.py) because the window shows
before SQLite and the store load (tests/gui/test_start_up.py): `store.py` keeps the plans,
`provenance.py` says where each setting came from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import lazy_names

if TYPE_CHECKING:
    from core.library.provenance import SOURCE_WORDS, Source, flatten, settings_in_effect
    from core.library.store import (
        PlanRecord,
        PlanStore,
        StoreError,
        library_is_empty,
        request_to_dict,
    )

_TABLE: dict[str, str | tuple[str, str]] = {
    **dict.fromkeys(
        ("SOURCE_WORDS", "Source", "flatten", "settings_in_effect"), "core.library.provenance"
    ),
    **dict.fromkeys(
        ("PlanRecord", "PlanStore", "StoreError", "library_is_empty", "request_to_dict"),
        "core.library.store",
    ),
}

__all__ = [
    "SOURCE_WORDS",
    "PlanRecord",
    "PlanStore",
    "Source",
    "StoreError",
    "flatten",
    "library_is_empty",
    "request_to_dict",
    "settings_in_effect",
]
__getattr__ = lazy_names(__name__, _TABLE)
