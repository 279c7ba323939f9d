"""Options for the whole suite: ``--regen-golden`` rewrites tests/golden/expected/ instead of
comparing with it (on purpose only; review the diff like code). The ``pytester`` fixture is on, for
tests of the test checks.

``need_torch`` skips a test whose real part is torch (the step probe's script, the collectives,
torchrun) where torch is not installed, as the README says of a plain install, and fails it under
CI=true, where packaging/test.sh installs torch: a missing torch there is a broken install, not a
skip."""

from __future__ import annotations

import importlib.util
import os

import pytest

pytest_plugins = ["pytester"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-golden", action="store_true", help="rewrite tests/golden/expected/ from the code"
    )


@pytest.fixture
def regen(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--regen-golden"))


@pytest.fixture
def need_torch() -> None:
    """torch for the step probe, the collective and distributed probes (packaging/test.sh installs
    torch==2.13.0)."""
    if importlib.util.find_spec("torch") is None:
        reason = (
            "torch is not installed in this environment (packaging/test.sh installs torch==2.13.0)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"cannot run under CI: {reason}")
        pytest.skip(reason)
