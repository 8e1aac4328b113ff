"""One handler per harness event, each a thin call into the library the commands use
(docs/harness.md, "What each event does"). :mod:`gitst.harness.entry` has read the payload,
taken the no-op paths and set the session; a handler returns the exit status and writes
what the harness reads on stdout (``Emit``), its messages on stderr.

- SessionStart: the session registered (a heartbeat of what it holds, the rate limiter's
  stamp started), the context printed as ``hookSpecificOutput.additionalContext``.
- UserPromptSubmit, PostToolUse: a heartbeat, rate-limited (:mod:`gitst.harness.limiter`);
  PostToolUse of ``TodoWrite`` or ``update_plan`` mirrors the list into the plan.
- PreCompact, Stop: a session snapshot (:func:`gitst.snapshots.store.save`).
- SessionEnd: a snapshot, then every claim and path reservation released (:func:`gitst.loop.paths.end_session`)
  unless ``st.agent.keepClaims``.
- WorktreeCreate: :func:`gitst.worktrees.manager.add` (claim, ports, trusted setup); stdout
  is only the path. WorktreeRemove: :func:`gitst.worktrees.removal.remove`, never forced.
- PreToolUse: :mod:`gitst.harness.guard` (its own light module: it runs before every edit).
- TaskCreated, TaskCompleted: :mod:`gitst.harness.mirror`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from gitst import settings
from gitst.core.errors import GitstError
from gitst.core.terminal import sanitize
from gitst.harness import context, limiter, mirror
from gitst.loop.paths import end_session
from gitst.sessions.identity import current
from gitst.snapshots import store as snapshots
from gitst.statedir.paths import IssueId, state_dir
from gitst.worktrees import manager, removal
from gitst.worktrees.context import repo_of

__all__ = ["HANDLERS", "handle"]


def _err(text: str) -> None:
    print(sanitize(text), file=sys.stderr)


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def session_start(payload: dict[str, Any], session: str, cwd: str) -> int:
    limiter.beat(session, cwd=cwd, force=True)
    _out(context.hook_output(session, cwd))
    return 0


def heartbeat_event(payload: dict[str, Any], session: str, cwd: str) -> int:
    tool = payload.get("tool_name")
    if tool in ("TodoWrite", "update_plan"):
        document = mirror.todos_to_plan(payload.get("tool_input")) if tool == "TodoWrite" else payload.get("tool_input")
        mirror.import_update_plan(document, session=session)
    if limiter.due(session):  # a mirrored list comes here inside the interval too: no extra beat
        limiter.beat(session, cwd=cwd)
    return 0


def _snapshot(payload: dict[str, Any], session: str, cwd: str, why: str) -> None:
    """Save the session's snapshot: what it was on (its claims, the plan's items in progress)."""
    root = state_dir(cwd)
    ctx = context.build(session, root=root, top=context.top_of(cwd))
    document: dict[str, Any] = {"summary": f"saved by the {why} hook of session {session}"}
    if ctx.claims:
        document["summary"] += "; claims: " + ", ".join(f"issue {c.get('issue')}" for c in ctx.claims)
    steps = [f"{item['id']} {item['step']} (in progress)" for item in ctx.in_progress[:10]]
    if steps:
        document["next_steps"] = steps
    for key in ("transcript_path", "trigger", "custom_instructions"):
        if isinstance(payload.get(key), str) and payload[key]:
            document[key] = payload[key]
    snapshots.save(document, session=session, root=root, cwd=cwd)


def pre_compact(payload: dict[str, Any], session: str, cwd: str) -> int:
    _snapshot(payload, session, cwd, "PreCompact")
    return 0


def stop(payload: dict[str, Any], session: str, cwd: str) -> int:
    _snapshot(payload, session, cwd, str(payload.get("hook_event_name") or "Stop"))
    return 0


def session_end(payload: dict[str, Any], session: str, cwd: str) -> int:
    _snapshot(payload, session, cwd, "SessionEnd")
    if settings.bool_setting("agent_keep_claims", cwd):
        return 0
    done, unreserved = end_session(current(session), root=state_dir(cwd), cwd=cwd, say=_err)
    for name in done.released:
        _err(f"gitst: released issue {name}")
    for pattern in unreserved:
        _err(f"gitst: released reservation {pattern}")
    for problem in done.remote_errors:
        _err(f"gitst: {problem}")
    return 0


def worktree_create(payload: dict[str, Any], session: str, cwd: str) -> int:
    """Create (or resume) the worktree of the issue the name stands for; stdout: its path only."""
    name = payload.get("name") or payload.get("worktree_name")
    if not isinstance(name, str) or not name:
        raise GitstError('the WorktreeCreate payload has no "name"', fix="see docs/harness.md, WorktreeCreate")
    issue = IssueId(name)
    result = manager.add(issue, current(session), cwd=cwd, say=_err)
    command = (result.setup or {}).get("command") or {}
    if command.get("status") == "failed":
        _err(f"gitst: the setup script of issue {issue} failed; run `git st worktree setup {issue}`")
    _out(os.path.abspath(result.path))
    return 0


def worktree_remove(payload: dict[str, Any], session: str, cwd: str) -> int:
    """Remove the worktree at ``worktree_path`` through gitst's safe removal (never forced:
    dirty or unpushed work is kept, and said)."""
    where = payload.get("worktree_path")
    if not isinstance(where, str) or not where:
        raise GitstError('the WorktreeRemove payload has no "worktree_path"')
    real = os.path.realpath(where)
    rows = [row for row in manager.list_rows(cwd, current(session)) if row.path and os.path.realpath(row.path) == real]
    issue = next((row.issue for row in rows if row.issue), None)
    if issue is None:
        _err(f"gitst: {where} is not a worktree gitst made; left as it is")
        return 0
    main_root = repo_of(cwd).main_root
    removal.remove(issue, current(session), cwd=str(main_root), say=_err)
    return 0


def task_created(payload: dict[str, Any], session: str, cwd: str) -> int:
    mirror.task_created(payload, session=session)
    return 0


def task_completed(payload: dict[str, Any], session: str, cwd: str) -> int:
    mirror.task_completed(payload, session=session)
    return 0


HANDLERS: dict[str, Callable[[dict[str, Any], str, str], int]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": heartbeat_event,
    "PostToolUse": heartbeat_event,
    "PreCompact": pre_compact,
    "Stop": stop,
    "SessionEnd": session_end,
    "WorktreeCreate": worktree_create,
    "WorktreeRemove": worktree_remove,
    "TaskCreated": task_created,
    "TaskCompleted": task_completed,
}


def handle(event: str, payload: dict[str, Any], session: str, cwd: str) -> int:
    return HANDLERS[event](payload, session, cwd)
