"""Sessions and issue claims: ``state/active-chats/<session>.json`` (schema ``state-active-chat``).

The claim on an issue *is* the TTL lock ``issue-<N>`` (:mod:`gitst.sessions.locks`): taking
it is atomic, a stale or dead owner's claim is reclaimed (and logged) the same way, the
fencing token grows with every new owner. The session record describes the session (its
pid — the session pid, never the short-lived ``git-st`` — host, actor, last heartbeat)
and each of its claims (issue, branch, worktree, description, time, token), so another
session can be told who holds an issue and on which branch.

States of a session (:func:`session_state`), the same words as for locks:

- ``live``  its pid runs on this host (or it is on another host) and ``expires_at``
  (last heartbeat + TTL) has not passed;
- ``stale`` the TTL passed without a heartbeat;
- ``dead``  its pid is gone on this host (checked with the pid's start time).

An issue is *taken* when its lock is live and owned by another session; a claim whose
lock went stale or dead is free to be reclaimed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from gitst import settings
from gitst.core import timestamps
from gitst.core.errors import ConflictError, UsageError
from gitst.git.repo import current_branch, repo_info
from gitst.sessions import locks, pending, remote_claims
from gitst.sessions.identity import Identity
from gitst.sessions.registry import read_worktree_entry
from gitst.statedir import records
from gitst.statedir.paths import ensure_state_dir, validate_identifier, validate_session
from gitst.statedir.records import locked

__all__ = [
    "FREE",
    "OURS",
    "STALE_OWNER",
    "TAKEN",
    "IssueTaken",
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
    "preflight",
    "release",
]

SCHEMA = "state-active-chat"
CHATS_DIR = "active-chats"
RECORD_VERSION = 1

# Who holds an issue, from the asking session's point of view (:func:`inspect_issue`).
ClaimVerdict = Literal["free", "ours", "taken", "stale"]
FREE: Final = "free"
OURS: Final = "ours"
TAKEN: Final = "taken"
STALE_OWNER: Final = "stale"

SessionState = Literal["live", "stale", "dead"]  # the lock states a session record can be in


def issue_lock_name(issue: str) -> str:
    """The lock that is the claim on ``issue``: ``issue-<issue>``."""
    return locks.ISSUE_PREFIX + validate_identifier(issue, "issue")


def issue_of_lock(name: str) -> str | None:
    return name[len(locks.ISSUE_PREFIX) :] if name.startswith(locks.ISSUE_PREFIX) else None


def chat_files(session: str, root: Path) -> records.RecordFiles:
    return records.record_files(root, CHATS_DIR, validate_session(session))


def read_session(session: str, root: Path) -> dict[str, Any] | None:
    """The record of ``session`` (None when it has none); CorruptRecord when invalid."""
    return records.load(chat_files(session, root).record, SCHEMA)


def session_state(record: dict[str, Any], now: float | None = None) -> SessionState:
    if locks.owner_dead(record):
        return locks.DEAD
    when = timestamps.now() if now is None else now
    if when >= timestamps.parse(record["expires_at"]):
        return locks.STALE
    return locks.LIVE


def preflight(who: Identity, root: Path, issue: str | None = None) -> None:
    """Validate every path a claim or release will touch before anything is written."""
    chat_files(who.session, root)
    if issue is not None:
        locks.lock_files(issue_lock_name(issue), root)
    locks.reclaim_log_path(root)


# --- the session record -----------------------------------------------------------------------


def _update_chat(
    who: Identity, root: Path, *, ttl: float | None, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> dict[str, Any] | None:
    """Read-modify-write our session record under its flock; ``change(claims) -> claims``.

    The record is deleted when no claim is left. Returns the record written (or None).
    """
    files = chat_files(who.session, root)
    ensure_state_dir(root)
    records.make_dir(files.record.parent, root)
    with locked(files.sidecar):
        current = records.load(files.record, SCHEMA) or {}
        claims = change([dict(c) for c in current.get("claims", [])])
        if not claims:
            if current:
                records.remove(files.record)
            return None
        now = timestamps.now()
        ttl = ttl or current.get("ttl") or locks.default_ttl()
        record = dict(current)
        record.update(
            {
                "version": RECORD_VERSION,
                "session": who.session,
                "pid": who.pid,
                "host": who.host,
                "actor": who.actor,
            }
        )
        for key, value in (
            ("pid_start", who.pid_start),
            ("process", who.process),
            ("rule", who.rule),
            ("liveness", who.liveness),
        ):
            if value is not None:
                record[key] = value
            else:
                record.pop(key, None)
        record.setdefault("started_at", timestamps.iso(now))
        record.update(
            {
                "heartbeat_at": timestamps.iso(now),
                "expires_at": timestamps.iso(now + ttl),
                "ttl": ttl,
                "claims": claims,
            }
        )
        records.save(files.record, record, SCHEMA)
        return record


def _mark_lost(session: str, root: Path, issues: set[str], *, to: str | None) -> None:
    """Mark ``issues`` in another session's record as lost (its claim was reclaimed or
    ended by ``worktree remove``), so that session's next heartbeat reports it."""
    files = chat_files(session, root)
    if not files.record.exists():
        return
    with locked(files.sidecar):
        try:
            current = records.load(files.record, SCHEMA)
        except records.CorruptRecord:
            return
        if not current or not any(c.get("issue") in issues for c in current["claims"]):
            return
        stamp = timestamps.iso(timestamps.now())
        claims = [
            {**c, "lost": {"at": stamp, "to": to}} if c.get("issue") in issues and not c.get("lost") else c
            for c in current["claims"]
        ]
        records.save(files.record, {**current, "claims": claims}, SCHEMA)


# --- who holds an issue -----------------------------------------------------------------------


@dataclass
class IssueStatus:
    issue: str
    state: ClaimVerdict
    lock: dict[str, Any] | None = None
    lock_state: locks.LockState = locks.RELEASED
    branch: str | None = None
    worktree: str | None = None
    description: str | None = None

    @property
    def owner(self) -> dict[str, Any] | None:
        return (self.lock or {}).get("owner")

    def to_dict(self) -> dict[str, Any]:
        return {
            "issue": self.issue,
            "state": self.state,
            "lock_state": self.lock_state,
            "owner": self.owner,
            "token": (self.lock or {}).get("token"),
            "expires_at": (self.lock or {}).get("expires_at") if self.owner else None,
            "branch": self.branch,
            "worktree": self.worktree,
            "description": self.description,
        }

    def describe(self) -> str:
        owner = self.owner or {}
        where = f"branch {self.branch}" if self.branch else "no branch recorded"
        return f"session {owner.get('session')} ({where}; {locks.owner_details(self.lock or {})})"


def _claim_details(issue: str, owner_session: str | None, root: Path) -> tuple[str | None, str | None, str | None]:
    """(branch, worktree, description) the owner recorded for ``issue``, else the registry's."""
    # The details only decorate the verdict, which the lock alone decides: a record that cannot
    # be read (corrupt, or refused: a link, a FIFO, an owner id that is not a session id) leaves
    # them unknown here; `git st sessions`, `worktree list` and `doctor` report that record.
    if owner_session:
        try:
            record = read_session(owner_session, root)
        except (records.CorruptRecord, UsageError):
            record = None
        for claim in (record or {}).get("claims", []):
            if claim.get("issue") == issue:
                return claim.get("branch"), claim.get("worktree"), claim.get("description")

    try:
        entry = read_worktree_entry(issue, root=root)  # lenient: a corrupt entry is None
    except UsageError:  # a link or a FIFO where the entry should be: refused, never followed
        entry = None
    if entry:
        return entry.get("branch"), entry.get("path"), None
    return None, None, None


def inspect_issue(issue: str, who: Identity, *, root: Path) -> IssueStatus:
    """Who holds ``issue``: free, ours, taken (another live session) or stale (reclaimable)."""
    record = locks.read(issue_lock_name(issue), root)
    state = locks.state_of(record)
    owner = (record or {}).get("owner") or {}
    branch, worktree, description = _claim_details(issue, owner.get("session"), root) if owner else (None, None, None)
    verdict: ClaimVerdict
    if state == locks.RELEASED:
        verdict = FREE
    elif owner.get("session") == who.session:
        verdict = OURS
    elif state == locks.LIVE:
        verdict = TAKEN
    else:
        verdict = STALE_OWNER
    return IssueStatus(issue, verdict, record if owner else None, state, branch, worktree, description)


class IssueTaken(ConflictError):
    """Another live session owns the issue (exit 3); names the session and its branch.
    ``action``: what was refused (``claim``: the advice is to pick another issue)."""

    def __init__(self, status: IssueStatus, action: str = "claim"):
        self.status = status
        owner = (status.owner or {}).get("session")
        if action == "release":
            fix = (
                f"only session {owner} can release it (`git st release {status.issue}` there, or with "
                f"`--session {owner}` on its behalf); or wait until its claim expires (`git st sessions`)"
            )
        elif action == "remove":
            fix = (
                f"only session {owner} can remove its worktree (`git st worktree remove {status.issue}` there); "
                "or wait until its claim expires (`git st sessions`), then remove it"
            )
        else:
            fix = "pick another issue, or wait until that session releases it or its claim expires"
        super().__init__(f"issue {status.issue} is claimed by {status.describe()}", fix=fix)


# --- claim, release, heartbeat ----------------------------------------------------------------


def configured_remote(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The remote claims go through: ``ST_REMOTE``, else ``git config st.remote`` (None: local only)."""
    return settings.optional_str_setting("remote", cwd)


@dataclass
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
) -> Claimed:
    """Take ``issue`` for ``who``: on ``remote`` first (when given), then its local lock, then
    the claim in the session record.

    IssueTaken (exit 3) when another live session holds it here, RemoteIssueTaken (exit 3)
    when one holds it on the remote, RemoteUnreachable (exit 4, nothing written) when the
    remote cannot be reached. Re-claiming our own issue keeps the token and refreshes the
    expiry; fields not given are kept. ``pending_remote`` (``--offline``): the claim is taken
    here only and marked for the next ``heartbeat`` to publish on that remote.
    """
    preflight(who, root, issue)
    name = issue_lock_name(issue)
    on_remote = None
    retried = published = None
    if remote is not None:
        here = inspect_issue(issue, who, root=root)
        if here.state == TAKEN:  # refused here before the remote is asked
            raise IssueTaken(here)

        retried = pending.retry(root, remotes={remote}, cwd=cwd)
        published = publish_local(who, root=root, remote=remote, skip={issue}, cwd=cwd)
        try:
            on_remote = remote_claims.acquire(
                issue, who, remote=remote, ttl=ttl, cwd=cwd, branch=branch, description=description
            )
        except remote_claims.ClaimUnanswered as stopped:
            # It may have landed: a claim there that nobody holds here is released by the
            # next command that reaches the remote (its token: a later claim is never dropped).
            pending.remember(
                root, issue, remote=remote, session=who.session, token=stopped.record["token"], error=stopped.message
            )
            stopped.message += (
                f"; if the claim reached {remote} anyway, it is released by the next command that reaches {remote}"
                " (or `git st gc`)"
            )
            raise
        # Claimed again on purpose: an earlier release of it still pending is not to be done.
        pending.forget(root, issue, session=who.session)
    try:
        acquired = locks.try_acquire(name, who, root=root, ttl=ttl)
    except locks.LockBusy as busy:
        _give_back(issue, who, on_remote, cwd)
        branch_o, worktree_o, desc_o = _claim_details(issue, busy.record["owner"]["session"], root)
        raise IssueTaken(IssueStatus(issue, TAKEN, busy.record, locks.LIVE, branch_o, worktree_o, desc_o)) from None
    except BaseException:
        _give_back(issue, who, on_remote, cwd)
        raise
    if acquired.reclaimed:
        _mark_lost(acquired.reclaimed["previous"]["owner"]["session"], root, {issue}, to=who.session)
    now = timestamps.iso(timestamps.now())
    result: dict[str, Any] = {}

    def change(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kept = [c for c in claims if c.get("issue") != issue]
        old = next((c for c in claims if c.get("issue") == issue), {})
        entry = dict(old)
        entry.pop("lost", None)
        entry.update({"issue": issue, "lock": name, "token": acquired.record["token"]})
        entry.setdefault("claimed_at", now)
        if not old or not acquired.renewed:
            entry["claimed_at"] = now
        for key, value in (("branch", branch), ("worktree", worktree), ("description", description)):
            if value is not None or key not in entry:
                entry[key] = value
        if on_remote is not None:
            entry["remote"] = {**on_remote.entry(), "ttl": ttl}
        elif pending_remote is not None and not (entry.get("remote") or {}).get("commit"):
            entry["remote"] = {"name": pending_remote, "pending": True, "ttl": ttl}
        result.update(entry)
        return [*kept, entry]

    try:
        record = _update_chat(who, root, ttl=ttl, change=change)
    except BaseException:
        if not acquired.renewed:
            locks.release(name, who, root=root)
        _give_back(issue, who, on_remote, cwd)
        raise
    done = Claimed(result, acquired, record, on_remote, pending=retried)
    if published is not None:
        done.published, done.lost = published.remote_renewed, published.lost
    return done


def _give_back(
    issue: str, who: Identity, on_remote: remote_claims.RemoteAcquired | None, cwd: str | os.PathLike[str] | None
) -> None:
    """Undo a remote claim we just took (not one we renewed) when the local step failed."""
    if on_remote is None or on_remote.outcome == "renewed":
        return
    # The original error is the one to report; if this fails too, the claim just expires.
    with contextlib.suppress(Exception):
        remote_claims.release(issue, who, remote=on_remote.remote, cwd=cwd)


@dataclass
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
        done = remote_claims.release_held(claim["issue"], remote=spec["name"], session=owner, token=spec.get("token"))
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


def release(who: Identity, *, root: Path, issue: str | None = None) -> Released:
    """Release ``issue`` (or every claim of the session): the lock, then the claim entry.

    Releasing an issue another session holds is a conflict (exit 3, naming the owner).
    """
    preflight(who, root, issue)
    outcome = Released()
    record = read_session(who.session, root)
    outcome.lost = {
        c["issue"]: (c["lost"].get("to") or "nobody")
        for c in (record or {}).get("claims", [])
        if c.get("lost") and (issue is None or c["issue"] == issue)
    }
    if issue is not None:
        targets = [issue]
    else:
        targets = [c["issue"] for c in (record or {}).get("claims", [])]
        for view in locks.locks_of_session(root, who.session):
            other = issue_of_lock(view.name)
            if other and other not in targets:
                targets.append(other)
    for target in targets:
        try:
            done = locks.release(issue_lock_name(target), who, root=root)
        except locks.NotOwner as not_owner:
            if issue is not None and target not in outcome.lost and (not_owner.record or {}).get("owner"):
                status = inspect_issue(target, who, root=root)
                if status.state == TAKEN:
                    raise IssueTaken(status, action="release") from None
                raise
            outcome.not_held.append(target)
            continue
        (outcome.released if done else outcome.not_held).append(target)
    tried = set()
    for entry in (record or {}).get("claims", []):
        if entry.get("issue") in targets and not entry.get("lost"):
            tried.add(entry["issue"])
            _release_remote(entry, who, outcome, root)
    gone = set(targets)
    if record is not None:
        _update_chat(who, root, ttl=None, change=lambda claims: [c for c in claims if c.get("issue") not in gone])
    outcome.pending = _retry_own(who, root, issue, tried)
    return outcome


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


@dataclass
class Heartbeat:
    record: dict[str, Any] | None
    renewed: list[str] = field(default_factory=list)  # lock names
    lost: list[dict[str, Any]] = field(default_factory=list)  # {"issue", "owner", "asked"}: claims another session took
    remote_renewed: list[str] = field(default_factory=list)  # "7 on origin"
    remote_errors: list[str] = field(default_factory=list)  # remotes we could not reach (exit 4)
    bad_remote: list[str] = field(default_factory=list)  # claims whose remote record is refused (exit 1)
    asked: list[str] = field(default_factory=list)  # the claims whose loss makes the exit status 3
    pending: Any = None  # pending.Retry of releases that could not reach the remote before

    @property
    def lost_asked(self) -> list[dict[str, Any]]:
        return [lost for lost in self.lost if lost.get("asked")]


def _scope(claims: list[dict[str, Any]], issues: list[str] | None, cwd: str | os.PathLike[str] | None) -> list[str]:
    """The claims a heartbeat answers for: ``issues`` when named; else those recorded for the
    worktree ``cwd`` is in; else (outside any claimed worktree) every claim of the session."""
    if issues:
        return list(dict.fromkeys(issues))

    info = repo_info(cwd)
    top = os.path.realpath(info.toplevel) if info is not None and info.toplevel is not None else None
    here = [c["issue"] for c in claims if top and c.get("worktree") and os.path.realpath(c["worktree"]) == top]
    return here or [c["issue"] for c in claims]


def heartbeat(
    who: Identity,
    *,
    root: Path,
    ttl: float | None = None,
    issues: list[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Heartbeat:
    """Renew every lock the session holds and refresh its record; report lost claims.

    ``asked`` (:func:`_scope`) are the claims the caller asks about: a lost one among them is
    reported and dropped from the record; a lost one outside them stays in the record marked
    ``lost`` (a warning now, the error of a later heartbeat that asks about it). A claim taken
    before ``st.remote`` was set is published there now (or lost to the session holding it)."""
    for issue in issues or []:
        validate_identifier(issue, "issue")
    preflight(who, root)
    record = read_session(who.session, root)
    beat = Heartbeat(record=None)
    claims = (record or {}).get("claims", [])
    asked = set(_scope(claims, issues, cwd))
    beat.asked = sorted(asked)
    names = [issue_lock_name(c["issue"]) for c in claims]
    for view in locks.locks_of_session(root, who.session):
        if view.name not in names:
            names.append(view.name)
    lost: set[str] = set()
    for claim in claims:
        if claim.get("lost"):
            lost.add(claim["issue"])
            marker = claim["lost"]
            item = {"issue": claim["issue"], "owner": {"session": marker.get("to"), "host": marker.get("host")}}
            if marker.get("remote"):
                item["remote"] = marker["remote"]
            beat.lost.append(item)
            names.remove(issue_lock_name(claim["issue"]))
    for name in names:
        try:
            locks.renew(name, who, root=root, ttl=ttl)
            beat.renewed.append(name)
        except locks.NotOwner as not_owner:
            gone = issue_of_lock(name)
            if gone is not None and gone not in lost:
                lost.add(gone)
                beat.lost.append({"issue": gone, "owner": (not_owner.record or {}).get("owner")})

    configured = configured_remote(cwd)
    beat.pending = pending.retry(root, cwd=cwd)  # no pending release: no git call
    remote_now = _beat_remotes(record, who, ttl, lost, beat, root, configured=configured, cwd=cwd)
    held = {c["issue"] for c in claims} | {issue_of_lock(n) for n in beat.renewed}
    for issue in sorted(asked - held - lost):  # named, but this session holds no such claim
        lost.add(issue)
        status = inspect_issue(issue, who, root=root)
        beat.lost.append({"issue": issue, "owner": status.owner, "not_held": True})
    for item in beat.lost:
        item["asked"] = item["issue"] in asked

    def change(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _mark(claims, beat.lost, remote_now, drop=asked)

    if record is not None:
        beat.record = _update_chat(who, root, ttl=ttl, change=change)
    return beat


def _mark(
    claims: list[dict[str, Any]], lost: list[dict[str, Any]], remote_now: dict[str, Any], *, drop: set[str]
) -> list[dict[str, Any]]:
    """The session's claims after a heartbeat: those ``lost`` and in ``drop`` are gone (they
    were reported), the other lost ones are marked ``lost`` (reported by a later heartbeat
    that asks about them); the ones renewed on a remote get its entry (``remote_now``)."""
    stamp = timestamps.iso(timestamps.now())
    lost_to = {item["issue"]: item for item in lost}
    out = []
    for claim in claims:
        issue = claim.get("issue")
        entry = dict(claim)
        if issue in lost_to:
            if issue in drop:
                continue
            if not entry.get("lost"):
                owner = lost_to[issue].get("owner") or {}
                to = owner.get("session")
                entry["lost"] = {"at": stamp, "to": to if _session_id(to) else None}
                if lost_to[issue].get("remote"):
                    entry["lost"]["remote"] = lost_to[issue]["remote"]
                if isinstance(owner.get("host"), str):
                    entry["lost"]["host"] = owner["host"][:255]
        elif issue in remote_now:
            entry["remote"] = remote_now[issue]
        out.append(entry)
    return out


def _session_id(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        validate_session(value)
    except UsageError:  # not a session id gitst could have written
        return False
    return True


def publish_local(
    who: Identity,
    *,
    root: Path,
    remote: str,
    skip: frozenset[str] | set[str] = frozenset(),
    cwd: str | os.PathLike[str] | None = None,
) -> Heartbeat:
    """Publish on ``remote`` the session's claims taken here before ``st.remote`` was set
    (claims with no remote entry), as a heartbeat would; one another session holds there is
    given up here and marked lost. Nothing to publish: no git call."""
    beat = Heartbeat(record=None)
    record = read_session(who.session, root)
    todo = [
        c
        for c in (record or {}).get("claims", [])
        if not c.get("remote") and not c.get("lost") and c["issue"] not in skip
    ]
    if not todo:
        return beat
    lost: set[str] = set()
    renewed = _beat_remotes({**(record or {}), "claims": todo}, who, None, lost, beat, root, configured=remote, cwd=cwd)

    def change(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _mark(claims, beat.lost, renewed, drop=set())

    beat.record = _update_chat(who, root, ttl=None, change=change)
    return beat


def _beat_remotes(
    record: dict[str, Any] | None,
    who: Identity,
    ttl: float | None,
    lost: set[str],
    beat: Heartbeat,
    root: Path,
    *,
    configured: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Renew each claim's remote lease (publish one taken ``--offline``, or taken before
    ``st.remote`` — ``configured`` — was set); ``{issue: remote entry}`` of those renewed. A
    claim another session holds there now is lost, and its local lock is given up too (the
    remote's owner is the issue's owner)."""
    renewed: dict[str, dict[str, Any]] = {}
    unreachable: dict[str, str] = {}

    def give_up(issue: str) -> None:
        name = issue_lock_name(issue)
        with contextlib.suppress(locks.NotOwner):
            locks.release(name, who, root=root)
        if name in beat.renewed:
            beat.renewed.remove(name)

    for entry in (record or {}).get("claims", []):
        spec = entry.get("remote") or ({"name": configured, "pending": True} if configured else {})
        issue = entry["issue"]
        if not spec.get("name") or issue in lost:
            continue
        remote = spec["name"]
        if remote in unreachable:
            continue  # asked once in this run: the message is given once
        lease = ttl or spec.get("ttl") or record.get("ttl") or locks.default_ttl()  # type: ignore[union-attr]
        try:
            if spec.get("pending"):
                got = remote_claims.acquire(
                    issue,
                    who,
                    remote=remote,
                    ttl=lease,
                    cwd=cwd,
                    branch=entry.get("branch"),
                    description=entry.get("description"),
                )
            else:
                renewal = remote_claims.renew(issue, who, remote=remote, ttl=lease, cwd=cwd)
                if renewal.acquired is None:
                    give_up(issue)
                    lost.add(issue)
                    beat.lost.append({"issue": issue, "owner": renewal.owner, "remote": remote})
                    continue
                got = renewal.acquired
        except remote_claims.RemoteIssueTaken as taken:
            give_up(issue)
            lost.add(issue)
            beat.lost.append({"issue": issue, "owner": taken.record, "remote": remote})
            continue
        except remote_claims.RemoteUnreachable as gone:
            unreachable[remote] = gone.message
            beat.remote_errors.append(gone.message)
            continue
        except remote_claims.BadRemoteClaim as bad:  # one forged record never stops the others' renewal
            beat.bad_remote.append(bad.render().removeprefix("error: "))
            continue
        renewed[issue] = {**got.entry(), "ttl": lease}
        beat.remote_renewed.append(f"{issue} on {remote}")
    return renewed


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
    _mark_lost(previous, root, {issue}, to=None)
    return "ended"


# --- listing -------------------------------------------------------------------------------------


@dataclass
class SessionView:
    session: str
    path: Path
    record: dict[str, Any] | None
    state: SessionState | Literal["corrupt"]
    problem: records.CorruptRecord | None = None
    current: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "session": self.session,
            "state": self.state,
            "current": self.current,
            "path": str(self.path),
        }
        if self.record is not None:
            for key in ("pid", "host", "actor", "started_at", "heartbeat_at", "expires_at", "ttl"):
                data[key] = self.record.get(key)
            data["claims"] = self.record.get("claims", [])
        if self.problem is not None:
            data["errors"] = list(self.problem.problems)
        return data


def list_sessions(root: Path, who: Identity | None = None) -> list[SessionView]:
    views = []
    now = timestamps.now()
    for session, path, record, problem in records.scan(root, CHATS_DIR, SCHEMA, validate_session):
        current = who is not None and who.session == session
        if record is None:  # corrupt: scan gives its problem instead
            views.append(SessionView(session, path, None, locks.CORRUPT, problem, current))
        else:
            views.append(SessionView(session, path, record, session_state(record, now), None, current))
    return views


def drop_session_if_idle(view: SessionView, root: Path) -> bool:
    """Delete a stale or dead session's record when none of its claims' locks is still its own."""
    if view.state not in (locks.STALE, locks.DEAD) or view.record is None:
        return False
    files = chat_files(view.session, root)
    for claim in view.record.get("claims", []):
        record = locks.read(claim["lock"], root) if claim.get("lock") else None
        owner = (record or {}).get("owner") or {}
        if owner.get("session") == view.session:
            return False
    with locked(files.sidecar):
        return records.remove(files.record)


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
