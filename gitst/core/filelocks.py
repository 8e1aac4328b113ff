"""Short-lived exclusive file locks around read-modify-write (the ``<file>.lock`` sidecars).

Used by every writer that reads, changes and writes back a file: the plan engine
(``<plan>.lock``, timeout ``ST_LOCK_TIMEOUT``) and the state-dir JSON writers. A lock that
cannot be had within the timeout is a conflict (exit 3) naming the sidecar. These are not
the TTL locks of ``git st lock`` (those live in ``state/locks/`` and outlive a process).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from gitst.core.errors import ConflictError, EnvironmentProblem

__all__ = [
    "locked",
]

POLL_INTERVAL = 0.005


@contextlib.contextmanager
def locked(sidecar: str | os.PathLike, timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on ``sidecar`` (created if missing) for the ``with`` block,
    waiting at most ``timeout`` seconds (callers pass :func:`gitst.settings.lock_timeout`)."""
    from filelock import FileLock, Timeout

    from gitst.core.jsonio import write_error
    from gitst.core.safepaths import check

    path = Path(sidecar)
    check(path)  # a link or a FIFO there is refused (exit 2), never opened
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(path.parent, exc, verb="create") from None
    wait = timeout
    lock = FileLock(str(path), timeout=wait)
    try:
        # filelock polls a busy lock every 50 ms by default: under contention each waiting
        # writer lost up to 50 ms per turn (8 plan writers x 100 mutations took 8 s). 5 ms
        # costs nothing while waiting and hands the lock over promptly.
        lock.acquire(poll_interval=POLL_INTERVAL)
    except Timeout:
        raise ConflictError(
            f"could not lock {path} within {wait:g}s: another gitst process is writing",
            fix="wait and retry, or raise ST_LOCK_TIMEOUT",
        ) from None
    except OSError as exc:  # e.g. EACCES, a read-only tree, a full disk
        raise EnvironmentProblem(f"cannot lock {path}: {exc.strerror or exc}") from None
    try:
        yield
    finally:
        lock.release()
