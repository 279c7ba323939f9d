"""known_hosts files read as OpenSSH reads them (sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT"; OpenSSH's
hostfile.c).

Why not paramiko's ``HostKeys.load``: it takes the first three fields of every line, so a standard
``@cert-authority *.example.com ssh-ed25519 AAAA…`` line, or a line cut short, raises
``InvalidHostKey`` out of ``load`` and every connection fails with a traceback, while OpenSSH skips
what it cannot use; and it has no notion of ``@revoked``, so a revoked key was accepted. Here each
line is, as in sshd(8):

    [marker] hostnames keytype base64-key [comment]

- blank lines and lines starting with ``#`` are ignored;
- marker ``@revoked``: that key must never be accepted for the hosts the line names;
  ``@cert-authority``: a CA key, for host *certificates*, which this app does not verify, so the
  line is skipped with a note (OpenSSH would use it; a host that has only a certificate is then
  "unknown" here and its plain key can be accepted);
- hostnames: a comma list of patterns with ``*`` and ``?`` wildcards and ``!`` negation,
  ``[host]:port`` for a port other than 22, or one hashed name ``|1|base64-salt|base64-hmac-sha1``
  (HMAC-SHA1 of the name, keyed with the salt);
- a line that cannot be parsed (too few fields, bad base64, a key type paramiko cannot read) is
  skipped with a one-line note naming the file and line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

REVOKED = "@revoked"
CERT_AUTHORITY = "@cert-authority"


@dataclass(frozen=True)
class KnownHostLine:
    """One usable line: its host patterns, its key, whether it revokes that key, and where it came
    from."""

    patterns: str
    key: paramiko.PKey
    revoked: bool
    where: str  # "FILE line N"


@dataclass
class KnownHosts:
    """The lines of one or more known_hosts files, and a note for each line skipped."""

    lines: list[KnownHostLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def keys_for(self, name: str) -> dict[str, paramiko.PKey]:
        """Keys (by type) accepted for ``name`` (``host`` or ``[host]:port``); the first line of a
        type wins."""
        found: dict[str, paramiko.PKey] = {}
        for line in self.lines:
            if not line.revoked and matches(line.patterns, name):
                found.setdefault(line.key.get_name(), line.key)
        return found

    def revocation(self, name: str, key: paramiko.PKey) -> KnownHostLine | None:
        """The ``@revoked`` line that names ``key`` for ``name``, if any."""
        blob = key.asbytes()
        for line in self.lines:
            if line.revoked and line.key.asbytes() == blob and matches(line.patterns, name):
                return line
        return None


def _glob(pattern: str) -> re.Pattern[str]:
    """OpenSSH's match_pattern: ``*`` any run, ``?`` one character, everything else literal (``[``
    included)."""
    parts = [".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern]
    return re.compile("".join(parts), re.DOTALL)


def hash_name(name: str, salt: bytes) -> str:
    """``|1|salt|hmac`` as OpenSSH's HashKnownHosts writes it for ``name``."""
    digest = hmac.new(salt, name.encode("utf-8"), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def _hashed_matches(entry: str, name: str) -> bool:
    parts = entry.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return False
    try:
        salt = base64.b64decode(parts[2], validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(hash_name(name, salt), entry)


def matches(patterns: str, name: str) -> bool:
    """Whether ``name`` matches a hostnames field: a negated match wins, as in OpenSSH's
    match_hostname."""
    if patterns.startswith("|"):
        return _hashed_matches(patterns, name)
    name = name.lower()
    matched = False
    for pattern in patterns.lower().split(","):
        negated = pattern.startswith("!")
        if _glob(pattern[1:] if negated else pattern).fullmatch(name):
            if negated:
                return False
            matched = True
    return matched


def _key(key_type: str, data: str) -> paramiko.PKey:
    """The public key of a line; ValueError with a short reason when paramiko cannot read it."""
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("its key is not valid base64 (cut short?)") from exc
    try:
        key = paramiko.PKey.from_type_string(key_type, blob)
    except paramiko.UnknownKeyType as exc:
        raise ValueError(f"key type {key_type} is not one this app reads") from exc
    # paramiko raises SSHException, struct/Index errors on a truncated blob
    except Exception as exc:
        raise ValueError(f"its {key_type} key cannot be read (cut short?)") from exc
    # paramiko pads a short blob with zeros; OpenSSH refuses it (sshkey_from_blob)
    if key.asbytes() != blob:
        raise ValueError(f"its {key_type} key is cut short or has bytes after it")
    return key


def parse_line(text: str, where: str) -> KnownHostLine | str | None:
    """A usable line, a note (why it is skipped), or None for a blank line or a comment."""
    line = text.strip()
    if not line or line.startswith("#"):
        return None
    fields = line.split()
    marker = None
    if fields[0].startswith("@"):
        marker, fields = fields[0], fields[1:]
        if marker == CERT_AUTHORITY:
            return (
                f"{where}: skipped a @cert-authority line (host certificates are not checked by "
                "this app; "
                "the host's own key is)"
            )
        if marker != REVOKED:
            return f"{where}: skipped a line with the unknown marker {marker[:40]}"
    if len(fields) < 3:
        return f"{where}: skipped a line with too few fields (cut short?)"
    patterns, key_type, data = fields[:3]
    try:
        key = _key(key_type, data)
    except ValueError as exc:
        return f"{where}: skipped a line: {exc}"
    return KnownHostLine(patterns=patterns, key=key, revoked=marker == REVOKED, where=where)


def read_known_hosts(*files: Path) -> KnownHosts:
    """Every usable line of ``files`` in order (a missing file is skipped); OSError when one cannot
    be read."""
    known = KnownHosts()
    for path in files:
        if not path.exists():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, raw in enumerate(text.splitlines(), 1):
            parsed = parse_line(raw, f"{path} line {number}")
            if isinstance(parsed, KnownHostLine):
                known.lines.append(parsed)
            elif parsed is not None:
                known.notes.append(parsed)
    return known
