"""The CLI and the window accept the same values: what a person types in a field of the window and
the same text after the matching `tuneplan plan` flag are judged by one path (PlanRequest), so both
accept it, and then plan the same request, or both refuse it. Generated text, as people mistype
numbers (tests/cli/test_cli_flags.py has the examples)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.common import CliError
from cli.main import build_parser
from cli.plan_request import QUICK_FIELDS, build_request
from gui.wizard.state import PlanState
from gui.workers import InlineExecutor

# The flags whose value the window takes in a text field, the field the window writes (the CLI's
# QUICK_FIELDS).
TYPED = ["tokens", "epochs", "seq_len", "lora_rank", "gpus", "nodes"]
NUMBERISH = st.text(alphabet="0123456789.eE+-_, kKMBGTnaif", min_size=1, max_size=9).filter(
    str.strip
)
VALUES = st.one_of(
    NUMBERISH,
    st.sampled_from(
        [
            "0",
            "-1",
            "1",
            "2048",
            "16",
            "15",
            "8",
            "64",
            "65",
            "nan",
            "inf",
            "1e3",
            "2.5",
            "1,000",
            "1_000",
            " 4096 ",
            "2k",
            "1001",
        ]
    ),
)
BASE: dict[str, Any] = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8"},
    "hardware": {"gpu": "H100-SXM"},
}


def cli_request(dest: str, text: str) -> dict[str, Any] | None:
    """The request `tuneplan plan --model llama-3.1-8b --tokens 2e8 --gpu H100-SXM --FLAG=TEXT`
    plans, or None when it refuses the value."""
    args = ["plan", "--model", "llama-3.1-8b", "--gpu", "H100-SXM"]
    args += [f"--{dest.replace('_', '-')}={text}"] + (
        [] if dest == "tokens" else ["--tokens", "2e8"]
    )
    try:
        return build_request(build_parser().parse_args(args)).model_dump(mode="json")
    except CliError:
        return None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(dest=st.sampled_from(TYPED), text=VALUES)
def test_the_cli_and_the_window_accept_and_refuse_the_same_values(
    qapp, dest: str, text: str
) -> None:
    # judged at once; the plan itself is not waited for
    state = PlanState(InlineExecutor(), debounce_ms=10**7)
    try:
        state.load(BASE)
        state.set(QUICK_FIELDS[dest], text)
        window = None if state.errors else state.request
        cli = cli_request(dest, text)
        assert (cli is None) == (window is None), (dest, text, state.errors)
        if window is not None:
            assert cli == window.model_dump(mode="json")
    finally:
        state.stop()
        state.deleteLater()
