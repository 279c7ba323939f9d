"""Logging in over SSH as OpenSSH's client does: agent keys, then key files (a passphrase asked only
for an encrypted one), then a password, each asked through a callback and never stored; a revoked
host key is refused before any secret is offered, and a refusal says why in one sentence (which
methods the server takes, a key that could not sign, too many attempts).

Kept apart from the connection (core.probes.transport.ssh) because it is the one place secrets pass
through: what is asked, what is offered, in what order, and when to stop, read together here.
"""

from __future__ import annotations

from collections.abc import Callable

import paramiko

from core.probes.transport.base import AuthenticationFailed
from core.probes.transport.hostkeys import check_not_revoked
from core.probes.transport.known_hosts import KnownHosts
from core.probes.transport.ssh_keys import candidate_keys, open_agent
from core.probes.transport.target import SshTarget, hostport

PromptCallback = Callable[[str], str | None]


class CallbackAuth(paramiko.AuthStrategy):
    """Lets SSHClient.connect hand the authenticated-or-not transport to our own auth sequence."""

    def __init__(self, run: Callable[[paramiko.Transport], None]) -> None:
        super().__init__(ssh_config=paramiko.SSHConfig())
        self._run = run

    def authenticate(self, transport: paramiko.Transport) -> list[object]:
        self._run(transport)
        return []


def authenticate(
    transport: paramiko.Transport,
    target: SshTarget,
    user: str,
    *,
    known: KnownHosts,
    allow_agent: bool,
    look_for_keys: bool,
    password_cb: PromptCallback | None,
    passphrase_cb: PromptCallback | None,
) -> None:
    """Agent keys, then key files (passphrase asked only for an encrypted one), then a password."""
    server_key = transport.get_remote_server_key()  # known, else the policy has already checked it
    check_not_revoked(known, target.host, target.port, server_key)
    description = f"{user}@{hostport(target.host, target.port)}"
    notes: list[str] = []
    try:
        transport.auth_none(user)
        return
    except paramiko.BadAuthenticationType as exc:
        allowed: set[str] | None = set(exc.allowed_types)
    except paramiko.AuthenticationException:
        allowed = None
    tried = 0
    if allowed is None or "publickey" in allowed:
        agent = open_agent(notes) if allow_agent else None
        try:
            for key in candidate_keys(
                agent, target.identity_files, look_for_keys, passphrase_cb, notes
            ):
                tried += 1
                try:
                    remaining = transport.auth_publickey(user, key)
                except paramiko.BadAuthenticationType as exc:
                    allowed = set(exc.allowed_types)
                    break
                except paramiko.AuthenticationException:
                    continue
                except (paramiko.SSHException, OSError, EOFError) as exc:
                    if not transport.is_active():
                        raise AuthenticationFailed(
                            f"authentication failed for user {user}: the server closed the "
                            f"connection after {tried} key(s) (too many authentication attempts?)"
                        ) from exc
                    notes.append(f"a key could not sign: {exc}")
                    continue
                if transport.is_authenticated():
                    return
                allowed = set(remaining)  # partial success: the server wants another method too
                break
        finally:
            if agent is not None:
                agent.close()
    password_allowed = allowed is None or bool({"password", "keyboard-interactive"} & allowed)
    asked = False
    if password_allowed and password_cb is not None:
        secret = password_cb(f"password for {description}:")
        asked = bool(secret)
        if secret:
            try:
                transport.auth_password(user, secret)
            except paramiko.AuthenticationException:
                pass
            except (paramiko.SSHException, OSError, EOFError) as exc:
                notes.append(f"the password exchange failed: {exc}")
            del secret
            if transport.is_authenticated():
                return
    if asked:
        reason = "the password was rejected" + (" and no key was accepted" if tried else "")
    elif password_cb is not None and not password_allowed:
        methods = ", ".join(sorted(allowed or ())) or "nothing"
        reason = f"no key accepted and the server takes no passwords (it allows only {methods})"
    else:
        reason = "no key accepted and no password given"
    detail = f" ({'; '.join(notes)})" if notes else ""
    raise AuthenticationFailed(f"authentication failed for user {user}: {reason}{detail}")


__all__ = ["CallbackAuth", "PromptCallback", "authenticate"]
