"""What an engineer meets on a real box, reproduced with real servers: several new hosts at once,
aliases from an included ``~/.ssh/config`` file, login shells that are slow or talk, and a torch
that lives in a virtual env.

Every server is a real OpenSSH sshd (tests/integration/sshd.py), alone on loopback or one per
network namespace (tests/integration/netns.py); the CLI runs as a user runs it, in a process of its
own. Expected values come from the harness (``ssh-keygen -lf`` fingerprints, the namespaces'
addresses) and from OpenSSH itself (``ssh -G``).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.probes.history.store import ProbeStore
from core.probes.transport.base import ShellStartTimeout, make_remote_workdir
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

try:
    from tests.integration.netns import NetnsCluster
    from tests.integration.sshd import SshdServer, unavailable
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from netns import NetnsCluster  # type: ignore[no-redef]
    from sshd import SshdServer, unavailable  # type: ignore[no-redef]

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
_accounts = itertools.count()


def run_cli(
    *args: str, within_s: float = 180.0, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """`python -m cli ...` in a process of its own, as from a terminal with no SSH agent."""
    proc = subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=within_s,
        env={**os.environ, "PYTHONPATH": str(ROOT), "SSH_AUTH_SOCK": "", **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr


# -- --accept-new-host-key, once per host
# ---------------------------------------------------------------------


def new_hosts_cli(cluster: NetnsCluster, tmp_path: Path, *accept: str) -> tuple[int, str, str]:
    """Probe the cluster's nodes as hosts never seen before (an empty known-hosts file)."""
    flags = [arg for fingerprint in accept for arg in ("--accept-new-host-key", fingerprint)]
    return run_cli(
        "probe",
        *(f"{n.sshd.user}@{n.address}" for n in cluster.nodes),
        "-i",
        str(cluster.client_key_path),
        "--known-hosts",
        str(tmp_path / "known_hosts"),
        "--db",
        str(tmp_path / "probes.db"),
        "--python",
        sys.executable,
        "--suite",
        "inventory",
        "--json",
        *flags,
    )


def test_two_new_hosts_each_accepted_by_its_own_fingerprint(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    cluster = netns_cluster_factory(2)
    first, second = (n.sshd.host_key_fingerprint for n in cluster.nodes)
    code, _, err = new_hosts_cli(cluster, tmp_path, first, second)
    assert code == 0, err[-3000:]
    remembered = (tmp_path / "known_hosts").read_text()
    assert all(n.address in remembered for n in cluster.nodes)


def test_a_second_new_host_is_told_apart_from_a_wrong_key(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path
) -> None:
    """One fingerprint for two new hosts: the second is not known yet, which is not "not the
    expected" key."""
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


# -- ~/.ssh/config as OpenSSH reads it
# ---------------------------------------------------------------------------


def test_an_alias_from_an_included_config_file_reaches_its_host(
    sshd: SshdServer, tmp_path: Path
) -> None:
    """paramiko's parser ignores ``Include``: the alias used to be taken for a host name and not
    resolved."""
    home = tmp_path / "home"
    included = home / ".ssh" / "conf.d"
    included.mkdir(parents=True)
    (included / "rented.conf").write_text(
        f"Host gpubox\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key_path}\n  IdentitiesOnly yes\n"
    )
    (home / ".ssh" / "config").write_text(f"Include {included}/*.conf\n")
    code, out, err = run_cli(
        "probe",
        "gpubox",
        "--accept-new-host-key",
        "--known-hosts",
        str(tmp_path / "kh"),
        "--db",
        str(tmp_path / "probes.db"),
        "--suite",
        "inventory",
        "--json",
        env={"HOME": str(home)},
    )
    assert code == 0, err
    assert json.loads(out)["evidence"]["inventory"]["hostname"] == socket.gethostname()
    assert f"[{sshd.host}]:{sshd.port}" in (tmp_path / "kh").read_text()


# -- login shells that are slow or talk
# --------------------------------------------------------------------------


@pytest.fixture
def login_user(tmp_path: Path) -> Iterator[Callable[[str], tuple[str, Path]]]:
    """``make(bashrc)`` → (name, home) of a real account whose login shell is bash and whose
    ~/.bashrc is ``bashrc``: sshd runs every command through it, as on a rented box. The account
    shares this user's id (``useradd -o``), so it reads the test's keys and tools, has a home of its
    own and no password (``*``: not locked, so sshd lets its key in); removed at teardown."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        unavailable("a login account needs root and useradd (apt-get install passwd)")
    made: list[str] = []

    def make(bashrc: str) -> tuple[str, Path]:
        name = f"tp{os.getpid() % 100000}u{next(_accounts)}"
        home = tmp_path / f"home-{name}"
        home.mkdir()
        (home / ".bashrc").write_text(bashrc)
        subprocess.run(
            [
                "useradd",
                "-o",
                "-u",
                str(os.getuid()),
                "-g",
                str(os.getgid()),
                "-M",
                "-d",
                str(home),
                "-s",
                "/bin/bash",
                "-p",
                "*",
                name,
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        made.append(name)
        return name, home

    yield make
    for name in made:
        # -f: the account shares this user's id, whose processes (this test's) would otherwise keep
        # it
        subprocess.run(["userdel", "-f", name], check=False, capture_output=True, timeout=30)


def user_transport(server: SshdServer, tmp_path: Path) -> SshTransport:
    transport = SshTransport(
        SshTarget(
            host=server.host,
            port=server.port,
            user=server.user,
            identity_files=[str(server.client_key_path)],
            identities_only=True,
        ),
        known_hosts_file=tmp_path / "known_hosts",
        user_known_hosts_file=tmp_path / "absent",
        allow_agent=False,
        look_for_keys=False,
        connect_timeout=10,
        accept_new_host_key=True,
    )
    transport.connect()
    return transport


NOISY_BASHRC = "printf 'Welcome to your GPU box'\nprintf 'conda: base activated\\n' >&2\n"


def test_a_talking_bashrc_does_not_reach_a_command_s_output(
    sshd_factory: Callable[..., SshdServer],
    login_user: Callable[[str], tuple[str, Path]],
    tmp_path: Path,
) -> None:
    """~/.bashrc prints a banner without a newline on stdout and a line on stderr before every
    command: the banner used to hide the process-group marker (the command's output came back with
    the wrapper's marker and the banner in it) and the stderr line joined the command's own."""
    name, _ = login_user(NOISY_BASHRC)
    server = sshd_factory(user=name)
    transport = user_transport(server, tmp_path)
    try:
        result = transport.run("echo out; echo err >&2", timeout=30)
    finally:
        transport.close()
    assert (result.exit_code, result.stdout, result.stderr) == (0, "out\n", "err\n")


def test_a_slow_login_shell_is_said_while_it_is_waited_for(
    sshd_factory: Callable[..., SshdServer],
    login_user: Callable[[str], tuple[str, Path]],
    tmp_path: Path,
) -> None:
    """A ~/.bashrc that waits 7 s (on a lock, say) before every command: the CLI used to print
    nothing until the first command came back; now it says it is connected and waiting, then the run
    completes."""
    name, _ = login_user("sleep 7\n" + NOISY_BASHRC)
    server = sshd_factory(user=name)
    code, out, err = run_cli(
        "probe",
        f"{name}@{server.host}:{server.port}",
        "-i",
        str(server.client_key_path),
        "--accept-new-host-key",
        "--known-hosts",
        str(tmp_path / "kh"),
        "--db",
        str(tmp_path / "probes.db"),
        "--suite",
        "inventory",
    )
    assert code == 0, err
    assert "connected; waiting for the remote shell (2 s)" in out
    assert "connected; waiting for the remote shell (7 s)" in out
    assert "inventory ok" in out


def test_a_shell_that_never_starts_is_named_with_its_startup_files(
    sshd_factory: Callable[..., SshdServer],
    login_user: Callable[[str], tuple[str, Path]],
    tmp_path: Path,
) -> None:
    """It used to say "could not create a work directory on …: exit status None"."""
    name, _ = login_user("sleep 30\n")
    server = sshd_factory(user=name)
    transport = user_transport(server, tmp_path)
    waits: list[float] = []
    transport.shell_wait = waits.append
    try:
        with pytest.raises(
            ShellStartTimeout, match=r"did not start within 4 s: its startup files \(~/\.bashrc"
        ):
            make_remote_workdir(transport, transport.description, timeout=4)
    finally:
        transport.close()
    assert len(waits) == 1 and 2 <= waits[0] < 4


# -- the host's Python
# -------------------------------------------------------------------------------------------

# ~/.bashrc as Debian ships it starts with "not interactive: return"; `conda init` and `source
# venv/bin/activate` go after it, so a command sent over SSH never sees the env the user works in.
VENV_BASHRC = """case $- in *i*) ;; *) return;; esac
export VIRTUAL_ENV="$HOME/envs/ml"
export PATH="$VIRTUAL_ENV/bin:$PATH"
"""


def test_the_venv_the_interactive_shell_activates_is_found_and_named(
    sshd_factory: Callable[..., SshdServer],
    login_user: Callable[[str], tuple[str, Path]],
    tmp_path: Path,
    need_torch: None,
) -> None:
    """The account's torch lives in a venv ~/.bashrc activates for interactive shells only: the
    all-reduce and distributed checks used to be skipped, the probe having looked at the login PATH
    and the usual places."""
    name, home = login_user(VENV_BASHRC)
    (home / "envs").mkdir()
    (home / "envs" / "ml").symlink_to(Path(sys.prefix))  # this test's own venv, which has torch
    server = sshd_factory(user=name)
    code, out, err = run_cli(
        "probe",
        f"{name}@{server.host}:{server.port}",
        "-i",
        str(server.client_key_path),
        "--accept-new-host-key",
        "--known-hosts",
        str(tmp_path / "kh"),
        "--db",
        str(tmp_path / "probes.db"),
        "--suite",
        "inventory",
    )
    assert code == 0, err
    assert (
        f"Python: {home}/envs/ml/bin/python (torch " in out
        and f"from the venv an interactive shell activates ({home}/envs/ml)" in out
    ), out


# -- torchrun once per node
# ---------------------------------------------------------------------------------------


def test_torchrun_starts_once_per_node_for_both_checks_across_nodes(
    netns_cluster_factory: Callable[[int], NetnsCluster], tmp_path: Path, need_torch: None
) -> None:
    """The distributed check and the all_reduce benchmark each started torchrun on every node (a
    rendezvous and a Python start per rank each time): one launch per node now carries both, and
    both still report."""
    cluster = netns_cluster_factory(2)
    db = tmp_path / "probes.db"
    code, out, err = run_cli(
        "probe",
        *(f"{n.sshd.user}@{n.address}" for n in cluster.nodes),
        "-i",
        str(cluster.client_key_path),
        "--known-hosts",
        str(cluster.known_hosts_path),
        "--db",
        str(db),
        "--python",
        sys.executable,
        "--suite",
        "inventory",
        "--json",
    )
    assert code == 0, err[-3000:]
    doc = json.loads(out)
    cluster_evidence = doc["evidence"]["cluster"]
    assert cluster_evidence["distributed"]["all_reduce_ok"] is True
    assert cluster_evidence["allreduce"]["collective"]["rows"], cluster_evidence["allreduce"]
    store = ProbeStore(db)
    try:
        launches = [
            r
            for r in store.load_run(doc["run_id"]).raw_outputs
            if "--rdzv-backend c10d" in r.command
        ]
    finally:
        store.close()
    assert sorted(r.probe for r in launches) == sorted(
        f"distributed@{n.sshd.user}@{n.address}" for n in cluster.nodes
    ), [(r.probe, r.stdout[-600:], r.stderr[-300:]) for r in launches]
