"""The session record ``state/active-chats/<session>.json`` (schema ``state-active-chat``) and
who holds an issue.

The session record describes the session (its pid — the session pid, never the short-lived
``git-st`` — host, actor, last heartbeat) and each of its claims (issue, branch, worktree,
description, time, token), so another session can be told who holds an issue and on which
branch. The claim itself is the issue's TTL lock (:mod:`gitst.sessions.claims`).

States of a session (:func:`session_state`), the same words as for locks:

- ``live``  its pid runs on this host (or it is on another host) and ``expires_at``
  (last heartbeat + TTL) has not passed;
- ``stale`` the TTL passed without a heartbeat;
- ``dead``  its pid is gone on this host (checked with the pid's start time).

An issue is *taken* when its lock is live and owned by another session; a claim whose
lock went stale or dead is free to be reclaimed. Before a claim or release writes
anything, :func:`preflight` checks every path it will touch and returns them
(:class:`Checked`), so they are not derived again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal

from gitst import settings
from gitst.core import timestamps
from gitst.core.errors import ConflictError, UsageError
from gitst.core.values import Value, value_class
from gitst.sessions import locks
from gitst.sessions.identity import Identity
from gitst.sessions.registry import read_worktree_entry
from gitst.statedir import records
from gitst.statedir.paths import IssueId, ensure_state_dir, validate_session
from gitst.statedir.records import locked

__all__ = [
    "CHATS_DIR",
    "FREE",
    "OURS",
    "SCHEMA",
    "STALE_OWNER",
    "TAKEN",
    "Checked",
    "ClaimChecked",
    "IssueStatus",
    "IssueTaken",
    "SessionView",
    "chat_files",
    "claim_details",
    "configured_remote",
    "drop_session_if_idle",
    "inspect_issue",
    "issue_lock_name",
    "issue_of_lock",
    "list_sessions",
    "mark_lost",
    "own_chat_files",
    "preflight",
    "preflight_claim",
    "read_session",
    "session_state",
    "update_chat",
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


def issue_lock_name(issue: str) -> locks.LockName:
    """The lock that is the claim on ``issue``: ``issue-<issue>`` (``issue`` parsed when it is
    a plain string, trusted when it is an :class:`IssueId`)."""
    return locks.LockName.of_issue(issue if isinstance(issue, IssueId) else IssueId(issue))


def issue_of_lock(name: str) -> str | None:
    return name[len(locks.ISSUE_PREFIX) :] if name.startswith(locks.ISSUE_PREFIX) else None


def chat_files(session: str, root: Path) -> records.RecordFiles:
    """The record and sidecar of ``session`` (a session id read from elsewhere: checked)."""
    return records.record_files(root, CHATS_DIR, validate_session(session))


def own_chat_files(who: Identity, root: Path) -> records.RecordFiles:
    """The record and sidecar of the acting session: its id as :func:`gitst.sessions.identity.current`
    parsed it is not checked again (an identity made otherwise has its id checked here)."""
    if who.session_id is None:
        return chat_files(who.session, root)
    return records.record_files(root, CHATS_DIR, who.session_id)


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


class Checked(Value):
    """The paths a release or heartbeat of the session touches, each checked
    (:func:`preflight`): the session's record and the reclaim log."""

    __slots__ = ("chat", "reclaim_log")

    def __init__(self, chat: records.RecordFiles, reclaim_log: Path):
        self.chat, self.reclaim_log = chat, reclaim_log


class ClaimChecked(Checked):
    """:class:`Checked`, and the issue's: its parsed id, its lock's name and paths
    (:func:`preflight` of an issue); :func:`claim` takes it instead of deriving them again."""

    __slots__ = ("issue", "lock", "lock_name")

    def __init__(
        self,
        chat: records.RecordFiles,
        reclaim_log: Path,
        issue: IssueId,
        lock_name: locks.LockName,
        lock: records.RecordFiles,
    ):
        super().__init__(chat, reclaim_log)
        self.issue, self.lock_name, self.lock = issue, lock_name, lock


def preflight(who: Identity, root: Path, issue: str | None = None) -> Checked:
    """Validate every path a claim or release will touch before anything is written (a
    :class:`ClaimChecked` when ``issue`` is given)."""
    if issue is not None:
        return preflight_claim(who, root, issue)
    return Checked(own_chat_files(who, root), locks.reclaim_log_path(root))


def preflight_claim(who: Identity, root: Path, issue: str) -> ClaimChecked:
    """:func:`preflight` of ``issue`` (parsed here when it is a plain string)."""
    chat = own_chat_files(who, root)
    parsed = issue if isinstance(issue, IssueId) else IssueId(issue)
    name = locks.LockName.of_issue(parsed)
    return ClaimChecked(chat, locks.reclaim_log_path(root), parsed, name, locks.lock_files(name, root))


# --- the session record -----------------------------------------------------------------------


def update_chat(
    who: Identity,
    root: Path,
    *,
    ttl: float | None,
    change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    files: records.RecordFiles | None = None,
) -> dict[str, Any] | None:
    """Read-modify-write our session record under its flock; ``change(claims) -> claims``.

    The record is deleted when no claim is left. Returns the record written (or None).
    ``files``: the record's paths when the caller checked them already.
    """
    files = files or own_chat_files(who, root)
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


def mark_lost(session: str, root: Path, issues: set[str], *, to: str | None) -> None:
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


@value_class
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


def claim_details(issue: str, owner_session: str | None, root: Path) -> tuple[str | None, str | None, str | None]:
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


def inspect_issue(issue: str, who: Identity, *, root: Path, name: locks.LockName | None = None) -> IssueStatus:
    """Who holds ``issue``: free, ours, taken (another live session) or stale (reclaimable).
    ``name``: the claim's lock name when the caller derived it already (:class:`ClaimChecked`)."""
    record = locks.read(name or issue_lock_name(issue), root)
    state = locks.state_of(record)
    owner = (record or {}).get("owner") or {}
    branch, worktree, description = claim_details(issue, owner.get("session"), root) if owner else (None, None, None)
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


def configured_remote(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The remote claims go through: ``ST_REMOTE``, else ``git config st.remote`` (None: local only)."""
    return settings.optional_str_setting("remote", cwd)


# --- listing -------------------------------------------------------------------------------------


@value_class
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
