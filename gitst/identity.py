"""Who is acting: session id, session pid (for liveness), actor and host.

DESIGN.md: session id is ``--session``, else ``ST_SESSION_ID``, ``CLAUDE_SESSION_ID``,
``CODEX_THREAD_ID``, else ``pid-<session pid>@<host>``. The session pid is
``ST_SESSION_PID``, else the nearest ancestor of this process that is not git itself
(the agent's shell or process), never the short-lived ``git-st`` process. Actor is
``ST_ACTOR``, else ``USER``.
"""

from __future__ import annotations

import os
import socket

_SESSION_ENV = ("ST_SESSION_ID", "CLAUDE_SESSION_ID", "CODEX_THREAD_ID")
_SKIP_NAMES = {"git", "git-st", "gitst"}


def host() -> str:
    return socket.gethostname()


def actor() -> str:
    return os.environ.get("ST_ACTOR") or os.environ.get("USER") or os.environ.get("LOGNAME") or "unknown"


def _proc_name_and_parent(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) from /proc, or None where /proc is unavailable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # comm is in parentheses and may itself hold spaces or parentheses.
    left, right = raw.index("("), raw.rindex(")")
    comm = raw[left + 1 : right]
    fields = raw[right + 2 :].split()
    return comm, int(fields[1])


def session_pid() -> int:
    """The pid whose life defines the session's liveness."""
    env = os.environ.get("ST_SESSION_PID")
    if env:
        try:
            pid = int(env)
            if pid > 0:
                return pid
        except ValueError:
            pass
    pid = os.getppid()
    for _ in range(16):
        info = _proc_name_and_parent(pid)
        if info is None:
            return pid
        name, parent = info
        if name not in _SKIP_NAMES or parent <= 1:
            return pid
        pid = parent
    return pid


def session_id(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    for name in _SESSION_ENV:
        value = os.environ.get(name)
        if value:
            return value
    return f"pid-{session_pid()}@{host()}"


def pid_alive(pid: int) -> bool:
    """True when ``pid`` runs on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
        return state != b"Z"
    except (OSError, IndexError):
        return True
