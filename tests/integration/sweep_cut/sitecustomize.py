"""A rank that stops between two sizes of the all_reduce sweep, for the cluster and probe fault
tests.

Python imports ``sitecustomize`` at start-up from any folder on PYTHONPATH; a test puts this folder
there through an sshd's session environment, with TUNEPLAN_TEST_CUT_AT (bytes) and
TUNEPLAN_TEST_CUT_MARKER (a file). Once ``torch.distributed`` is imported, its ``all_reduce`` is
wrapped: the first call on a tensor of at least TUNEPLAN_TEST_CUT_AT bytes writes the marker file
and blocks (the test then drops the node), or, with TUNEPLAN_TEST_CUT_EXIT set, ends the rank with
exit status 3 two seconds later (time for the rank that prints the rows to print the last one). The
sweep has then measured every smaller size and none from that one on. Without those variables this
file does nothing.
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
                # the rank that prints the rows is told the last size's result as this one is
                time.sleep(2)
                os._exit(3)
            # the rank stops here; the test drops the node and the run must end what is left
            while True:
                time.sleep(1)
        return real(tensor, *args, **kwargs)

    module.all_reduce = all_reduce  # type: ignore[attr-defined]


class _WrapDistributed(importlib.abc.MetaPathFinder):
    """Finds ``torch.distributed`` through the other finders and wraps its ``all_reduce`` once it is
    loaded."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
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
