"""``git st next --wait [SECONDS]``: take the next item, waiting while none can be taken yet.

:func:`gitst.loop.take.take` answers at once; when pending items exist but none is ready or
free (exit 3: they wait on dependencies, or live sessions hold them) this retries it until
one is taken, nothing is left to take (exit 1), or ``wait`` seconds have passed (then the
last exit 3). Between tries it sleeps through a :class:`gitst.loop.backoff.Backoff` (1 s
doubling to 4 s, jittered: the first sleep 0.5-1 s), so a dozen waiting agents ask the remote a
few times a second in all; each try is one ``next`` (one fetch: the base and the claims
together). What a waiting agent waits for is another agent's landing, seconds away at least:
the losers of the swarm's first burst (twelve agents, four items ready) tried again after
0.125-0.25 s, in the middle of the winners' takes, and made them slower (docs/performance.md,
"Round 35"). It says once on stderr what it waits for, and again only when that changes.

A try with more than :data:`BACK_OFF_LEFT` seconds of the wait left **backs off** at a lost
claim race (:func:`gitst.loop.take.take`'s ``back_off``): it ends with nothing taken instead of
reading the remote again to walk on, and the next try, after the pause, looks afresh.

A try that fails on the remote or in git (exit 4: the connection refused or reset, git dying
on another session's half-made worktree, a ref lock) is tried again after the same pause, at
most :data:`RETRIES` times in a row, each failure said on stderr: one transient failure must
not end an agent's loop. A timeout (it already waited its whole deadline), a refusal by the
remote (its hooks or settings) and a failure with no wait left are the answer, as without
``--wait``.

What the wait cost is told apart from the take (:class:`Waited`): the seconds slept between
tries, the tries that found nothing to take (or failed) and their seconds ("polled"); what is
left of the command is the take itself.

With a remote, a pause also ends when a landing on this machine that left nothing pending on
the base rings the merge slot's doorbell (:mod:`gitst.loop.doorbell`, ``pending=0``): the try
after it answers exit 1 at once, not a pause (up to 4 s) later. No other ring wakes it: a
landing must not set every waiting agent asking the remote at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from gitst.core.values import value_class
from gitst.git.remote import RemoteRefused, RemoteTimeout, RemoteUnreachable
from gitst.git.runner import GitError, GitTimeout
from gitst.loop import doorbell as doorbells
from gitst.loop.backoff import Backoff
from gitst.loop.take import Filters, NothingToTake, Taken, take
from gitst.sessions.identity import Identity

__all__ = ["RETRIES", "Waited", "take_waiting"]

RETRIES = 3  # failed tries in a row tried again; the next failure is the answer (exit 4)
BACK_OFF_LEFT = 2.0  # seconds of the wait left for a try to end at a lost claim race (take's back_off)

PathLike = str | os.PathLike[str] | None


@value_class(frozen=True)
class Waited:
    """How a ``next --wait`` waited before the try that took its item."""

    slept: float  # seconds slept between tries (the backoff's pauses)
    polled: float  # seconds of the tries that found nothing to take yet (or failed)
    tries: int  # tries in all, the one that took the item included
    retried: int = 0  # of them, tries that failed on the remote or in git and were tried again

    def to_dict(self) -> dict[str, float | int]:
        """``waited``: every second before the try that took the item (sleeps and tries that
        found nothing or failed), of them ``polled`` the tries; ``tries`` counts the last one
        too; ``retried``: the failed tries."""
        return {
            "waited": round(self.slept + self.polled, 3),
            "polled": round(self.polled, 3),
            "tries": self.tries,
            "retried": self.retried,
        }


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
    backoff = Backoff(wait, first=1.0, most=4.0)
    listening = _Listening(doorbells.for_remote(remote, cwd) if remote is not None and wait > 0 else None)
    told = ""
    slept = polled = 0.0
    tries = retried = failures = 0
    while True:
        tries += 1
        started = time.monotonic()
        listening.mark()  # a landing from now on is news (the take sees any before: its ``since``)
        try:
            taken = take(
                who,
                remote=remote,
                filters=filters,
                ttl=ttl,
                cwd=cwd,
                say=say,
                back_off=backoff.left() > BACK_OFF_LEFT,
            )
            return taken, Waited(slept, polled, tries, retried)
        except NothingToTake as nothing:
            failures = 0
            polled += time.monotonic() - started
            started = time.monotonic()
            if nothing.reason != "wait" or not backoff.pause(sleep=listening.sleep if listening.bell else None):
                raise
            slept += time.monotonic() - started
            now = _waiting_for(nothing)
            if now != told:
                told = now
                say(f"gitst: waiting for an item on {nothing.base.shown}: {now}")
        except (RemoteUnreachable, GitError) as failed:
            polled += time.monotonic() - started
            if not _transient(failed) or failures >= RETRIES or backoff.left() <= 0:
                raise
            failures += 1
            retried += 1
            say(f"gitst: {failed.message}; trying again ({failures} of {RETRIES} in a row)")
            started = time.monotonic()
            backoff.pause()
            slept += time.monotonic() - started


@value_class
class _Listening:
    """A pause that a landing on this machine which left nothing pending ends at once (its ring
    on the merge slot's doorbell says ``pending=0``): the try after it answers exit 1, not one
    pause later. Other landings do not wake it — a ring must not set every waiting agent
    asking the remote."""

    bell: doorbells.Doorbell | None

    def mark(self) -> None:
        """From now on a landing is news."""
        if self.bell is not None:
            self.bell.mark()

    def sleep(self, seconds: float) -> None:
        if self.bell is not None:
            self.bell.wait(seconds, heed=lambda words: "pending=0" in words)


def _transient(failed: RemoteUnreachable | GitError) -> bool:
    """Whether another try may succeed: not after a timeout (the whole deadline was waited) nor
    a refusal by the remote (its policy answers the same way again)."""
    return not isinstance(failed, (RemoteTimeout, RemoteRefused, GitTimeout))


def _waiting_for(nothing: NothingToTake) -> str:
    held = ", ".join(p["id"] for p in nothing.passed)
    parts = [f"held by live sessions: {held}"] if held else []
    if nothing.waiting:
        parts.append(f"waiting on dependencies: {', '.join(nothing.waiting)}")
    return "; ".join(parts) or "nothing ready"
