"""A rank that stops between two sizes of the all_reduce sweep, for tests/integration/test_cluster_probe.py.

Python imports ``sitecustomize`` at start-up from any folder on PYTHONPATH; the test puts this folder there on one
node only (its sshd's session environment), with TUNEPLAN_TEST_CUT_AT (bytes) and TUNEPLAN_TEST_CUT_MARKER (a
file). Once ``torch.distributed`` is imported, its ``all_reduce`` is wrapped: the first call on a tensor of at
least TUNEPLAN_TEST_CUT_AT bytes writes the marker file and blocks (or, with TUNEPLAN_TEST_CUT_EXIT set, ends the
rank with exit status 3), so the sweep has measured every smaller size and none from that one on, whatever the
timing; the test then drops the node. Elsewhere this file does nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

CUT_AT = os.environ.get("TUNEPLAN_TEST_CUT_AT")
MARKER = os.environ.get("TUNEPLAN_TEST_CUT_MARKER")
EXIT = bool(os.environ.get("TUNEPLAN_TEST_CUT_EXIT"))


def _wrap(module: ModuleType) -> None:
    real = module.all_reduce
    limit = int(CUT_AT or 0)

    def all_reduce(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if tensor.numel() * tensor.element_size() >= limit:
            Path(MARKER or os.devnull).write_text(f"{os.getpid()}\n")
            if EXIT:
                os._exit(3)
            while True:  # the rank stops here; the test drops the node and the run must end what is left
                time.sleep(1)
        return real(tensor, *args, **kwargs)

    module.all_reduce = all_reduce  # type: ignore[attr-defined]


class _WrapDistributed(importlib.abc.MetaPathFinder):
    """Finds ``torch.distributed`` through the other finders and wraps its ``all_reduce`` once it is loaded."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch.distributed":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None:
            return spec
        load = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            _wrap(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if CUT_AT and MARKER:
    sys.meta_path.insert(0, _WrapDistributed())
