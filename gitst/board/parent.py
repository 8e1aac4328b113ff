"""The board stops when the process that started it dies: :class:`ParentWatch`."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from gitst.sessions.identity import name_and_parent, pid_alive, process_start

__all__ = ["ParentWatch"]


def _watched_parents() -> list[tuple[int, int | None]]:
    """The process that started us, and the ``git`` processes between it and us (``git st
    board`` runs git-st as git's child): (pid, start time) each."""
    out: list[tuple[int, int | None]] = []
    pid = os.getppid()
    while pid > 1:
        out.append((pid, process_start(pid)))
        found = name_and_parent(pid)
        if found is None or found[0] != "git":
            break
        pid = found[1]
    return out


class ParentWatch:
    """Calls ``on_death`` once when a watched parent is gone (polled every ``every`` s)."""

    def __init__(self, on_death: Callable[[], None], every: float = 0.5) -> None:
        self.parents = _watched_parents()
        self.on_death = on_death
        self.every = every

    def gone(self) -> bool:
        return any(not pid_alive(pid, start) for pid, start in self.parents)

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.every):
            if self.gone():
                self.on_death()
                return
