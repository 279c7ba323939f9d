"""Several "hosts" on this machine for the cluster tests: a network namespace per node, a real sshd
in each.

A cluster probe needs nodes that reach each other over a network, each with its own address and its
own SSH server. Network namespaces give exactly that without virtual machines: a bridge in this (the
root) namespace holds ``.1`` of a private /24 (so the test process reaches every node), each node is
a namespace joined to the bridge by a veth pair, with loopback up and its own address (``.2``,
``.3``, ...), and an OpenSSH ``sshd`` (tests/integration/sshd.py) runs inside it on port 22, in a
UTS namespace with the node's own host name. Each node resolves every node's name as a cluster's
/etc/hosts would (``/etc/netns/NS/hosts``, which ``ip netns exec`` mounts over /etc/hosts):
torchrun's c10d rendezvous and gloo look up the host name. The namespaces share this machine's file
system, so the venv's python with torch is there on every node; each node's sessions get a TMPDIR of
their own, so a node's work directories can be told apart and checked.

Every name starts with a tag unique to the test (``tp<pid><letter>``); teardown removes exactly what
was made: the sshd processes by their PIDs, every process still in a namespace it made (``ip netns
pids``), then its veths, bridge and namespaces by name, and their /etc/netns folders. It is safe
after a failure midway and safe to call twice.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.probes.transport.hostkeys import known_hosts_name

try:
    from tests.integration.sshd import SshdServer, SshdUnavailable, find_missing_tools, keygen
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from sshd import SshdServer, SshdUnavailable, find_missing_tools, keygen  # type: ignore[no-redef]

IP = "/usr/sbin/ip"
ETC_NETNS = Path("/etc/netns")  # ip netns exec bind-mounts /etc/netns/NS/* over /etc/*
SSH_PORT = 22
SUBNET_BASE = "10.77"  # 10.77.X.0/24: X is the first one no interface on this machine uses
_tags = itertools.count()


class NetnsUnavailable(RuntimeError):
    """Namespaces cannot be made here (not root, no ``ip``, no sshd); the message says which."""


def find_missing_privileges() -> str | None:
    """A sentence naming why network namespaces with sshd cannot be made here, or None when they
    can."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add), and this test runs as an ordinary user"
    if shutil.which("ip") is None and not os.path.exists(IP):
        return "the ip command is not installed (apt-get install iproute2)"
    if shutil.which("unshare") is None:
        return "unshare is not installed (apt-get install util-linux)"
    return find_missing_tools()


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([IP, *args], capture_output=True, text=True, timeout=30, check=False)
    if check and result.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


def netns_names() -> set[str]:
    """The network namespaces this machine has now (``ip netns list``)."""
    return {
        line.split()[0]
        for line in _ip("netns", "list", check=False).stdout.splitlines()
        if line.strip()
    }


def link_names() -> set[str]:
    """The interfaces of the root namespace (``ip -o link``), without the ``@peer`` suffix."""
    out = _ip("-o", "link", "show", check=False).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def netns_pids(namespace: str) -> list[int]:
    """Every process whose network namespace is ``namespace``."""
    out = _ip("netns", "pids", namespace, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.77.X.0/24 no address or route of this machine is in (another test may hold one at the
    same time)."""
    taken = (
        _ip("-o", "-4", "addr", "show", check=False).stdout
        + _ip("-4", "route", "show", check=False).stdout
    )
    start = os.getpid() % 250
    for offset in range(250):
        third = (start + offset) % 250 + 1
        if f"{SUBNET_BASE}.{third}." not in taken:
            return ipaddress.IPv4Network(f"{SUBNET_BASE}.{third}.0/24")
    raise NetnsUnavailable(f"every {SUBNET_BASE}.X.0/24 is in use on this machine")


@dataclass
class Node:
    """One namespace with its address, its veth pair and its sshd."""

    name: str  # the namespace, also the node's host name and the namespace side of its veth
    address: str
    host_veth: str
    sshd: SshdServer

    @property
    def tmpdir(self) -> Path:
        """The TMPDIR of this node's SSH sessions: where its ``tuneplan.*`` work directories are
        made."""
        return self.sshd.workdir / "tmp"

    def work_dirs(self) -> list[str]:
        """The ``tuneplan*`` entries in this node's TMPDIR (none once a run is over)."""
        return sorted(p.name for p in self.tmpdir.iterdir() if p.name.startswith("tuneplan"))

    def pids(self) -> list[int]:
        """Every process in this node's namespace (its sshd included while it runs)."""
        return netns_pids(self.name)

    def commands(self) -> list[str]:
        """The command lines of the processes in this namespace other than sshd: what a run left
        behind."""
        out = []
        for pid in self.pids():
            with contextlib.suppress(OSError):
                line = (
                    Path(f"/proc/{pid}/cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")
                )
                if not line.startswith(("sshd", "/usr/sbin/sshd")):
                    out.append(f"{pid} {line.strip()}")
        return out

    def restart_sshd_with(self, **env: str) -> None:
        """Restart this node's sshd with ``env`` added to every session's environment (host key,
        port and authorised keys kept): a setting only this node's commands see."""
        self.sshd.stop()
        self.sshd.session_env.update(env)
        self.sshd.start()

    def freeze(self) -> list[int]:
        """SIGSTOP every process of this node's SSH sessions (a node that hangs); returns them."""
        frozen = self.sshd.session_pids()
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        return frozen


@dataclass
class NetnsCluster:
    """``count`` nodes joined by a bridge; `start()` makes them, `teardown()` removes what was
    made."""

    workdir: Path
    count: int
    tag: str = field(default_factory=lambda: f"tp{os.getpid()}{chr(97 + next(_tags) % 26)}")
    nodes: list[Node] = field(default_factory=list)
    subnet: ipaddress.IPv4Network | None = None
    _namespaces: list[str] = field(default_factory=list)
    _links: list[str] = field(default_factory=list)
    _made_etc_netns: bool = False

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def client_key_path(self) -> Path:
        """One private key every node's sshd accepts."""
        return self.workdir / "client_key"

    @property
    def known_hosts_path(self) -> Path:
        """The app's known-hosts file with every node's host key (``address`` on port 22)."""
        return self.workdir / "known_hosts"

    @property
    def addresses(self) -> list[str]:
        return [n.address for n in self.nodes]

    def start(self) -> NetnsCluster:
        """Make the bridge, the namespaces and veths, and start every sshd; `NetnsUnavailable` when
        it cannot."""
        missing = find_missing_privileges()
        if missing:
            raise NetnsUnavailable(missing)
        self.workdir.mkdir(parents=True, exist_ok=True)
        keygen(self.client_key_path)
        self.subnet = _free_subnet()
        hosts = list(self.subnet.hosts())
        _ip("link", "add", self.bridge, "type", "bridge")
        # recorded once made: a name someone else holds is never ours to delete
        self._links.append(self.bridge)
        _ip("addr", "add", f"{hosts[0]}/{self.subnet.prefixlen}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index in range(1, self.count + 1):
            self.nodes.append(self._make_node(f"{self.tag}n{index}", str(hosts[index])))
        etc_hosts = "127.0.0.1 localhost\n" + "".join(f"{n.address} {n.name}\n" for n in self.nodes)
        for node in self.nodes:
            (ETC_NETNS / node.name / "hosts").write_text(etc_hosts)
        known = []
        for node in self.nodes:
            self._start_sshd(node)
            key_type, key_b64 = node.sshd.host_public_key.split()[:2]
            known.append(f"{known_hosts_name(node.address, SSH_PORT)} {key_type} {key_b64}\n")
        self.known_hosts_path.write_text("".join(known))
        return self

    def _make_node(self, name: str, address: str) -> Node:
        host_side = f"{name}h"
        _ip("netns", "add", name)
        self._namespaces.append(name)
        if not ETC_NETNS.exists():
            ETC_NETNS.mkdir(mode=0o755)
            self._made_etc_netns = True
        (ETC_NETNS / name).mkdir(exist_ok=True)
        _ip("link", "add", host_side, "type", "veth", "peer", "name", name)
        self._links.append(host_side)
        _ip("link", "set", name, "netns", name)
        _ip("link", "set", host_side, "master", self.bridge, "up")
        assert self.subnet is not None
        _ip("-n", name, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", name)
        _ip("-n", name, "link", "set", name, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        node_dir = self.workdir / name
        sshd = SshdServer(
            workdir=node_dir,
            host=address,
            port=SSH_PORT,
            netns=name,
            hostname=name,
            session_env={"TMPDIR": str(node_dir / "tmp")},
        )
        return Node(name=name, address=address, host_veth=host_side, sshd=sshd)

    def _start_sshd(self, node: Node) -> None:
        node.tmpdir.mkdir(parents=True, exist_ok=True)
        try:
            node.sshd.start()
        except SshdUnavailable as exc:
            raise NetnsUnavailable(f"sshd in namespace {node.name} did not start: {exc}") from exc
        node.sshd.authorize(self.client_key_path.with_name("client_key.pub"))

    def node(self, name_or_address: str) -> Node:
        return next(n for n in self.nodes if name_or_address in (n.name, n.address))

    def teardown(self) -> list[str]:
        """Remove what `start()` made (also after a failure midway); returns what could not be
        removed."""
        problems: list[str] = []
        for node in self.nodes:
            node.sshd.stop()  # by its PID, with its sessions (SIGKILL ends a frozen process too)
        for name in self._namespaces:
            if not _kill_namespace(name):
                problems.append(f"processes still in namespace {name}: {netns_pids(name)}")
            _ip("netns", "delete", name, check=False)
            shutil.rmtree(ETC_NETNS / name, ignore_errors=True)
        if self._made_etc_netns:
            with contextlib.suppress(OSError):
                ETC_NETNS.rmdir()  # only when no other namespace has a folder there by now
        existing = link_names()
        for link in reversed(self._links):
            if link in existing:
                _ip("link", "delete", link, check=False)
        left_ns = netns_names() & set(self._namespaces)
        left_links = link_names() & set(self._links)
        if left_ns:
            problems.append(f"namespaces left: {sorted(left_ns)}")
        if left_links:
            problems.append(f"interfaces left: {sorted(left_links)}")
        left_etc = [name for name in self._namespaces if (ETC_NETNS / name).exists()]
        if left_etc:
            problems.append(f"folders left in {ETC_NETNS}: {left_etc}")
        self._namespaces.clear()
        self._links.clear()
        self._made_etc_netns = False
        return problems


def _kill_namespace(name: str, within_s: float = 5.0) -> bool:
    """SIGKILL every process in namespace ``name`` (ours: the namespace is) until none is left."""
    deadline = time.monotonic() + within_s
    while True:
        pids = netns_pids(name)
        if not pids:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


__all__ = [
    "NetnsCluster",
    "NetnsUnavailable",
    "Node",
    "find_missing_privileges",
    "link_names",
    "netns_names",
    "netns_pids",
]
