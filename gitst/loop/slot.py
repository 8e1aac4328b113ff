"""The merge slot: one lease that serializes every update of the base branch, and its queue.

**The slot.** With a remote it is a claim on the reserved id ``st.land`` through the remote's
compare-and-swap (:mod:`gitst.sessions.remote_claims`): ``refs/st/claims/st.land`` holds the
holder's record (session, host, token, expiry), ``refs/st/fence/st.land`` its fencing token,
which grows with every new holder. Without one (a single machine) it is the local lock
``st.land`` in the state dir (:mod:`gitst.sessions.locks`), fenced the same way. Either way it
has every property of a claim: of N agents exactly one holds it; a holder killed on this host
is dead at once and the next ``land`` takes the slot over (a holder on another host after the
slot's TTL, ``st.land.ttl``, default 600 s); ``git st gc`` deletes a stale or dead slot.

**The queue.** An agent that finds the slot held (or others already waiting) takes a
*ticket*: a lease of the same kind named ``st.land.q-<hash of its session>``, whose
``claimed_at`` (remote) / ``acquired_at`` (local) is its place in line. Waiters are served in
that order (ties broken by session id): an agent takes the slot only when it is free and no
live ticket is older than its own, and gives its ticket back with the slot (through a remote,
in the same push; the others do not count the holder's ticket). A waiter that
died is skipped at once on its host and after its ticket's TTL elsewhere (the waiter renews
it while it waits), and ``gc`` deletes its ticket like any dead claim. Each try reads the
slot and every ticket at once: the first, one fetch of ``refs/st/claims/*`` with the fence
counters (:mod:`gitst.sessions.remote_survey`; its snapshot is the first round of the take);
every later one, one ``git ls-remote`` of the slot's and the tickets' refs, and the fetch only
when one of them is new to it (a ref gone is dropped, our own pushes are known: the records
read before, their liveness judged again now; a ticket that appeared after a look listed our
own is behind ours, and left unread; a new holder of the slot is read alone). Locally, one
listing of the lock records. Then it sleeps (:class:`gitst.loop.backoff.Backoff`: 0.1 s
doubling to 2 s, jittered), the first in line at
most :data:`FIRST_PAUSE` (0.05-0.1 s: the slot passes on within a tenth of a second of its
give-back, not up to 2 s later), the others at most :data:`PLACE_PAUSE` seconds per place, but
never less than a tenth of the time the holder has held it (a holder running the checks for
minutes is not asked four times a second). Whenever its place or
the holder changes it says so: ``waiting for the merge slot on origin: 2nd in line (held by
session agent-b, landing st-004, since 12:48:21)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from gitst import settings
from gitst.core import timestamps
from gitst.core.errors import ConflictError, GitstError
from gitst.core.values import field, value_class
from gitst.git import remote
from gitst.git.remote import RefUpdate
from gitst.loop import doorbell as doorbells
from gitst.loop.backoff import Backoff
from gitst.sessions import locks, pending, remote_claims, remote_survey
from gitst.sessions.identity import Identity
from gitst.statedir.paths import state_dir

__all__ = ["SLOT", "TICKET_PREFIX", "Slot", "SlotBusy", "acquire", "local_leases", "release", "remote_leases"]

CLAIMS_PATTERN = "refs/st/claims/st.land*"  # the slot's ref and every ticket's, on the remote
SLOT = "st.land"  # the reserved claim id of the merge slot: refs/st/claims/st.land, the lock st.land
TICKET_PREFIX = "st.land.q-"  # a waiter's ticket: refs/st/claims/st.land.q-<hash>, the lock st.land.q-<hash>

PathLike = str | os.PathLike[str] | None
Say = Callable[[str], None]

# The longest pause between looks per place in line, while the holder is new at it: the slot
# comes next to the first in line, and a land holds it for about a second (docs/performance.md,
# "Round 36"); with 2 s pauses it passed on 0.75 s after its give-back on average.
PLACE_PAUSE = 0.25
# The first in line's: a land holds the slot ~0.3 s through a network remote and the swarm's
# landings queue back to back, so the slot's hand-off is on every landing's path (round 37: at
# 0.25 s it idled 0.32 s between a give-back and the next take on average). One look is one
# ``ls-remote``; only the first in line looks this often.
FIRST_PAUSE = 0.1
# The first in line's longest pause while a holder on this machine holds the slot: its give-back
# rings the doorbell (gitst/loop/doorbell.py), so looking at the remote is only the fallback.
RING_PAUSE = 0.5


@value_class(frozen=True)
class Lease:
    """The slot or a ticket as read: who holds it, since when, and whether that holder lives."""

    name: str
    session: str
    since: str  # ISO timestamp: when it was taken (a ticket's place in line)
    live: bool
    description: str = ""
    host: str = ""  # the machine its holder runs on
    token: int = 0  # its fencing token (which take of it this is)


class Leases(Protocol):
    """Where the slot and its tickets live: the remote's claims or this clone's locks."""

    @property
    def where(self) -> str: ...
    @property
    def ttl(self) -> float: ...

    def look(self, rang: bool = False) -> list[Lease]: ...  # the slot and every ticket: one read
    def take(self, name: str, description: str) -> int | None: ...  # its token; None: a live other holds it
    def give_back(self, name: str) -> None: ...
    def give_back_updates(self, name: str) -> list[RefUpdate]: ...  # the give-back as pushes of the caller's
    def given_back(self, name: str) -> None: ...  # the caller pushed give_back_updates' updates
    def with_slot(self, name: str) -> None: ...  # give ``name`` (our ticket) back with the slot, not now
    def renew(self, name: str) -> None: ...
    def seen(self, ref: str) -> str | None: ...  # a local ref the last look read along (None: not read)
    def took_at_once(self) -> bool: ...  # the last take won on the last look's reading, nothing read since
    def doorbell(self) -> doorbells.Doorbell | None: ...  # rung on this machine when the slot is given back
    def note(self, text: str) -> None: ...  # what the doorbell's ring says (the landing's plan)


def _ours(name: str) -> bool:
    return name == SLOT or name.startswith(TICKET_PREFIX)


def _token(record: dict[str, Any]) -> int:
    token = record.get("token")
    return token if isinstance(token, int) and not isinstance(token, bool) else 0


@value_class
class _Remote:
    who: Identity
    remote: str
    ttl: float
    cwd: PathLike
    read: tuple[str, ...] = ()  # local refs read along with each full look (land: the item's branch)
    held: dict[str, remote_claims.RemoteAcquired] = field(default_factory=dict)  # name -> the lease we pushed
    gone: set[str] = field(default_factory=set)  # leases the caller gave back in its own push (given_back)
    along: set[str] = field(default_factory=set)  # our tickets given back with the slot (with_slot)
    local: dict[str, str] = field(default_factory=dict)  # the refs of ``read`` as the last full look saw them
    _survey: remote_survey.Survey | None = None  # the last full look
    # the slot and the tickets as last known: name -> (commit, record; None: unreadable). None: read them all
    _known: dict[str, tuple[str, dict[str, Any] | None]] | None = None
    _bell: doorbells.Doorbell | None = None
    _note: str = ""  # what the give-back's ring says
    _at_once: bool = False  # the last take won its first push, on what was read before it
    _mine_listed: bool = False  # a look listed the ticket we hold: tickets new since are behind ours
    _behind: set[str] = field(default_factory=set)  # those tickets, left unread until a full look
    # a lease as a take's later round read it since the last full look (newer than the survey's)
    _reread: dict[str, remote_claims.Snapshot] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return self.remote

    def look(self, rang: bool = False) -> list[Lease]:
        """The slot and the tickets. A look after the first asks the remote for their refs
        alone (one ``ls-remote``, the slot's fence counter along) and reads nothing more when
        each of them is one it knows (read before, or pushed by us): those gone are dropped,
        the liveness of the others judged again now. A ref it does not know is read with
        everything else (one fetch) — but for a ticket that appeared after a look listed our
        own: it was taken after ours and is behind it in line, so it is left unread (with a
        dozen agents landing, a new ticket appears at nearly every look; reading it cost the
        first in line a fetch, ~0.13 s, between a give-back and its take). A free slot whose
        fence counter moved since it was last read is read again, alone: a take on the old
        counter would lose its push and read it then. ``rang``: the slot's doorbell rang since
        the last look — a land on this machine gave the slot back —: nothing is asked, the slot
        is taken for free (a take that finds it held reads everything again)."""
        if self._known is not None and rang:
            self._gone_with_slot(self._known)
            return self._leases()
        if self._known is not None and self._listed_known():
            return self._leases()
        return self._read_all()

    @staticmethod
    def _gone_with_slot(known: dict[str, tuple[str, dict[str, Any] | None]]) -> None:
        """The slot given back (the doorbell rang): it is gone, and its holder's ticket with it."""
        _commit, record = known.pop(SLOT, ("", None))
        holder = (record or {}).get("session")
        for name in [n for n, (_c, r) in known.items() if holder is not None and (r or {}).get("session") == holder]:
            known.pop(name)

    def _listed_known(self) -> bool:
        """One ``ls-remote``: True (``_known`` brought up to date) when it needs no fetch of
        every claim. A free slot whose fence counter moved, or a slot taken by a holder not
        read yet, is read alone (one small fetch: with a queue, the slot changes hands at
        nearly every landing, and a fetch of every claim then cost the first in line ~0.2 s —
        often just as the slot came free)."""
        known = self._known or {}
        now, moved = self._listed()
        if moved or (SLOT in now and known.get(SLOT, ("", None))[0] != now[SLOT]):
            known = self._reread_slot(known)
        now = self._in_line(now, known)
        if not all(name in known and known[name][0] == oid for name, oid in now.items()):
            return False
        self._known = {name: known[name] for name in now}
        return True

    def _reread_slot(self, known: dict[str, Any]) -> dict[str, Any]:
        """The slot and its fence counter read now (:func:`remote_claims.read_claim`): the next
        take starts from that counter, not from the older one it would lose its push on."""
        seen = self._reread[SLOT] = remote_claims.read_claim(SLOT, self.remote, self.cwd)
        known = {name: view for name, view in known.items() if name != SLOT}
        if seen.claim is not None:
            known[SLOT] = (seen.claim.oid, seen.claim.record)
        return known

    def _in_line(self, now: dict[str, str], known: dict[str, Any]) -> dict[str, str]:
        """``now`` without the tickets behind ours: those new since a look listed ours."""
        if self._mine_listed:
            self._behind |= {name for name in now if name != SLOT and name not in known}
        now = {name: oid for name, oid in now.items() if name not in self._behind}
        self._mine_listed = self._mine_listed or any(name in now for name in self.held if name != SLOT)
        return now

    def _listed(self) -> tuple[dict[str, str], bool]:
        """The slot's and the tickets' refs on the remote now (name -> commit), and whether the
        slot is free and its fence counter moved since it was last read."""
        counter = remote_claims.counter_ref(SLOT)
        listed = remote.remote_refs(
            self.remote, [CLAIMS_PATTERN, counter], self.cwd, timeout=settings.remote_timeout(self.cwd)
        )
        prefix = len(remote_claims.CLAIMS_NAMESPACE)
        now = {ref[prefix:]: oid for ref, oid in listed.items() if ref != counter and _ours(ref[prefix:])}
        counted = self._survey.counter_oids.get(counter) if self._survey is not None else None
        reread = self._reread.get(SLOT)
        if reread is not None and reread.counter is not None:
            counted = reread.counter.oid
        return now, SLOT not in now and listed.get(counter) != counted

    def _read_all(self) -> list[Lease]:
        """One fetch of every claim (the slot, the tickets, the fence counters) begun now: not
        the view of another session's fetch already under way, which may be older than the
        waiter's doorbell mark (a ring before it would then never be heard)."""
        survey = remote_survey.survey(self.remote, self.cwd, read=self.read, fresh=True)
        self._survey, self.local = survey, survey.local
        self._known = {view.issue: (view.commit, view.record) for view in survey.views if _ours(view.issue)}
        self._behind = set()  # read now: in line by their records
        self._reread = {}
        return self._leases()

    def _leases(self) -> list[Lease]:
        found = []
        for name, (_commit, record) in sorted((self._known or {}).items()):
            if record:
                found.append(
                    Lease(
                        name,
                        str(record.get("session")),
                        str(record.get("claimed_at") or ""),
                        remote_claims.claim_state(record) == "live",
                        str(record.get("description") or ""),
                        str(record.get("host") or ""),
                        _token(record),
                    )
                )
        return found

    def _first(self, name: str) -> remote_claims.Snapshot | None:
        """The take's first round: the last full look's snapshot of ``name`` (its fence counter
        may be older: a refused push then reads the remote again), with the claim as known
        since; None (the take reads the remote) when that claim could not be read."""
        if self._survey is None or self._known is None:
            return None
        snap = self._reread.get(name) or self._survey.snapshot(name)
        commit, record = self._known.get(name, ("", None))
        if commit and record is None:
            return None
        claim = remote_claims.Ref(commit, record) if commit and record is not None else None
        if (snap.claim.oid if snap.claim else "") != commit:
            snap = remote_claims.Snapshot(claim, snap.fence, snap.counter)
        return snap

    def take(self, name: str, description: str) -> int | None:
        first = self._first(name)
        self._at_once = first is not None

        def again(issue: str) -> remote_claims.Snapshot:  # a later round: the remote read anew
            self._at_once = False
            self._reread[issue] = remote_claims.read_claim(issue, self.remote, self.cwd)
            return self._reread[issue]

        try:
            got = remote_claims.acquire(
                name,
                self.who,
                remote=self.remote,
                ttl=self.ttl,
                cwd=self.cwd,
                description=description,
                first=first,
                again=again,
            )
        except remote_claims.RemoteIssueTaken:
            self._lost(name)
            return None
        except ConflictError:
            self._known = None
            return None  # it changed hands every round we tried: busy, try again
        except remote_claims.ClaimUnanswered as stopped:  # it may have landed: held by nobody here
            self._pending(name, stopped.record.get("token"), stopped)
            raise
        # taken again on purpose: an earlier give-back of it still pending is not to be done
        pending.forget(state_dir(self.cwd), name, session=self.who.session)
        self.held[name] = got
        self.gone.discard(name)
        if self._known is not None:
            self._known[name] = (got.commit, got.record)
        return int(got.record["token"])

    def _lost(self, name: str) -> None:
        """A take lost to a live holder: its last round read the lease and its fence counter,
        so the next look knows them (an ``ls-remote`` that finds the same refs reads nothing
        more, and the next take starts from that counter); else the next look reads it all."""
        seen = self._reread.get(name)
        if self._known is not None and seen is not None and seen.claim is not None:
            self._known[name] = (seen.claim.oid, seen.claim.record)
        else:
            self._known = None

    def with_slot(self, name: str) -> None:
        """Our ticket ``name`` is given back with the slot (in the same push), not on its own now:
        one push fewer while holding the slot. Until then the others see it, as the holder's."""
        self.along.add(name)

    def give_back_updates(self, name: str) -> list[RefUpdate]:
        """The deletes of our claim ref and of the tickets given back with it (:meth:`with_slot`),
        each with a lease on the commit we pushed, for a caller that pushes them with its own
        update in one atomic push (``land``: the base and the slot together); empty without the
        slot's commit (:meth:`give_back` then)."""
        if name not in self.held:
            return []
        names = [name, *sorted(self.along)]
        return [RefUpdate(remote_claims.claim_ref(n), None, self.held[n].commit) for n in names if n in self.held]

    def given_back(self, name: str) -> None:
        """The caller's push of :meth:`give_back_updates` went through: nothing left to give back
        (the slot's doorbell rung)."""
        if name == SLOT and SLOT in self.held:
            self._ring(self.held[SLOT])
        for done in [name, *self.along]:
            self.held.pop(done, None)
            self.gone.add(done)
            if self._known is not None:
                self._known.pop(done, None)
        self.along.clear()

    def give_back(self, name: str) -> None:
        """Delete our claim ref, and the tickets given back with it, with a lease on the commit we
        pushed: one push, no fetch (a rejection means it was taken over: not ours any more).
        Without that commit (a lease taken by an earlier process) through
        :func:`remote_claims.release`; nothing for what the caller gave back already
        (:meth:`given_back`)."""
        names = [n for n in [name, *sorted(self.along)] if n not in self.gone]
        self.along.clear()
        if name in names and name not in self.held:
            self._known = None
            remote_claims.release(name, self.who, remote=self.remote, cwd=self.cwd)
        slot = self.held.get(SLOT) if name == SLOT else None
        held = [(n, self.held.pop(n)) for n in names if n in self.held]
        if held and self._deleted(held) and name == SLOT:
            self._ring(slot)

    def _deleted(self, held: list[tuple[str, remote_claims.RemoteAcquired]]) -> bool:
        """Our leases ``held`` deleted in one push, each with a lease on the commit we pushed;
        False when a lease was lost (taken over: not ours any more)."""
        updates = [RefUpdate(remote_claims.claim_ref(n), None, lease.commit) for n, lease in held]
        try:
            pushed = remote_claims.push_refs(self.remote, updates, self.cwd)
        except remote_claims.RemoteUnreachable as gone:  # still held there, by nobody
            for n, lease in held:
                self._pending(n, int(lease.record["token"]), gone)
            raise
        if self._known is not None and pushed.ok:
            for n, _lease in held:
                self._known.pop(n, None)
        else:
            self._known = None
        return pushed.ok

    def doorbell(self) -> doorbells.Doorbell | None:
        if self._bell is None:
            self._bell = doorbells.for_remote(self.remote, self.cwd)
        return self._bell

    def note(self, text: str) -> None:
        self._note = text

    def _ring(self, slot: remote_claims.RemoteAcquired | None) -> None:
        """The slot given back: its doorbell rung, saying which take of it ends (``slot=TOKEN``,
        0 when this process did not take it: a waiter trusts a ring only from the holder it
        saw) and what the landing pushed."""
        bell = self.doorbell()
        if bell is not None:
            bell.ring(f"slot={_token(slot.record) if slot is not None else 0} {self._note}".strip())

    def renew(self, name: str) -> None:
        self._known = None
        renewed = remote_claims.renew(name, self.who, remote=self.remote, ttl=self.ttl, cwd=self.cwd)
        if renewed.acquired is not None:
            self.held[name] = renewed.acquired

    def _pending(self, name: str, token: int | None, failed: GitstError) -> None:
        """Our lease ``name`` may be on the remote with nobody here holding it (its push ended
        without an answer, or its give-back could not reach the remote): remembered as a
        pending release, as a claim's is (:mod:`gitst.sessions.pending`), so the next command
        of this clone that reaches the remote deletes it while it is still ours and that token
        — instead of it holding off every other agent for the slot's TTL."""
        what = "merge slot" if name == SLOT else "ticket for the merge slot"
        pending.remember_unanswered(
            state_dir(self.cwd), name, failed, what=what, remote=self.remote, session=self.who.session, token=token
        )

    def seen(self, ref: str) -> str | None:
        return self.local.get(ref)

    def took_at_once(self) -> bool:
        """The last take won its first push, on what was read of the slot before it began (the
        last full look, or the slot read alone since): no round read the remote again, so nobody
        took the slot between that read and our push, and nobody moved the base through it since
        (``land`` then trusts a fetch of the base begun after that read)."""
        return self._at_once


@value_class
class _Local:
    who: Identity
    root: Path
    ttl: float
    where: str = "this clone"

    def look(self, rang: bool = False) -> list[Lease]:
        found = []
        for view in locks.list_locks(self.root):
            record = view.record or {}
            owner = record.get("owner") or {}
            if _ours(view.name) and owner:
                found.append(
                    Lease(
                        view.name,
                        str(owner.get("session")),
                        str(record.get("acquired_at") or ""),
                        view.state == locks.LIVE,
                        str(record.get("description") or ""),
                        str(owner.get("host") or ""),
                        _token(record),
                    )
                )
        return found

    def take(self, name: str, description: str) -> int | None:
        try:
            got = locks.try_acquire(name, self.who, root=self.root, ttl=self.ttl)
        except locks.LockBusy:
            return None
        return int(got.record["token"])

    def give_back(self, name: str) -> None:
        with contextlib.suppress(locks.NotOwner):  # taken over after its TTL: not ours any more
            locks.release(name, self.who, root=self.root)

    def give_back_updates(self, name: str) -> list[RefUpdate]:
        return []  # a lock file here: no push to join

    def given_back(self, name: str) -> None:
        return None

    def with_slot(self, name: str) -> None:
        self.give_back(name)  # a lock file: giving it back now costs no round trip

    def renew(self, name: str) -> None:
        locks.renew(name, self.who, root=self.root, ttl=self.ttl)

    def seen(self, ref: str) -> str | None:
        return None  # a look reads lock files, no ref

    def took_at_once(self) -> bool:
        return False  # nothing was fetched beside it: the base is read holding the lock

    def doorbell(self) -> doorbells.Doorbell | None:
        return None  # one clone's lock files: its waiters look every 0.05-0.1 s at no round trip

    def note(self, text: str) -> None:
        return None  # no doorbell to say it


def remote_leases(who: Identity, remote: str, cwd: PathLike = None, *, read: tuple[str, ...] = ()) -> Leases:
    """The slot on ``remote``; ``read``: local refs each full look reads along (one ``for-each-ref``)."""
    return _Remote(who, remote, ttl(cwd), cwd, read)


def local_leases(who: Identity, root: Path, cwd: PathLike = None) -> Leases:
    return _Local(who, root, ttl(cwd))


@value_class
class Slot:
    where: str
    token: int
    waited: float  # seconds spent waiting for it
    holders_seen: int  # how many other holders it waited behind
    places: list[int] = field(default_factory=list)  # the places in line it was told, in order

    def queue(self) -> dict[str, Any]:
        """The ``queue`` field of ``land --format json``."""
        return {"places": self.places, "first_place": self.places[0] if self.places else 0}


class SlotBusy(ConflictError):
    """The slot stayed held past ``--wait`` (exit 3)."""


def ttl(cwd: PathLike = None) -> float:
    """``ST_LAND_TTL``, else ``git config st.land.ttl``, else 600 s."""
    return settings.float_setting("land_ttl", cwd)


def ticket_name(session: str) -> str:
    return TICKET_PREFIX + hashlib.sha256(session.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _clock(stamp: str) -> str:
    moment = timestamps.moment(stamp)
    return moment.strftime("%H:%M:%S") if moment is not None else stamp or "?"


@value_class
class _Wait:
    """One agent waiting for the slot: its ticket, what it was last told."""

    leases: Leases
    who: Identity
    mine: str
    say: Say
    backoff: Backoff
    ticket: bool = False
    renewed: float = 0.0
    told: tuple[int, str] | None = None
    holders: list[str] = field(default_factory=list)
    places: list[int] = field(default_factory=list)
    bell: doorbells.Doorbell | None = None  # the slot's doorbell, once the first in line listened
    rang: bool = False  # it rang in the last pause
    holder: Lease | None = None  # the live holder the last look saw
    landed: str = ""  # the commit the landing that rang before this look pushed to the base ("": none said)

    def look(self) -> list[Lease]:
        """The slot and the tickets (:meth:`Leases.look`); after a ring heard first in line from
        the holder the last look saw (its ``slot=TOKEN``), without asking the remote, and
        :attr:`landed` what it said it pushed. A ring from now on is news; one heard after a
        look may be an earlier holder's, rung while the look ran: only a reason to look again."""
        rang, self.rang = self.rang, False
        if rang and not self._rung_by_holder():
            rang = False
        self.landed = self.bell.told("base") if rang and self.bell is not None else ""
        bell = self._bell()  # made (and marked) before the first look: a ring during it is news
        if bell is not None:
            bell.mark()
        return self.leases.look(rang=rang)

    def line(self) -> tuple[Lease | None, list[Lease]]:
        """One look: the slot's live holder (None: free, or ours) and the tickets ahead of ours."""
        seen = self.look()
        slot = next((lease for lease in seen if lease.name == SLOT), None)
        live = slot is not None and slot.live and slot.session != self.who.session
        self.holder = slot if live else None
        return self.holder, self.ahead(seen, self.holder)

    def rang_while_looking(self) -> bool:
        """First in line behind a live holder: the bell rang while the look ran. The next look
        follows at once, no ticket, no pause (without asking the remote if it was that holder's)."""
        bell = self.bell
        if bell is None or self.holder is None or not bell.wait(0):
            return False
        self.rang = True
        return True

    def _rung_by_holder(self) -> bool:
        """The ring heard last says the take of the slot the last look saw held ended."""
        held, bell = self.holder, self.bell
        return held is not None and held.token > 0 and bell is not None and bell.told("slot") == str(held.token)

    def ahead(self, seen: list[Lease], holder: Lease | None) -> list[Lease]:
        """The live tickets of others served before ours (all of them before we hold one); not
        the holder's, which it gives back with the slot."""
        me = next((lease for lease in seen if lease.name == self.mine and lease.session == self.who.session), None)
        others = {self.who.session, holder.session if holder is not None else self.who.session}
        tickets = [lease for lease in seen if lease.name != SLOT and lease.live and lease.session not in others]
        if me is None:
            return tickets
        return [lease for lease in tickets if (lease.since, lease.session) < (me.since, me.session)]

    def tell(self, holder: Lease | None, ahead: list[Lease]) -> None:
        place = len(ahead) + 1
        who_holds = holder.session if holder is not None else "nobody"
        if self.told == (place, who_holds):
            return
        self.told = (place, who_holds)
        self.places.append(place)
        if holder is not None and (not self.holders or self.holders[-1] != holder.session):
            self.holders.append(holder.session)
        held = (
            f"held by session {holder.session}"
            + (f", {holder.description}" if holder.description else "")
            + f", since {_clock(holder.since)}"
            if holder is not None
            else "free, others first"
        )
        self.say(f"gitst: waiting for the merge slot on {self.leases.where}: {_ordinal(place)} in line ({held})")

    def keep_ticket(self, description: str) -> None:
        """Hold a ticket (taken once; renewed when a third of the TTL has passed)."""
        if not self.ticket:
            self.ticket = self.leases.take(self.mine, f"waiting to land {description}") is not None
            self.renewed = self.backoff.waited
        elif self.backoff.waited - self.renewed > self.leases.ttl / 3:
            self.leases.renew(self.mine)
            self.renewed = self.backoff.waited

    def drop_ticket(self) -> None:
        if self.ticket:
            self.leases.give_back(self.mine)
            self.ticket = False

    def pause(self, ahead: list[Lease], holder: Lease | None) -> bool:
        """The pause before the next look (False: the wait is over). The first two in line
        sleep listening to the doorbell — the first takes the slot at the ring without asking
        the remote, and sleeps up to :data:`RING_PAUSE` while the holder runs on this machine
        (its give-back rings); the second looks at once (it is first now, or about to be) —;
        the others just sleep: a ring must not set them all off."""
        most = _pause_at(len(ahead) + 1, holder)
        bell = self._bell() if len(ahead) <= 1 else None
        if bell is None:
            return self.backoff.pause(most=most)
        first = not ahead
        if first and holder is not None and holder.host == self.who.host:
            most = max(most, RING_PAUSE)

        def sleep(seconds: float) -> None:
            self.rang = bell.wait(seconds) and first

        return self.backoff.pause(most=most, sleep=sleep)

    def _bell(self) -> doorbells.Doorbell | None:
        self.bell = self.bell or self.leases.doorbell()
        return self.bell

    def ticket_with_slot(self) -> None:
        """We hold the slot: our ticket goes back with it (:meth:`Leases.with_slot`)."""
        if self.ticket:
            self.leases.with_slot(self.mine)
            self.ticket = False


def acquire(
    leases: Leases, who: Identity, *, item: str, wait: float, say: Say, taking: Callable[[str], None] | None = None
) -> Slot:
    """Hold the slot for ``who`` (landing ``item``), in queue order; SlotBusy after ``wait`` s.
    ``taking``: called before each try to take the free slot, with the commit the landing
    that gave it back said it pushed to the base ("": none said; ``land`` starts the base's
    fetch then, to run beside the take's push)."""
    waiting = _Wait(leases, who, ticket_name(who.session), say, Backoff(wait, first=0.1, most=2.0))
    try:
        while True:
            before = waiting.backoff.waited  # waited: every second before the try that takes the slot
            holder, ahead = waiting.line()
            if not ahead and waiting.rang_while_looking():
                continue
            if holder is None and not ahead:
                if taking is not None:
                    taking(waiting.landed)
                token = leases.take(SLOT, f"landing {item}")
                if token is not None:
                    waiting.ticket_with_slot()
                    return Slot(leases.where, token, before, len(waiting.holders), waiting.places)
                # another agent got it between the read and the take: wait in line like the rest
            waiting.keep_ticket(item)
            waiting.tell(holder, ahead)
            if not waiting.pause(ahead, holder):
                raise SlotBusy(
                    f"the merge slot on {leases.where} stayed busy for {wait:g}s "
                    f"(held by {waiting.holders[-1] if waiting.holders else 'others'})",
                    fix="run `git st land` again (it resumes), or wait longer with --wait SECONDS",
                )
    except BaseException:
        waiting.drop_ticket()
        raise


def _pause_at(place: int, holder: Lease | None) -> float:
    """The longest pause before the next look at ``place`` in line (module docstring)."""
    held = 0.0
    if holder is not None:
        began = timestamps.moment(holder.since)
        held = max(0.0, timestamps.now() - began.timestamp()) if began is not None else 0.0
    return max(FIRST_PAUSE if place <= 1 else PLACE_PAUSE * place, held / 10)


def release(leases: Leases) -> None:
    """Give the slot back (nothing when it is not ours any more)."""
    leases.give_back(SLOT)
