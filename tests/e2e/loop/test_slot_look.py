"""How a waiter reads the merge slot on the remote (gitst/loop/slot.py, ``_Remote``): what it
leaves unread, when it reads everything, and when its take can be trusted to have won on what
it last read. Real git and a bare remote over file://; the leases of several sessions held in
this process, each from its own clone. A full read is one `remote_survey.survey` (a fetch of
every claim): counted by wrapping it, git still runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitst.git import remote
from gitst.loop import slot
from gitst.sessions.identity import Identity, process_start
from tests.e2e.remote.conftest import clone
from tests.support import git, record_calls


def _who(session: str) -> Identity:
    pid = os.getpid()
    return Identity(session=session, pid=pid, host=os.uname().nodename, actor="test", pid_start=process_start(pid))


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The full reads (surveys) of the remote, in order: the cwd of each."""
    return record_calls(monkeypatch, slot.remote_survey, "survey", lambda _remote, cwd=None, **_: str(cwd))


@pytest.fixture
def alone(monkeypatch) -> list[str]:
    """The reads of one claim alone (`remote_claims.read_claim`: its ref and fence counter), in
    order: the claim of each."""
    return record_calls(monkeypatch, slot.remote_claims, "read_claim", lambda issue, *_, **__: issue)


@pytest.fixture
def sessions(remote_kind, tmp_path):
    """``leases(name)``: the slot's leases of session ``name``, from a clone of its own, reaching
    the remote over file://, `git daemon` or smart HTTP (the looks' `ls-remote` patterns, the
    counter among them, go through each)."""

    def leases(name: str):
        place = clone(remote_kind.url, tmp_path / f"clone-{name}")
        return slot.remote_leases(_who(name), "origin", place)

    return leases


@pytest.fixture
def bare(remote_kind) -> Path:
    return remote_kind.bare


def _names(seen: list[slot.Lease]) -> set[str]:
    return {lease.name for lease in seen}


def _on_remote(bare: Path) -> set[str]:
    refs = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()
    return {ref.rsplit("/", 1)[1] for ref in refs}


def test_a_ticket_taken_after_ours_was_listed_is_left_unread_and_not_ahead(sessions, reads, bare):
    holder, a, b, c = sessions("holder"), sessions("a"), sessions("b"), sessions("c")
    holder.look()
    assert holder.take(slot.SLOT, "landing st-001") is not None
    a.look()
    assert a.take(slot.ticket_name("a"), "waiting to land st-002") is not None
    a.look()  # lists our own ticket: what appears from now on came after it
    c.look()  # c has no ticket: every new ticket may be ahead of it
    b.look()
    assert b.take(slot.ticket_name("b"), "waiting to land st-003") is not None
    before = len(reads)
    seen = a.look()
    assert len(reads) == before  # one ls-remote, no fetch
    assert slot.ticket_name("b") not in _names(seen) and slot.ticket_name("a") in _names(seen)
    assert slot.ticket_name("b") in _on_remote(bare)  # it is there, only unread
    seen = c.look()
    assert len(reads) == before + 1  # c read it: it could have been ahead of c
    assert slot.ticket_name("b") in _names(seen)


def test_a_free_slot_whose_fence_counter_moved_is_read_again_alone_and_the_take_wins_at_once(sessions, reads, alone):
    a, other = sessions("a"), sessions("other")
    a.look()
    other.look()
    assert other.take(slot.SLOT, "landing st-001") is not None
    other.give_back(slot.SLOT)  # free again, but its fence counter moved
    alone.clear()  # from here on
    before = len(reads)
    seen = a.look()
    assert len(reads) == before and alone == [slot.SLOT]  # the slot and its counter: one small fetch
    assert slot.SLOT not in _names(seen)
    assert a.take(slot.SLOT, "landing st-002") is not None
    assert a.took_at_once() and alone == [slot.SLOT]  # won on what that read: no round read again


def test_a_slot_taken_by_a_holder_not_read_yet_is_read_alone(sessions, reads, alone):
    """In a queue the slot changes hands at nearly every landing: the waiter reads the new
    holder's lease alone (its session, its token for the doorbell), not every claim."""
    a, first, second = sessions("a"), sessions("first"), sessions("second")
    first.look()
    assert first.take(slot.SLOT, "landing st-001") is not None
    a.look()
    assert a.take(slot.ticket_name("a"), "waiting to land st-003") is not None
    a.look()
    first.give_back(slot.SLOT)
    second.look()
    assert second.take(slot.SLOT, "landing st-002") is not None
    alone.clear()  # from here on
    before = len(reads)
    seen = a.look()
    assert len(reads) == before and alone == [slot.SLOT]  # one ls-remote and the slot alone
    held = next(lease for lease in seen if lease.name == slot.SLOT)
    assert (held.session, held.live, held.description) == ("second", True, "landing st-002")
    assert held.token > 0 and slot.ticket_name("a") in _names(seen)
    second.give_back(slot.SLOT)
    seen = a.look()  # free, the counter as that read left it: nothing more to read
    assert len(reads) == before and alone == [slot.SLOT] and slot.SLOT not in _names(seen)
    assert a.take(slot.SLOT, "landing st-003") is not None and a.took_at_once()


def test_a_take_that_had_to_read_the_remote_again_did_not_win_at_once(sessions):
    a, other = sessions("a"), sessions("other")
    a.look()
    other.look()
    assert other.take(slot.SLOT, "landing st-001") is not None
    other.give_back(slot.SLOT)
    assert a.take(slot.SLOT, "landing st-002") is not None  # on the old counter: lost, read, won
    assert not a.took_at_once()  # the holder between may have moved the base: land reads it again


def test_our_ticket_goes_back_with_the_slot_in_one_push(sessions, bare):
    holder, a = sessions("holder"), sessions("a")
    holder.look()
    assert holder.take(slot.SLOT, "landing st-001") is not None
    a.look()
    ticket = slot.ticket_name("a")
    assert a.take(ticket, "waiting to land st-002") is not None
    holder.give_back(slot.SLOT)
    a.look()
    assert a.take(slot.SLOT, "landing st-002") is not None
    a.with_slot(ticket)
    assert {slot.SLOT, ticket} <= _on_remote(bare)  # the ticket stays while a holds the slot
    updates = a.give_back_updates(slot.SLOT)
    assert sorted(u.ref.rsplit("/", 1)[1] for u in updates) == sorted([slot.SLOT, ticket])
    pushed = remote.push_refs("origin", updates, a.cwd, timeout=60, atomic=True)
    assert pushed.ok
    a.given_back(slot.SLOT)
    a.give_back(slot.SLOT)  # given back already: nothing more to push
    assert _on_remote(bare) == set()


def test_giving_the_slot_back_alone_takes_our_ticket_along(sessions, bare):
    a = sessions("a")
    a.look()
    ticket = slot.ticket_name("a")
    assert a.take(ticket, "waiting to land st-001") is not None
    assert a.take(slot.SLOT, "landing st-001") is not None
    a.with_slot(ticket)
    a.give_back(slot.SLOT)  # the landing failed before its push: both go, in one push
    assert _on_remote(bare) == set()


@pytest.fixture
def asked(monkeypatch) -> list[list[str]]:
    """The `ls-remote` looks of the slot (their patterns), in order."""
    return record_calls(monkeypatch, slot.remote, "remote_refs", lambda _remote, patterns, *_, **__: list(patterns))


def test_after_a_ring_the_slot_is_taken_without_asking_the_remote(sessions, reads, asked):
    holder, a = sessions("holder"), sessions("a")
    holder.look()
    assert holder.take(slot.ticket_name("holder"), "waiting to land st-001") is not None
    assert holder.take(slot.SLOT, "landing st-001") is not None
    holder.with_slot(slot.ticket_name("holder"))  # it waited in line: its ticket goes with the slot
    a.look()
    assert a.take(slot.ticket_name("a"), "waiting to land st-002") is not None
    seen = a.look()  # held: a waits, its leases read after the holder took the slot (its fence counter)
    assert {slot.SLOT, slot.ticket_name("holder")} <= _names(seen)
    holder.give_back(slot.SLOT)  # the slot and its ticket; rings on this machine
    before = (len(reads), len(asked))
    seen = a.look(rang=True)
    assert (len(reads), len(asked)) == before
    assert _names(seen) == {slot.ticket_name("a")}  # the slot gone, and the holder's ticket with it: a is first
    assert a.take(slot.SLOT, "landing st-002") is not None and a.took_at_once()


def test_the_give_back_rings_which_take_of_the_slot_ended_and_what_it_landed(sessions, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # a private runtime directory of this test's own
    holder = sessions("holder")
    holder.look()
    token = holder.take(slot.SLOT, "landing st-001")
    assert token is not None
    holder.note(f"pending=3 base={'d' * 40}")
    holder.give_back(slot.SLOT)
    bell = holder.doorbell()
    assert bell is not None
    words = Path(bell.path).read_text().split()[2:]  # after its time and pid
    assert words == [f"slot={token}", "pending=3", f"base={'d' * 40}"]


def test_a_ring_that_was_not_about_a_free_slot_costs_one_refused_take_and_nothing_more(sessions, reads):
    holder, a = sessions("holder"), sessions("a")
    a.look()  # before the holder took the slot: a's fence counter is older than the holder's take
    holder.look()
    assert holder.take(slot.SLOT, "landing st-001") is not None
    seen = a.look(rang=True)  # a ring, but the slot is still held (another remote's, a late one)
    assert slot.SLOT not in _names(seen)
    before = len(reads)
    assert a.take(slot.SLOT, "landing st-002") is None  # its lease said "free": refused, read, held
    seen = a.look()  # what the refused take read is known: one ls-remote, no fetch
    assert len(reads) == before and slot.SLOT in _names(seen)
    holder.give_back(slot.SLOT)
    seen = a.look()  # free, and its fence counter the one the refused take read: still no fetch
    assert len(reads) == before and slot.SLOT not in _names(seen)
    assert a.take(slot.SLOT, "landing st-002") is not None and a.took_at_once()


def test_a_give_back_while_the_first_in_line_looks_is_taken_without_a_ticket(sessions, reads, tmp_path, monkeypatch):
    """The holder gives the slot back (and rings) while the waiter's look reads it held: the
    waiter takes it at once — no ticket pushed, no pause, no second read of the remote."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # a private runtime directory of this test's own
    holder, a = sessions("holder"), sessions("a")
    holder.look()
    assert holder.take(slot.SLOT, "landing st-001") is not None
    looked = a.look

    def look_while_it_lands(rang: bool = False) -> list[slot.Lease]:
        seen = looked(rang=rang)
        if slot.SLOT in holder.held:
            holder.give_back(slot.SLOT)  # rings, just after the look read the slot held
        return seen

    monkeypatch.setattr(a, "look", look_while_it_lands)
    taken = record_calls(monkeypatch, a, "take", lambda name, _description: name)
    got = slot.acquire(a, _who("a"), item="st-002", wait=600, say=print)
    assert got.token > 0 and taken == [slot.SLOT]  # no ticket
    assert got.places == [] and len(reads) == 2  # the holder's and a's first read; nothing more
