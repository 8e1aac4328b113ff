"""What an agent is told when its session starts (SessionStart) or when it asks (`git st
prime`): who it is, what it holds, what is ready, and what its predecessor left.

The text is built from the same library functions the commands use — the session record
(:func:`gitst.sessions.chats.read_session`, as `git st sessions`), the plan
(:func:`gitst.plan.files.read_plan` and :func:`gitst.plan.model.ready_items`, as `git st
ready`) and the snapshots (:func:`gitst.snapshots.store.list_snapshots`, as `git st
snapshot load`) — and kept within a byte budget (``st.agent.contextBytes``, default 4,000
bytes of UTF-8 for the whole output, JSON wrapper included): a long ready list is cut with
the count of what was left out, never the header lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst import settings
from gitst.core.jsonio import dumps
from gitst.core.terminal import sanitize
from gitst.core.values import field, value_class
from gitst.git.repo import work_tree_top
from gitst.plan import model
from gitst.plan.files import read_plan
from gitst.plan.store import Target
from gitst.sessions.chats import read_session
from gitst.snapshots.store import list_snapshots
from gitst.statedir.paths import state_dir
from gitst.statedir.records import CorruptRecord

__all__ = ["Context", "build", "hook_output", "prime", "render", "top_of"]

LOOP_LINE = (
    "The loop: `git st next --format json` takes the next ready item (claims it, opens its worktree); "
    "work there; `git st land` lands it. Plan: `git st show`, `git st set-status ID STATUS`."
)
MAX_SNAPSHOT_ITEMS = 5


@value_class
class Context:
    session: str
    top: str | None
    claims: list[dict[str, Any]] = field(default_factory=list)
    ready: list[dict[str, Any]] = field(default_factory=list)
    in_progress: list[dict[str, Any]] = field(default_factory=list)
    snapshot: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)


def build(session: str, *, root: Path, top: str | None) -> Context:
    """Everything the context says, read once (each part's failure is a problem line, not
    the end of the context: an agent gets what could be read)."""
    ctx = Context(session=session, top=top)
    try:
        record = read_session(session, root)
        ctx.claims = [c for c in (record or {}).get("claims", []) if not c.get("lost")]
    except CorruptRecord as exc:
        ctx.problems.append(str(exc))
    try:
        items = read_plan(Target.of(None)).state.items()
        ctx.ready = model.ready_items(items)
        ctx.in_progress = [item for item in items if item.get("status") == "in_progress"]
    except Exception as exc:
        ctx.problems.append(f"the plan could not be read: {exc}")
    ctx.snapshot = _predecessor(session, root, top)
    return ctx


def _predecessor(session: str, root: Path, top: str | None) -> dict[str, Any] | None:
    """The latest snapshot of another session saved in this worktree, else the latest of
    another session anywhere in this repository (what `git st snapshot load` picks)."""
    rows, _ = list_snapshots(root)
    others = [row for row in rows if row.session != session]
    if not others:
        return None
    here = [row for row in others if top and ((row.record.get("git") or {}).get("worktree") == top)]
    chosen = (here or others)[-1]
    return {"session": chosen.session, **chosen.record}


def _line(text: object) -> str:
    return sanitize(str(text)).replace("\n", " ")


def _head(ctx: Context) -> list[str]:
    lines = [f"gitst: you are session {_line(ctx.session)}" + (f" in {_line(ctx.top)}" if ctx.top else "") + "."]
    if ctx.claims:
        held = "; ".join(
            f"issue {_line(c.get('issue'))}" + (f" (worktree {_line(c['worktree'])})" if c.get("worktree") else "")
            for c in ctx.claims
        )
        lines.append(f"Your claims: {held}.")
    else:
        lines.append("You hold no claims.")
    if ctx.in_progress:
        lines.append("In progress: " + "; ".join(f"{_line(i['id'])} {_line(i['step'])}" for i in ctx.in_progress[:5]))
    lines.extend(_snapshot_lines(ctx.snapshot))
    lines.extend(f"warning: {_line(problem)}" for problem in ctx.problems)
    lines.append(LOOP_LINE)
    return lines


def _snapshot_lines(snap: dict[str, Any] | None) -> list[str]:
    if snap is None:
        return []
    lines = [f"Snapshot of session {_line(snap['session'])} (saved {_line(snap.get('saved_at'))}):"]
    if snap.get("summary"):
        lines.append(f"  summary: {_line(snap['summary'])}")
    for name in ("next_steps", "gotchas", "decisions"):
        values = snap.get(name) or []
        if isinstance(values, list) and values:
            shown = "; ".join(_line(v) for v in values[:MAX_SNAPSHOT_ITEMS])
            lines.append(f"  {name.replace('_', ' ')}: {shown}")
    return lines


def render(ctx: Context, budget: int, *, fits: Any = None) -> str:
    """The context text; ``fits(text) -> bool`` says whether a candidate fits the budget (the
    caller's output format decides: the JSON wrapper counts too). Ready items are added while
    they fit; then one line with the count left out."""
    fits = fits or (lambda text: len(text.encode("utf-8")) <= budget)
    head = _head(ctx)
    ready = ctx.ready
    lines = [*head, f"Ready ({len(ready)}):" if ready else "Nothing is ready in the plan."]
    text = "\n".join(lines)
    shown = 0
    for item in ready:
        candidate = text + f"\n  {_line(item['id'])} {_line(item['step'])}"
        more = len(ready) - shown - 1
        tail = f"\n  … {more} more: `git st ready`" if more else ""
        if not fits(candidate + tail):
            break
        text = candidate
        shown += 1
    if shown < len(ready):
        text += f"\n  … {len(ready) - shown} more: `git st ready`"
    while not fits(text) and "\n" in text:  # the head alone is over a tiny budget: cut from its end
        text = text.rsplit("\n", 1)[0]
    return text


def top_of(cwd: str) -> str | None:
    top = work_tree_top(cwd)
    return os.path.realpath(top) if top else None


def hook_output(session: str, cwd: str, event: str = "SessionStart") -> str:
    """The SessionStart output, ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``
    (Claude Code's and Codex's format), the whole line within the byte budget."""
    budget = settings.int_setting("agent_context_bytes", cwd)
    ctx = build(session, root=state_dir(cwd), top=top_of(cwd))

    def wrap(text: str) -> str:
        return dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})

    return wrap(render(ctx, budget, fits=lambda text: len(wrap(text).encode("utf-8")) + 1 <= budget))


def prime(session: str, cwd: str) -> str:
    """`git st prime`: the same context as plain text, within the same budget."""
    budget = settings.int_setting("agent_context_bytes", cwd)
    return render(build(session, root=state_dir(cwd), top=top_of(cwd)), budget - 1)
