"""One look at the remote for ``git st next``: its claims, its fence counters and the caller's
own refs (the base branch) in **one** ``git fetch``, one ``for-each-ref`` and one
``cat-file --batch-check`` + ``--batch`` pair (docs/performance.md, "next: one fetch").

``next`` used to ask the remote three times before its claim: the base, the listing of
``refs/st/claims/*`` and, inside the claim, that issue's claim ref and its bucket's counter.
A :class:`Survey` answers all three from one fetch: :attr:`Survey.views` lists every claim
(as :func:`gitst.sessions.remote_claims.list_claims`), :meth:`Survey.snapshot` gives the
claim of any issue what :func:`gitst.sessions.remote_claims.read_claim` would have fetched
(the claim, the bucket's counter, an old per-issue fence ref). The snapshot is a moment old
when the claim is pushed; the push's leases still decide, so a snapshot out of date only
costs a refused push and one more round that reads the remote again.

For the same reason the sessions of one clone that look at once share one fetch
(:func:`_fetch_shared`): four agents of a clone starting together fetched the same refs four
times into the same tracking refs; now one fetches and the others take what it brought.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import time
from collections.abc import Sequence

from gitst.core import filelocks, timestamps
from gitst.core.errors import ConflictError
from gitst.core.values import field, value_class
from gitst.git import refs
from gitst.git import remote as remote_layer
from gitst.git.remote import RemoteTimeout
from gitst.git.repo import repo_info
from gitst.sessions.identity import host
from gitst.sessions.locks import LOCKS_DIR
from gitst.sessions.remote_claims import (
    CLAIMS_NAMESPACE,
    COUNTER_PREFIX,
    FENCE_NAMESPACE,
    MAX_CLAIMS,
    BadRemoteClaim,
    Ref,
    RemoteClaimView,
    Snapshot,
    claim_ref,
    claim_state,
    claim_views,
    counter_ref,
    fence_ref,
    read_claim,
    tracking,
)
from gitst.sessions.remote_records import FENCE_FIELDS, parse, read_records
from gitst.settings import remote_timeout
from gitst.statedir.paths import ensure_state_dir, state_dir

__all__ = ["Survey", "survey"]

PathLike = str | os.PathLike[str] | None


@value_class
class Survey:
    """What one fetch saw on ``remote``: the claim refs and fence counters (their records read
    the first time :attr:`views` or :meth:`snapshot` needs them: a ``next`` with nothing ready
    reads none), the old per-issue fence refs, and the caller's extra local refs (``local``)."""

    remote: str
    local: dict[str, str]  # the refs the caller asked for (``read``): name -> object id
    cwd: PathLike
    claims: dict[str, str] = field(default_factory=dict)  # tracking ref -> commit
    counter_oids: dict[str, str] = field(default_factory=dict)  # refs/st/fence@<k> -> commit
    fences: dict[str, str] = field(default_factory=dict)  # issue -> oid of refs/st/fence/<issue>
    before: Survey | None = None  # the survey this one read again (:meth:`again`): its records are reused

    @functools.cached_property
    def _read(self) -> tuple[list[RemoteClaimView], dict[str, bytes | BadRemoteClaim | None]]:
        if self.before is None or len(self.claims) > MAX_CLAIMS:
            return claim_views(self.remote, self.claims, self.cwd, also=self.counter_oids)
        return self._read_changed(self.before)

    def _read_changed(self, before: Survey) -> tuple[list[RemoteClaimView], dict[str, bytes | BadRemoteClaim | None]]:
        """:attr:`_read` of a survey read again: only the records whose commits ``before`` did not
        read are read and checked (a commit is its content); the others are ``before``'s, their
        state (live / stale / dead) judged again now."""
        prefix = tracking(self.remote) + "claims/"
        known = {prefix + view.issue: view for view in before.views}
        changed = {name: oid for name, oid in self.claims.items() if name not in known or known[name].commit != oid}
        counters = {name: oid for name, oid in self.counter_oids.items() if before.counter_oids.get(name) != oid}
        fresh, raws = claim_views(self.remote, changed, self.cwd, also=counters)
        now = timestamps.now()
        kept = [
            RemoteClaimView(view.issue, view.ref, view.commit, view.record, claim_state(view.record, now))
            if view.record is not None
            else view
            for name, view in known.items()
            if self.claims.get(name) == view.commit
        ]
        old_raws = before._read[1]
        return sorted([*fresh, *kept], key=lambda view: view.issue), {
            name: raws[name] if name in counters else old_raws[name] for name in self.counter_oids
        }

    @property
    def views(self) -> list[RemoteClaimView]:
        """Every claim on the remote, as :func:`gitst.sessions.remote_claims.list_claims` lists them."""
        return self._read[0]

    def snapshot(self, issue: str) -> Snapshot:
        """The remote's claim of ``issue`` as this survey saw it, with its bucket's counter (and
        an old per-issue fence ref): what :func:`read_claim` returns, without its fetch. A claim
        record the survey could not read is read again by :func:`read_claim` (which reports it)."""
        claim_ref(issue)  # a bad issue id is refused as read_claim refuses it
        view = next((v for v in self.views if v.issue == issue), None)
        if view is not None and view.record is None:
            return read_claim(issue, self.remote, self.cwd)
        claim = Ref(view.commit, view.record) if view is not None and view.record is not None else None
        counter_name = counter_ref(issue)
        counter = None
        if counter_name in self.counter_oids:
            oid, raw = self.counter_oids[counter_name], self._read[1][counter_name]
            counter = Ref(oid, parse(self.remote, counter_name, raw, FENCE_FIELDS, None))
        fence = None
        if issue in self.fences:  # a remote gitst used before issue 25: rare, read when needed
            name = fence_ref(issue)
            raw = read_records(self.remote, {name: self.fences[issue]}, self.cwd)[name]
            fence = Ref(self.fences[issue], parse(self.remote, name, raw, FENCE_FIELDS, issue))
        return Snapshot(claim, fence, counter)

    def again(self) -> Survey:
        """The remote's claims and counters read again (one fetch, as :func:`survey`; not the
        caller's refs): what a lost claim race reads instead of that one item's claim, for the
        same price — it also says which other items were claimed since this survey."""
        again = survey(self.remote, self.cwd, fresh=True)
        again.before = self
        return again


def survey(
    remote: str,
    cwd: PathLike = None,
    *,
    fetch: Sequence[str] = (),
    read: Sequence[str] = (),
    fresh: bool = False,
    since: int = 0,
) -> Survey:
    """One fetch of ``refs/st/claims/*``, ``refs/st/fence@*`` and ``refs/st/fence/*`` from
    ``remote`` together with the caller's refspecs ``fetch`` (e.g. the base branch), shared
    with the other sessions of this clone that ask at the same moment (:func:`_fetch_shared`;
    ``fresh``: only a fetch begun after this call; ``since``: only one begun at or after that
    moment, in ns); one ``for-each-ref`` of what landed and of
    the caller's local refs ``read``; the claims' and counters' records in one ``cat-file``
    pair when first needed."""
    track = tracking(remote)
    refspecs = [
        *fetch,
        f"+{CLAIMS_NAMESPACE}*:{track}claims/*",
        f"+{COUNTER_PREFIX}*:{track}fence@*",
        f"+{FENCE_NAMESPACE}*:{track}fence/*",
    ]
    _fetch_shared(remote, refspecs, cwd, fresh=fresh, since=since)
    found = refs.refs_under_all([track, *read], cwd)
    claims = {name: oid for name, oid in found.items() if name.startswith(f"{track}claims/")}
    counters = {
        COUNTER_PREFIX + name[len(f"{track}fence@") :]: oid
        for name, oid in found.items()
        if name.startswith(f"{track}fence@")
    }
    fences = {name[len(f"{track}fence/") :]: oid for name, oid in found.items() if name.startswith(f"{track}fence/")}
    local = {name: found[name] for name in read if name in found}
    return Survey(remote, local, cwd, claims=claims, counter_oids=counters, fences=fences)


def _fetch_shared(remote: str, refspecs: list[str], cwd: PathLike, *, fresh: bool, since: int = 0) -> None:
    """:func:`fetch_refs`, one at a time per clone and set of refspecs, under the flock
    ``state/locks/fetch-<key>.lock``. The holder fetches and stamps the fetch's start and end
    (``fetch-<key>.stamp``: nanoseconds and host). One that waited for the lock takes what the
    last fetch brought, without fetching, when that fetch ended after this call began (it was
    under way: a view up to a moment older than a fetch of its own, which the leases of the
    push that follows check as they check every view) or, with ``fresh`` (a lost race reads
    the remote again, after the push that lost), when it *began* after this call did — and,
    with ``since``, never one begun before that moment (a landing on this machine: a fetch
    under way since before it would not show it to the agent that runs ``next`` after it). Else
    (no stamp, another host's, a failed fetch) it fetches itself. The wait counts in the
    command's remote deadline: the lock not had by then, it fetches without it, within what
    is left."""
    root = state_dir(cwd)
    ensure_state_dir(root)
    # the repository in the key: clones that share one state dir (ST_STATE_DIR) never share a fetch
    info = repo_info(cwd)
    repository = str(info.common_dir) if info is not None else os.path.abspath(cwd or os.getcwd())
    key = hashlib.sha1("\0".join([repository, remote, *refspecs]).encode(), usedforsecurity=False).hexdigest()[:16]
    folder = root / LOCKS_DIR
    stamp = folder / f"fetch-{key}.stamp"
    timeout = remote_timeout(cwd)
    asked, deadline = time.time_ns(), time.monotonic() + timeout
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(filelocks.locked(folder / f"fetch-{key}.lock", timeout))
        except ConflictError:  # held past the deadline: a hung holder is not waited for longer
            _fetch_within(remote, refspecs, cwd, timeout, deadline)
            return
        if _fetched_since(stamp, asked, fresh, since):
            return
        began = time.time_ns()
        _fetch_within(remote, refspecs, cwd, timeout, deadline)
        _stamp(stamp, began)


def _fetch_within(remote: str, refspecs: list[str], cwd: PathLike, timeout: float, deadline: float) -> None:
    """The fetch with what is left of the command's ``timeout`` (ending at ``deadline``)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise RemoteTimeout(remote, timeout, "fetch", cwd)
    remote_layer.fetch_refs(remote, refspecs, cwd, timeout=left)


def _fetched_since(stamp: os.PathLike[str], asked: int, fresh: bool, since: int = 0) -> bool:
    try:
        fd = os.open(stamp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        words = os.read(fd, 256).split()
    finally:
        os.close(fd)
    if len(words) != 3 or words[2] != host().encode():
        return False
    try:
        began, ended = int(words[0]), int(words[1])
    except ValueError:
        return False
    return (began if fresh else ended) >= asked and began >= since


def _stamp(stamp: os.PathLike[str], began: int) -> None:
    """The fetch that began at ``began`` (ns) succeeded, now: written under the fetch's lock."""
    text = f"{began} {time.time_ns()} {host()}\n".encode()
    fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, text)
    finally:
        os.close(fd)
