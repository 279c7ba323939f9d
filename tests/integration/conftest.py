"""Fixtures for integration tests that need a real SSH server (transport and probe-runner tests
share them).

Fixtures:
  sshd                  a fresh sshd on 127.0.0.1 (`SshdServer`: host, port, user, client_key_path,
                        host_key_fingerprint, host_public_key, restart_with_new_host_key(),
                        kill_connections())
  sshd_factory          start more servers: ``sshd_factory()`` → SshdServer (all stopped at
  teardown) ssh_known_hosts       path of an empty app known-hosts file for the test
  ssh_trusted_known_hosts  the same file with the sshd host key already in it (written from the .pub
  file) ssh_target            SshTarget for `sshd` using the test client key only make_ssh_transport
  factory: ``make_ssh_transport(**overrides)`` → unconnected SshTransport
                        (closed at teardown)
  ssh_transport         a connected SshTransport to `sshd` whose host key is trusted
  drop_ssh_connections  callable that kills the server side of every live connection (a "network
  drop") need_fio              skip (fail under CI) a test whose fio is missing (need_torch:
  tests/conftest.py) netns_cluster_factory ``make(count)`` → a started `NetnsCluster`
  (tests/integration/netns.py): ``count``
                        network namespaces on a bridge, an sshd in each; removed at teardown, which
                        fails the test when anything it made is left

When sshd or ssh-keygen is missing the tests are skipped with the reason, except under CI=true where
they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.probes.transport.hostkeys import known_hosts_name
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

try:
    from tests.integration.netns import NetnsCluster, NetnsUnavailable
    from tests.integration.sshd import SshdServer, SshdUnavailable, find_missing_tools, unavailable
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from netns import NetnsCluster, NetnsUnavailable  # type: ignore[no-redef]
    from sshd import SshdServer, SshdUnavailable, find_missing_tools, unavailable  # type: ignore[no-redef]


@pytest.fixture
def need_fio() -> None:
    if shutil.which("fio") is None:
        unavailable("fio is not installed (apt-get install fio)")


def require_sshd() -> None:
    """Skip (or fail under CI=true) when the OpenSSH server tools are missing."""
    missing = find_missing_tools()
    if missing:
        unavailable(missing)


def clear_stale_pyenv_lock() -> None:
    """WORKAROUND for login shells whose ~/.bashrc runs `pyenv init`: pyenv rehashes under a lock
    file, and a test that drops a session mid-rehash leaves the lock behind; every later command
    then prints "pyenv: cannot rehash" on stderr. Remove the lock only when no rehash is running
    (see sshd.py)."""
    lock = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "shims" / ".pyenv-shim"
    if not lock.exists():
        return
    running = subprocess.run(
        ["pgrep", "-f", "pyenv-rehash"], capture_output=True, text=True, check=False
    )
    if not running.stdout.strip():
        lock.unlink(missing_ok=True)


@pytest.fixture
def sshd_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., SshdServer]]:
    servers: list[SshdServer] = []

    def start(**kwargs: Any) -> SshdServer:
        require_sshd()
        clear_stale_pyenv_lock()
        server = SshdServer(workdir=tmp_path_factory.mktemp("sshd"), **kwargs)
        servers.append(server)
        try:
            return server.start()
        except SshdUnavailable as exc:
            unavailable(str(exc))
            raise

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def sshd(sshd_factory: Callable[..., SshdServer]) -> SshdServer:
    return sshd_factory()


@pytest.fixture
def ssh_known_hosts(tmp_path: Path) -> Path:
    return tmp_path / "app" / "known_hosts"


@pytest.fixture
def ssh_trusted_known_hosts(sshd: SshdServer, ssh_known_hosts: Path) -> Path:
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    ssh_known_hosts.parent.mkdir(parents=True, exist_ok=True)
    ssh_known_hosts.write_text(f"{known_hosts_name(sshd.host, sshd.port)} {key_type} {key_b64}\n")
    return ssh_known_hosts


@pytest.fixture
def ssh_target(sshd: SshdServer) -> SshTarget:
    return SshTarget(
        host=sshd.host,
        port=sshd.port,
        user=sshd.user,
        identity_files=[str(sshd.client_key_path)],
        identities_only=True,
    )


@pytest.fixture
def make_ssh_transport(
    ssh_target: SshTarget, ssh_known_hosts: Path, tmp_path: Path
) -> Iterator[Callable[..., SshTransport]]:
    made: list[SshTransport] = []

    def make(**overrides: Any) -> SshTransport:
        options: dict[str, Any] = {
            "known_hosts_file": ssh_known_hosts,
            "user_known_hosts_file": tmp_path / "user_known_hosts_absent",
            "allow_agent": False,
            "look_for_keys": False,
            "connect_timeout": 5,
        }
        target = overrides.pop("target", ssh_target)
        options.update(overrides)
        transport = SshTransport(target, **options)
        made.append(transport)
        return transport

    yield make
    for transport in made:
        transport.close()


@pytest.fixture
def ssh_transport(
    make_ssh_transport: Callable[..., SshTransport], ssh_trusted_known_hosts: Path
) -> SshTransport:
    transport = make_ssh_transport(known_hosts_file=ssh_trusted_known_hosts)
    transport.connect()
    return transport


@pytest.fixture
def drop_ssh_connections(sshd: SshdServer) -> Callable[..., int]:
    return sshd.kill_connections


@pytest.fixture
def netns_cluster_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[int], NetnsCluster]]:
    made: list[NetnsCluster] = []

    def make(count: int) -> NetnsCluster:
        clear_stale_pyenv_lock()
        cluster = NetnsCluster(workdir=tmp_path_factory.mktemp("netns"), count=count)
        made.append(cluster)  # before start(): a start that fails midway is torn down too
        try:
            return cluster.start()
        except NetnsUnavailable as exc:
            unavailable(str(exc))
            raise

    yield make
    problems = [problem for cluster in made for problem in cluster.teardown()]
    assert not problems, "; ".join(problems)
