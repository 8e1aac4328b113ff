"""Waiting without hammering: a deadline, a pause that doubles, and jitter.

Every wait of the agent loop (``next --wait``, ``land`` waiting for the merge slot) sleeps
through one :class:`Backoff`: the pause starts at ``first`` seconds, doubles after each try up
to ``most``, and each sleep is drawn uniformly from the upper half of the current pause, so
N agents that started together spread out instead of asking the remote in lockstep. The
last sleep is cut to the deadline; nothing here asks git anything.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from gitst.core.values import field, value_class

__all__ = ["Backoff"]


@value_class
class Backoff:
    wait: float  # seconds in all; 0: never sleep
    first: float = 0.2
    most: float = 2.0
    started: float = field(default_factory=time.monotonic)
    tries: int = 0
    _pause: float = 0.0

    @property
    def waited(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        return self.wait - self.waited

    def pause(self, most: float | None = None, sleep: Callable[[float], object] | None = None) -> bool:
        """Sleep before the next try; False (no sleep) once the deadline has passed. ``most``:
        this pause's limit, below the backoff's own (the pause still doubles behind it);
        ``sleep``: how (default :func:`time.sleep`; one that may end early: the slot's doorbell)."""
        left = self.left()
        if left <= 0:
            return False
        self._pause = self.first if self.tries == 0 else min(self._pause * 2, self.most)
        self.tries += 1
        pause = self._pause if most is None else min(self._pause, most)
        (sleep or time.sleep)(min(left, random.uniform(pause / 2, pause)))  # noqa: S311 - jitter, not a secret
        return True
