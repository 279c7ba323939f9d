"""Files sent to an SSH host: one SFTP upload on the live connection, its mode set, a failure said
in one sentence (no SFTP on the server, a path that cannot be written, the connection lost on the
way).

Apart from the connection and its commands (core.probes.transport.ssh) because a file goes over
SFTP, a protocol of its own on the same connection, with its own ways to fail.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import paramiko

from core.probes.transport.base import Disconnected, TransportError


def sftp_put(
    connection: Callable[[], paramiko.Transport],
    local: Path,
    remote_path: str,
    mode: int,
    *,
    description: str,
    lost: Callable[[str], Disconnected],
) -> None:
    """Upload ``local`` to ``remote_path`` over SFTP and set its mode. ``connection`` gives the live
    SSH transport (asked only once the local file is found), ``lost`` the error of a connection that
    died on the way."""
    if not Path(local).is_file():
        raise TransportError(f"local file {local} does not exist or is not a file")
    transport = connection()
    try:
        sftp = paramiko.SFTPClient.from_transport(transport)
    except (paramiko.SSHException, OSError, EOFError) as exc:
        if not transport.is_active():
            raise lost(" during upload") from exc
        raise TransportError(f"{description} does not offer SFTP for uploads: {exc}") from exc
    if sftp is None:
        raise TransportError(f"{description} does not offer SFTP for uploads")
    try:
        sftp.put(str(local), remote_path)
        sftp.chmod(remote_path, mode)
    except (OSError, paramiko.SSHException, EOFError) as exc:
        if not transport.is_active():
            raise lost(" during upload") from exc
        reason = getattr(exc, "strerror", None) or exc
        raise TransportError(
            f"could not upload {local} to {description}:{remote_path}: {reason}"
        ) from exc
    finally:
        sftp.close()


__all__ = ["sftp_put"]
