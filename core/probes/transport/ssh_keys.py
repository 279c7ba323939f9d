"""Which keys an SSH connection offers, in OpenSSH's order: the agent's, then the identity files (or
the default ones), each file read once and an encrypted one unlocked only when the agent does not
already hold it."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import paramiko

DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")


def candidate_keys(
    agent: paramiko.Agent | None,
    identity_files: Sequence[str],
    look_for_keys: bool,
    passphrase_cb: Callable[[str], str | None] | None,
    notes: list[str],
) -> Iterator[paramiko.PKey]:
    """Keys in OpenSSH's order; files already in the agent are skipped (no needless passphrase
    prompt)."""
    offered: set[bytes] = set()
    if agent is not None:
        for agent_key in agent.get_keys():
            offered.add(agent_key.asbytes())
            yield agent_key
    files = [os.path.expanduser(f) for f in identity_files]
    if not files and look_for_keys:
        ssh_dir = Path(os.path.expanduser("~")) / ".ssh"
        files = [str(ssh_dir / name) for name in DEFAULT_KEYS if (ssh_dir / name).exists()]
    for path in files:
        if not os.path.exists(path):
            notes.append(f"identity file {path} does not exist")
            continue
        public = public_blob(path)
        if public is not None and public in offered:
            continue
        key = load_key(path, passphrase_cb, notes)
        if key is not None and key.asbytes() not in offered:
            offered.add(key.asbytes())
            yield key


def load_key(
    path: str, passphrase_cb: Callable[[str], str | None] | None, notes: list[str]
) -> paramiko.PKey | None:
    """A key file, asking `passphrase_cb` when it is encrypted; None (with a note saying why) when
    it cannot be had."""
    try:
        return paramiko.PKey.from_path(path)
    except TypeError:
        pass  # cryptography's way of saying "this key is encrypted"
    except (ValueError, OSError, paramiko.SSHException) as exc:
        notes.append(f"key {path} could not be read: {exc}")
        return None
    if passphrase_cb is None:
        notes.append(f"key {path} is encrypted and no passphrase was given")
        return None
    passphrase = passphrase_cb(f"passphrase for key {path}:")
    if not passphrase:
        notes.append(f"key {path} is encrypted and no passphrase was given")
        return None
    try:
        return paramiko.PKey.from_path(path, passphrase.encode("utf-8"))
    except (TypeError, ValueError, OSError, paramiko.SSHException):
        notes.append(f"the passphrase for key {path} is wrong")
        return None
    finally:
        del passphrase


def open_agent(notes: list[str]) -> paramiko.Agent | None:
    try:
        return paramiko.Agent()
    except (paramiko.SSHException, OSError) as exc:
        notes.append(f"the SSH agent could not be used: {exc}")
        return None


def public_blob(private_path: str) -> bytes | None:
    """The public key blob from ``<key>.pub``, to recognise a key already offered by the agent."""
    try:
        fields = Path(private_path + ".pub").read_text(encoding="ascii", errors="replace").split()
        return base64.b64decode(fields[1]) if len(fields) >= 2 else None
    except (OSError, ValueError):
        return None
