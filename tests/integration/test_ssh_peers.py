"""Peers that answer badly, against a real OpenSSH server on 127.0.0.1: one that offers only
algorithms OpenSSH's own client has dropped, and one that stops answering (its session's sshd
stopped with SIGSTOP).

What ``ssh`` itself refuses is read from the OpenSSH client (``ssh -o BatchMode=yes``), independent
of the code under test.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.probes.transport.base import Disconnected, Unreachable
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget

try:
    from tests.integration.sshd import SshdServer
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from sshd import SshdServer  # type: ignore[no-redef]

pytestmark = pytest.mark.integration

WEAK_ONLY = "Ciphers 3des-cbc,aes128-cbc\nMACs hmac-md5,hmac-sha1-96\n"


def target_of(server: SshdServer) -> SshTarget:
    return SshTarget(
        host=server.host,
        port=server.port,
        user=server.user,
        identity_files=[str(server.client_key_path)],
        identities_only=True,
    )


def openssh_refusal(server: SshdServer, tmp_path: Path) -> str:
    """What OpenSSH's client says to this server (it never gets as far as logging in)."""
    done = subprocess.run(
        [
            "ssh",
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            f"UserKnownHostsFile={tmp_path / 'kh'}",
            "-o",
            "StrictHostKeyChecking=no",
            "-i",
            str(server.client_key_path),
            "-p",
            str(server.port),
            f"{server.user}@{server.host}",
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 255, (
        "OpenSSH's client logged in: the server offers more than the test means"
    )
    return done.stderr


@pytest.mark.parametrize(
    ("config", "named", "keyword"),
    [
        (WEAK_ONLY, "ciphers 3des-cbc, aes128-cbc", "Ciphers"),
        # a current cipher, but no AEAD one (chacha20-poly1305 and AES-GCM carry their own
        # integrity, no MAC)
        (
            "Ciphers aes128-ctr,aes256-ctr\nMACs hmac-md5,hmac-sha1-96\n",
            "MACs hmac-md5, hmac-sha1-96",
            "MACs",
        ),
        (
            "KexAlgorithms diffie-hellman-group14-sha1,diffie-hellman-group1-sha1\n",
            "key exchanges diffie-hellman-group14-sha1, diffie-hellman-group1-sha1",
            "KexAlgorithms",
        ),
    ],
)
def test_a_server_offering_only_what_openssh_dropped_is_refused_naming_the_algorithm(
    sshd_factory: Callable[..., SshdServer],
    make_ssh_transport: Callable[..., SshTransport],
    tmp_path: Path,
    config: str,
    named: str,
    keyword: str,
) -> None:
    weak = sshd_factory(extra_config=config)
    assert "no matching" in openssh_refusal(weak, tmp_path)
    with pytest.raises(Unreachable) as caught:
        make_ssh_transport(target=target_of(weak), accept_new_host_key=True).connect()
    message = str(caught.value)
    assert message.startswith(f"host 127.0.0.1:{weak.port} offers only the {named}")
    assert "OpenSSH's ssh no longer uses by default" in message and keyword in message
    assert "\n" not in message


def test_both_weak_kinds_are_named_in_one_sentence(
    sshd_factory: Callable[..., SshdServer], make_ssh_transport: Callable[..., SshTransport]
) -> None:
    weak = sshd_factory(extra_config=WEAK_ONLY)
    with pytest.raises(Unreachable) as caught:
        make_ssh_transport(target=target_of(weak), accept_new_host_key=True).connect()
    assert (
        "offers only the ciphers 3des-cbc, aes128-cbc and the MACs hmac-md5, hmac-sha1-96, "
        "which OpenSSH's ssh no longer uses by default and tuneplan refuses too; allow a current "
        "one in the server's Ciphers/MACs"
    ) in str(caught.value)


def test_a_server_offering_weak_and_current_algorithms_connects_with_a_current_one(
    sshd_factory: Callable[..., SshdServer], make_ssh_transport: Callable[..., SshTransport]
) -> None:
    mixed = sshd_factory(
        extra_config="Ciphers 3des-cbc,aes128-cbc,aes256-ctr\nMACs hmac-md5,hmac-sha2-256\n"
    )
    transport = make_ssh_transport(target=target_of(mixed), accept_new_host_key=True)
    transport.connect()
    assert transport.run("echo up", timeout=10).stdout == "up\n"
    assert transport._client is not None
    link = transport._client.get_transport()
    assert (link.local_cipher, link.local_mac) == ("aes256-ctr", "hmac-sha2-256")


def test_a_silent_peer_ends_a_waiting_command_at_the_keepalive_deadline_and_on_reconnect(
    sshd: SshdServer,
    make_ssh_transport: Callable[..., SshTransport],
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
) -> None:
    transport = make_ssh_transport(
        known_hosts_file=ssh_trusted_known_hosts, keepalive_s=0.5, keepalive_reply_s=2
    )
    transport.connect()
    flag = tmp_path / "still-running"
    stream = transport.stream(
        f"echo up; while sleep 0.2; do touch {flag}; done", timeout=None, cancel=threading.Event()
    )
    assert next(stream) == "up"
    assert sshd.freeze_connections() >= 1
    frozen_at = time.monotonic()
    with pytest.raises(Disconnected) as caught:
        list(stream)
    assert time.monotonic() - frozen_at < 10
    assert str(caught.value).endswith("stopped answering: no reply to a keepalive within 2 s")
    flag.unlink(missing_ok=True)
    time.sleep(0.5)
    assert flag.exists(), "the frozen session's command should still run until we end it"
    # the listening sshd answers; the command the frozen session started is ended
    transport.reconnect()
    flag.unlink(missing_ok=True)
    time.sleep(0.5)
    assert not flag.exists()
    assert transport.run("echo back", timeout=10).stdout == "back\n"
