"""Host profiles → connection targets: user@host:port, ~/.ssh/config aliases, the profile's key and
port, put together by the one recipe the command line uses too
(core.probes.transport.connect.resolve)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.probes.history.records import HostProfile
from core.probes.transport.connect import HostOverrides, resolve
from gui.probe.connection import connect_spec
from gui.probe.hosts import profile_error


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(
        "Host gpu1\n  HostName 10.1.2.3\n  User ubuntu\n  Port 2200\n  IdentityFile ~/.ssh/lambda\n"
    )
    return path


def test_alias_resolves_through_the_ssh_config(ssh_config):
    target = resolve("gpu1", HostOverrides(), ssh_config)
    assert (target.host, target.port, target.user, target.alias) == (
        "10.1.2.3",
        2200,
        "ubuntu",
        "gpu1",
    )
    assert target.identity_files[0].endswith("/.ssh/lambda")


def test_profile_key_comes_first_and_profile_port_wins_over_the_config(ssh_config):
    target = resolve(
        "gpu1", HostOverrides(port=2222, identity_files=("/keys/id_ed25519",)), ssh_config
    )
    assert target.port == 2222
    assert target.identity_files[0] == "/keys/id_ed25519" and target.identity_files[1].endswith(
        "/.ssh/lambda"
    )
    typed = resolve("root@10.0.0.9:2022", HostOverrides(port=2022), ssh_config)
    # the same port twice agrees
    assert (typed.user, typed.host, typed.port) == ("root", "10.0.0.9", 2022)


def test_a_port_or_user_given_twice_that_disagree_is_one_sentence_not_one_dropped(ssh_config):
    with pytest.raises(
        ValueError,
        match=r"^target 'root@10.0.0.9:2022' names port 2022 and port 2222 is also "
        r"given; give the port once$",
    ):
        resolve("root@10.0.0.9:2022", HostOverrides(port=2222), ssh_config)
    with pytest.raises(
        ValueError,
        match=r"^target 'root@10.0.0.9' names user 'root' and user 'ubuntu' is also "
        r"given; give the user once$",
    ):
        resolve("root@10.0.0.9", HostOverrides(user="ubuntu"), ssh_config)


def test_profile_user_is_given_beside_a_bare_target_never_pasted_into_it(ssh_config):
    spec = connect_spec(HostProfile(name="box", target="10.0.0.5", user="ubuntu", port=2200))
    assert (spec.target, spec.overrides, spec.local) == (
        "10.0.0.5",
        HostOverrides(user="ubuntu", port=2200),
        False,
    )
    assert connect_spec(HostProfile(name="This machine", target="local", local=True)).local
    target = resolve("10.0.0.5", spec.overrides, ssh_config)
    assert (target.user, target.host, target.port) == ("ubuntu", "10.0.0.5", 2200)


def test_malformed_target_is_one_sentence(ssh_config):
    with pytest.raises(
        ValueError, match=r"port '70000' in target 'me@host:70000' is not a whole number"
    ):
        resolve("me@host:70000", HostOverrides(), ssh_config)


def test_profile_form_errors():
    assert (
        profile_error("", "host", False, set())
        == "name is empty; give the host a label, e.g. 'lambda-8xh100'"
    )
    assert (
        profile_error("a", "host", False, {"a"})
        == "name 'a' is already used by another saved host or cluster"
    )
    error = profile_error("a", "us er@host", False, set())
    assert error is not None and error.startswith("target: user name 'us er'")
    assert profile_error("a", "ubuntu@10.0.0.5:22", False, set()) is None
    assert profile_error("This machine", "", True, set()) is None
