"""The SSH algorithms refused: those OpenSSH's own client no longer offers by default, and the
sentence that names them when a server offers nothing else.

Why: paramiko still negotiates CBC ciphers, 3DES, MD5 and truncated MACs, SHA-1 key exchanges and
SHA-1 RSA signatures when a server offers only those; ``ssh`` itself has dropped them from its
defaults (OpenSSH 7.4 to 8.8; ``man ssh_config``: Ciphers, MACs, KexAlgorithms, HostKeyAlgorithms).
A box that speaks only them would connect here and not with ``ssh``, over a weaker link than the
user expects. They are refused through paramiko's ``disabled_algorithms``; `OfferRecorder` keeps the
server's offer so the refusal can name what it offered.
"""

from __future__ import annotations

from typing import Any

import paramiko

DISABLED_ALGORITHMS: dict[str, list[str]] = {
    "ciphers": [
        "3des-cbc",
        "aes128-cbc",
        "aes192-cbc",
        "aes256-cbc",
        "blowfish-cbc",
        "cast128-cbc",
        "arcfour",
        "arcfour128",
        "arcfour256",
    ],
    "macs": [
        "hmac-md5",
        "hmac-md5-96",
        "hmac-sha1-96",
        "hmac-md5-etm@openssh.com",
        "hmac-md5-96-etm@openssh.com",
        "hmac-sha1-96-etm@openssh.com",
    ],
    "kex": [
        "diffie-hellman-group1-sha1",
        "diffie-hellman-group14-sha1",
        "diffie-hellman-group-exchange-sha1",
    ],
    "keys": ["ssh-rsa", "ssh-dss"],
    "pubkeys": ["ssh-rsa", "ssh-dss"],
}

_REFUSED = frozenset(name for names in DISABLED_ALGORITHMS.values() for name in names)

# (what the user reads, the server's list in its KEXINIT, the transport's usable list, the
# sshd_config keyword)
_KINDS = (
    ("key exchange", "kex_algo_list", "preferred_kex", "KexAlgorithms"),
    ("host key", "server_key_algo_list", "preferred_keys", "HostKeyAlgorithms"),
    ("cipher", "server_encrypt_algo_list", "preferred_ciphers", "Ciphers"),
    ("MAC", "server_mac_algo_list", "preferred_macs", "MACs"),
)


class OfferRecorder(paramiko.Transport):
    """A paramiko Transport that keeps the algorithms the server offered in its first KEXINIT
    (``offered``)."""

    offered: dict[str, Any] | None = None

    def _really_parse_kex_init(
        self, m: paramiko.Message, ignore_first_byte: bool = False
    ) -> dict[str, Any]:
        parsed: dict[str, Any] = super()._really_parse_kex_init(m, ignore_first_byte)
        if self.offered is None:
            self.offered = parsed
        return parsed


def refusal(where: str, transport: object, exc: BaseException) -> str:
    """One sentence for a failed negotiation: the refused algorithms the server offered, when that
    is why."""
    offered = getattr(transport, "offered", None)
    parts: list[str] = []
    keywords: list[str] = []
    for label, listed, usable_attr, keyword in _KINDS:
        names = [str(n) for n in (offered or {}).get(listed, [])]
        usable = set(getattr(transport, usable_attr, ()))
        refused = [n for n in names if n in _REFUSED]
        if names and refused and not usable.intersection(names):
            parts.append(f"{label}s {', '.join(refused)}")
            keywords.append(keyword)
    if not parts:
        return f"host {where} and this app share no SSH algorithms: {exc}"
    return (
        f"host {where} offers only the {' and the '.join(parts)}, which OpenSSH's ssh no longer "
        "uses by default and tuneplan refuses too; allow a current one in the server's "
        f"{'/'.join(keywords)}"
    )


__all__ = ["DISABLED_ALGORITHMS", "OfferRecorder", "refusal"]
