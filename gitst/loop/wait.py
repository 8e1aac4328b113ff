"""``git st next --wait [SECONDS]``: take the next item, waiting while none can be taken yet.

:func:`gitst.loop.take.take` answers at once; when pending items exist but none is ready or
free (exit 3: they wait on dependencies, or live sessions hold them) this retries it until
one is taken, nothing is left to take (exit 1), or ``wait`` seconds have passed (then the
last exit 3). Between tries it sleeps through a :class:`gitst.loop.backoff.Backoff` (0.25 s
doubling to 2 s, jittered), so a dozen waiting agents ask the remote a few times a second in
all instead of each twice a second; each try is one ``next`` (one fetch: the base and the
claims together). It says once on stderr what it waits for, and again only when that changes.

What the wait cost is told apart from the take (:class:`Waited`): the seconds slept between
tries, the tries that found nothing to take and their seconds ("polled"); what is left of the
command is the take itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from gitst.core.values import value_class
from gitst.loop.backoff import Backoff
from gitst.loop.take import Filters, NothingToTake, Taken, take
from gitst.sessions.identity import Identity

__all__ = ["Waited", "take_waiting"]

PathLike = str | os.PathLike[str] | None


@value_class(frozen=True)
class Waited:
    """How a ``next --wait`` waited before the try that took its item."""

    slept: float  # seconds slept between tries (the backoff's pauses)
    polled: float  # seconds of the tries that found nothing to take yet
    tries: int  # tries in all, the one that took the item included

    def to_dict(self) -> dict[str, float | int]:
        """``waited``: every second before the try that took the item (sleeps and tries that
        found nothing), of them ``polled`` the tries; ``tries`` counts the last one too."""
        return {"waited": round(self.slept + self.polled, 3), "polled": round(self.polled, 3), "tries": self.tries}


def take_waiting(
    who: Identity,
    *,
    remote: str | None,
    filters: Filters,
    ttl: float,
    wait: float,
    cwd: PathLike = None,
    say: Callable[[str], None] = print,
) -> tuple[Taken, Waited]:
    """The item taken and how it waited for it; NothingToTake as :func:`take` raises it,
    a ``wait`` one only once ``wait`` seconds have passed."""
    backoff = Backoff(wait, first=0.25, most=2.0)
    told = ""
    slept = polled = 0.0
    tries = 0
    while True:
        tries += 1
        started = time.monotonic()
        try:
            taken = take(who, remote=remote, filters=filters, ttl=ttl, cwd=cwd, say=say)
            return taken, Waited(slept, polled, tries)
        except NothingToTake as nothing:
            polled += time.monotonic() - started
            started = time.monotonic()
            if nothing.reason != "wait" or not backoff.pause():
                raise
            slept += time.monotonic() - started
            now = _waiting_for(nothing)
            if now != told:
                told = now
                say(f"gitst: waiting for an item on {nothing.base.shown}: {now}")


def _waiting_for(nothing: NothingToTake) -> str:
    held = ", ".join(p["id"] for p in nothing.passed)
    parts = [f"held by live sessions: {held}"] if held else []
    if nothing.waiting:
        parts.append(f"waiting on dependencies: {', '.join(nothing.waiting)}")
    return "; ".join(parts) or "nothing ready"
