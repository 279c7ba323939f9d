"""~/.ssh/known_hosts read as OpenSSH reads it, against a real sshd on 127.0.0.1.

sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT": a line is ``[marker] hostnames keytype base64-key
[comment]``; the marker ``@cert-authority`` names a CA key and ``@revoked`` a key that "must not
ever be accepted"; hashed names are ``|1|base64(salt)|base64(HMAC-SHA1(salt, name))``;
``[host]:port`` names a non-22 port. OpenSSH skips a line it cannot parse. The hashed name below is
computed here with hmac, not by the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.probes.transport.base import HostKeyRevoked

try:
    from tests.integration.sshd import SshdServer, keygen, keygen_fingerprint
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from sshd import SshdServer, keygen, keygen_fingerprint  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]


def hashed(name: str, salt: bytes = bytes(range(20))) -> str:
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def awkward_lines(sshd: SshdServer, tmp_path: Path) -> list[str]:
    """What real files hold besides plain keys: a CA line, two lines cut short, one with too few
    fields."""
    keygen(tmp_path / "ca_key")
    ca_type, ca_b64 = (tmp_path / "ca_key.pub").read_text().split()[:2]
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    name = f"[{sshd.host}]:{sshd.port}"
    return [
        f"@cert-authority *.example.com,{name} {ca_type} {ca_b64} our-ca",
        f"{name} {key_type} {key_b64[:25]}",  # cut mid-base64: padding is wrong
        f"other.example.com {key_type} {key_b64[:40]}",  # decodes, but the key blob ends early
        f"{name} {key_type}",  # the key itself is missing
    ]


def test_cert_authority_and_broken_lines_are_skipped_with_notes_and_a_hashed_entry_works(
    make_ssh_transport, sshd: SshdServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    user_file = tmp_path / "known_hosts"
    lines = [
        "# my hosts",
        *awkward_lines(sshd, tmp_path),
        f"{hashed(f'[{sshd.host}]:{sshd.port}')} {key_type} {key_b64}",
    ]
    user_file.write_text("\n".join(lines) + "\n")
    transport = make_ssh_transport(user_known_hosts_file=user_file)
    transport.connect()
    assert transport.run("echo up", timeout=30).stdout.strip() == "up"
    assert len(transport.notes) == 4
    for number, note in zip((2, 3, 4, 5), transport.notes, strict=True):
        assert note.startswith(f"{user_file} line {number}: skipped")
        assert "\n" not in note
    assert "@cert-authority" in transport.notes[0]
    err = capfd.readouterr().err
    assert "Traceback" not in err and "paramiko" not in err.lower()


def test_a_wildcard_line_names_the_host(
    make_ssh_transport, sshd: SshdServer, tmp_path: Path
) -> None:
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    user_file = tmp_path / "known_hosts"
    user_file.write_text(f"!other,[127.0.0.?]:{sshd.port} {key_type} {key_b64}\n")
    transport = make_ssh_transport(user_known_hosts_file=user_file)
    transport.connect()
    assert transport.is_alive() and transport.notes == []


@pytest.mark.parametrize("also_known", [True, False], ids=["also-listed", "only-revoked"])
def test_a_revoked_host_key_is_refused_with_a_sentence(
    make_ssh_transport, sshd: SshdServer, tmp_path: Path, also_known: bool
) -> None:
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    user_file = tmp_path / "known_hosts"
    lines = [f"@revoked * {key_type} {key_b64}"]
    if also_known:  # OpenSSH refuses a revoked key even when another line lists it
        lines.append(f"[{sshd.host}]:{sshd.port} {key_type} {key_b64}")
    user_file.write_text("\n".join(lines) + "\n")
    app_file = tmp_path / "app_known_hosts"
    for accept in (False, True, keygen_fingerprint(sshd.host_key_pub_path)):
        transport = make_ssh_transport(
            user_known_hosts_file=user_file, known_hosts_file=app_file, accept_new_host_key=accept
        )
        with pytest.raises(HostKeyRevoked) as caught:
            transport.connect()
        message = str(caught.value)
        assert message == (
            f"host [{sshd.host}]:{sshd.port} presented its {key_type} key "
            f"{keygen_fingerprint(sshd.host_key_pub_path)}, which {user_file} line 1 marks "
            "@revoked — refusing to connect"
        )
        assert not transport.is_alive()
    assert not app_file.exists()  # never accepted as a new key either


def _tuneplan(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "PYTHONWARNINGS")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    return subprocess.run(
        [sys.executable, "-m", "tuneplan", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )


def test_the_cli_connects_past_awkward_lines_and_refuses_a_revoked_key(
    sshd: SshdServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    known = home / ".ssh" / "known_hosts"
    known.write_text(
        "\n".join(
            [*awkward_lines(sshd, tmp_path), f"[{sshd.host}]:{sshd.port} {key_type} {key_b64}"]
        )
        + "\n"
    )
    args = (
        "probe",
        sshd.target,
        "-i",
        str(sshd.client_key_path),
        "--suite",
        "inventory",
        "--json",
        "--db",
        str(tmp_path / "p.db"),
    )
    done = _tuneplan(home, *args)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["evidence"]["inventory"] is not None
    notes = [line for line in done.stderr.splitlines() if line.startswith("tuneplan: note: ")]
    assert len(notes) == 4 and all(f"{known} line" in n for n in notes)
    assert "Traceback" not in done.stderr and "paramiko" not in done.stderr.lower()

    known.write_text(
        known.read_text() + f"@revoked [{sshd.host}]:{sshd.port} {key_type} {key_b64}\n"
    )
    refused = _tuneplan(home, *args)
    assert refused.returncode == 3
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("tuneplan: host ") and "@revoked — refusing to connect" in last
    assert "Traceback" not in refused.stderr and refused.stdout == ""
