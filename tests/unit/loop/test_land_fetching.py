"""The sync beside the take of the merge slot (gitst/loop/land.py, ``_Fetching``): what stopped
it on an earlier try — a conflict with the base, a failed check — ends the wait at the next
try, before the slot is taken: there is nothing to land."""

from __future__ import annotations

import os

import pytest

from gitst.core.errors import ConflictError
from gitst.loop import land
from gitst.loop import slot as slots
from gitst.loop.base import Base
from gitst.sessions import locks
from gitst.sessions.identity import Identity, process_start


def test_a_conflict_found_beside_a_lost_take_ends_the_wait_before_the_next_take(tmp_path):
    pid = os.getpid()
    who = Identity(session="b", pid=pid, host=os.uname().nodename, actor="test", pid_start=process_start(pid))
    leases = slots.local_leases(who, tmp_path)
    fetching = land._Fetching(None, Base("main", "origin", "a" * 40), "", None)
    fetching._failed = ConflictError("b's branch conflicts with origin/main on shared.txt")  # the lost try's sync
    with pytest.raises(ConflictError, match=r"shared\.txt"):
        slots.acquire(leases, who, item="st-002", wait=60, say=print, taking=fetching.start)
    assert fetching._thread is None  # no fetch begun
    assert [view.name for view in locks.list_locks(tmp_path)] == []  # neither the slot nor a ticket held
