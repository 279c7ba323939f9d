"""What a failed SSH connection says: paramiko's and the socket's failures, each turned into one
sentence that names the host and what to check (unresolved name, refused, silent, no SSH greeting, a
proxy that failed, a changed or revoked host key, the algorithms refused, authentication).

A module of its own because the sentences are the user's whole view of a failed connect, and the
cases grow with each server and proxy met; the connection itself (core.probes.transport.ssh) only
calls `connect_error`.
"""

from __future__ import annotations

import socket

import paramiko

from core.probes.transport.algorithms import refusal
from core.probes.transport.base import (
    AuthenticationFailed,
    HostKeyRevoked,
    TransportError,
    Unreachable,
)
from core.probes.transport.hostkeys import changed_key_error, check_not_revoked
from core.probes.transport.known_hosts import KnownHosts
from core.probes.transport.proxy import ProxyProcess
from core.probes.transport.target import SshTarget, hostport

# a failed connection waits this long for its proxy to be gone, to say the proxy failed
_PROXY_EXIT_S = 1.0


def connect_error(
    exc: BaseException,
    target: SshTarget,
    user: str,
    *,
    timeout: float,
    known: KnownHosts,
    proxy: ProxyProcess | None,
    transport: paramiko.Transport | None = None,
) -> BaseException:
    """Turn paramiko/socket failures into one clear sentence; pass our own errors through."""
    where = hostport(target.host, target.port)
    if isinstance(exc, TransportError | KeyboardInterrupt | SystemExit):
        return exc
    if isinstance(exc, paramiko.BadHostKeyException):
        try:
            check_not_revoked(known, target.host, target.port, exc.key)
        except HostKeyRevoked as revoked:
            return revoked
        return changed_key_error(target.host, target.port, exc.expected_key, exc.key)
    if isinstance(exc, socket.gaierror):
        return Unreachable(f"host name '{target.host}' could not be resolved: {exc.strerror}")
    if isinstance(exc, ConnectionRefusedError):
        return Unreachable(f"host {where} refused the connection")
    if isinstance(exc, TimeoutError | socket.timeout):
        return Unreachable(f"host {where} did not answer within {timeout:g} s")
    if isinstance(exc, paramiko.IncompatiblePeer):
        return Unreachable(refusal(where, transport, exc))
    if isinstance(exc, paramiko.AuthenticationException):
        return AuthenticationFailed(f"authentication failed for user {user}: {exc}")
    if proxy is not None and proxy.exited(within=_PROXY_EXIT_S):
        return Unreachable(f"proxy command for {where} failed: {proxy.failure()}")
    if proxy is not None and not (transport is not None and transport.remote_version):
        # Running, and nothing came through it: paramiko then reports its own state ("No existing
        # session").
        return Unreachable(
            f"the proxy command '{proxy.command}' for {where} did not answer within "
            f"{timeout:g} s (no SSH greeting came through it)"
        )
    via = " (through the proxy)" if target.proxy_command or target.proxy_jump else ""
    if isinstance(exc, paramiko.SSHException) and "protocol banner" in str(exc):
        return Unreachable(
            f"host {where} does not answer as an SSH server{via}: it sent no SSH greeting "
            "before closing; check the host and the port"
        )
    if isinstance(exc, paramiko.SSHException | EOFError):
        return Unreachable(
            f"host {where} closed the connection during SSH setup{via}: {exc or type(exc).__name__}"
        )
    if isinstance(exc, OSError):
        return Unreachable(f"host {where} cannot be reached: {exc.strerror or exc}")
    return Unreachable(f"connecting to {where} failed: {type(exc).__name__}: {exc}")


__all__ = ["connect_error"]
