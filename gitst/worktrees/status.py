"""One status view (``git st status``): every session, what it holds, its worktrees, the PRs.

- **Sessions**: every session record (``active-chats/``) and every session that owns a lock
  without one (``git st lock acquire``): live / stale / dead, pid and process, host, actor,
  last heartbeat, and what it holds — each lease with its state, fencing token and expiry.
- **Worktrees**: the rows of ``worktree list`` (registry joined with git), each with its
  uncommitted changes (one ``git status`` per worktree; gitst's unchanged copies left out),
  commits ahead of / behind its base branch (:func:`gitst.git.history.ahead_behind`, one
  call per base branch: pygit2 from 24 worktrees on), its port block, and the issue's PR
  from the cascade's offline steps (the pipeline state, fetched ``refs/pull/*/head``; no
  ``gh`` call and no ``ST_PR_NUMBER``, which speaks for one session only).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.errors import GitstError
from gitst.core.values import field, value_class
from gitst.git.history import ahead_behind
from gitst.pipeline.cascade import Lookups, resolve
from gitst.sessions import claims, locks, pending, remote_claims
from gitst.sessions.chats import SessionView
from gitst.sessions.identity import Identity, host
from gitst.worktrees import leftovers
from gitst.worktrees.changes import base_branch_of, changes
from gitst.worktrees.context import repo_of
from gitst.worktrees.journal import pending_op
from gitst.worktrees.manager import CORRUPT, WorktreeRow, list_rows

__all__ = [
    "FullStatus",
    "Hold",
    "SessionStatus",
    "StatusView",
    "WorktreeStatus",
    "collect",
    "full_status",
    "remote_view",
    "two_owners",
]


@value_class
class Hold:
    """One lease a session holds (or held: ``lease.state`` says ``lost`` when another
    session has it now)."""

    lock: str
    issue: str | None
    lease: dict[str, Any]  # {"state", "token", "acquired_at", "expires_at", "ttl"}
    branch: str | None = None
    worktree: str | None = None
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "issue": self.issue,
            "lock": self.lock,
            "lease": self.lease,
            "branch": self.branch,
            "worktree": self.worktree,
            "description": self.description,
        }


@value_class
class SessionStatus:
    session: str
    state: str  # live / stale / dead / corrupt
    current: bool
    record: dict[str, Any] = field(
        default_factory=dict[str, Any]
    )  # the session record, or the lock owner when it has none
    holds: list[Hold] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    has_record: bool = True

    def to_dict(self) -> dict[str, Any]:
        rec = self.record
        return {
            "session": self.session,
            "state": self.state,
            "current": self.current,
            "record": self.has_record,
            "pid": rec.get("pid"),
            "process": rec.get("process"),
            "host": rec.get("host"),
            "actor": rec.get("actor"),
            "liveness": rec.get("liveness", "pid") if rec else None,
            "started_at": rec.get("started_at"),
            "heartbeat_at": rec.get("heartbeat_at"),
            "expires_at": rec.get("expires_at"),
            "holds": [h.to_dict() for h in self.holds],
            "errors": self.errors,
        }


@value_class
class WorktreeStatus:
    issue: str | None
    state: str
    reason: str | None
    session: str | None
    path: str
    branch: str | None
    base_branch: str | None = None
    head: str | None = None
    pending: str | None = None
    changes: dict[str, Any] | None = None  # {"staged", "unstaged", "untracked", "total"}
    ahead: int | None = None
    behind: int | None = None
    ports: dict[str, Any] | None = None
    pr: dict[str, Any] | None = None  # {"number", "source"}
    errors: list[str] = field(default_factory=list)
    leftovers: list[dict[str, Any]] = field(default_factory=list)  # {"kind", "path"}: what a killed command left

    def to_dict(self) -> dict[str, Any]:
        return {
            "issue": self.issue,
            "state": self.state,
            "reason": self.reason,
            "session": self.session,
            "path": self.path,
            "branch": self.branch,
            "base_branch": self.base_branch,
            "head": self.head,
            "pending": self.pending,
            "changes": self.changes,
            "ahead": self.ahead,
            "behind": self.behind,
            "ports": self.ports,
            "pr": self.pr,
            "errors": self.errors,
            "leftovers": self.leftovers,
        }


@value_class
class StatusView:
    generated_at: str
    session: str
    host: str
    state_dir: str
    sessions: list[SessionStatus]
    worktrees: list[WorktreeStatus]

    @property
    def problems(self) -> bool:
        return any(s.state == "corrupt" for s in self.sessions) or any(w.state == "corrupt" for w in self.worktrees)

    def to_dict(self) -> dict[str, Any]:
        return {
            "generated_at": self.generated_at,
            "session": self.session,
            "host": self.host,
            "state_dir": self.state_dir,
            "sessions": [s.to_dict() for s in self.sessions],
            "worktrees": [w.to_dict() for w in self.worktrees],
        }


def _lease(record: dict[str, Any] | None, session: str, state: str) -> dict[str, Any]:
    owner = ((record or {}).get("owner") or {}).get("session")
    return {
        "state": state if owner == session else "lost",
        "holder": owner,
        "token": (record or {}).get("token"),
        "acquired_at": (record or {}).get("acquired_at") if owner == session else None,
        "expires_at": (record or {}).get("expires_at") if owner == session else None,
        "ttl": (record or {}).get("ttl") if owner == session else None,
    }


def _sessions(root: Path, who: Identity | None) -> list[SessionStatus]:
    by_owner: dict[str, list[locks.LockView]] = {}
    for lock_view in locks.list_locks(root):
        owner = ((lock_view.record or {}).get("owner") or {}).get("session")
        if owner:
            by_owner.setdefault(owner, []).append(lock_view)
    out = [_session_status(view, root, by_owner.pop(view.session, [])) for view in claims.list_sessions(root, who)]
    for session, views in sorted(by_owner.items()):  # lock owners without a session record
        out.append(_ownerless(session, views, who))
    return out


def _session_status(view: SessionView, root: Path, owned: list[locks.LockView]) -> SessionStatus:
    """A session with a record: its claims' holds (each lock read for its lease), then the
    locks it ``owned`` that no claim of its record names."""
    status = SessionStatus(view.session, view.state, view.current, dict(view.record or {}))
    if view.problem is not None:
        status.errors = list(view.problem.problems)
    seen = set()
    for claim in (view.record or {}).get("claims", []):
        name = claim.get("lock") or claims.issue_lock_name(claim["issue"])
        seen.add(name)
        status.holds.append(_claimed_hold(name, claim, view.session, root, status.errors))
    for other in owned:
        if other.name not in seen:
            status.holds.append(
                Hold(other.name, claims.issue_of_lock(other.name), _lease(other.record, view.session, other.state))
            )
    return status


def _claimed_hold(name: str, claim: dict[str, Any], session: str, root: Path, errors: list[str]) -> Hold:
    """The hold of one claim of ``session``'s record, its lease from the lock ``name`` (a
    corrupt lock record is added to ``errors``, and shown with no lease)."""
    try:
        record = locks.read(name, root)
    except Exception as exc:  # a corrupt lock record: shown, not fatal
        errors.append(f"{name}: {exc}")
        record = None
    state = "lost" if claim.get("lost") else locks.state_of(record)
    return Hold(
        name,
        claim["issue"],
        _lease(record, session, state),
        claim.get("branch"),
        claim.get("worktree"),
        claim.get("description"),
    )


def _ownerless(session: str, views: list[locks.LockView], who: Identity | None) -> SessionStatus:
    """A session that owns locks but has no record: live when one of its locks is."""
    owner = dict((views[0].record or {}).get("owner") or {})
    states = {v.state for v in views}
    state = locks.LIVE if locks.LIVE in states else locks.STALE if locks.STALE in states else locks.DEAD
    status = SessionStatus(session, state, who is not None and who.session == session, owner, has_record=False)
    status.holds = [Hold(v.name, claims.issue_of_lock(v.name), _lease(v.record, session, v.state)) for v in views]
    return status


def two_owners(sessions: list[SessionStatus], remote_claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issues held here by one live session and on the remote by another live one (a claim
    taken here before ``st.remote`` was set, not yet published): ``{"issue", "here",
    "remote": {"session", "host"}}`` each. ``remote_claims``: ``RemoteClaimView.to_dict()``s."""
    here = {h.issue: s.session for s in sessions for h in s.holds if h.issue and h.lease.get("state") == "live"}
    return [
        {"issue": c["issue"], "here": here[c["issue"]], "remote": {"session": c.get("session"), "host": c.get("host")}}
        for c in remote_claims
        if c.get("state") == "live" and c["issue"] in here and c.get("session") != here[c["issue"]]
    ]


def remote_view(
    root: Path, *, retry_pending: bool = True, cwd: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Any] | None, list[remote_claims.RemoteClaimView]]:
    """The claims on ``st.remote`` (None when no remote is configured): ``{"name", "claims",
    "error"}``; an unreachable remote is an ``error``, not a failure of the whole view.
    ``retry_pending``: releases that could not reach it before are tried again first
    (``status`` does; the read-only board does not)."""
    name = claims.configured_remote(cwd)
    if name is None:
        return None, []
    try:
        if retry_pending:
            pending.retry(root, remotes={name})
        views = remote_claims.list_claims(name, cwd)
    except remote_claims.RemoteUnreachable as gone:
        return {"name": name, "claims": [], "error": gone.message}, []
    return {"name": name, "claims": [v.to_dict() for v in views], "error": None}, views


def _pr_of(
    issue: str, branch: str | None, cwd: str | os.PathLike[str] | None, lookups: Lookups
) -> dict[str, Any] | None:
    try:
        if not lookups.offline_may_answer(issue, branch):
            return None  # (an issue id that is not a number has no pipeline file either)
        resolution = resolve(
            issue,
            cwd=cwd,
            branch=branch,
            branch_from="the worktree registry",
            offline=True,
            environ={},
            lookups=lookups,
        )
    except GitstError:
        return None  # not a number, or the cascade cannot run here: no PR to show
    if resolution.pr_number is None:
        step = resolution.decisive
        if resolution.ambiguous and step is not None:
            return {"number": None, "source": resolution.source, "candidates": [c.number for c in step.candidates]}
        return None
    return {"number": resolution.pr_number, "source": resolution.source}


def _worktrees(cwd: str | os.PathLike[str] | None, who: Identity | None, main_root: Path) -> list[WorktreeStatus]:
    out: list[WorktreeStatus] = []
    by_base: dict[str, list[WorktreeStatus]] = {}
    lookups = Lookups(cwd, batch=True)  # refs, PR heads, pipeline files: once for every row
    for row in list_rows(cwd, who):
        item = _worktree_status(row, cwd, main_root, lookups)
        out.append(item)
        if item.head and item.base_branch:
            by_base.setdefault(item.base_branch, []).append(item)
    for base, items in by_base.items():
        for item, counts in zip(items, ahead_behind(main_root, base, [i.head or "" for i in items]), strict=True):
            if counts is not None:
                item.ahead, item.behind = counts
    return out


def _worktree_status(
    row: WorktreeRow, cwd: str | os.PathLike[str] | None, main_root: Path, lookups: Lookups
) -> WorktreeStatus:
    """One row of the view: the listing's row, and (unless its entry is corrupt) what is
    in the worktree, its base branch and its PR (ahead/behind are asked per base after)."""
    entry = row.entry or {}
    item = WorktreeStatus(
        row.issue,
        row.state,
        row.reason,
        row.session,
        row.path,
        row.branch or (row.git.branch if row.git else None),
        head=row.git.head if row.git else None,
        pending=pending_op(entry),
        ports=entry.get("ports"),
        errors=list(row.errors),
    )
    if row.state == CORRUPT:
        return item
    if row.git is not None and os.path.isdir(row.path):
        item.leftovers = [found.to_dict() for found in leftovers.find(row.path)]
        try:
            item.changes = changes(row.path, entry).counts()
        except Exception as exc:  # a broken worktree: say so in the view, keep going
            item.errors.append(f"git status failed: {exc}")
    if row.entry is not None:
        item.base_branch = base_branch_of(row.entry, main_root)
    if row.issue is not None:
        item.pr = _pr_of(row.issue, row.branch, cwd, lookups)
    return item


def collect(cwd: str | os.PathLike[str] | None = None, who: Identity | None = None) -> StatusView:
    """The whole view for the repository around ``cwd``, from ``who``'s point of view."""
    repo = repo_of(cwd)
    return StatusView(
        generated_at=timestamps.iso(timestamps.now()),
        session=who.session if who is not None else "",
        host=host(),
        state_dir=str(repo.state_root),
        sessions=_sessions(repo.state_root, who),
        worktrees=_worktrees(cwd, who, repo.main_root),
    )


@value_class
class FullStatus:
    """``git st status``'s whole answer: :func:`collect`'s view, the claims on ``st.remote``
    (:func:`remote_view`), the issues with two owners and the releases still pending."""

    view: StatusView
    remote: dict[str, Any] | None
    remote_views: list[remote_claims.RemoteClaimView]
    two_owners: list[dict[str, Any]]
    pending_releases: list[dict[str, Any]]

    @property
    def problems(self) -> bool:
        return self.view.problems or bool(self.two_owners)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.view.to_dict(),
            "remote": self.remote,
            "two_owners": self.two_owners,
            "pending_releases": self.pending_releases,
        }


def full_status(
    cwd: str | os.PathLike[str] | None = None, who: Identity | None = None, *, retry_pending: bool = True
) -> FullStatus:
    """The status view with the remote's claims: what ``git st status``, the MCP ``status``
    tool and the board show (``retry_pending``: :func:`remote_view`'s; the board only reads)."""
    view = collect(cwd, who)
    remote, views = remote_view(Path(view.state_dir), retry_pending=retry_pending, cwd=cwd)
    doubled = two_owners(view.sessions, remote["claims"]) if remote else []
    waiting = pending.list_pending(Path(view.state_dir))[0]
    return FullStatus(view, remote, views, doubled, waiting)
