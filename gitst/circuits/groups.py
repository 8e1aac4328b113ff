"""The process group a ``circuit run`` command runs in: started as a group of its own,
the terminal's foreground group while it runs, ended whole (SIGTERM, then SIGKILL after
:data:`TERMINATE_GRACE` seconds); SIGTERM and SIGHUP interrupt the runner as Ctrl-C does."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any, NoReturn, Protocol

from gitst.sessions.identity import group_members

__all__ = [
    "TERMINATE_GRACE",
    "Leader",
    "end_group",
    "foreground",
    "own_group",
    "signal_number",
    "terminal_signals_interrupt",
]

TERMINATE_GRACE = 2.0  # seconds a timed-out command gets between SIGTERM and SIGKILL


class Leader(Protocol):
    """A group's leader as this process started it (a ``subprocess.Popen``): reaped by
    :func:`end_group`. The group's processes are started by :mod:`gitst.circuits.breaker`."""

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


def own_group() -> dict[str, Any]:
    """Popen's arguments that start the command as the leader of a new process group."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # pragma: no cover - Python 3.10


def signal_number(name: str) -> int:
    return int(getattr(signal, name))


def end_group(pgid: int, *, leader: Leader | None = None, grace: float = TERMINATE_GRACE) -> None:
    """End process group ``pgid``: SIGTERM, then SIGKILL to whatever is left after ``grace``
    seconds. ``leader`` (its Popen) is reaped, so it does not linger as a zombie."""

    def gone() -> bool:
        if leader is not None:
            leader.poll()
        return not group_members(pgid)

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not gone():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    if leader is not None:
        leader.wait()


@contextlib.contextmanager
def terminal_signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP interrupt ``circuit run`` as Ctrl-C does (so the command's group
    is ended and the trial given back) instead of killing it on the spot."""

    def interrupt(signum: int, frame: object) -> NoReturn:
        raise KeyboardInterrupt

    saved = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = signal_number(name)
        with contextlib.suppress(ValueError, OSError):  # not the main thread: left as they are
            saved[number] = signal.signal(number, interrupt)
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def foreground(pgid: int) -> Iterator[None]:
    """While the command runs, its group is the terminal's foreground group when this
    process had the terminal (so it may read it and gets Ctrl-C); given back after."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        yield  # no terminal: nothing to hand over
        return
    try:
        ours = os.getpgrp()
        handed = False
        with contextlib.suppress(OSError):
            if os.tcgetpgrp(fd) == ours:
                os.tcsetpgrp(fd, pgid)
                handed = True
        try:
            yield
        finally:
            if handed:
                saved = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # now in the background
                try:
                    with contextlib.suppress(OSError):
                        os.tcsetpgrp(fd, ours)
                finally:
                    signal.signal(signal.SIGTTOU, saved)
    finally:
        os.close(fd)
