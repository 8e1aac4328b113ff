"""The heartbeat rate limit of the agent hooks (docs/harness.md, "The rate limit").

A busy agent calls a tool every few seconds; each call fires PostToolUse. A heartbeat writes
the session record and the lock files, and with ``st.remote`` set it pushes to the remote:
one per tool call would turn an agent's every step into a push. So:

- **one state write per TTL/3 per session**: a stamp per session says until when its last
  heartbeat is good (``next_at``); a hook before that returns at once, reading one small
  file and asking git nothing (:func:`due`, the no-op path);
- **one remote push per machine per interval** (``st.agent.pushInterval``, default 60 s):
  a machine-wide stamp, taken with a non-blocking flock, says when the last heartbeat that
  pushed ran. A session whose turn comes inside that interval waits for the next one —
  unless waiting would put its lease at risk (two thirds of the TTL since its last beat),
  then it beats anyway: a lease is never let lapse to save a push.

The stamps live in ``$XDG_CACHE_HOME/gitst/agent`` (``~/.cache/gitst/agent``): per user and
machine, outside every repository, never committed; losing them costs one extra heartbeat.
They are keyed by the harness's session id (one Claude Code or Codex session works in one
repository). The heartbeat itself is :func:`gitst.sessions.heartbeats.heartbeat`, the one
``git st heartbeat`` runs.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["beat", "due", "record", "stamp_dir"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
MACHINE_STAMP = "remote-push"


def stamp_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gitst", "agent")


def _stamp_path(session: str) -> str | None:
    """The session's stamp; None for an id that cannot name a file (the slow path decides)."""
    if not session or len(session) > 64 or not set(session) <= _SAFE or session.startswith("."):
        return None
    return os.path.join(stamp_dir(), session + ".next")


def _read(path: str) -> tuple[float, float]:
    """``(next_at, last_at)`` of a stamp; ``(0, 0)`` when missing or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        return 0.0, 0.0
    try:
        raw = os.read(fd, 64)
    except OSError:
        return 0.0, 0.0
    finally:
        os.close(fd)
    try:
        next_at, last_at = (float(part) for part in raw.split())
    except ValueError:
        return 0.0, 0.0
    return next_at, last_at


def due(session: str, now: float | None = None) -> bool:
    """True when the session's heartbeat is due (the no-op path answers False with one read)."""
    path = _stamp_path(session)
    if path is None:
        return True
    return (time.time() if now is None else now) >= _read(path)[0]


def record(session: str, next_at: float, last_at: float) -> None:
    """Write the session's stamp (atomically: a temp file renamed over it)."""
    from gitst.core.jsonio import atomic_write_bytes  # lazy: the slow path only

    path = _stamp_path(session)
    if path is None:
        return
    atomic_write_bytes(path, f"{next_at:.3f} {last_at:.3f}\n".encode(), make_parents=True)


def beat(session: str, *, cwd: str, now: float | None = None, force: bool = False) -> str:
    """Heartbeat ``session`` when the limits allow (always with ``force``: SessionStart);
    what happened (``beat``, ``deferred``)."""
    from gitst import settings  # lazy: the slow path only (git config)
    from gitst.core.errors import ConflictError  # lazy: the slow path only
    from gitst.core.filelocks import locked  # lazy: the slow path only
    from gitst.sessions.chats import configured_remote  # lazy: the slow path only

    now = time.time() if now is None else now
    ttl = settings.lock_ttl(cwd)
    _, last_at = _read(_stamp_path(session) or "")
    at_risk = force or last_at <= 0 or now - last_at >= ttl * 2 / 3
    if configured_remote(cwd) is None:
        _heartbeat(session, cwd)
        record(session, now + ttl / 3, now)
        return "beat"
    interval = settings.float_setting("agent_push_interval", cwd)
    machine = os.path.join(stamp_dir(), MACHINE_STAMP)
    try:
        with locked(machine + ".lock", 0):
            pushed_at, _ = _read(machine)
            if now - pushed_at < interval and not at_risk:
                record(session, min(pushed_at + interval, last_at + ttl * 2 / 3), last_at)
                return "deferred"
            _heartbeat(session, cwd)
            _write_machine(machine, now)
    except ConflictError:  # another session of this machine is pushing right now
        if not at_risk:
            record(session, min(now + 5.0, last_at + ttl * 2 / 3), last_at)
            return "deferred"
        _heartbeat(session, cwd)
    record(session, now + ttl / 3, now)
    return "beat"


def _write_machine(path: str, now: float) -> None:
    from gitst.core.jsonio import atomic_write_bytes  # lazy: the slow path only

    atomic_write_bytes(path, f"{now:.3f} {now:.3f}\n".encode(), make_parents=True)


def _heartbeat(session: str, cwd: str) -> None:
    """The one heartbeat (``git st heartbeat``'s): every lock of the session renewed."""
    from gitst.sessions.heartbeats import heartbeat  # lazy: the slow path only
    from gitst.sessions.identity import current  # lazy: the slow path only
    from gitst.statedir.paths import state_dir  # lazy: the slow path only

    heartbeat(current(session), root=state_dir(cwd), cwd=cwd)


def stamp_of(session: str) -> Path | None:
    """The session's stamp path (tests and `git st prime` show it)."""
    from pathlib import Path  # lazy: the slow path only

    path = _stamp_path(session)
    return Path(path) if path else None
