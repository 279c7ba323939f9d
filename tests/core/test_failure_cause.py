"""A probe step that fails names its cause, not the rule a library printed after it: the line
``short_error`` picks is the one the card, the CLI and the PDF show (each quotes the step's
ProbeFailed sentence)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.probes.checks.base import ProbeFailed, require_ok, short_error, telling_line
from core.probes.transport.base import CommandResult

# A real torch on a host Python without numpy (numpy hidden from the import system), and a rule of
# '=' printed at exit after the traceback, as a wrapper's banner does: the issue's 'Numpy is not
# available' shown as '====='.
NO_NUMPY = """
import atexit, sys
sys.modules["numpy"] = None
atexit.register(lambda: print("=" * 60, file=sys.stderr))
import torch
torch.zeros(2).numpy()
"""


def test_the_cause_of_a_real_failure_is_its_exception_not_the_rule_after_it() -> None:
    run = subprocess.run(
        [sys.executable, "-c", NO_NUMPY], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1 and run.stderr.rstrip().endswith("=" * 60)
    result = CommandResult(
        command="step", exit_code=1, stdout="", stderr=run.stderr, duration_s=1.0
    )
    assert short_error(result) == "RuntimeError: Numpy is not available"
    with pytest.raises(ProbeFailed) as caught:
        require_ok(result, "the step benchmark")
    assert str(caught.value) == "the step benchmark failed: RuntimeError: Numpy is not available"


def test_without_an_exception_the_last_worded_line_is_the_cause() -> None:
    assert (
        telling_line("fio: engine libaio not loadable\n----------\n^^^^\n")
        == "fio: engine libaio not loadable"
    )
    assert telling_line("=====\n-----\n") is None


@given(st.lists(st.text(alphabet="=-^*~#+ ", min_size=1, max_size=40), max_size=5))
def test_a_rule_is_never_the_cause(rules: list[str]) -> None:
    text = "Traceback (most recent call last):\nOSError: disk full\n" + "\n".join(rules)
    assert telling_line(text) == "OSError: disk full"
