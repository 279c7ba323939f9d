"""Host profiles → connection targets: user@host:port, ~/.ssh/config aliases, the profile's key and port."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.probes.store import HostProfile
from gui.probe.connection import ConnectSpec, connect_spec, resolve_target
from gui.probe.hosts import profile_error


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text("Host gpu1\n  HostName 10.1.2.3\n  User ubuntu\n  Port 2200\n  IdentityFile ~/.ssh/lambda\n")
    return path


def test_alias_resolves_through_the_ssh_config(ssh_config):
    target = resolve_target(ConnectSpec(label="gpu1", target="gpu1"), ssh_config)
    assert (target.host, target.port, target.user, target.alias) == ("10.1.2.3", 2200, "ubuntu", "gpu1")
    assert target.identity_files[0].endswith("/.ssh/lambda")


def test_profile_key_comes_first_and_profile_port_applies_when_the_target_has_none(ssh_config):
    spec = ConnectSpec(label="gpu1", target="gpu1", port=2222, identity_file="/keys/id_ed25519")
    target = resolve_target(spec, ssh_config)
    assert target.port == 2222
    assert target.identity_files[0] == "/keys/id_ed25519" and target.identity_files[1].endswith("/.ssh/lambda")
    typed = resolve_target(ConnectSpec(label="x", target="root@10.0.0.9:2022", port=2222), ssh_config)
    assert (typed.user, typed.host, typed.port) == ("root", "10.0.0.9", 2022)  # the typed port wins


def test_profile_user_is_added_to_a_bare_target():
    spec = connect_spec(HostProfile(name="box", target="10.0.0.5", user="ubuntu", port=2200))
    assert (spec.target, spec.port, spec.local) == ("ubuntu@10.0.0.5", 2200, False)
    assert connect_spec(HostProfile(name="This machine", target="local", local=True)).local


def test_malformed_target_is_one_sentence(ssh_config):
    with pytest.raises(ValueError, match=r"port '70000' in target 'me@host:70000' is not a whole number"):
        resolve_target(ConnectSpec(label="x", target="me@host:70000"), ssh_config)


def test_profile_form_errors():
    assert profile_error("", "host", False, set()) == "name is empty; give the host a label, e.g. 'lambda-8xh100'"
    assert profile_error("a", "host", False, {"a"}) == "name 'a' is already used by another saved host or cluster"
    error = profile_error("a", "us er@host", False, set())
    assert error is not None and error.startswith("target: user name 'us er'")
    assert profile_error("a", "ubuntu@10.0.0.5:22", False, set()) is None
    assert profile_error("This machine", "", True, set()) is None
