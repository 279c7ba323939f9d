"""Parse what the user types to name a host (``[user@]host[:port]``) and resolve it through
``~/.ssh/config``.

People already describe their rented boxes in ``~/.ssh/config`` (aliases, users, keys, bastions), so
an alias that works with ``ssh`` works here too: OpenSSH's own ``ssh -G`` resolves it where ``ssh``
is installed (`core.probes.transport.ssh_config`). Values typed explicitly win over the config file,
as with ``ssh -p``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel, Field

from core.probes.transport.ssh_config import lookup

DEFAULT_PORT = 22
_HOSTNAME_RE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?$")
_IPV6_RE = re.compile(r"^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[A-Za-z0-9_.-]+)?$")
_USER_RE = re.compile(r"^[^\s:/\[\]'\"`$;&|<>\\]+$")
_FORM = "expected [user@]host[:port], e.g. ubuntu@10.0.0.5:2222 or [::1]:2222"


class SshTarget(BaseModel):
    """Where and how to connect: the resolved address plus what ``~/.ssh/config`` says about it."""

    host: str = Field(
        description="Address to connect to (the config's HostName when an alias was used)."
    )
    port: int = Field(
        default=DEFAULT_PORT, ge=1, le=65535, description="TCP port of the SSH server."
    )
    user: str | None = Field(
        default=None, description="Login name; None means the local user name."
    )
    identity_files: list[str] = Field(
        default_factory=list, description="Private key files to offer."
    )
    proxy_command: str | None = Field(
        default=None, description="Command whose stdin/stdout is the link."
    )
    proxy_jump: str | None = Field(
        default=None, description="Jump host(s), comma separated, as in ssh -J."
    )
    alias: str | None = Field(
        default=None, description="The name typed, when the config mapped it."
    )
    identities_only: bool = Field(
        default=False, description="Offer only identity_files (no agent keys)."
    )

    @property
    def description(self) -> str:
        """``user@host:port`` with IPv6 addresses in brackets (user omitted when not known)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        prefix = f"{self.user}@" if self.user else ""
        return f"{prefix}{host}:{self.port}"


def hostport(host: str, port: int) -> str:
    """``host:port`` with IPv6 addresses in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def default_ssh_config() -> Path:
    """The user's OpenSSH client config, ``~/.ssh/config``."""
    return Path(os.path.expanduser("~")) / ".ssh" / "config"


def split_target(text: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` → (user, host, port); IPv6 needs brackets to carry a port
    (``[::1]:2222``).

    Raises ValueError with one sentence naming what is wrong.
    """
    if not isinstance(text, str):
        raise ValueError(f"target must be text, not {type(text).__name__}; {_FORM}")
    value = text.strip()
    if not value:
        raise ValueError(f"target is empty; {_FORM}")
    if not value.isprintable():
        # `$` in a pattern matches before a final newline, so 'host\n' would pass as a host name; a
        # newline or tab pasted inside a target is a typo, never part of an address.
        raise ValueError(
            f"target '{repr(value)[1:-1]}' holds a control character (a newline, tab or the like); "
            f"{_FORM}"
        )
    user: str | None = None
    if "@" in value:
        user, _, value = value.rpartition("@")
        if not _USER_RE.fullmatch(user):
            raise ValueError(
                f"user name '{user}' in target '{text}' is empty or has characters not allowed; "
                f"{_FORM}"
            )
    port_text: str | None = None
    if value.startswith("["):
        close = value.find("]")
        if close < 0:
            raise ValueError(f"target '{text}' opens '[' without closing ']'; {_FORM}")
        host, rest = value[1:close], value[close + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(
                    f"target '{text}' has '{rest}' after ']' where ':port' was expected; {_FORM}"
                )
            port_text = rest[1:]
        valid = bool(_IPV6_RE.fullmatch(host) or _HOSTNAME_RE.fullmatch(host))
    elif value.count(":") > 1:  # a bare IPv6 address cannot carry a port
        host = value
        valid = bool(_IPV6_RE.fullmatch(host))
    else:
        host, _, port_text_ = value.partition(":")
        port_text = port_text_ if ":" in value else None
        valid = bool(_HOSTNAME_RE.fullmatch(host))
    if not valid:
        raise ValueError(
            f"host '{host}' in target '{text}' is empty or not a host name or IP address; {_FORM}"
        )
    return user, host, _parse_port(port_text, text)


def _parse_port(port_text: str | None, text: str) -> int | None:
    if port_text is None:
        return None
    if not port_text.isascii() or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(
            f"port '{port_text}' in target '{text}' is not a whole number from 1 to 65535"
        )
    return int(port_text)


def parse_target(
    text: str, *, ssh_config: Path | None = None, use_ssh_config: bool = True
) -> SshTarget:
    """Parse a target and resolve it through the OpenSSH client config (``~/.ssh/config`` by
    default), as ``ssh`` would (``Include``, ``Match``; see `core.probes.transport.ssh_config`).

    HostName, User, Port, IdentityFile, IdentitiesOnly, ProxyCommand and ProxyJump are honoured; a
    user or port typed in ``text`` overrides the file. Raises ValueError with one sentence on
    malformed input.
    """
    user, host, port = split_target(text)
    config_path = ssh_config if ssh_config is not None else default_ssh_config()
    options = lookup(host, user, port, ssh_config, config_path) if use_ssh_config else {}
    hostname = str(options.get("hostname") or host)
    resolved_port = (
        port if port is not None else _config_port(_one(options.get("port")), host, config_path)
    )
    proxy_command = _one(options.get("proxycommand"))
    proxy_jump = _one(options.get("proxyjump"))
    identity = options.get("identityfile") or []
    return SshTarget(
        host=hostname,
        port=resolved_port or DEFAULT_PORT,
        user=user or _one(options.get("user")),
        identity_files=[str(p) for p in (identity if isinstance(identity, list) else [identity])],
        proxy_command=None if (proxy_command or "").lower() in ("", "none") else proxy_command,
        proxy_jump=None if (proxy_jump or "").lower() in ("", "none") else proxy_jump,
        alias=host if hostname != host else None,
        identities_only=(_one(options.get("identitiesonly")) or "no").lower() == "yes",
    )


def _config_port(value: str | None, host: str, path: Path) -> int | None:
    if value is None:
        return None
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= 65535:
        raise ValueError(
            f"Port '{value}' for host '{host}' in {path} is not a whole number from 1 to 65535"
        )
    return int(value)


def _one(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return str(value[0]) if value else None
    return str(value)
