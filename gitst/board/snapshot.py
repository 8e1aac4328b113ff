"""What the board shows, assembled from the library the CLI uses (never a second reader).

- the plan: :func:`gitst.plan.files.read_plan` (the O(tail) read every plan command does),
  :func:`gitst.plan.model.derive` for ``dep_state`` / ``waiting_on``;
- sessions, their holds and the worktrees: :func:`gitst.worktrees.status.collect` (the view of
  ``git st status``: the same liveness rule), the claims on ``st.remote`` through
  :func:`gitst.worktrees.status.full_status` (no pending release retried: the board only reads);
- one item's history: :func:`gitst.plan.engine.show_item` (the events of the append-only plan).

Every text here is data for the page, which renders it with ``textContent`` only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.errors import GitstError
from gitst.git.config import forget
from gitst.plan import engine, model
from gitst.plan.files import TailCache, read_plan
from gitst.plan.store import Tail, Target
from gitst.sessions import reservations as reservation_store
from gitst.worktrees.ports import render as render_ports
from gitst.worktrees.status import StatusView, WorktreeStatus, full_status

__all__ = ["COLUMNS", "PlanCache", "column_of", "item_history", "reservations", "snapshot"]

# The board's columns, in order: every status lands in exactly one.
COLUMNS = ("ready", "in_progress", "blocked", "done", "parked")


def column_of(row: dict[str, Any]) -> str:
    """The column of a derived plan row: ready (pending, deps done), in progress, blocked (by
    hand, or pending and waiting on deps), done (completed), parked (deferred or canceled)."""
    status = row.get("status", "pending")
    if status == "in_progress":
        return "in_progress"
    if status == "completed":
        return "done"
    if status in ("deferred", "canceled"):
        return "parked"
    if status == "blocked" or row.get("dep_state") == model.WAITING:
        return "blocked"
    return "ready"


def _holders(view: StatusView, remote: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Who holds each issue/item id: a live or stale local lease (``where: "here"``), then a
    claim on ``st.remote`` (``where: remote name``), which wins: it is the issue's owner."""
    out: dict[str, dict[str, Any]] = {}
    for session in view.sessions:
        for hold in session.holds:
            state = hold.lease.get("state")
            if hold.issue and state in ("live", "stale"):
                out[hold.issue] = {"session": session.session, "state": state, "where": "here"}
    for claim in (remote or {}).get("claims") or ():
        if claim.get("state") in ("live", "stale") and claim.get("session"):
            out[claim["issue"]] = {
                "session": claim["session"],
                "state": claim["state"],
                "where": (remote or {}).get("name"),
                "host": claim.get("host"),
            }
    return out


def _merge_state(worktree: WorktreeStatus) -> str | None:
    """merged (nothing ahead of its base branch), unmerged (commits not landed) or None."""
    if worktree.ahead is None:
        return None
    return "merged" if worktree.ahead == 0 else "unmerged"


def _worktree(worktree: WorktreeStatus) -> dict[str, Any]:
    data = worktree.to_dict()
    total = (worktree.changes or {}).get("total")
    data["dirty"] = None if total is None else bool(total)
    data["merge"] = _merge_state(worktree)
    data["ports_text"] = render_ports(worktree.ports)  # as `git st status` shows the block
    return data


class PlanCache:
    """The plan's rows and problems, derived again only when :class:`gitst.plan.files.TailCache`
    read the file again (it changed: its size, mtime or inode). The board polls every second; a
    10,000-item plan costs a read of ~0.3 s on a quiet box (docs/performance.md), its stat
    microseconds."""

    def __init__(self) -> None:
        self._tails = TailCache()
        self._tail: Tail | None = None
        self._value: tuple[list[dict[str, Any]], list[str]] = ([], [])

    def read(self, target: Target) -> tuple[list[dict[str, Any]], list[str]]:
        try:
            tail = self._tails.read(target)
        except GitstError as exc:
            self._tail = None
            return [], [exc.message]
        if tail is not self._tail:
            problems = [d.to_text() for d in tail.diagnostics(target.shown)]
            self._tail, self._value = tail, (model.derive(tail.state.items()), problems)
        return self._value


def _item(row: dict[str, Any], holder: dict[str, Any] | None, worktree: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": row["id"],
        "step": row.get("step"),
        "status": row.get("status", "pending"),
        "column": column_of(row),
        "deps": [edge["id"] for edge in row.get("deps") or ()],
        "waiting_on": row.get("waiting_on") or [],
        "holder": holder,
        "worktree": (worktree or {}).get("path"),
        "branch": (worktree or {}).get("branch"),
        "pr": ((worktree or {}).get("pr") or {}).get("number"),
    }


def reservations(root: Path) -> dict[str, Any]:
    """Path reservations (``git st reserve``) this clone knows of: held here (live, stale or
    dead, until released or swept) and in the last table read from each remote."""
    return {"available": True, "items": [r.to_dict() for r in reservation_store.listing(root=root, include_ended=True)]}


def snapshot(
    target: Target, cwd: str | os.PathLike[str] | None = None, plan: PlanCache | None = None
) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready document (``generated_at`` aside, equal
    documents mean nothing changed). ``plan``: the cache a long-running caller keeps."""
    forget()  # each read sees the settings again (st.remote set meanwhile), as `status --watch`
    full = full_status(cwd, None, retry_pending=False)
    view, remote = full.view, full.remote
    root = Path(view.state_dir)
    worktrees = [_worktree(w) for w in view.worktrees]
    by_issue = {w["issue"]: w for w in worktrees if w["issue"]}
    holders = _holders(view, remote)
    rows, problems = (plan or PlanCache()).read(target)
    items = [_item(row, holders.get(row["id"]), by_issue.get(row["id"])) for row in rows]
    return {
        "generated_at": timestamps.iso(timestamps.now()),
        "plan": {"file": target.shown, "items": items, "problems": problems},
        "sessions": [s.to_dict() for s in view.sessions],
        "worktrees": worktrees,
        "remote": remote,
        "two_owners": full.two_owners,
        "pending_releases": full.pending_releases,
        "reservations": reservations(root),
        "state_dir": view.state_dir,
    }


def item_history(target: Target, item_id: str) -> dict[str, Any]:
    """One item, its dependents and its history (``git st show ID``'s view)."""
    tail = read_plan(target)
    view = engine.show_item(target, item_id, tail.state)
    return {key: value for key, value in view.items() if key != "status_of"}
