"""One recipe to reach a host over SSH, for the command line and the window alike.

What the user typed as the target (``[user@]host[:port]`` or an ``~/.ssh/config`` alias) and what
they gave beside it (``--port``/``-i`` on the command line, the host form's Port, User and key file
in the window) are put together here, once, by the rules ``ssh`` follows: what is given explicitly
wins over the config file, keys given explicitly are offered before the config's, and the same value
given twice in two ways that disagree is refused in one sentence instead of one of them being
dropped in silence. Both callers then open the transport with the same connect timeout and the same
config file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.probes.transport.base import Transport
from core.probes.transport.ssh import SshTransport
from core.probes.transport.target import SshTarget, parse_target, split_target

# a handshake through a bastion or a ProxyCommand on a slow link takes seconds
CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class HostOverrides:
    """What the user gave beside the target text; each wins over ``~/.ssh/config``, as ``ssh -l -p
    -i`` do."""

    user: str | None = None
    port: int | None = None
    identity_files: tuple[str, ...] = ()


def resolve(
    text: str, overrides: HostOverrides = HostOverrides(), ssh_config: Path | None = None
) -> SshTarget:
    """The target ``text`` resolved through the OpenSSH config, with ``overrides`` on top.

    Raises ValueError with one sentence when the text is malformed, a port is out of range, or the
    target names a user or port that the value given beside it contradicts (`check`).
    """
    user = check(text, overrides)
    target = parse_target(text, ssh_config=ssh_config)
    explicit = [str(Path(p).expanduser()) for p in overrides.identity_files]
    update: dict[str, Any] = {}
    if overrides.port is not None:
        update["port"] = overrides.port
    if overrides.user and user is None:
        update["user"] = overrides.user
    if explicit:
        update["identity_files"] = [
            *dict.fromkeys(explicit),
            *(p for p in target.identity_files if p not in explicit),
        ]
    return target.model_copy(update=update) if update else target


def check(text: str, overrides: HostOverrides) -> str | None:
    """The user typed in ``text`` (None if none), once the text and what is given beside it are
    known to agree: the host form checks this as the user types, before any config file is read.

    Raises ValueError with one sentence naming what is wrong.
    """
    user, _host, port = split_target(text)
    if overrides.port is not None and not 1 <= overrides.port <= 65535:
        raise ValueError(f"port {overrides.port} is not a port number from 1 to 65535")
    if port is not None and overrides.port is not None and port != overrides.port:
        raise ValueError(
            f"target '{text.strip()}' names port {port} and port {overrides.port} is also given; "
            "give the port once"
        )
    if user is not None and overrides.user and user != overrides.user:
        raise ValueError(
            f"target '{text.strip()}' names user '{user}' and user '{overrides.user}' is also "
            "given; give the user once"
        )
    if overrides.user and user is None:  # the same rules for a user name typed apart
        split_target(f"{overrides.user}@{text.strip()}")
    return user


def open_ssh(
    target: SshTarget,
    *,
    ssh_config: Path | None = None,
    factory: Callable[..., Transport] = SshTransport,
    notes: Callable[[list[str]], object] | None = None,
    **options: Any,
) -> Transport:
    """A connected transport to ``target`` (closed again if the handshake fails): the one place both
    callers set the connect timeout and pass the config file. ``options`` are the transport's own
    (known hosts, the host-key answer, prompts); the caller maps its errors to its own surface.
    ``notes`` hears the known-hosts lines skipped on the way (as OpenSSH skips them), whether or not
    the handshake succeeded."""
    transport = factory(
        target, **{"connect_timeout": CONNECT_TIMEOUT_S, "ssh_config": ssh_config, **options}
    )
    try:
        transport.connect()  # type: ignore[attr-defined]
    except BaseException:
        with contextlib.suppress(Exception):
            transport.close()
        raise
    finally:
        if notes is not None:
            notes(list(getattr(transport, "notes", [])))
    return transport
