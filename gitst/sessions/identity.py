"""Who is acting: session id, session pid (for liveness), actor and host.

docs/decisions.md: session id is ``--session``, else ``ST_SESSION_ID``, ``CLAUDE_SESSION_ID``,
``CODEX_THREAD_ID``, else ``pid-<session pid>@<host>``. The session pid is
``ST_SESSION_PID``, else the nearest ancestor of this process that is not git itself
(the agent's shell or process), never the short-lived ``git-st`` process. Actor is
``ST_ACTOR``, else ``USER``. Host is ``ST_HOST``, else the host name (set ``ST_HOST``
when containers with changing host names share one state dir).

Walking up to the session pid skips git, ``git-st``/``gitst``, and any process whose
parent is git (a hook shim or an alias's shell that git started and that dies with it).

Liveness is checked against the pid *and* its start time (``pid_start``, from
``/proc/<pid>/stat``) where the system has it, so a recycled pid does not keep a dead
session's claim alive.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

__all__ = [
    "Identity",
    "actor",
    "current",
    "host",
    "pid_alive",
    "process_start",
    "session_id",
]

_SESSION_ENV = ("ST_SESSION_ID", "CLAUDE_SESSION_ID", "CODEX_THREAD_ID")
_SKIP_NAMES = {"git", "git-st", "gitst"}


def host() -> str:
    return _utf8(os.environ.get("ST_HOST") or socket.gethostname(), "ST_HOST")


def actor() -> str:
    for name in ("ST_ACTOR", "USER", "LOGNAME"):
        value = os.environ.get(name)
        if value:
            return _utf8(value, name)
    return "unknown"


def _utf8(value: str, source: str) -> str:
    """``value`` when it is UTF-8 text: it is written into UTF-8 JSON records (exit 2 if not)."""
    from gitst.settings import require_utf8

    return require_utf8(value, source)


def _proc_stat(pid: int) -> tuple[str, list[str]] | None:
    """(command name, the fields after it) from /proc/<pid>/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # comm is in parentheses and may itself hold spaces or parentheses.
    left, right = raw.index("("), raw.rindex(")")
    return raw[left + 1 : right], raw[right + 2 :].split()


def _proc_name_and_parent(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) from /proc, or None where /proc is unavailable."""
    stat = _proc_stat(pid)
    if stat is None:
        return None
    comm, fields = stat
    return comm, int(fields[1])


def process_start(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (None where unknown)."""
    stat = _proc_stat(pid)
    if stat is None:
        return None
    try:
        return int(stat[1][19])  # field 22 of stat; fields[0] is field 3
    except (IndexError, ValueError):
        return None


def _env_session_pid() -> int | None:
    env = os.environ.get("ST_SESSION_PID")
    if not env:
        return None
    from gitst.settings import positive_int

    return positive_int(env, "ST_SESSION_PID", maximum=2**31 - 1)  # pid_t: what the kernel can name


def session_pid() -> int:
    """The pid whose life defines the session's liveness."""
    env = _env_session_pid()
    if env is not None:
        return env
    pid = os.getppid()
    for _ in range(32):
        info = _proc_name_and_parent(pid)
        if info is None:
            return pid
        name, parent = info
        if parent <= 1:
            return pid
        if name not in _SKIP_NAMES:
            parent_info = _proc_name_and_parent(parent)
            # A process git started (a hook shim, an alias's `sh -c`) lives only as long as git.
            if parent_info is None or parent_info[0] not in _SKIP_NAMES:
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


def pid_alive(pid: int, start: int | None = None) -> bool:
    """True when ``pid`` runs on this host (a zombie counts as dead).

    With ``start`` (a :func:`process_start` value recorded earlier), a process that now
    has the pid but started at another time is a different process: dead for us.
    """
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OverflowError:
        return False
    stat = _proc_stat(pid)
    if stat is None:
        return True
    fields = stat[1]
    if fields and fields[0] in ("Z", "X", "x"):
        return False
    if start is not None:
        try:
            return int(fields[19]) == start
        except (IndexError, ValueError):
            return True
    return True


@dataclass(frozen=True)
class Identity:
    """Everything a lock or claim records about its owner."""

    session: str
    pid: int
    host: str
    actor: str
    pid_start: int | None = None

    def owner(self) -> dict:
        """The ``owner`` object of a lock record (schema ``state-lock``)."""
        data = {"session": self.session, "pid": self.pid, "host": self.host, "actor": self.actor}
        if self.pid_start is not None:
            data["pid_start"] = self.pid_start
        return data


def current(explicit_session: str | None = None) -> Identity:
    """The acting session, its pid (with start time), host and actor.

    The session id is validated here (it names ``active-chats/<session>.json``): a bad one
    is a UsageError (exit 2) before anything is written.
    """
    from gitst.statedir.paths import validate_session

    pid = session_pid()
    session = validate_session(session_id(explicit_session))
    return Identity(session=session, pid=pid, host=host(), actor=actor(), pid_start=process_start(pid))
