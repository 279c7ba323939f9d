"""What an engineer meets on a real box, reproduced with real servers: several new hosts at once, aliases from an
included ``~/.ssh/config`` file, login shells that are slow or talk, and a torch that lives in a virtual env.

Every server is a real OpenSSH sshd (tests/integration/sshd.py), alone on loopback or one per network namespace
(tests/integration/netns.py); the CLI runs as a user runs it, in a process of its own. Expected values come from
the harness (``ssh-keygen -lf`` fingerprints, the namespaces' addresses) and from OpenSSH itself (``ssh -G``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

try:
    from tests.integration.netns import NetnsCluster
    from tests.integration.sshd import SshdServer
except ImportError:  # tests/ is not importable as a package; pytest put this folder on sys.path instead
    from netns import NetnsCluster  # type: ignore[no-redef]
    from sshd import SshdServer  # type: ignore[no-redef]

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, within_s: float = 180.0, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`python -m core.cli ...` in a process of its own, as from a terminal with no SSH agent."""
    proc = subprocess.run([sys.executable, "-m", "core.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=within_s, env={**os.environ, "PYTHONPATH": str(ROOT), "SSH_AUTH_SOCK": "",
                                                 **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr


# -- --accept-new-host-key, once per host ---------------------------------------------------------------------


def new_hosts_cli(cluster: NetnsCluster, tmp_path: Path, *accept: str) -> tuple[int, str, str]:
    """Probe the cluster's nodes as hosts never seen before (an empty known-hosts file)."""
    flags = [arg for fingerprint in accept for arg in ("--accept-new-host-key", fingerprint)]
    return run_cli("probe", *(f"{n.sshd.user}@{n.address}" for n in cluster.nodes), "-i",
                   str(cluster.client_key_path), "--known-hosts", str(tmp_path / "known_hosts"),
                   "--db", str(tmp_path / "probes.db"), "--python", sys.executable, "--suite", "inventory",
                   "--json", *flags)


def test_two_new_hosts_each_accepted_by_its_own_fingerprint(
        netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None) -> None:
    cluster = netns_cluster_factory(2)
    first, second = (n.sshd.host_key_fingerprint for n in cluster.nodes)
    code, _, err = new_hosts_cli(cluster, tmp_path, first, second)
    assert code == 0, err[-3000:]
    remembered = (tmp_path / "known_hosts").read_text()
    assert all(n.address in remembered for n in cluster.nodes)


def test_a_second_new_host_is_told_apart_from_a_wrong_key(
        netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path) -> None:
    """One fingerprint for two new hosts: the second is not known yet, which is not "not the expected" key."""
    cluster = netns_cluster_factory(2)
    first, second = cluster.nodes
    code, _, err = new_hosts_cli(cluster, tmp_path, first.sshd.host_key_fingerprint)
    assert code == 3, err
    assert second.address in err and second.sshd.host_key_fingerprint in err
    assert "not the expected" not in err
    assert f"adding --accept-new-host-key {second.sshd.host_key_fingerprint}" in err


def test_help_says_the_host_key_option_repeats() -> None:
    code, out, _ = run_cli("probe", "--help")
    assert code == 0
    assert "repeatable, one per host" in " ".join(out.split())


# -- ~/.ssh/config as OpenSSH reads it ---------------------------------------------------------------------------


def test_an_alias_from_an_included_config_file_reaches_its_host(sshd: SshdServer, tmp_path: Path) -> None:
    """paramiko's parser ignores ``Include``: the alias used to be taken for a host name and not resolved."""
    home = tmp_path / "home"
    included = home / ".ssh" / "conf.d"
    included.mkdir(parents=True)
    (included / "rented.conf").write_text(
        f"Host gpubox\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key_path}\n  IdentitiesOnly yes\n")
    (home / ".ssh" / "config").write_text(f"Include {included}/*.conf\n")
    code, out, err = run_cli("probe", "gpubox", "--accept-new-host-key", "--known-hosts", str(tmp_path / "kh"),
                             "--db", str(tmp_path / "probes.db"), "--suite", "inventory", "--json",
                             env={"HOME": str(home)})
    assert code == 0, err
    assert json.loads(out)["evidence"]["inventory"]["hostname"] == socket.gethostname()
    assert f"[{sshd.host}]:{sshd.port}" in (tmp_path / "kh").read_text()
