"""``git st next --wait [SECONDS]``: take the next item, waiting while none can be taken yet.

:func:`gitst.loop.take.take` answers at once; when pending items exist but none is ready or
free (exit 3: they wait on dependencies, or live sessions hold them) this retries it until
one is taken, nothing is left to take (exit 1), or ``wait`` seconds have passed (then the
last exit 3). Between tries it sleeps through a :class:`gitst.loop.backoff.Backoff` (0.25 s
doubling to 2 s, jittered), so a dozen waiting agents ask the remote a few times a second in
all instead of each twice a second; each try is one ``next`` (one fetch: the base and the
claims together). It says once on stderr what it waits for, and again only when that changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from gitst.loop.backoff import Backoff
from gitst.loop.take import Filters, NothingToTake, Taken, take
from gitst.sessions.identity import Identity

__all__ = ["take_waiting"]

PathLike = str | os.PathLike[str] | None


def take_waiting(
    who: Identity,
    *,
    remote: str | None,
    filters: Filters,
    ttl: float,
    wait: float,
    cwd: PathLike = None,
    say: Callable[[str], None] = print,
) -> tuple[Taken, float]:
    """The item taken and the seconds waited for it; NothingToTake as :func:`take` raises it,
    a ``wait`` one only once ``wait`` seconds have passed."""
    backoff = Backoff(wait, first=0.25, most=2.0)
    told = ""
    while True:
        try:
            return take(who, remote=remote, filters=filters, ttl=ttl, cwd=cwd, say=say), backoff.waited
        except NothingToTake as nothing:
            if nothing.reason != "wait" or not backoff.pause():
                raise
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
