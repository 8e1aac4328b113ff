"""``git st hook-agent [EVENT]``: the one command every agent-harness hook runs.

``gitst.cli.main`` calls :func:`run` before click is imported, like ``git st hook``. It reads
the payload (:mod:`gitst.harness.payload`: one JSON object, never waiting for EOF), takes
the harness's ``session_id`` as the gitst session (``ST_SESSION_ID`` for everything it
calls), works in the payload's ``cwd``, and returns before importing any handler when the
event has nothing to do:

- PostToolUse / UserPromptSubmit inside the session's heartbeat interval (one stamp read);
- PreToolUse of a tool that writes no file (Read, Grep, WebFetch, …) inside the heartbeat
  interval (a due heartbeat runs before the tool does: a long tool call starts with its
  session's whole TTL ahead);
- an event gitst does not handle.

Fail open: whatever goes wrong in gitst itself is one line on stderr and exit 0 — a broken
gitst must not stop the agent — except the PreToolUse refusal (exit 2, its reason on
stderr) and a WorktreeCreate that could not make the worktree (exit 1: the harness must not
be handed a path that is not there). No traceback ever reaches the agent's context.
"""

from __future__ import annotations

import os
import sys

from gitst.harness import limiter
from gitst.harness.payload import PayloadError, read_payload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EVENTS", "run"]

EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PreToolUse",
    "PreCompact",
    "Stop",
    "SessionEnd",
    "WorktreeCreate",
    "WorktreeRemove",
    "TaskCreated",
    "TaskCompleted",
)
# PreToolUse runs a handler only for tools that write files (gitst.harness.toolpaths).
WRITING_TOOLS = frozenset(
    {"Edit", "Write", "MultiEdit", "NotebookEdit", "Bash", "shell", "local_shell", "exec_command", "apply_patch"}
)
MIRRORED_TOOLS = frozenset({"TodoWrite", "update_plan"})
USAGE = "usage: git st hook-agent [EVENT] < payload.json (EVENT: " + ", ".join(EVENTS) + ")"


def _one_line(text: str) -> str:
    from gitst.core.terminal import sanitize  # lazy: the failure path only (re)

    return " ".join(sanitize(text).split())


def _fail_open(what: str) -> int:
    print(f"gitst hook-agent: {_one_line(what)} (ignored: the agent goes on)", file=sys.stderr)
    return 0


def _nothing_to_do(event: str, payload: dict[str, Any], session: str) -> bool:
    if event not in EVENTS:
        return True
    if event == "PreToolUse":
        return payload.get("tool_name") not in WRITING_TOOLS and not limiter.due(session)
    if event in ("PostToolUse", "UserPromptSubmit"):
        return payload.get("tool_name") not in MIRRORED_TOOLS and not limiter.due(session)
    return False


def run(args: list[str]) -> int:
    """Handle one hook event; the exit status the harness reads."""
    if args[:1] and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    try:
        payload = read_payload()
    except PayloadError as exc:
        return _fail_open(str(exc))
    event = args[0] if args else str(payload.get("hook_event_name") or "")
    session = payload.get("session_id")
    session = session if isinstance(session, str) and session else os.environ.get("ST_SESSION_ID", "")
    if _nothing_to_do(event, payload, session):
        return 0
    return _handle(event, payload, session)


def _pre_tool_use(payload: dict[str, Any], session: str) -> int:
    """A heartbeat when one is due (before a long tool call starts: its whole TTL ahead),
    then the reservation check of a writing tool."""
    if limiter.due(session):
        try:
            limiter.beat(session, cwd=os.getcwd())
        except Exception as exc:  # the check below still runs: a failed beat never blocks an edit
            _fail_open(f"heartbeat failed: {getattr(exc, 'message', None) or exc}")
    if payload.get("tool_name") not in WRITING_TOOLS:
        return 0
    from gitst.harness.guard import pre_tool_use  # lazy: a writing tool call only (runs before every edit)

    return pre_tool_use(payload, session, os.getcwd())


def _handle(event: str, payload: dict[str, Any], session: str) -> int:
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and os.path.isdir(cwd) else os.getcwd()
    try:
        os.chdir(cwd)
        if session:
            os.environ["ST_SESSION_ID"] = session
        if event == "PreToolUse":
            return _pre_tool_use(payload, session)
        from gitst.harness.handlers import handle  # lazy: past the no-op path only (pinned import set)

        return handle(event, payload, session, os.getcwd())
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        fix = getattr(exc, "fix", None)
        message += f" (fix: {fix})" if fix else ""
        if event == "WorktreeCreate":
            print(f"gitst hook-agent: WorktreeCreate failed: {_one_line(message)}", file=sys.stderr)
            return 1
        return _fail_open(f"{event} failed: {message}")
