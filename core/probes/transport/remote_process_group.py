"""The shell side of killable remote commands: start each in its own process group, print its id,
kill it.

Closing an SSH channel does not stop a command started without a terminal, so `SshTransport` sends
every command inside `wrap_command`'s wrapper: it makes sure the command leads a process group,
prints a marker line with that group's id on stdout before the command runs (`take_marker` finds it
behind whatever login scripts print, on a line of its own even when they end without a newline), and
the marker alone on stderr (`after_stderr_marker` drops what the login scripts wrote there before
it), and bounds the command with coreutils ``timeout`` when a limit is given. `kill_group_command`
is what a second channel runs to end that group: TERM, then KILL for what is still alive after two
seconds.
"""

from __future__ import annotations

import re
import shlex

_MARK_RE = re.compile(rb"^(__tuneplan_pg_[0-9a-f]+__) (\d+)\r?\n", re.MULTILINE)

# Both scripts run under bash on the remote but are first read by the user's login shell (sh, bash,
# zsh, fish, csh...), so each is one line without '!' (csh expands history and rejects newlines even
# in single quotes).
#
# The wrapper's args: $1 marker, $2 command, $3 remote time limit ("" for none). sshd makes the
# session's shell a session (and group) leader, so $$ is the group to kill; where that is not so,
# re-run once under setsid. Every bash here is --norc: bash sources ~/.bashrc when it thinks sshd
# started it (SSH_CLIENT set, SHLVL below 2, and `exec` keeps SHLVL), so each `exec bash -c` would
# run the user's ~/.bashrc again, after the marker, its output in the command's own. The login shell
# has run it once, as `ssh host command` does.
_WRAPPER = "; ".join(
    [
        'if [ -z "$_TUNEPLAN_SETSID" ]',
        "then read -r _ _ _ _ pg _ 2>/dev/null < /proc/$$/stat",
        '  if [ "$pg" = "$$" ]',
        "  then :",
        "  elif command -v setsid >/dev/null 2>&1",
        "  then export _TUNEPLAN_SETSID=1",
        '    exec setsid -w bash --norc -c "$BASH_EXECUTION_STRING" "$0" "$@"',
        "  fi",
        "fi",
        "unset _TUNEPLAN_SETSID",
        r'printf "\n%s %s\n" "$1" "$$"',
        r'printf "\n%s\n" "$1" >&2',
        'if [ -n "$3" ] && command -v timeout >/dev/null 2>&1',
        'then exec timeout -k 5 "$3" bash --norc -c "$2"',
        "fi",
        'exec bash --norc -c "$2"',
    ]
)

# {pg} is an integer we parsed. Counts only live (not zombie) members: in containers whose init does
# not reap, orphaned zombies would otherwise look alive until the KILL.
_KILL_SCRIPT = "; ".join(
    [
        "alive() {{ if [ -r /proc/self/stat ]",
        "then for f in /proc/[0-9]*/stat",
        'do read -r s 2>/dev/null < "$f" || continue',
        "s=${{s##*) }}",
        "set -- $s",
        'case "$1" in Z) ;; *) [ "$3" = {pg} ] && return 0 ;; esac',
        "done",
        "return 1",
        "fi",
        "kill -0 -- -{pg} 2>/dev/null",
        "}}",
        "kill -TERM -- -{pg} 2>/dev/null || exit 0",
        "for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
        "do alive || exit 0",
        "sleep 0.1",
        "done",
        "kill -KILL -- -{pg} 2>/dev/null",
        "exit 0",
    ]
)


def wrap_command(command: str, marker: str, remote_limit_s: int | None) -> str:
    """The command line sent to the server: our wrapper around ``command``, every value
    shell-quoted."""
    limit = "" if remote_limit_s is None else str(remote_limit_s)
    return " ".join(
        [
            "exec bash --norc -c",
            shlex.quote(_WRAPPER),
            "tuneplan",
            shlex.quote(marker),
            shlex.quote(command),
            shlex.quote(limit),
        ]
    )


def kill_group_command(pgid: int) -> str:
    """The command line that kills remote process group ``pgid`` (TERM, then KILL after 2 s)."""
    return "exec bash --norc -c " + shlex.quote(_KILL_SCRIPT.format(pg=pgid))


def take_marker(head: bytes, marker: str) -> tuple[int | None, bytes]:
    """Find our ``<marker> <pgid>`` line; return the pgid and the stdout bytes after it."""
    for match in _MARK_RE.finditer(head):
        if match.group(1).decode() == marker:
            return int(match.group(2)), head[match.end() :]
    return None, b""


def after_stderr_marker(stderr: bytes, marker: str) -> bytes:
    """The command's own stderr: what follows the wrapper's marker line, which the shell's startup
    files (a ``~/.bashrc`` that talks) cannot write after. Without the marker (the wrapper never
    ran) all of it."""
    found = stderr.find(b"\n" + marker.encode() + b"\n")
    return stderr if found < 0 else stderr[found + len(marker) + 2 :]


__all__ = ["after_stderr_marker", "kill_group_command", "take_marker", "wrap_command"]
