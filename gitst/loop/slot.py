"""The merge slot: one lease on the remote that serializes every push to the base branch.

The slot is a claim on the reserved id ``st.land`` through the remote's compare-and-swap
(:mod:`gitst.sessions.remote_claims`): ``refs/st/claims/st.land`` holds the current holder's
record (session, host, token, expiry), ``refs/st/fence/st.land`` its fencing token, which grows
with every new holder. So the slot has every property of a remote claim: of N agents exactly
one holds it; a holder killed on this host is dead at once and the next ``land`` takes the slot
over (a holder on another host after the slot's TTL, ``st.land.ttl``, default 600 s); ``git st
gc`` deletes a stale or dead slot like any stale claim. The holder pushes with a lease on the
base's tip it merged, so even a push from outside the loop is never overwritten.

Waiting agents poll the slot (0.1 s doubling to 1 s) until ``--wait`` seconds have passed and
say, once per holder, whom they wait for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from gitst import settings
from gitst.core.errors import ConflictError
from gitst.sessions import remote_claims
from gitst.sessions.identity import Identity

__all__ = ["SLOT", "Slot", "SlotBusy", "acquire", "release"]

SLOT = "st.land"  # the reserved claim id of the merge slot: refs/st/claims/st.land

PathLike = str | os.PathLike[str] | None


@dataclass(frozen=True)
class Slot:
    remote: str
    token: int
    waited: float  # seconds spent waiting for it
    holders_seen: int  # how many other holders it waited behind


class SlotBusy(ConflictError):
    """The slot stayed held past ``--wait`` (exit 3)."""


def ttl(cwd: PathLike = None) -> float:
    """``ST_LAND_TTL``, else ``git config st.land.ttl``, else 600 s."""
    return settings.float_setting("land_ttl", cwd)


def acquire(
    who: Identity, *, remote: str, item: str, wait: float, cwd: PathLike = None, say: Callable[[str], None]
) -> Slot:
    """Hold the slot for ``who`` (landing ``item``); SlotBusy after ``wait`` seconds."""
    start = time.monotonic()
    delay = 0.1
    seen: list[str] = []
    while True:
        try:
            got = remote_claims.acquire(SLOT, who, remote=remote, ttl=ttl(cwd), cwd=cwd, description=f"landing {item}")
            return Slot(remote, int(got.record["token"]), time.monotonic() - start, len(seen))
        except remote_claims.RemoteIssueTaken as taken:
            holder = f"{taken.record.get('session')} ({taken.record.get('description') or 'landing'})"
            if not seen or seen[-1] != holder:
                seen.append(holder)
                say(
                    f"gitst: waiting for the merge slot on {remote}: held by session {holder}; {len(seen)} ahead so far"
                )
        except ConflictError:
            pass  # the slot changed hands every round we tried: busy, try again
        if time.monotonic() - start >= wait:
            raise SlotBusy(
                f"the merge slot on {remote} stayed busy for {wait:g}s (held by {seen[-1] if seen else 'others'})",
                fix="run `git st land` again (it resumes), or wait longer with --wait SECONDS",
            )
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def release(who: Identity, *, remote: str, cwd: PathLike = None) -> None:
    """Give the slot back (nothing when it is not ours any more)."""
    remote_claims.release(SLOT, who, remote=remote, cwd=cwd)
