"""Issue claims: claim, release, end.

The claim on an issue *is* the TTL lock ``issue-<N>`` (:mod:`gitst.sessions.locks`): taking
it is atomic, a stale or dead owner's claim is reclaimed (and logged) the same way, the
fencing token grows with every new owner. Each claim is also an entry of the session record
(:mod:`gitst.sessions.chats`, which also says who holds an issue), and, through a remote, a
claim ref there (:mod:`gitst.sessions.remote_claims`). Renewing them is
:mod:`gitst.sessions.heartbeats`. The names of those modules that callers use are
re-exported here, so ``claims`` stays the one entry point for a command.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from gitst.core import timestamps
from gitst.core.values import field, value_class
from gitst.git.repo import current_branch, repo_info
from gitst.sessions import locks, pending, remote_claims
from gitst.sessions.chats import (
    FREE,
    OURS,
    SCHEMA,
    STALE_OWNER,
    TAKEN,
    Checked,
    ClaimChecked,
    IssueStatus,
    IssueTaken,
    claim_details,
    configured_remote,
    drop_session_if_idle,
    inspect_issue,
    issue_lock_name,
    issue_of_lock,
    list_sessions,
    mark_lost,
    own_chat_files,
    preflight,
    preflight_claim,
    read_session,
    update_chat,
)
from gitst.sessions.heartbeats import Heartbeat, heartbeat, publish_local
from gitst.sessions.identity import Identity
from gitst.sessions.registry import read_worktree_entry
from gitst.statedir import records

__all__ = [
    "FREE",
    "OURS",
    "STALE_OWNER",
    "TAKEN",
    "Checked",
    "ClaimChecked",
    "Heartbeat",
    "IssueStatus",
    "IssueTaken",
    "RemoteOwner",
    "claim",
    "configured_remote",
    "default_place",
    "drop_session_if_idle",
    "end_claim",
    "heartbeat",
    "inspect_issue",
    "issue_lock_name",
    "issue_of_lock",
    "list_sessions",
    "own_chat_files",
    "preflight",
    "preflight_claim",
    "publish_local",
    "read_session",
    "release",
    "remote_owner",
]


# --- claim, release, heartbeat ----------------------------------------------------------------


@value_class
class Claimed:
    claim: dict[str, Any]
    lock: locks.Acquired
    record: dict[str, Any] | None = None
    remote: remote_claims.RemoteAcquired | None = None
    published: list[str] = field(default_factory=list)  # "7 on origin": claims taken before st.remote, now there
    lost: list[dict[str, Any]] = field(default_factory=list)  # such claims another session holds there: given up
    pending: Any = None  # pending.Retry: releases that could not reach the remote before


def claim(
    issue: str,
    who: Identity,
    *,
    root: Path,
    ttl: float,
    description: str | None = None,
    branch: str | None = None,
    worktree: str | None = None,
    remote: str | None = None,
    pending_remote: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    checked: ClaimChecked | None = None,
    seen: remote_claims.Snapshot | None = None,
    again: remote_claims.Reread | None = None,
) -> Claimed:
    """Take ``issue`` for ``who``: on ``remote`` first (when given), then its local lock, then
    the claim in the session record.

    IssueTaken (exit 3) when another live session holds it here, RemoteIssueTaken (exit 3)
    when one holds it on the remote, RemoteUnreachable (exit 4, nothing written) when the
    remote cannot be reached. Re-claiming our own issue keeps the token and refreshes the
    expiry; fields not given are kept. ``pending_remote`` (``--offline``): the claim is taken
    here only and marked for the next ``heartbeat`` to publish on that remote. ``checked``:
    the caller's :func:`preflight` of this issue (its paths are not derived again).
    ``seen``: the remote's claim of ``issue`` as the caller just read it
    (:meth:`gitst.sessions.remote_survey.Survey.snapshot`): the claim's first round starts
    from it instead of fetching (:func:`remote_claims.acquire`); ``again``: how a lost round
    reads the remote again (default: that issue's claim and counter, one fetch).
    """
    if checked is None or checked.issue != issue:
        checked = preflight_claim(who, root, issue)
    issue = checked.issue
    on_remote = retried = published = None
    if remote is not None:
        on_remote, retried, published = _claim_on_remote(
            checked,
            who,
            root=root,
            remote=remote,
            ttl=ttl,
            cwd=cwd,
            branch=branch,
            description=description,
            seen=seen,
            again=again,
        )
    acquired = _take_lock(checked, who, root=root, ttl=ttl, on_remote=on_remote, cwd=cwd)
    if acquired.reclaimed:
        mark_lost(acquired.reclaimed["previous"]["owner"]["session"], root, {issue}, to=who.session)
    result: dict[str, Any] = {}

    def change(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        old = next((c for c in claims if c.get("issue") == issue), {})
        entry = _claim_entry(
            old, checked, acquired, ttl=ttl, place=(branch, worktree, description), remotes=(on_remote, pending_remote)
        )
        result.update(entry)
        return [*(c for c in claims if c.get("issue") != issue), entry]

    try:
        record = update_chat(who, root, ttl=ttl, change=change, files=checked.chat)
    except BaseException:
        if not acquired.renewed:
            locks.release(checked.lock_name, who, root=root)
        _give_back(issue, who, on_remote, cwd)
        raise
    done = Claimed(result, acquired, record, on_remote, pending=retried)
    if published is not None:
        done.published, done.lost = published.remote_renewed, published.lost
    return done


def _claim_on_remote(
    checked: ClaimChecked,
    who: Identity,
    *,
    root: Path,
    remote: str,
    ttl: float,
    cwd: str | os.PathLike[str] | None,
    branch: str | None,
    description: str | None,
    seen: remote_claims.Snapshot | None = None,
    again: remote_claims.Reread | None = None,
) -> tuple[remote_claims.RemoteAcquired, Any, Heartbeat]:
    """:func:`claim`'s first step with a remote: refused when taken here, the session's
    pending releases retried and its local-only claims published, then the claim there.
    Returns (the remote claim, the pending retry, the publication)."""
    issue = checked.issue
    here = inspect_issue(issue, who, root=root)
    if here.state == TAKEN:  # refused here before the remote is asked
        raise IssueTaken(here)
    retried = pending.retry(root, remotes={remote}, cwd=cwd)
    published = publish_local(who, root=root, remote=remote, skip={issue}, cwd=cwd)
    try:
        on_remote = remote_claims.acquire(
            issue,
            who,
            remote=remote,
            ttl=ttl,
            cwd=cwd,
            branch=branch,
            description=description,
            first=seen,
            again=again,
        )
    except remote_claims.ClaimUnanswered as stopped:
        # It may have landed: a claim there that nobody holds here is released by the
        # next command that reaches the remote (its token: a later claim is never dropped).
        pending.remember_unanswered(
            root, issue, stopped, what="claim", remote=remote, session=who.session, token=stopped.record["token"]
        )
        raise
    # Claimed again on purpose: an earlier release of it still pending is not to be done.
    pending.forget(root, issue, session=who.session)
    return on_remote, retried, published


def _take_lock(
    checked: ClaimChecked,
    who: Identity,
    *,
    root: Path,
    ttl: float,
    on_remote: remote_claims.RemoteAcquired | None,
    cwd: str | os.PathLike[str] | None,
) -> locks.Acquired:
    """The issue's local lock for ``who`` (the remote claim just taken given back when not)."""
    issue, name = checked.issue, checked.lock_name
    try:
        return locks.try_acquire(name, who, root=root, ttl=ttl, files=checked.lock)
    except locks.LockBusy as busy:
        _give_back(issue, who, on_remote, cwd)
        branch_o, worktree_o, desc_o = claim_details(issue, busy.record["owner"]["session"], root)
        raise IssueTaken(IssueStatus(issue, TAKEN, busy.record, locks.LIVE, branch_o, worktree_o, desc_o)) from None
    except BaseException:
        _give_back(issue, who, on_remote, cwd)
        raise


def _claim_entry(
    old: dict[str, Any],
    checked: ClaimChecked,
    acquired: locks.Acquired,
    *,
    ttl: float,
    place: tuple[str | None, str | None, str | None],
    remotes: tuple[remote_claims.RemoteAcquired | None, str | None],
) -> dict[str, Any]:
    """The session record's entry of the claim: ``old`` (the entry there, or ``{}``) updated
    with the lock's token, ``place`` (branch, worktree, description; None keeps the old
    value) and the remote (``remotes``: the claim taken there, else ``--offline``'s remote)."""
    on_remote, pending_remote = remotes
    now = timestamps.iso(timestamps.now())
    entry = dict(old)
    entry.pop("lost", None)
    entry.update({"issue": str(checked.issue), "lock": str(checked.lock_name), "token": acquired.record["token"]})
    entry.setdefault("claimed_at", now)
    if not old or not acquired.renewed:
        entry["claimed_at"] = now
    for key, value in zip(("branch", "worktree", "description"), place, strict=True):
        if value is not None or key not in entry:
            entry[key] = value
    if on_remote is not None:
        entry["remote"] = {**on_remote.entry(), "ttl": ttl}
    elif pending_remote is not None and not (entry.get("remote") or {}).get("commit"):
        entry["remote"] = {"name": pending_remote, "pending": True, "ttl": ttl}
    return entry


def _give_back(
    issue: str, who: Identity, on_remote: remote_claims.RemoteAcquired | None, cwd: str | os.PathLike[str] | None
) -> None:
    """Undo a remote claim we just took (not one we renewed) when the local step failed."""
    if on_remote is None or on_remote.outcome == "renewed":
        return
    # The original error is the one to report; if this fails too, the claim just expires.
    with contextlib.suppress(Exception):
        remote_claims.release(issue, who, remote=on_remote.remote, cwd=cwd)


@value_class
class RemoteOwner:
    """Who holds an issue on the remote, for ``git st check-issue``: ``remote`` (None when no
    remote is set, or it could not be reached: ``unreachable`` says why), the record of the
    live owner there (None: nobody live), and what was done there first — the session's
    unpublished claims published, its pending releases retried (both None when not done)."""

    remote: str | None = None
    owner: dict[str, Any] | None = None
    published: Heartbeat | None = None
    retried: Any = None  # pending.Retry
    unreachable: str | None = None


def remote_owner(issue: str, who: Identity, *, root: Path, remote: str | None) -> RemoteOwner:
    """The live owner of ``issue`` on ``remote`` (:class:`RemoteOwner`), after bringing the
    session's pending releases and unpublished claims there (as every command that reaches
    the remote does). A remote that cannot be reached is no error: ``unreachable`` holds the
    message, the answer is then this clone's claims only."""
    if remote is None:
        return RemoteOwner()
    found = RemoteOwner(remote)
    try:
        retried = pending.retry(root, remotes={remote})
        found.published, found.retried = publish_local(who, root=root, remote=remote), retried
        there = remote_claims.read_claim(issue, remote).claim
    except remote_claims.RemoteUnreachable as gone:
        found.remote, found.unreachable = None, gone.message
        return found
    if there is not None and remote_claims.claim_state(there.record) == "live":
        found.owner = there.record
    return found


@value_class
class Released:
    released: list[str] = field(default_factory=list)  # issues whose lock we released
    not_held: list[str] = field(default_factory=list)  # claims whose lock we no longer held
    remote_released: list[str] = field(default_factory=list)  # "7 on origin": claim refs deleted
    remote_errors: list[str] = field(default_factory=list)  # remotes we could not reach (exit 4)
    pending: Any = None  # pending.Retry of the session's earlier releases that could not reach the remote
    lost: dict[str, Any] = field(default_factory=dict[str, Any])  # issue -> session that took it (claims lost before)


def _release_remote(
    claim: dict[str, Any], who: Identity | None, outcome: Released, root: Path, session: str | None = None
) -> None:
    """Delete the claim ref of ``claim`` on its remote (a pending one was never published);
    ``session``: whose claim it is (default ``who``'s). A remote that cannot be reached
    leaves a pending release (:mod:`gitst.sessions.pending`), retried by the next command
    that reaches it."""
    spec = claim.get("remote") or {}
    if not spec.get("name") or spec.get("pending"):
        return
    owner = session or (who.session if who is not None else None)
    if owner is None:
        return
    try:
        done = remote_claims.release_held(
            claim["issue"], remote=spec["name"], session=owner, token=spec.get("token"), commit=spec.get("commit")
        )
        if done is not None:
            outcome.remote_released.append(f"{claim['issue']} on {spec['name']}")
        pending.forget(root, claim["issue"], session=owner)
    except remote_claims.RemoteUnreachable as gone:
        pending.remember(
            root, claim["issue"], remote=spec["name"], session=owner, token=spec.get("token"), error=gone.message
        )
        outcome.remote_errors.append(
            f"{gone.message}; issue {claim['issue']} is released here, its claim there is remembered and released "
            f"by the next command that reaches {spec['name']} (or `git st gc`)"
        )


def release(who: Identity, *, root: Path, issue: str | None = None, keep_remote: bool = False) -> Released:
    """Release ``issue`` (or every claim of the session): the lock, then the claim entry.

    Releasing an issue another session holds is a conflict (exit 3, naming the owner).
    ``keep_remote``: the claim on the remote is left as it is — handed to an open PR
    (:func:`gitst.sessions.remote_holds.hold`), it is no longer the session's to release.
    """
    checked = preflight(who, root, issue)
    outcome = Released()
    record = records.load(checked.chat.record, SCHEMA)
    claims = (record or {}).get("claims", [])
    outcome.lost = {
        c["issue"]: (c["lost"].get("to") or "nobody")
        for c in claims
        if c.get("lost") and (issue is None or c["issue"] == issue)
    }
    targets = [checked.issue] if isinstance(checked, ClaimChecked) else _held_issues(who, root, claims)
    for target in targets:
        _release_lock(target, who, root, outcome, named=issue is not None)
    tried = set() if keep_remote else _release_remotes(claims, targets, who, outcome, root)
    gone = set(targets)
    if record is not None:
        update_chat(
            who, root, ttl=None, change=lambda kept: [c for c in kept if c.get("issue") not in gone], files=checked.chat
        )
    outcome.pending = _retry_own(who, root, issue, tried)
    return outcome


def _release_remotes(
    claims: list[dict[str, Any]], targets: Sequence[str], who: Identity, outcome: Released, root: Path
) -> set[str]:
    """The remote claims of ``targets`` (not lost) deleted; the issues tried."""
    tried = set()
    for entry in claims:
        if entry.get("issue") in targets and not entry.get("lost"):
            tried.add(entry["issue"])
            _release_remote(entry, who, outcome, root)
    return tried


def _held_issues(who: Identity, root: Path, claims: list[dict[str, Any]]) -> list[str]:
    """Every issue the session holds: its record's claims, then any issue lock it owns
    without one (a claim whose record entry was lost)."""
    targets = [c["issue"] for c in claims]
    for view in locks.locks_of_session(root, who.session):
        other = issue_of_lock(view.name)
        if other and other not in targets:
            targets.append(other)
    return targets


def _release_lock(target: str, who: Identity, root: Path, outcome: Released, *, named: bool) -> None:
    """Release the lock of ``target`` into ``outcome`` (released, or not held). An issue the
    caller ``named`` that another live session holds is a conflict (exit 3) unless its
    claim was lost before (then it is only not held)."""
    try:
        done = locks.release(issue_lock_name(target), who, root=root)
    except locks.NotOwner as not_owner:
        if named and target not in outcome.lost and (not_owner.record or {}).get("owner"):
            status = inspect_issue(target, who, root=root)
            if status.state == TAKEN:
                raise IssueTaken(status, action="release") from None
            raise
        outcome.not_held.append(str(target))
        return
    (outcome.released if done else outcome.not_held).append(str(target))


def _retry_own(who: Identity, root: Path, issue: str | None, tried: set[str]) -> pending.Retry | None:
    """Retry the session's earlier releases that could not reach the remote (``issue``'s only,
    when given; not those just tried): a second ``release`` after an offline one finishes
    it, or says it is still pending."""
    found, _bad = pending.list_pending(root)
    mine = {
        r["issue"]
        for r in found
        if r["session"] == who.session and (issue is None or r["issue"] == issue) and r["issue"] not in tried
    }
    if not mine:
        return None
    return pending.retry(root, issues=mine)


ClaimEnd = Literal["released", "ended"]


def end_claim(issue: str, who: Identity | None, *, root: Path, action: str = "remove") -> ClaimEnd | None:
    """End the claim on ``issue`` when it is ``who``'s (``released``, as :func:`release` does)
    or its owner is stale or dead (``ended``: logged as ``action`` in the reclaim log, the
    owner's record marked ``lost``, its claim on the remote deleted). A live claim of another
    session is left alone (None), and so is an issue nobody holds. A remote that cannot be
    reached leaves a pending release (:mod:`gitst.sessions.pending`): the caller reports it."""
    try:
        record = locks.read(issue_lock_name(issue), root)
    except records.CorruptRecord:
        return None
    owner = (record or {}).get("owner") or {}
    if not owner:
        return None
    if who is not None and owner.get("session") == who.session:
        return "released" if release(who, root=root, issue=issue).released else None
    ended = locks.end_if_not_live(issue_lock_name(issue), root=root, action=action)
    if ended is None:
        return None
    previous = ended["previous"]["owner"]["session"]
    try:
        owner_record = read_session(previous, root)
    except records.CorruptRecord:
        owner_record = None
    for entry in (owner_record or {}).get("claims", []):
        if entry.get("issue") == issue and not entry.get("lost"):
            _release_remote(entry, who, Released(), root, session=previous)
    mark_lost(previous, root, {issue}, to=None)
    return "ended"


def default_place(issue: str, cwd: str | os.PathLike[str] | None, root: Path) -> tuple[str | None, str | None]:
    """(branch, worktree) a plain ``git st claim`` records: the issue's registered worktree,
    else the branch and top of the worktree the command runs in."""
    entry = read_worktree_entry(issue, root=root)
    if entry:
        return entry.get("branch"), entry.get("path")
    info = repo_info(cwd)
    if info is None or info.toplevel is None:
        return None, None
    return current_branch(cwd), str(info.toplevel)
