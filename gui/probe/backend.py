"""The core calls the pane makes to run a suite, behind two injectable callables.

Tests and the screenshot script pass their own (a replay of recorded events); the app uses the real
runner. The runner is imported when first used, so the window opens even where it is not installed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from core.probes.store import ProbeStore
from core.probes.transport.base import Transport
from gui.probe.suite_picker import SuiteChoice

# The plan "Apply to plan" starts from when the window gives none: DESIGN §3.1's example without hardware, so
# the probed box's GPUs become the plan's hardware.
DEFAULT_PLAN = {"model": {"preset": "llama-3.1-8b"}, "data": {"tokens": 2.0e8, "epochs": 1, "seq_len": 4096},
                "training": {"method": "lora", "lora_rank": 16}}

RunSuite = Callable[[Transport, Any, ProbeStore, threading.Event, str], Iterator[Any]]
MakeOptions = Callable[[SuiteChoice], Any]


def make_options(choice: SuiteChoice) -> Any:
    """The runner's RunOptions for a suite picked in the pane."""
    from core.probes.options import RunOptions

    suite: str | list[str] = choice.suite if isinstance(choice.suite, str) else list(choice.suite)
    return RunOptions(suite=suite, data_path=choice.data_path, checkpoint_path=choice.checkpoint_path,
                      burn_seconds=choice.burn_seconds)


def run_suite(transport: Transport, options: Any, store: ProbeStore, cancel: threading.Event,
              host_label: str) -> Iterator[Any]:
    """`core.probes.runner.run_suite`: yields RunEvents until RunFinished."""
    from core.probes.runner import run_suite as real

    return real(transport, options, store, cancel, host_label)
