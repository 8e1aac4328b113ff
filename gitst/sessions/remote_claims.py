"""Claims through the git remote: ``refs/st/claims/<issue>`` on the remote, moved only by
compare-and-swap pushes, so agents on different machines (each with its own clone) never
hold one issue at once. docs/parallel.md, "Claims through the remote".

- The claim ref points to a small commit (no parent, on no branch) whose tree holds one file,
  ``claim.json``: issue, session, host, actor, pid, fencing token, claimed/renewed/expires
  times, TTL, branch, description and a random ``nonce`` — two identical records never make
  the same commit, so a push that lost a race can never "succeed" as a no-op.
- A fencing token grows with every new owner of an issue and never goes back. The highest
  token handed out is kept by one of :data:`FENCE_BUCKETS` counter refs,
  ``refs/st/fence@<k>`` (``k`` a hash of the issue id), which points at the claim commit of
  the latest new owner of any issue in its bucket. A new owner (a first claim, a claim after a
  release, a takeover) moves the claim ref and its bucket's counter to its one new commit in
  one ``--atomic`` push with a lease on each: its token is one more than the highest of the
  counter, the claim and (on a remote gitst used before) the issue's old per-issue fence ref
  ``refs/st/fence/<issue>``, which that push deletes. So a release or a sweep deletes the claim
  ref and nothing is left behind: the refs under ``refs/st/`` are the live claims plus at most
  :data:`FENCE_BUCKETS` counters, whatever the history (issue 25.3).
- Every move is ``git push --force-with-lease=REF:EXPECTED``: create-only (empty expectation)
  for a free issue, the old commit for a renewal, a takeover or a release (a delete). The
  remote checks the old value under its ref lock, so of N contenders exactly one wins; the
  others read the remote again and report the winner (exit 3).
- The remote's refs are read by one ``git fetch --prune`` into ``refs/st-remote/<remote>/``
  (never into your branches or tags), within the remote deadline (``ST_REMOTE_TIMEOUT``).
- What the remote holds is untrusted: records are read and checked by
  :mod:`gitst.sessions.remote_records` (size, depth, types, integers); ``list_claims`` skips
  (and reports once) refs whose names are not claim names, and reads at most
  :data:`MAX_CLAIMS` of them.

A claim is ``live`` until its ``expires_at`` (the clock of the machine that reads it; keep
clocks in sync), ``stale`` after, and ``dead`` at once when its owner ran on this host and its
process is gone (the local rule). Stale and dead claims are taken over by the next claimant.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import orjson

from gitst import settings
from gitst.core import timestamps
from gitst.core.errors import ConflictError, EnvironmentProblem, ProblemsFound, UsageError
from gitst.core.values import value_class
from gitst.git import objects, refs
from gitst.git import remote as remote_layer
from gitst.git.remote import PushResult, RefUpdate, RemoteUnreachable, remote_exists
from gitst.sessions import locks
from gitst.sessions.identity import Identity
from gitst.sessions.remote_records import (
    CLAIM_FIELDS,
    CLAIM_FILE,
    FENCE_FIELDS,
    MAX_RECORD_BYTES,
    MAX_TOKEN,
    BadRemoteClaim,
    held_by_pr,
    is_issue_name,
    parse,
    read_records,
    readable,
)
from gitst.settings import remote_timeout
from gitst.statedir.paths import validate_identifier

__all__ = [
    "CLAIMS_NAMESPACE",
    "FENCE_NAMESPACE",
    "BadRemoteClaim",
    "RemoteAcquired",
    "RemoteClaimView",
    "RemoteIssueTaken",
    "RemoteUnreachable",
    "acquire",
    "choose_remote",
    "claim_ref",
    "claim_state",
    "commit_record",
    "compact_fences",
    "counter_ref",
    "list_claims",
    "read_claim",
    "release",
    "release_held",
    "renew",
    "renewal_of",
    "sweep",
    "tracking",
]

MAX_CLAIMS = 1000  # claim refs `sessions --remote` and `status` read; more are reported, not read

CLAIMS_NAMESPACE = "refs/st/claims/"
FENCE_NAMESPACE = "refs/st/fence/"  # the per-issue fence refs of gitst before issue 25: read, then deleted
COUNTER_PREFIX = "refs/st/fence@"  # refs/st/fence@0 .. fence@7: the highest token of each bucket
FENCE_BUCKETS = 8
RECORD_VERSION = 1
AUTHOR = ("gitst", "gitst@invalid")
# A lost compare-and-swap reads the remote again; so many rounds of losing end in exit 3.
RACE_TRIES = 6
# Claims of different issues in one bucket race for its counter, not for the claim: such lost
# rounds are tried again (after a random pause) up to RACE_TRIES * COUNTER_TRIES rounds in all.
COUNTER_TRIES = 8

RemoteState = Literal["live", "stale", "dead"]


def fetch_refs(remote: str, refspecs: list[str], cwd: str | os.PathLike[str] | None = None) -> bool:
    """:func:`gitst.git.remote.fetch_refs` within this command's remote deadline."""
    return remote_layer.fetch_refs(remote, refspecs, cwd, timeout=remote_timeout(cwd))


def push_refs(
    remote: str, updates: list[RefUpdate], cwd: str | os.PathLike[str] | None = None, *, atomic: bool = False
) -> PushResult:
    """:func:`gitst.git.remote.push_refs` within this command's remote deadline."""
    return remote_layer.push_refs(remote, updates, cwd, timeout=remote_timeout(cwd), atomic=atomic)


def choose_remote(
    option: str | None, *, offline: bool = False, cwd: str | os.PathLike[str] | None = None
) -> tuple[str | None, str | None]:
    """``(remote to claim through, remote to publish on later)`` from ``--remote [NAME]``
    (``option``: None when absent, ``""`` when given without a name) and ``--offline``.

    Without ``--remote`` the configured ``st.remote`` (or ``ST_REMOTE``) is used; ``--remote``
    alone means that, else ``origin``. ``--offline`` claims here only and leaves the claim
    for the next heartbeat to publish on the configured remote. A remote git does not know
    is bad input (exit 2)."""
    if offline and option is not None:
        raise UsageError("--offline and --remote contradict each other", fix="give one of them")
    configured = settings.optional_str_setting("remote", cwd)
    name = option or configured or ("origin" if option == "" else None)
    if name is None:
        return None, None
    if not remote_exists(name, cwd):
        source = "--remote" if option else "st.remote (git config) / ST_REMOTE"
        raise UsageError(
            f"no git remote named {name!r} (from {source})",
            fix=f"`git remote add {name} URL`, or name an existing remote (`git remote -v`)",
        )
    return (None, name) if offline else (name, None)


def claim_ref(issue: str) -> str:
    return CLAIMS_NAMESPACE + validate_identifier(issue, "issue")


def fence_ref(issue: str) -> str:
    """The per-issue fence ref older gitst wrote (read once, deleted by the next new owner)."""
    return FENCE_NAMESPACE + validate_identifier(issue, "issue")


def counter_ref(issue: str, prefix: str = COUNTER_PREFIX) -> str:
    """The fence counter of ``issue``'s bucket: ``refs/st/fence@<k>``, ``k`` from a hash of the
    id (the same on every machine). An issue id never holds ``@``, so no glob over issue refs
    (``refs/st/*/ISSUE``) ever matches a counter. A namespace of its own (reservations) passes
    its own ``prefix``."""
    digest = hashlib.sha1(validate_identifier(issue, "issue").encode(), usedforsecurity=False).digest()
    return f"{prefix}{digest[0] % FENCE_BUCKETS}"


def tracking(remote: str) -> str:
    """Where this clone keeps its copy of ``remote``'s ``refs/st/*``: ``refs/st-remote/<name>/``
    (a URL or path given as the remote gets a short hash instead of its name)."""
    if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}", remote) and ".." not in remote:
        name = remote
    else:
        name = "url-" + hashlib.sha1(remote.encode(), usedforsecurity=False).hexdigest()[:12]
    return f"refs/st-remote/{name}/"


class RemoteIssueTaken(ConflictError):
    """Another live session holds the issue on the remote (exit 3): names its host and session,
    or the open PR that holds it (:func:`gitst.sessions.remote_holds.hold`)."""

    def __init__(self, issue: str, remote: str, record: dict[str, Any]):
        self.issue = issue
        self.remote = remote
        self.record = record
        number = held_by_pr(record)
        holder = f"held on {remote} by its open PR #{number}, opened" if number is not None else f"claimed on {remote}"
        super().__init__(
            f"issue {issue} is {holder} by session {record.get('session')} on host "
            f"{record.get('host')} ({describe(record)})",
            fix=f"pick another issue, or wait until that session releases it or its claim expires "
            f"(`git st sessions --remote {remote}` lists the remote's claims)"
            if number is None
            else "`git st land` in the item's worktree finishes it once the PR is merged (or gives it back "
            "once it is closed); else the hold ends at its expiry (st.land.prHold)",
        )


def describe(record: dict[str, Any], state: str | None = None) -> str:
    """``branch B, actor A, token T, expires in 29m`` for messages."""
    number = held_by_pr(record)
    parts = [f"held by PR #{number}"] if number is not None else []
    if record.get("branch"):
        parts.append(f"branch {record['branch']}")
    parts.append(f"actor {record.get('actor')}")
    parts.append(f"token {record.get('token')}")
    parts.append(expiry_text(record, state))
    return ", ".join(parts)


def expiry_text(record: dict[str, Any], state: str | None = None) -> str:
    state = state or claim_state(record)
    if state == locks.DEAD:
        return "owner dead, reclaimable now"
    delta = timestamps.parse(record["expires_at"]) - timestamps.now()
    return ("expires " if delta >= 0 else "expired ") + timestamps.human_delta(delta)


def claim_state(record: dict[str, Any], now: float | None = None) -> RemoteState:
    """live / stale (TTL passed) / dead (its owner ran on this host and is gone)."""
    owner = {k: record.get(k) for k in ("pid", "pid_start", "host", "liveness")}
    if isinstance(owner["pid"], int) and locks.owner_dead(owner):
        return locks.DEAD
    when = timestamps.now() if now is None else now
    return locks.LIVE if when < timestamps.parse(record["expires_at"]) else locks.STALE


@value_class(frozen=True)
class Ref:
    oid: str
    record: dict[str, Any]


@value_class(frozen=True)
class Snapshot:
    claim: Ref | None
    fence: Ref | None  # the old per-issue fence ref, on a remote gitst used before issue 25
    counter: Ref | None = None  # the issue's bucket counter

    def highest(self, issue: str) -> tuple[int, str]:
        """The highest token the issue (or its bucket) was ever handed (the next owner's is one
        more), and the ref that holds it."""
        held = [(self.claim, claim_ref(issue)), (self.fence, fence_ref(issue)), (self.counter, counter_ref(issue))]
        return max(((ref.record["token"], name) for ref, name in held if ref is not None), default=(0, ""))


# Reads the remote's claim of an issue again after a lost round (instead of read_claim).
Reread = Callable[[str], Snapshot]


def read_claim(issue: str, remote: str, cwd: str | os.PathLike[str] | None = None) -> Snapshot:
    """The remote's claim of ``issue`` now, with its bucket's fence counter (and an old
    per-issue fence ref, if any): one fetch of those refs."""
    track = tracking(remote)
    validate_identifier(issue, "issue")
    counter = counter_ref(issue)
    bucket = counter[len("refs/st/") :]
    fetch_refs(remote, [f"+refs/st/*/{issue}:{track}*/{issue}", f"+{counter}*:{track}{bucket}*"], cwd)
    local = refs.refs_under(track, cwd)
    found = {
        claim_ref(issue): (local.get(f"{track}claims/{issue}"), CLAIM_FIELDS, issue),
        fence_ref(issue): (local.get(f"{track}fence/{issue}"), FENCE_FIELDS, issue),
        counter: (local.get(f"{track}{bucket}"), FENCE_FIELDS, None),
    }
    raws = read_records(remote, {name: oid for name, (oid, _, _) in found.items() if oid}, cwd)
    got = {
        name: Ref(oid, parse(remote, name, raws[name], fields, named)) if oid else None
        for name, (oid, fields, named) in found.items()
    }
    return Snapshot(got[claim_ref(issue)], got[fence_ref(issue)], got[counter])


def _commit(
    cwd: str | os.PathLike[str] | None, name: str, record: dict[str, Any], message: str, source: str = ""
) -> str:
    """The commit of ``record`` (``source``: the ref whose token it follows, for the message)."""
    source = source or counter_ref(record["issue"])
    if record["token"] > MAX_TOKEN:  # the fence read was the last token there is: nothing is written
        raise ProblemsFound(
            f"{source} on the remote holds token {record['token'] - 1}, the last one every "
            f"reader keeps exact (2^53 - 1): no new owner of issue {record['issue']} can be fenced after it",
            fix=f"gitst never gets there by itself: the ref was forged. Delete it (`git push REMOTE "
            f":{source}`) and claim again",
        )
    data = orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    if len(data) > MAX_RECORD_BYTES:  # never push what every reader (ours too) refuses
        raise UsageError(
            f"the claim record for issue {record.get('issue')} would be {len(data)} bytes, more than the "
            f"{MAX_RECORD_BYTES} a remote claim may be",
            fix="give a shorter --desc",
        )
    return objects.commit_file(cwd, name, data, message, author=AUTHOR)


def _claim_record(
    issue: str,
    who: Identity,
    token: int,
    ttl: float,
    *,
    claimed_at: str | None,
    branch: str | None,
    description: str | None,
    previous: dict[str, Any] | None = None,
) -> dict[str, Any]:
    now = timestamps.now()
    record: dict[str, Any] = {
        "version": RECORD_VERSION,
        "issue": issue,
        "session": who.session,
        "host": who.host,
        "actor": who.actor,
        "pid": who.pid,
        "liveness": who.liveness,
        "token": token,
        "claimed_at": claimed_at or timestamps.iso(now),
        "renewed_at": timestamps.iso(now),
        "expires_at": timestamps.iso(now + ttl),
        "ttl": ttl,
        "branch": branch,
        "description": description,
        "nonce": secrets.token_hex(16),
    }
    if who.pid_start is not None:
        record["pid_start"] = who.pid_start
    if previous is not None:
        record["previous"] = {k: previous.get(k) for k in ("session", "host", "actor", "token", "expires_at")}
    return record


def renewal_of(
    old: dict[str, Any], who: Identity, ttl: float, *, branch: str | None = None, description: str | None = None
) -> dict[str, Any]:
    """``old`` renewed for ``who``: its issue, token, claimed_at, branch, description (unless given)."""
    branch = old.get("branch") if branch is None else branch
    description = old.get("description") if description is None else description
    return _claim_record(
        old["issue"], who, old["token"], ttl, claimed_at=old.get("claimed_at"), branch=branch, description=description
    )


def commit_record(record: dict[str, Any], verb: str, cwd: str | os.PathLike[str] | None) -> str:
    """The claim commit of ``record`` (``verb``: what its message says was done)."""
    return _commit(cwd, CLAIM_FILE, record, _message(verb, record))


def _message(verb: str, record: dict[str, Any]) -> str:
    return (
        f"gitst: {verb} issue {record['issue']} for session {record['session']} on {record['host']} "
        f"(token {record['token']})\n"
    )


Outcome = Literal["claimed", "renewed", "taken-over"]


@value_class(frozen=True)
class RemoteAcquired:
    remote: str
    ref: str
    commit: str
    record: dict[str, Any]
    outcome: Outcome
    previous: dict[str, Any] | None = None  # the record of a claim taken over

    def entry(self) -> dict[str, Any]:
        """What the session record keeps of it (``claims[].remote``)."""
        return {
            "name": self.remote,
            "ref": self.ref,
            "commit": self.commit,
            "token": self.record["token"],
            "expires_at": self.record["expires_at"],
        }


def _renew_once(
    current: Ref,
    who: Identity,
    remote: str,
    ttl: float,
    cwd: str | os.PathLike[str] | None,
    *,
    branch: str | None = None,
    description: str | None = None,
) -> RemoteAcquired | None:
    """Our own claim, pushed again with a new expiry (same token; fields not given kept).
    None when the ref moved since we read it (the caller reads again)."""
    record = renewal_of(current.record, who, ttl, branch=branch, description=description)
    oid = commit_record(record, "renew", cwd)
    ref = claim_ref(record["issue"])
    if push_refs(remote, [RefUpdate(ref, oid, current.oid)], cwd).ok:
        return RemoteAcquired(remote, ref, oid, record, "renewed")
    return None


def acquire(
    issue: str,
    who: Identity,
    *,
    remote: str,
    ttl: float,
    cwd: str | os.PathLike[str] | None = None,
    branch: str | None = None,
    description: str | None = None,
    first: Snapshot | None = None,
    again: Reread | None = None,
) -> RemoteAcquired:
    """Take ``issue`` on ``remote`` for ``who``: create it, renew our own, or take over a
    stale or dead one. RemoteIssueTaken (exit 3) when another live session holds it;
    RemoteUnreachable (exit 4) when the remote cannot be reached. ``first``: what the caller
    read of the remote a moment ago (:mod:`gitst.sessions.remote_survey`), the first round's
    snapshot instead of a fetch; the push's leases decide as always (when it is out of date,
    the push is refused and the next round reads the remote again). ``again``: how each later
    round reads the remote instead of :func:`read_claim` (``git st next`` reads every claim
    then, in the same one fetch, so a lost race also tells it which other items were just
    claimed: :meth:`gitst.sessions.remote_survey.Survey.again`)."""
    ref = claim_ref(issue)
    lost = 0  # rounds lost to a change of this issue's claim (a round lost to the bucket's counter
    last: str | None = None  # only, a claim of another issue, is retried after a pause)
    reads = _reads(issue, remote, cwd, first, again)
    for round_ in range(RACE_TRIES * COUNTER_TRIES):
        snap = next(reads)
        current = snap.claim
        if round_ and (current.oid if current else None) == last:
            _pause(round_)  # the claim did not change: another issue's claim moved the counter
        elif round_:
            lost += 1
        if lost >= RACE_TRIES:
            break
        last = current.oid if current else None
        if current is not None and _ours(current.record, who):
            renewed = _renew_once(current, who, remote, ttl, cwd, branch=branch, description=description)
            if renewed is not None:
                return renewed
            continue
        if current is not None and claim_state(current.record) == locks.LIVE:
            raise RemoteIssueTaken(issue, remote, current.record)
        taken = _take_once(
            issue, who, snap, ref=ref, remote=remote, ttl=ttl, cwd=cwd, branch=branch, description=description
        )
        if taken is not None:
            return taken
    # Lost every round without ever seeing a live owner: the claim keeps changing hands.
    raise ConflictError(
        f"issue {issue}: the claim on {remote} kept changing while we tried ({RACE_TRIES} rounds)",
        fix="try again in a moment (`git st sessions --remote` shows who holds it)",
    )


def _ours(record: dict[str, Any], who: Identity) -> bool:
    """``who``'s own claim, renewed by a claim: never one its open PR holds (the PR's, not the
    session's: :func:`gitst.sessions.remote_holds.hold`)."""
    return record["session"] == who.session and held_by_pr(record) is None


def _reads(
    issue: str, remote: str, cwd: str | os.PathLike[str] | None, first: Snapshot | None, again: Reread | None
) -> Iterator[Snapshot]:
    """Each round's snapshot for :func:`acquire`: ``first`` (when given), then ``again``'s (when
    given), else :func:`read_claim`'s."""
    if first is not None:
        yield first
    while True:
        yield again(issue) if again is not None else read_claim(issue, remote, cwd)


def _pause(round_: int) -> None:
    """A short random pause before trying again after a lost round on the counter (up to
    0.5 s): contenders for one bucket spread out instead of colliding again."""
    time.sleep(secrets.randbelow(1000) / 1000 * min(0.5, 0.02 * 2 ** min(round_, 5)))


def _take_once(
    issue: str,
    who: Identity,
    snap: Snapshot,
    *,
    ref: str,
    remote: str,
    ttl: float,
    cwd: str | os.PathLike[str] | None,
    branch: str | None,
    description: str | None,
) -> RemoteAcquired | None:
    """One try of :func:`acquire`: claim or take over ``snap`` with its fence (None: a race lost)."""
    current = snap.claim
    token, source = snap.highest(issue)
    record = _claim_record(
        issue,
        who,
        token + 1,
        ttl,
        claimed_at=None,
        branch=branch,
        description=description,
        previous=current.record if current else None,
    )
    oid = _commit(cwd, CLAIM_FILE, record, _message("take over" if current else "claim", record), source)
    updates = [
        RefUpdate(ref, oid, current.oid if current else ""),
        RefUpdate(counter_ref(issue), oid, snap.counter.oid if snap.counter else ""),
    ]
    if snap.fence is not None:  # an old per-issue fence: its token is now the counter's; it goes
        updates.append(RefUpdate(fence_ref(issue), None, snap.fence.oid))
    try:
        pushed = push_refs(remote, updates, cwd, atomic=True).ok
    except remote_layer.RemoteRefused:
        raise  # the remote answered: it took none of it (--atomic)
    except RemoteUnreachable as failed:  # no answer: stopped at the deadline, or the connection broke
        raise ClaimUnanswered(failed, record) from None
    if not pushed:
        return None
    outcome: Outcome = "taken-over" if current else "claimed"
    return RemoteAcquired(remote, ref, oid, record, outcome, current.record if current else None)


class ClaimUnanswered(RemoteUnreachable):
    """The push of a new claim (``record``) ended without the remote's answer: stopped at the
    deadline, or the connection broke mid-push (git's words kept: ``failed``). The remote may
    have applied it all the same (a server that stalls or drops the connection after
    receive-pack), so the caller remembers it as a pending release rather than leave a claim
    nobody holds: the next command that reaches the remote deletes it if it landed, and
    forgets it silently if not."""

    def __init__(self, failed: RemoteUnreachable, record: dict[str, Any]):
        EnvironmentProblem.__init__(self, failed.message, fix=failed.fix)
        self.remote = failed.remote
        self.detail = failed.detail
        self.failed = failed
        self.record = record


@value_class(frozen=True)
class Renewal:
    acquired: RemoteAcquired | None  # None: lost
    owner: dict[str, Any] | None = None  # who holds it now, when lost


def renew(issue: str, who: Identity, *, remote: str, ttl: float, cwd: str | os.PathLike[str] | None = None) -> Renewal:
    """Push ``expires_at`` forward on our own claim (heartbeat). Lost when another session
    holds it now or it was released."""
    claim_ref(issue)  # a bad issue id is refused before the remote is asked
    for _ in range(RACE_TRIES):
        current = read_claim(issue, remote, cwd).claim
        if current is None or current.record["session"] != who.session:
            return Renewal(None, current.record if current else None)
        renewed = _renew_once(current, who, remote, ttl, cwd)
        if renewed is not None:
            return Renewal(renewed)
    raise ConflictError(f"issue {issue}: the claim on {remote} kept changing while we renewed it")


def release(
    issue: str, who: Identity, *, remote: str, cwd: str | os.PathLike[str] | None = None
) -> dict[str, Any] | None:
    """Delete our claim ref (with a lease on what we read). Returns the record released, None
    when the remote holds no claim of ours (never held, released, or taken over)."""
    return release_held(issue, remote=remote, session=who.session, cwd=cwd)


def release_held(
    issue: str,
    *,
    remote: str,
    session: str,
    token: int | None = None,
    cwd: str | os.PathLike[str] | None = None,
    commit: str | None = None,
) -> dict[str, Any] | None:
    """Delete ``session``'s claim ref of ``issue`` (with ``token`` when given), with a lease on
    what we read: :func:`release` for the session itself, and the retry of a release that
    could not reach the remote (the pending release of :mod:`gitst.sessions.pending`), which
    may run in another session. None when the remote holds no such claim.

    ``commit``: the claim commit the session pushed last (its record keeps it). The delete is
    first pushed with a lease on it, nothing read: the remote still holding exactly that
    commit is the session's claim with that token. A refused lease (renewed, taken over,
    gone) reads the remote and decides as without it. Returns ``{"issue", "session",
    "token"}`` then (what the session knows of the record)."""
    ref = claim_ref(issue)
    if commit and push_refs(remote, [RefUpdate(ref, None, commit)], cwd).ok:
        return {"issue": issue, "session": session, "token": token}
    for _ in range(RACE_TRIES):
        current = read_claim(issue, remote, cwd).claim
        if current is None or current.record["session"] != session:
            return None
        if token is not None and current.record["token"] != token:
            return None  # a later claim of the same session (taken after a release): not ours to drop
        if push_refs(remote, [RefUpdate(ref, None, current.oid)], cwd).ok:
            return current.record
    raise ConflictError(f"issue {issue}: the claim on {remote} kept changing while we released it")


def sweep(remote: str, cwd: str | os.PathLike[str] | None = None, *, dry_run: bool = False) -> list[RemoteClaimView]:
    """Delete every stale or dead claim on ``remote`` (``git st gc``), each with a lease on the
    commit read, so a claim renewed or taken over meanwhile is left alone. The fence ref is
    kept: the next owner still gets a higher token. Returns the claims deleted (or, dry,
    that would be)."""
    dropped = []
    for view in list_claims(remote, cwd):
        if view.state not in (locks.STALE, locks.DEAD):
            continue
        if dry_run or push_refs(remote, [RefUpdate(view.ref, None, view.commit)], cwd).ok:
            dropped.append(view)
    if not dry_run:
        compact_fences(remote, cwd)
    return dropped


def compact_fences(remote: str, cwd: str | os.PathLike[str] | None = None) -> int:
    """Fold the old per-issue fence refs (``refs/st/fence/<issue>``, written by gitst before
    issue 25) into their buckets' counters and delete them: per bucket one ``--atomic`` push
    that moves the counter to the highest token of the bucket (with a lease) and deletes each
    folded fence (with a lease), so tokens never go back and a claim racing it loses or wins
    whole. Returns how many fence refs were deleted (0, and one fetch, on a compacted remote)."""
    track = tracking(remote)
    fetch_refs(remote, [f"+{FENCE_NAMESPACE}*:{track}fence/*", f"+{COUNTER_PREFIX}*:{track}fence@*"], cwd)
    local = refs.refs_under(track, cwd)
    legacy = {
        FENCE_NAMESPACE + name[len(f"{track}fence/") :]: oid
        for name, oid in local.items()
        if name.startswith(f"{track}fence/") and is_issue_name(name[len(f"{track}fence/") :])
    }
    if not legacy:
        return 0
    counters = {COUNTER_PREFIX + name[len(f"{track}fence@") :]: oid for name, oid in local.items() if "fence@" in name}
    raws = read_records(remote, {**legacy, **counters}, cwd)
    buckets: dict[str, list[str]] = {}
    for ref in legacy:
        buckets.setdefault(counter_ref(ref[len(FENCE_NAMESPACE) :]), []).append(ref)
    deleted = 0
    for counter, fences in sorted(buckets.items()):
        tokens = {
            ref: parse(remote, ref, raws[ref], FENCE_FIELDS, ref[len(FENCE_NAMESPACE) :])["token"] for ref in fences
        }
        old = counters.get(counter)
        highest = max(tokens, key=lambda ref: tokens[ref])
        updates = [RefUpdate(ref, None, legacy[ref]) for ref in fences]
        if old is None or tokens[highest] > parse(remote, counter, raws[counter], FENCE_FIELDS, None)["token"]:
            updates.append(RefUpdate(counter, legacy[highest], old or ""))
        if push_refs(remote, updates, cwd, atomic=True).ok:
            deleted += len(fences)
    return deleted


@value_class
class RemoteClaimView:
    issue: str
    ref: str
    commit: str
    record: dict[str, Any] | None
    state: RemoteState | Literal["corrupt"]
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"issue": self.issue, "ref": self.ref, "commit": self.commit, "state": self.state}
        if self.record is not None:
            for key in ("session", "host", "actor", "token", "branch", "claimed_at", "renewed_at", "expires_at"):
                data[key] = self.record.get(key)
            if held_by_pr(self.record) is not None:
                data["pr"] = self.record["pr"]
        if self.problem is not None:
            data["errors"] = [self.problem]
        return data


def list_claims(remote: str, cwd: str | os.PathLike[str] | None = None) -> list[RemoteClaimView]:
    """Every claim on ``remote``: one fetch of ``refs/st/claims/*``, then :func:`claim_views`."""
    track = tracking(remote)
    fetch_refs(remote, [f"+{CLAIMS_NAMESPACE}*:{track}claims/*"], cwd)
    return claim_views(remote, refs.refs_under(f"{track}claims/", cwd), cwd)[0]


def claim_views(
    remote: str, local: dict[str, str], cwd: str | os.PathLike[str] | None, also: dict[str, str] | None = None
) -> tuple[list[RemoteClaimView], dict[str, bytes | BadRemoteClaim | None]]:
    """The claims of ``local`` (``{tracking ref under <track>claims/: commit}``, as fetched),
    read with one ``cat-file --batch-check`` and one ``cat-file --batch`` — the records of
    ``also`` (``{name: commit}``: fence counters) in the same two, returned raw. Refs whose
    names are no issue id (a slash, bytes that are not UTF-8, 65 characters…) are skipped
    unread and reported once; at most :data:`MAX_CLAIMS` are read (the rest reported)."""
    track = tracking(remote)
    issues = {name[len(f"{track}claims/") :]: oid for name, oid in local.items()}
    names = readable(remote, issues, CLAIMS_NAMESPACE, MAX_CLAIMS)
    wanted = {CLAIMS_NAMESPACE + issue: issues[issue] for issue in names}
    raws = read_records(remote, {**wanted, **(also or {})}, cwd)
    views = []
    now = timestamps.now()
    for issue in names:
        ref = CLAIMS_NAMESPACE + issue
        try:
            record = parse(remote, ref, raws[ref], CLAIM_FIELDS, issue)
        except BadRemoteClaim as bad:
            views.append(RemoteClaimView(issue, ref, issues[issue], None, "corrupt", bad.message))
            continue
        views.append(RemoteClaimView(issue, ref, issues[issue], record, claim_state(record, now)))
    return views, {name: raws[name] for name in also or {}}
