"""The merge slot's doorbell (gitst/loop/doorbell.py): a give-back on this machine wakes the
first in line at once; every clone of one remote rings the same bell; a runtime directory
that is not safely ours means no bell, never a failure. Real git repositories and real
processes; nothing here waits on the clock except a generous bound on a ring that came."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gitst.loop import doorbell, slot, wait
from gitst.loop import take as take_module
from gitst.loop.backoff import Backoff
from gitst.loop.base import Base
from gitst.loop.take import Filters, NothingToTake
from tests.e2e.loop.test_next_cost import remote_clone  # noqa: F401 - a remote whose main holds a plan, a clone
from tests.e2e.loop.test_slot_look import _on_remote, _who
from tests.e2e.remote.conftest import clone, make_bare
from tests.support import git, record_calls

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def runtime(tmp_path, monkeypatch) -> Path:
    """A private runtime directory of this test's own."""
    place = tmp_path / "run"
    place.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(place))
    return place


def test_every_clone_of_one_remote_rings_the_same_bell(bare, tmp_path):
    by_path = clone(str(bare), tmp_path / "by-path")
    by_url = clone(f"file://{bare}", tmp_path / "by-url")
    relative = clone(str(bare), tmp_path / "relative")
    git("remote", "set-url", "origin", os.path.relpath(bare, relative), cwd=relative)
    bells = {doorbell.for_remote("origin", place).path for place in (by_path, by_url, relative)}
    assert len(bells) == 1, bells
    (tmp_path / "elsewhere").mkdir()
    other = clone(str(make_bare(tmp_path / "elsewhere")), tmp_path / "other")
    assert doorbell.for_remote("origin", other).path not in bells
    git("remote", "set-url", "origin", "git://127.0.0.1:9/remote.git", cwd=other)  # a network remote: as it is
    assert doorbell.for_remote("origin", other).path not in bells


def _ring_from_another_process(place: Path, note: str = "") -> None:
    code = "import sys; from gitst.loop import doorbell; doorbell.for_remote('origin', sys.argv[1]).ring(sys.argv[2])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(place), note], env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False
    )
    assert done.returncode == 0


def test_a_ring_on_this_machine_ends_the_pause_of_the_one_listening(bare, tmp_path):
    listening = doorbell.for_remote("origin", clone(str(bare), tmp_path / "waiter"))
    landing = clone(str(bare), tmp_path / "lander")
    assert not listening.wait(0.05)  # nothing rang
    _ring_from_another_process(landing)  # rung while the waiter was looking at the remote
    assert listening.wait(600)  # heard at once, not after its pause
    assert not listening.wait(0.05)  # one ring, heard once
    _ring_from_another_process(landing)
    assert listening.wait(600)


def test_no_private_runtime_directory_no_bell_and_the_slot_works_all_the_same(bare, tmp_path, runtime):
    (runtime / "gitst").mkdir(mode=0o700)
    (runtime / "gitst").chmod(0o777)  # open to everyone: not ours to trust
    place = clone(str(bare), tmp_path / "clone")
    assert doorbell.for_remote("origin", place) is None
    leases = slot.remote_leases(_who("a"), "origin", place)
    leases.look()
    assert leases.take(slot.SLOT, "landing st-001") is not None
    leases.give_back(slot.SLOT)  # no bell to ring: given back all the same
    assert _on_remote(bare) == set()


class _Listening:
    """The part of the slot's leases a pause asks: the doorbell (one that counts its waits)."""

    where, ttl = "origin", 600.0

    def __init__(self, bell: doorbell.Doorbell) -> None:
        self.bell, self.listened = bell, 0
        self.bell_wait = bell.wait

    def doorbell(self) -> doorbell.Doorbell:
        def wait(seconds: float) -> bool:
            self.listened += 1
            return self.bell_wait(seconds)

        self.bell.wait = wait
        return self.bell


def test_the_first_two_in_line_listen_and_only_the_first_takes_at_the_ring(bare, tmp_path, monkeypatch):
    place = clone(str(bare), tmp_path / "waiter")
    leases = _Listening(doorbell.for_remote("origin", place))
    slept: list[float] = []
    monkeypatch.setattr("gitst.loop.backoff.time.sleep", slept.append)
    waiting = slot._Wait(leases, _who("w"), slot.ticket_name("w"), print, Backoff(60, first=0.01, most=0.02))
    x, y = (slot.Lease(slot.ticket_name(n), n, "2026-01-01T00:00:00Z", True) for n in ("x", "y"))
    assert waiting.pause([x, y], None)  # third in line: sleeps, does not listen
    assert (leases.listened, len(slept)) == (0, 1)
    _ring_from_another_process(place)
    assert waiting.pause([x], None)  # second: listens, hears it, but looks at the remote next
    assert leases.listened == 1 and not waiting.rang
    _ring_from_another_process(place)
    assert waiting.pause([], None)  # first: hears it, and its next look asks the remote nothing
    assert leases.listened == 2 and waiting.rang


def _nothing_pending(words: list[str]) -> bool:
    return "pending=0" in words


def test_a_waiting_next_heeds_only_the_landing_that_left_nothing_pending(bare, tmp_path):
    listening = doorbell.for_remote("origin", clone(str(bare), tmp_path / "waiter"))
    landing = clone(str(bare), tmp_path / "lander")
    _ring_from_another_process(landing, "pending=3")
    assert not listening.wait(0.05, heed=_nothing_pending)  # heard, not for it
    _ring_from_another_process(landing, "pending=0")
    assert listening.wait(600, heed=_nothing_pending)


def test_next_wait_ends_at_the_ring_of_the_last_landing_not_at_its_next_try(bare, tmp_path, monkeypatch):
    """`take_waiting` with the remote's doorbell: the pause after a try that found only items
    to wait for is 30 s here (the backoff's stretched), and a ring saying nothing is pending
    ends it; the try after it is the answer. Without the ring this would take the 30 s."""
    place = clone(str(bare), tmp_path / "waiter")
    tried = threading.Event()
    answers = iter(["wait", "done"])

    since: list[int] = []  # what each try's look passes on: no shared fetch begun before it

    def take(*_args, **_kwargs):
        since.append(take_module._last_landing_here("origin", place))
        tried.set()
        raise NothingToTake(next(answers), Base("main", "origin", "0" * 40), [], ["st-002"])

    monkeypatch.setattr(wait, "take", take)
    monkeypatch.setattr(wait, "Backoff", lambda w, first, most: Backoff(w, first=60.0, most=60.0))

    rung: list[int] = []

    def last_landing() -> None:
        tried.wait(60)
        rung.append(time.time_ns())
        doorbell.for_remote("origin", clone(str(bare), tmp_path / "lander")).ring("pending=0")

    ringer = threading.Thread(target=last_landing)
    ringer.start()
    started = time.monotonic()
    with pytest.raises(NothingToTake) as ended:
        wait.take_waiting(_who("w"), remote="origin", filters=Filters(), ttl=600, wait=30, cwd=place, say=print)
    ringer.join()
    assert ended.value.reason == "done"
    assert time.monotonic() - started < 25  # the ring, not the 30 s pause (a generous bound)
    # the try after the ring takes no fetch begun before it: one already under way since before
    # the landing would answer "wait" again (seen: agents stopping 3-4 s late)
    assert len(since) == 2 and since[0] < rung[0] <= since[1]


def test_a_ring_says_its_words_and_what_a_key_said(bare, tmp_path):
    listening = doorbell.for_remote("origin", clone(str(bare), tmp_path / "waiter"))
    assert listening.rung_at() == 0  # never rang
    before = time.time_ns()
    _ring_from_another_process(clone(str(bare), tmp_path / "lander"), f"slot=7 pending=2 base={'b' * 40}")
    assert listening.wait(600)
    assert before <= listening.rung_at() <= time.time_ns()
    assert listening.said == ("slot=7", "pending=2", f"base={'b' * 40}")
    assert (listening.told("slot"), listening.told("base"), listening.told("by")) == ("7", "b" * 40, "")


class _Looking(_Listening):
    """The leases of a first in line: its looks say whether they trusted a ring (asked nothing)."""

    def __init__(self, bell: doorbell.Doorbell) -> None:
        super().__init__(bell)
        self.trusted: list[bool] = []

    def look(self, rang: bool = False) -> list[slot.Lease]:
        self.trusted.append(rang)
        return []


def test_a_ring_is_trusted_only_from_the_holder_the_last_look_saw(bare, tmp_path, monkeypatch):
    """The bell is marked before each look, so a ring while the look runs is heard after it —
    and may be an earlier holder's (its landing rang while the look read the slot held by the
    next one). Trusted, it would drop the live holder and fetch a base older than what the look
    read; such a ring only makes the next look ask the remote at once."""
    place = clone(str(bare), tmp_path / "waiter")
    leases = _Looking(doorbell.for_remote("origin", place))
    monkeypatch.setattr("gitst.loop.backoff.time.sleep", lambda _seconds: None)
    waiting = slot._Wait(leases, _who("w"), slot.ticket_name("w"), print, Backoff(60, first=0.01, most=0.02))
    waiting.look()
    holder = slot.Lease(slot.SLOT, "h", "2026-01-01T00:00:00Z", True, "landing st-002", _who("h").host, token=7)
    waiting.holder = holder  # what acquire keeps of the look
    lander = clone(str(bare), tmp_path / "lander")
    _ring_from_another_process(lander, f"slot=6 pending=3 base={'a' * 40}")  # the holder before it
    assert waiting.pause([], holder) and waiting.rang
    waiting.look()
    assert leases.trusted[-1] is False and waiting.landed == ""
    _ring_from_another_process(lander, f"slot=7 pending=2 base={'b' * 40}")  # the holder it saw gave it back
    assert waiting.pause([], holder) and waiting.rang
    waiting.look()
    assert leases.trusted[-1] is True and waiting.landed == "b" * 40
    waiting.holder = None  # a look that saw no holder: no ring can be its holder's
    _ring_from_another_process(lander, f"slot=8 pending=1 base={'c' * 40}")
    assert waiting.pause([], None) and waiting.rang
    waiting.look()
    assert leases.trusted[-1] is False and waiting.landed == ""


def test_next_never_takes_a_shared_fetch_begun_before_the_last_landing_here(remote_clone, tmp_path, monkeypatch):  # noqa: F811
    """The agent that landed an item runs `next` at once: its look must show that landing (a
    fetch of another session under way since before it showed the item's dependents still
    waiting, and the agent slept through its next pause). The look passes the last ring's
    moment on as ``since`` (gitst/sessions/remote_survey.py honours it)."""
    _seed, work = remote_clone
    _ring_from_another_process(work, "pending=3")
    rung = doorbell.for_remote("origin", work).rung_at()
    assert rung > 0
    asked = record_calls(monkeypatch, take_module.bases, "look", lambda *_, **kwargs: kwargs.get("since", 0))
    monkeypatch.chdir(work)
    taken = take_module.take(_who("a"), remote="origin", filters=Filters(), ttl=600, cwd=work, say=print)
    assert taken.item["id"] == "st-001" and asked == [rung]
