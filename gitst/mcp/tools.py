"""The MCP server's tools as plain functions: each calls the library function its CLI command
calls and returns a small JSON-ready dict (docs/mcp.md, "Tools").

Nothing here imports the ``mcp`` SDK: :mod:`gitst.mcp.server` registers these with it and
turns a :class:`gitst.core.errors.GitstError` into an MCP tool error. A :class:`Scope` is the
repository the server was started in and the session it acts as, fixed for the server's life.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst import settings
from gitst.core.errors import ConflictError, EnvironmentProblem, UsageError
from gitst.core.values import field, value_class
from gitst.git.config import forget
from gitst.git.repo import repo_info
from gitst.loop import take as taking
from gitst.loop.paths import end_session
from gitst.plan import engine, model
from gitst.plan.files import TailCache
from gitst.plan.location import DEFAULT_PLAN, PlanLocation
from gitst.plan.store import Tail
from gitst.sessions import claims, reservations
from gitst.sessions.identity import Identity
from gitst.sessions.remote_claims import choose_remote
from gitst.statedir.paths import state_dir
from gitst.worktrees.recovery import recover_worktrees
from gitst.worktrees.status import full_status

__all__ = ["SHOW_LIMIT", "Scope", "open_scope"]

SHOW_LIMIT = 100  # items a plan listing returns unless asked for more (small payloads)
NOTES_CUT = 200  # characters of an item's notes a listing shows (``show`` with an id: all)


@value_class
class Scope:
    """Where every tool acts: the work tree the server started in (``top``), its repository
    (``common_dir``), its state dir, and the session (``me``)."""

    top: Path
    common_dir: Path
    root: Path
    me: Identity
    notes: list[str] = field(default_factory=list)  # what the library said while a tool ran
    tails: TailCache = field(default_factory=TailCache)

    def say(self, text: str) -> None:
        self.notes.append(text)

    def begin(self) -> None:
        """Before each tool: settings read afresh (a long-lived server sees `git config`
        changes), leftovers of an interrupted `worktree add` undone, no notes yet."""
        forget()
        self.notes = []
        recover_worktrees(self.top, self.say)

    def with_notes(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.notes:
            data["notes"] = list(self.notes)
        return data

    # --- where a plan tool works ---------------------------------------------------------

    def read(self, target: PlanLocation) -> Tail:
        """The plan, read again only when the file changed (:class:`gitst.plan.files.TailCache`)."""
        return self.tails.read(target)

    def plan(self, worktree: str | None) -> PlanLocation:
        """The plan of ``worktree`` (a work tree of this repository: the main one, or an item's
        from ``next``), default the one the server started in; any other path is exit 2."""
        top = self.top if not worktree else self._worktree_top(worktree)
        plan = top / DEFAULT_PLAN
        return PlanLocation(plan, str(plan), top)

    def _worktree_top(self, worktree: str) -> Path:
        path = Path(worktree)
        if not path.is_absolute():
            path = self.top / path
        info = repo_info(path) if path.is_dir() else None
        if info is None or info.toplevel is None or info.common_dir != self.common_dir:
            raise UsageError(
                f"{worktree} is not a worktree of the repository this server serves ({self.top})",
                fix="give the `path` that `next` returned, or leave `worktree` out for the server's own",
            )
        return info.toplevel.resolve()


def open_scope(who: Identity, cwd: str | os.PathLike[str] | None = None) -> Scope:
    """The scope of a server started in ``cwd``: exit 4 outside a git work tree."""
    info = repo_info(cwd)
    if info is None or info.toplevel is None:
        where = os.path.abspath(cwd or os.getcwd())
        raise EnvironmentProblem(
            f"not in a git work tree: {where}", fix="start `git st mcp` in the repository it is to serve"
        )
    top = info.toplevel.resolve()
    return Scope(top=top, common_dir=info.common_dir, root=state_dir(top), me=who)


# --- the loop: next, heartbeat, release ------------------------------------------------------


def next_item(scope: Scope, item_id: str | None, label: str | None, match: str | None) -> dict[str, Any]:
    """``git st next --format json``: take the next ready item (claim, worktree, in_progress).
    Nothing to take is an answer, not an error: ``{"item": null, "reason": "done"|"wait"}``."""
    through, _pending = choose_remote(None, cwd=scope.top)
    filters = taking.Filters(item_id=item_id, label=label, match=match)
    try:
        taken = taking.take(
            scope.me, remote=through, filters=filters, ttl=settings.lock_ttl(scope.top), cwd=scope.top, say=scope.say
        )
    except taking.NothingToTake as nothing:
        return scope.with_notes({**nothing.to_dict(), "message": nothing.message, "fix": nothing.fix})
    return scope.with_notes(taken.to_dict())


def heartbeat(scope: Scope, issues: list[str] | None) -> dict[str, Any]:
    """``git st heartbeat``: renew the session's claims and locks. A claim asked about (the
    ``issues``, else all) that another session took is exit 3."""
    beat = claims.heartbeat(scope.me, root=scope.root, issues=issues or None, cwd=scope.top)
    lost = beat.lost_asked
    if lost:
        held = ", ".join(
            f"{x['issue']} (now held by {(x.get('owner') or {}).get('session') or 'nobody'})" for x in lost
        )
        raise ConflictError(f"lost the claim on {held}", fix="stop work on it; take another item with `next`")
    if beat.reservations_lost:
        raise ConflictError(
            f"lost a path reservation: {'; '.join(beat.reservations_lost)}",
            fix="reserve the paths again (`reserve`) before editing them",
        )
    data = {
        "session": scope.me.session,
        "renewed": beat.renewed,
        "remote_renewed": beat.remote_renewed,
        "reservations_renewed": beat.reservations_renewed,
        "lost": beat.lost,
        "remote_errors": beat.remote_errors + beat.bad_remote,
    }
    return scope.with_notes(data)


def release(scope: Scope, issue: str | None, patterns: list[str] | None) -> dict[str, Any]:
    """Give back what the session holds: the claim on ``issue`` (``git st release ISSUE``),
    the reservations ``patterns``, or - neither named - every claim and every reservation."""
    data: dict[str, Any] = {"session": scope.me.session}
    if patterns is None:
        if issue is None:  # `git st release`: the session's end, its path reservations go too
            done, data["unreserved"] = end_session(scope.me, root=scope.root, cwd=scope.top, say=scope.say)
        else:
            done = claims.release(scope.me, root=scope.root, issue=issue)
        retried = done.pending
        data.update(
            {
                "released": done.released,
                "remote_released": done.remote_released,
                "not_held": done.not_held,
                "remote_errors": done.remote_errors,
                "pending": [r.get("issue") for r in retried.pending] if retried is not None else [],
            }
        )
    if patterns is not None:  # `git st reserve --release GLOB...`
        through, _pending = choose_remote(None, cwd=scope.top)
        data["unreserved"] = reservations.release(patterns, scope.me, remote=through, cwd=scope.top, root=scope.root)
    return scope.with_notes(data)


def reserve(scope: Scope, patterns: list[str], ttl: float | None, item: str | None) -> dict[str, Any]:
    """``git st reserve GLOB...``: lease the paths the session will edit, all or none, here and
    through ``st.remote`` when set; an overlap with a live other session's is exit 3 naming it."""
    through, _pending = choose_remote(None, cwd=scope.top)
    held = reservations.reserve(patterns, scope.me, ttl=ttl, remote=through, cwd=scope.top, root=scope.root, item=item)
    return scope.with_notes({"session": scope.me.session, "reserved": [r.to_dict() for r in held]})


# --- the plan: show, set_status, add -----------------------------------------------------------


def _row(row: dict[str, Any]) -> dict[str, Any]:
    """An item of a listing, kept small: notes cut, comments counted (``show`` with the id
    gives the whole item)."""
    out = dict(row)
    notes = str(out.get("notes") or "")
    if len(notes) > NOTES_CUT:
        out["notes"] = notes[:NOTES_CUT] + "…"
    out["comments"] = len(out.get("comments") or [])
    return out


def show(
    scope: Scope, item_id: str | None, view: str, statuses: list[str], limit: int, worktree: str | None
) -> dict[str, Any]:
    """``git st show [ID]``: one item (with its dependents and history), or the items of a
    view (``all``, ``ready``, ``blocked``) in plan order, at most ``limit`` of them."""
    target = scope.plan(worktree)
    select = {"all": "derive", "ready": "ready", "blocked": "blocked"}.get(view)
    if select is None:
        raise UsageError(f"unknown view {view!r}", fix="one of all, ready, blocked")
    if limit < 1:
        raise UsageError(f"limit must be at least 1, not {limit}")
    model.status_filter(statuses)  # a bad status is refused before the plan is read
    tail = scope.read(target)
    warnings = [d.to_dict() for d in tail.diagnostics(target.shown)]
    data: dict[str, Any] = {"plan": target.shown}
    if item_id is not None:
        data.update(
            {k: v for k, v in engine.show_item(target, item_id.strip(), tail.state).items() if k != "status_of"}
        )
    else:
        rows = model.view_rows(tail.state.items(), select, statuses)
        data.update(
            {"view": view, "total": len(rows), "items": [_row(r) for r in rows[:limit]], "truncated": len(rows) > limit}
        )
    if warnings:
        data["warnings"] = warnings
    return scope.with_notes(data)


def set_status(
    scope: Scope, item_id: str, status: str, allow_multiple_in_progress: bool, worktree: str | None
) -> dict[str, Any]:
    """``git st set-status ID STATUS`` on the plan of ``worktree``."""
    target = scope.plan(worktree)
    outcome = engine.set_status(target, item_id, status, allow_multiple_in_progress=allow_multiple_in_progress)
    item = outcome.state.get(item_id.strip())
    data = {
        "plan": target.shown,
        "id": item_id.strip(),
        "status": (item or {}).get("status"),
        "messages": outcome.messages,
    }
    return scope.with_notes(data)


def add(scope: Scope, step: str, fields: dict[str, str | None], worktree: str | None) -> dict[str, Any]:
    """``git st add``: a new item (the next free id), or the item ``fields["item_id"]``
    updated; ``fields``: ``item_id``, ``status``, ``deps`` (``st-001,st-002``), ``notes``."""
    target = scope.plan(worktree)
    outcome = engine.add(
        target,
        step=step,
        item_id=fields.get("item_id"),
        status=fields.get("status"),
        deps=fields.get("deps"),
        notes=fields.get("notes"),
    )
    upserted = [r["item"] for r in outcome.records if isinstance(r.get("item"), dict)]
    item = upserted[-1] if upserted else None
    return scope.with_notes({"plan": target.shown, "item": item, "messages": outcome.messages})


# --- the team: status --------------------------------------------------------------------------


def status(scope: Scope) -> dict[str, Any]:
    """``git st status --format json``: every session, what it holds, the worktrees, the
    remote's claims."""
    return scope.with_notes(full_status(scope.top, scope.me).to_dict())
