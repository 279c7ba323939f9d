"""Read ``~/.ssh/config`` for one host as OpenSSH reads it.

Where the ``ssh`` client is installed, OpenSSH itself resolves the host: ``ssh -G`` prints the
options it would use, after ``Include``, ``Match``, host-name canonicalisation and the system-wide
file, so an alias that works with ``ssh`` works here with no second parser to disagree. ``ssh -G``
prints every option, defaults included, so a second run with no config at all (``-F /dev/null``)
says which values are defaults; only the others count as configured. Without ``ssh``, paramiko's
parser reads the file, with ``Include`` lines (which it ignores) expanded first, as OpenSSH expands
them.

Both return the options `core.probes.transport.target.parse_target` reads, in paramiko's form:
lower-case keys, ``identityfile`` a list, ``proxycommand`` with its ``%h %p %r %n %%`` tokens
expanded.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

import paramiko

# `ssh -G` reads files only, unless a `Match exec` or canonicalisation asks the network
SSH_TIMEOUT_S = 15.0
_MAX_INCLUDE_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH
_INCLUDE_RE = re.compile(r"^\s*include(?:\s*=\s*|\s+)(.+)$", re.IGNORECASE)
_KEYS = ("hostname", "user", "port", "identityfile", "identitiesonly", "proxycommand", "proxyjump")


def ssh_client() -> str | None:
    """The OpenSSH client on PATH, or None."""
    return shutil.which("ssh")


def lookup(
    host: str, user: str | None, port: int | None, config: Path | None, default: Path
) -> dict[str, object]:
    """What the config says about ``host`` (a user or port typed by the user wins, and expands
    ``%r``/``%p``).

    ``config`` None means the user's own file (``default``); raises ValueError with one sentence
    when the file cannot be read."""
    ssh = ssh_client()
    if ssh is not None:
        return _with_ssh(ssh, host, user, port, config, default)
    path = config if config is not None else default
    return _with_paramiko(host, user, port, path) if path.exists() else {}


def _with_ssh(
    ssh: str, host: str, user: str | None, port: int | None, config: Path | None, default: Path
) -> dict[str, object]:
    """``ssh -G`` for the host, less what it prints with no config at all."""
    if config is None and default != _own_config():
        config = default  # $HOME is not the account's home: read the file this app was pointed at
    source = config if config is not None else default
    if config is not None and not config.exists():
        config = Path(os.devnull)
    configured = _ssh_g(ssh, host, user, port, config, source)
    defaults = _ssh_g(ssh, host, user, port, Path(os.devnull), source)
    options: dict[str, object] = {}
    for key in _KEYS:
        value = configured.get(key)
        if value and value != defaults.get(key):
            options[key] = value if key == "identityfile" else value[0]
    if "identityfile" in options:  # printed as written: ``~/.ssh/key``
        options["identityfile"] = [os.path.expanduser(f) for f in configured["identityfile"]]
    if "proxycommand" in options:
        options["proxycommand"] = _expand_tokens(str(options["proxycommand"]), configured, host)
    return options


def _own_config() -> Path:
    """The file ``ssh`` reads without ``-F``: ``.ssh/config`` in the account's home (not
    ``$HOME``)."""
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ssh" / "config"
    except KeyError:
        return Path(os.path.expanduser("~")) / ".ssh" / "config"


def _ssh_g(
    ssh: str, host: str, user: str | None, port: int | None, config: Path | None, source: Path
) -> dict[str, list[str]]:
    command = [ssh, "-G"]
    command += ["-F", str(config)] if config is not None else []
    command += ["-l", user] if user else []
    command += ["-p", str(port)] if port else []
    try:
        result = subprocess.run(
            [*command, "--", host],
            capture_output=True,
            text=True,
            timeout=SSH_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(
            f"ssh config {source} could not be read for host '{host}': `ssh -G` did not answer "
            f"({exc})"
        ) from exc
    if result.returncode != 0:
        reasons = [
            line.strip()
            for line in result.stderr.splitlines()
            if line.strip() and "Pseudo-terminal" not in line and "terminating" not in line
        ]
        reason = (
            reasons[0].removeprefix(f"{config} ")
            if reasons
            else f"ssh -G exited with status {result.returncode}"
        )
        raise ValueError(f"ssh config {source} could not be read for host '{host}': {reason}")
    options: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key in _KEYS:
            options.setdefault(key, []).append(value.strip())
    return options


def _expand_tokens(command: str, options: dict[str, list[str]], host: str) -> str:
    """ProxyCommand's tokens, which ``ssh -G`` prints unexpanded: %h host name, %p port, %r user, %n
    as typed."""
    values = {
        "h": options.get("hostname", [host])[0],
        "p": options.get("port", ["22"])[0],
        "r": options.get("user", [""])[0],
        "n": host,
        "%": "%",
    }
    return re.sub(r"%(.)", lambda m: values.get(m.group(1), m.group(0)), command)


def _with_paramiko(host: str, user: str | None, port: int | None, path: Path) -> dict[str, object]:
    """paramiko's parser on the file with its ``Include`` lines expanded; typed user and port go
    first so they win and expand %r/%p as ``ssh -l/-p`` would."""
    text = read_with_includes(path)
    first = ""
    if user or port:
        pattern = f'"{host}"' if ":" in host else host
        first = (
            f"Host {pattern}\n"
            + (f"  User {user}\n" if user else "")
            + (f"  Port {port}\n" if port else "")
        )
    try:
        return dict(paramiko.SSHConfig.from_text(first + text).lookup(host))
    # paramiko raises ConfigParseError and, for odd tokens, plain exceptions
    except Exception as exc:
        raise ValueError(f"ssh config {path} could not be read for host '{host}': {exc}") from exc


def read_with_includes(path: Path, depth: int = 0) -> str:
    """The file's text with each ``Include`` line replaced by the files it names (globs, ``~``, and
    paths relative to ``~/.ssh``, as OpenSSH reads a user config), in order; a missing file includes
    nothing."""
    if depth > _MAX_INCLUDE_DEPTH:
        raise ValueError(
            f"ssh config {path}: Include nested more than {_MAX_INCLUDE_DEPTH} deep; check for a "
            "loop"
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ValueError(f"cannot read ssh config {path}: {exc.strerror or exc}") from exc
    lines = []
    for line in text.splitlines():
        match = _INCLUDE_RE.match(line)
        if match is None:
            lines.append(line)
            continue
        for pattern in match.group(1).split():
            pattern = os.path.expanduser(pattern.strip('"'))
            if not os.path.isabs(pattern):
                pattern = os.path.join(os.path.expanduser("~"), ".ssh", pattern)
            lines += [
                read_with_includes(Path(found), depth + 1) for found in sorted(glob.glob(pattern))
            ]
    return "\n".join(lines) + "\n"
