"""Options for the whole suite: ``--regen-golden`` rewrites tests/golden/expected/ instead of comparing with it
(on purpose only; review the diff like code). The ``pytester`` fixture is on, for tests of the test checks."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regen-golden", action="store_true", help="rewrite tests/golden/expected/ from the code")


@pytest.fixture
def regen(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--regen-golden"))
