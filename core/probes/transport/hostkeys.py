"""Host-key checking: known hosts from ``~/.ssh/known_hosts`` plus the app's own file, and no silent
trust.

An unknown key is refused with its SHA256 fingerprint (the form ``ssh-keygen -lf`` prints) so the
user can compare it out of band; it is accepted only by an explicit action, and only into the app's
own file (the user's ``~/.ssh/known_hosts`` is never written). A changed key is refused and there is
no override: that is what a man-in-the-middle looks like. A key a known_hosts file marks
``@revoked`` is refused too. The files are read as OpenSSH reads them
(core.probes.transport.known_hosts): lines this app cannot use are skipped with a note instead of
failing every connection.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Collection
from pathlib import Path

import paramiko

from core.paths import data_dir
from core.probes.transport.base import (
    HostKeyChanged,
    HostKeyRevoked,
    HostKeyUnknown,
    TransportError,
)
from core.probes.transport.known_hosts import KnownHosts, read_known_hosts

DEFAULT_PORT = 22
# What the user accepted for a host not yet known: nothing, any key, one fingerprint, or one per
# host of a run.
AcceptHostKey = bool | str | Collection[str]


def default_app_known_hosts() -> Path:
    """The app's own known-hosts file in the user's data folder (core.paths.data_dir)."""
    return data_dir() / "known_hosts"


def default_user_known_hosts() -> Path:
    """The user's OpenSSH ``~/.ssh/known_hosts`` (read only, never written)."""
    return Path(os.path.expanduser("~")) / ".ssh" / "known_hosts"


def fingerprint(key: paramiko.PKey) -> str:
    """``SHA256:<base64 without padding>`` of the public key blob, exactly as OpenSSH prints it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def normalize_fingerprint(text: str) -> str:
    """Accept a pasted fingerprint with or without the ``SHA256:`` prefix or base64 padding."""
    value = text.strip()
    if value.upper().startswith("SHA256:"):
        value = value[len("SHA256:") :]
    return "SHA256:" + value.rstrip("=")


def known_hosts_name(host: str, port: int) -> str:
    """The name OpenSSH files a host under: ``host`` on port 22, else ``[host]:port``."""
    return host if port == DEFAULT_PORT else f"[{host}]:{port}"


def split_known_hosts_name(name: str) -> tuple[str, int]:
    """Inverse of `known_hosts_name`: ``[h]:p`` → (h, p); a bare name → (name, 22)."""
    if name.startswith("[") and "]:" in name:
        host, _, port = name[1:].rpartition("]:")
        if port.isdigit():
            return host, int(port)
    return name, DEFAULT_PORT


def load_known_hosts(*files: Path) -> KnownHosts:
    """Merge known-hosts files as OpenSSH reads them (missing files skipped; unusable lines skipped
    with a note)."""
    try:
        return read_known_hosts(*files)
    except OSError as exc:
        raise TransportError(
            f"cannot read known hosts file {exc.filename or ''}: {exc.strerror or exc}"
        ) from exc


def lookup(keys: KnownHosts, host: str, port: int) -> dict[str, paramiko.PKey]:
    """Keys remembered for a host by key type (hashed, wildcard and plain entries all match); empty
    if unknown."""
    return keys.keys_for(known_hosts_name(host, port))


def revoked_key_error(host: str, port: int, key: paramiko.PKey, where: str) -> HostKeyRevoked:
    """The refusal for a key a known_hosts line revokes (OpenSSH: "Host key … was revoked")."""
    name = known_hosts_name(host, port)
    got = fingerprint(key)
    return HostKeyRevoked(
        f"host {name} presented its {key.get_name()} key {got}, which {where} marks @revoked — "
        "refusing to connect",
        host=name,
        fingerprint=got,
    )


def check_not_revoked(keys: KnownHosts, host: str, port: int, key: paramiko.PKey) -> None:
    """Raise `HostKeyRevoked` when a ``@revoked`` line names ``key`` for this host."""
    line = keys.revocation(known_hosts_name(host, port), key)
    if line is not None:
        raise revoked_key_error(host, port, key, line.where)


def accept_host_key(
    host: str, port: int, key: paramiko.PKey, file: Path, *, hashed: bool = False
) -> None:
    """Append the key to the app's known-hosts ``file`` (created mode 600 in a mode-700 folder).

    ``hashed=True`` writes the OpenSSH ``|1|salt|hash`` form so the file does not list the hosts in
    clear.
    """
    name = known_hosts_name(host, port)
    existing = lookup(load_known_hosts(file), host, port)
    if (
        existing.get(key.get_name()) is not None
        and existing[key.get_name()].asbytes() == key.asbytes()
    ):
        return
    entry = paramiko.HostKeys.hash_host(name) if hashed else name
    line = f"{entry} {key.get_name()} {key.get_base64()}\n"
    try:
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="ascii") as handle:
            handle.write(line)
    except OSError as exc:
        raise TransportError(
            f"cannot write known hosts file {file}: {exc.strerror or exc}"
        ) from exc


def unknown_key_error(
    host: str, port: int, key: paramiko.PKey, expected: str | None = None, *, others: int = 0
) -> HostKeyUnknown:
    """The refusal for a key no file knows, with the fingerprint the user must check.

    ``expected`` is the one fingerprint the user accepted for this host; ``others`` counts
    fingerprints given for a run of several hosts, none of them this host's: then the host is simply
    not known yet, and saying "not the expected" would name another host's key as if it were this
    one's."""
    name = known_hosts_name(host, port)
    got = fingerprint(key)
    if expected is None:
        given = (
            f" and is none of the {others} fingerprint{'s' if others > 1 else ''} given to accept"
            if others
            else ""
        )
        message = (
            f"host {name} is not known; its {key.get_name()} key fingerprint is {got}{given} — "
            f"accept it only if it matches the one the provider shows"
        )
    else:
        message = (
            f"host key for {name} has fingerprint {got}, not the expected {expected} — "
            f"refusing to connect"
        )
    return HostKeyUnknown(
        message, fingerprint=got, host=name, key_type=key.get_name(), expected=expected
    )


def changed_key_error(
    host: str, port: int, expected: paramiko.PKey, got: paramiko.PKey
) -> HostKeyChanged:
    """The refusal for a key that differs from the remembered one (no override exists)."""
    name = known_hosts_name(host, port)
    want, have = fingerprint(expected), fingerprint(got)
    return HostKeyChanged(
        f"host key for {name} changed: expected {want}, got {have} — refusing to connect",
        host=name,
        expected=want,
        got=have,
    )


class StrictHostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Called by paramiko for a host no file knows: accept only what the user explicitly accepted.

    ``accept`` is False (refuse with the fingerprint), True (accept any new key, like OpenSSH's
    ``StrictHostKeyChecking=accept-new``), a fingerprint string the user was shown: the key is
    accepted only if it has exactly that fingerprint, or several fingerprints (one per host of a
    cluster run): the key is accepted if it has one of them. Accepted keys go to ``app_file`` only.
    Never adds silently.
    """

    def __init__(
        self,
        app_file: Path,
        accept: AcceptHostKey = False,
        *,
        hashed: bool = False,
        known: KnownHosts | None = None,
    ) -> None:
        self.app_file = app_file
        self.accept = accept
        self.hashed = hashed
        # for its @revoked lines: a revoked key is never accepted as new
        self.known = known or KnownHosts()

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        host, port = split_known_hosts_name(hostname)
        check_not_revoked(self.known, host, port, key)
        given = accepted_fingerprints(self.accept)
        if self.accept is True or fingerprint(key) in given:
            accept_host_key(host, port, key, self.app_file, hashed=self.hashed)
            return
        if len(given) == 1 and isinstance(self.accept, str):
            raise unknown_key_error(host, port, key, next(iter(given)))
        raise unknown_key_error(host, port, key, others=len(given))


def accepted_fingerprints(accept: AcceptHostKey) -> frozenset[str]:
    """The fingerprints ``accept`` names (normalised), none for True or False."""
    if isinstance(accept, bool):
        return frozenset()
    values = [accept] if isinstance(accept, str) else list(accept)
    return frozenset(normalize_fingerprint(v) for v in values if v)
