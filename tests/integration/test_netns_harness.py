"""The multi-node harness itself (tests/integration/netns.py): the nodes reach each other, and its
teardown leaves no namespace, interface or process behind.

Reachability is checked from inside a node with a real TCP connection to another node's sshd (the
SSH banner read back), and with the app's own SSH transport from this namespace; what is left
afterwards is read from ``ip netns list``, ``ip link`` and /proc, not from the harness's own
bookkeeping.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

try:
    from tests.integration.netns import (
        NetnsCluster,
        NetnsUnavailable,
        find_missing_privileges,
        link_names,
        netns_names,
        netns_pids,
    )
    from tests.integration.sshd import unavailable
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from netns import (  # type: ignore[no-redef]
        NetnsCluster,
        NetnsUnavailable,
        find_missing_privileges,
        link_names,
        netns_names,
        netns_pids,
    )
    from sshd import unavailable  # type: ignore[no-redef]

pytestmark = pytest.mark.integration

BANNER = """
import socket, sys
with socket.create_connection((sys.argv[1], 22), timeout=5) as sock:
    print(sock.recv(64).decode().strip())
"""


def banner_from(namespace: str, address: str) -> str:
    """What a TCP connect from inside ``namespace`` to ``address``:22 reads first (an sshd says
    SSH-2.0-...)."""
    out = subprocess.run(
        ["ip", "netns", "exec", namespace, sys.executable, "-c", BANNER, address],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return out.stdout.strip() or out.stderr.strip()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_nodes_reach_each_other_and_teardown_leaves_nothing(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path
) -> None:
    cluster = netns_cluster_factory(3)
    first, second, third = cluster.nodes
    assert len(set(cluster.addresses)) == 3
    assert banner_from(first.name, second.address).startswith("SSH-2.0-OpenSSH")
    assert banner_from(third.name, first.address).startswith("SSH-2.0-OpenSSH")
    # By name too, as torchrun's rendezvous and gloo look nodes up: each node's /etc/hosts names
    # them all.
    assert banner_from(second.name, third.name).startswith("SSH-2.0-OpenSSH")
    # The sshd runs in its namespace: nothing listens on that address in this one, only the bridge
    # routes it.
    assert first.sshd.pid in netns_pids(first.name)
    assert first.sshd.pid not in netns_pids(second.name)

    # The app's transport reaches every node with the one client key and the known-hosts file of the
    # harness, and each node has its own host name and its own TMPDIR.
    for node in cluster.nodes:
        transport = SshTransport(
            SshTarget(
                host=node.address,
                port=22,
                user=node.sshd.user,
                identity_files=[str(cluster.client_key_path)],
                identities_only=True,
            ),
            known_hosts_file=cluster.known_hosts_path,
            user_known_hosts_file=tmp_path / "absent",
            allow_agent=False,
            look_for_keys=False,
            connect_timeout=5,
        )
        try:
            transport.connect()
            result = transport.run(
                'hostname; echo "$TMPDIR"; cat /proc/self/net/dev | grep -c ":"', timeout=30
            )
        finally:
            transport.close()
        hostname, tmpdir, interfaces = result.stdout.split()
        assert (hostname, tmpdir) == (node.name, str(node.tmpdir))
        assert interfaces == "2"  # lo and the node's veth: the session runs in the namespace

    sshd_pids = [n.sshd.pid for n in cluster.nodes]
    made_links = {cluster.bridge, *(n.host_veth for n in cluster.nodes)}
    made_namespaces = {n.name for n in cluster.nodes}
    etc_folders = [Path("/etc/netns") / n.name for n in cluster.nodes]
    assert all(folder.is_dir() for folder in etc_folders)
    assert made_links <= link_names() and made_namespaces <= netns_names()
    assert cluster.teardown() == []
    assert not made_links & link_names()
    assert not made_namespaces & netns_names()
    assert not [pid for pid in sshd_pids if alive(pid)]
    assert not [folder for folder in etc_folders if folder.exists()]
    assert cluster.teardown() == []  # twice is harmless


def test_teardown_kills_what_a_session_left_running_in_a_namespace(
    netns_cluster_factory: Callable[[int], NetnsCluster],
) -> None:
    cluster = netns_cluster_factory(2)
    node = cluster.nodes[1]
    # A process of its own session that outlives the sshd (setsid, as the app's remote process
    # groups do).
    stray = subprocess.Popen(
        ["ip", "netns", "exec", node.name, "sleep", "300"], start_new_session=True
    )
    try:
        assert in_namespace(node.name, stray.pid)
        assert cluster.teardown() == []
        assert stray.wait(timeout=10) == -9
    finally:
        if stray.poll() is None:
            stray.kill()


def in_namespace(namespace: str, pid: int) -> bool:
    """Whether ``pid`` shows up in ``ip netns pids`` within 5 s (ip netns exec has switched by
    then)."""
    end = time.monotonic() + 5
    while time.monotonic() < end:
        if pid in netns_pids(namespace):
            return True
        time.sleep(0.05)
    return False


def test_a_start_that_fails_midway_removes_what_it_made_and_nothing_else(tmp_path: Path) -> None:
    missing = find_missing_privileges()
    if missing:
        unavailable(missing)
    cluster = NetnsCluster(workdir=tmp_path / "nodes", count=3)
    taken = f"{cluster.tag}n2"  # someone else's namespace holds the second node's name
    subprocess.run(["ip", "netns", "add", taken], check=True, timeout=30)
    try:
        with pytest.raises(NetnsUnavailable, match=taken):
            cluster.start()
        assert cluster.teardown() == []
        assert not {f"{cluster.tag}n1", f"{cluster.tag}n3"} & netns_names()
        assert not {cluster.bridge, f"{cluster.tag}n1h", f"{cluster.tag}n2h"} & link_names()
        assert taken in netns_names()  # not ours: left alone
    finally:
        subprocess.run(["ip", "netns", "delete", taken], check=False, timeout=30)
