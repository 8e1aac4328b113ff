"""Short-lived exclusive file locks around read-modify-write (the ``<file>.lock`` sidecars).

Used by every writer that reads, changes and writes back a file: the plan engine
(``<plan>.lock``, timeout ``ST_LOCK_TIMEOUT``) and the state-dir JSON writers. A lock that
cannot be had within the timeout is a conflict (exit 3) naming the sidecar. These are not
the TTL locks of ``git st lock`` (those live in ``state/locks/`` and outlive a process).

:func:`held` is the one other flock: an operation lock whose descriptor child processes may
inherit, so that it outlives a killed parent for as long as its git children still run.

The lock is ``fcntl.flock``, taken here directly: the same ``flock`` on the same file that
``filelock``'s ``UnixFileLock`` takes, so gitst processes and any other ``filelock`` user of a
sidecar still exclude each other (tests/e2e/plan/test_cli.py holds one with filelock) — but
without importing filelock, which costs a plan write 35-85 ms (it loads asyncio, logging and
hashlib). gitst runs on POSIX systems only (docs/decisions.md, "Python and dependencies"): no
fallback for a system without ``flock``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gitst.core.errors import ConflictError, EnvironmentProblem
from gitst.core.jsonio import write_error
from gitst.core.safepaths import check

__all__ = [
    "Held",
    "held",
    "locked",
]

POLL_INTERVAL = 0.005


def _busy(path: Path, wait: float, message: str | None = None) -> ConflictError:
    return ConflictError(
        message or f"could not lock {path} within {wait:g}s: another gitst process is writing",
        fix="wait and retry, or raise ST_LOCK_TIMEOUT",
    )


def _cannot(path: Path, exc: OSError) -> EnvironmentProblem:
    # e.g. ELOOP on a symlinked sidecar, EACCES, a read-only tree
    return EnvironmentProblem(f"cannot lock {path}: {exc.strerror or exc}")


def _sidecar_path(sidecar: str | os.PathLike[str]) -> Path:
    """``sidecar`` checked (a link or a FIFO there is refused, exit 2, never opened) and its
    directory made (a failure is exit 4)."""
    path = Path(sidecar)
    check(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(path.parent, exc, verb="create") from None
    return path


@contextlib.contextmanager
def locked(sidecar: str | os.PathLike[str], timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on ``sidecar`` (created if missing) for the ``with`` block,
    waiting at most ``timeout`` seconds (callers pass :func:`gitst.settings.lock_timeout`)."""
    path = _sidecar_path(sidecar)
    fd = _flock(path, timeout)
    try:
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _flock(
    path: Path,
    timeout: float,
    *,
    busy: str | None = None,
    on_busy: Callable[[], object] | None = None,
) -> int:
    """An open descriptor of ``path`` holding its exclusive flock (polled every 5 ms until
    ``timeout``; then a conflict saying ``busy``). The sidecar is opened without following a
    symbolic link and without blocking on a lease; a sidecar unlinked or replaced while we
    waited is opened again. ``on_busy()`` is called once when the lock is first found busy."""
    deadline = time.monotonic() + timeout
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC
    while True:
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise _cannot(path, exc) from None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    os.close(fd)
                    raise _cannot(path, exc) from None
            if on_busy is not None:
                try:
                    on_busy()
                except BaseException:
                    os.close(fd)
                    raise
                on_busy = None
            if time.monotonic() >= deadline:
                os.close(fd)
                raise _busy(path, timeout, busy)
            # A writer that waits 50 ms between tries (filelock's default) loses up to 50 ms
            # per turn under contention (8 plan writers x 100 mutations took 8 s); 5 ms costs
            # nothing while waiting and hands the lock over promptly.
            time.sleep(POLL_INTERVAL)
        try:
            held = os.fstat(fd)
            current = os.stat(path, follow_symlinks=False)
        except OSError:
            current = None
        if current is not None and held.st_nlink and (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino):
            return fd
        os.close(fd)  # the file we locked is no longer the sidecar: lock the one that is


class Held:
    """An exclusive flock held on an open file (see :func:`held`)."""

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: Path):
        self.fd = fd
        self.path = path

    @contextlib.contextmanager
    def shared_with_children(self) -> Iterator[None]:
        """Let the processes started inside the block inherit the lock: it stays held until
        they exit too, even when this process is killed (a flock belongs to the open file,
        which every process holding the descriptor shares)."""
        os.set_inheritable(self.fd, True)
        try:
            yield
        finally:
            os.set_inheritable(self.fd, False)


@contextlib.contextmanager
def held(
    sidecar: str | os.PathLike[str],
    timeout: float,
    *,
    busy: str | None = None,
    on_busy: Callable[[], object] | None = None,
) -> Iterator[Held]:
    """Hold an exclusive flock on ``sidecar`` (created if missing) for a whole operation.

    Like :func:`locked`, but the descriptor is ours to pass on (:meth:`Held.shared_with_children`),
    which filelock does not offer: ``worktree add`` and ``remove`` keep their issue's
    operation lock held by the git processes they start. ``timeout`` 0 tries once. A busy
    lock is a conflict (exit 3) saying ``busy`` (or naming the sidecar). ``on_busy()`` is
    called once when the lock is found busy, before waiting: it may raise to give up at once.
    """
    path = _sidecar_path(sidecar)
    fd = _flock(path, timeout, busy=busy, on_busy=on_busy)
    try:
        yield Held(fd, path)
    finally:
        os.close(fd)  # drops our hold; children that inherited the descriptor keep theirs
