"""The harness's own to-do list mirrored into the plan, so the team's plan shows every
agent's tasks: Claude Code's tasks (TaskCreated / TaskCompleted hooks, and its
``TodoWrite`` list seen by PostToolUse) and Codex's ``update_plan`` JSON
(``{"plan": [{"step": …, "status": "pending|in_progress|completed"}], "explanation": …}``,
`git st import-update-plan`, or PostToolUse of ``update_plan``).

Each task becomes one plan item through the plan engine (:func:`gitst.plan.engine.add` and
:func:`~gitst.plan.engine.set_status`: the plan lock, the append-only file, the
``update_plan`` rules), under an id that stays the same across updates:

- a Claude Code task: ``task-<session>-<task_id>`` (``<session>``: the first 8 characters of
  the harness's session id), so TaskCompleted finds the item TaskCreated made;
- an ``update_plan``/``TodoWrite`` step: ``plan-<session>-<hash>`` with ``<hash>`` the first
  8 hex digits of the SHA-1 of the step text — these lists carry no ids, and the text is
  what stays the same while the status moves. A step whose text changes is a new item (the
  old one keeps its last status); a step no longer listed is left as it was.

Several agents' tasks may be ``in_progress`` at once (each its own): the writes allow it.
An item whose step and status are already what the list says is not written again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gitst.core.errors import UsageError
from gitst.core.values import field, value_class
from gitst.plan import engine
from gitst.plan.files import read_plan
from gitst.plan.model import normalize_status
from gitst.plan.store import Target

__all__ = ["Mirrored", "import_update_plan", "plan_id", "task_completed", "task_created", "task_id", "todos_to_plan"]

_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@value_class
class Mirrored:
    written: list[str] = field(default_factory=list)  # ids added or changed
    unchanged: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"written": self.written, "unchanged": self.unchanged}


def _short(session: str) -> str:
    return "".join(ch for ch in session if ch in _SAFE)[:8] or "anon"


def task_id(session: str, task: object) -> str:
    cleaned = "".join(ch for ch in str(task) if ch in _SAFE)[:32]
    if not cleaned:
        raise UsageError(f"the task id {str(task)[:40]!r} has no usable character")
    return f"task-{_short(session)}-{cleaned}"


def plan_id(session: str, step: str) -> str:
    digest = hashlib.sha1(step.strip().encode("utf-8"), usedforsecurity=False).hexdigest()[:8]
    return f"plan-{_short(session)}-{digest}"


def _plan() -> Target:
    """The plan of the work tree the hook runs in; none there is an error (no plan is made
    for a harness's to-do list: `git st init` decides where the plan lives)."""
    target = Target.of(None)
    if not target.path.is_file():
        raise UsageError(f"no plan at {target.shown}", fix="`git st init` starts one; then tasks are mirrored into it")
    return target


def _upsert(target: Target, item_id: str, step: str, status: str | None, notes: str | None, done: Mirrored) -> None:
    current = read_plan(target).state.get(item_id)
    if current is not None and current.get("step") == step and (status is None or current.get("status") == status):
        done.unchanged.append(item_id)
        return
    engine.add(target, step=step, item_id=item_id, status=status, notes=notes, allow_multiple_in_progress=True)
    done.written.append(item_id)


def task_created(payload: dict[str, Any], *, session: str) -> Mirrored:
    """TaskCreated: the task as a pending item (its subject the step, its description the notes)."""
    item_id = task_id(session, payload.get("task_id"))
    subject = str(payload.get("task_subject") or payload.get("task_description") or item_id).strip() or item_id
    notes = payload.get("task_description")
    done = Mirrored()
    _upsert(_plan(), item_id, subject, None, notes if isinstance(notes, str) else None, done)
    return done


def task_completed(payload: dict[str, Any], *, session: str) -> Mirrored:
    """TaskCompleted: the item completed (made first when its TaskCreated was not seen)."""
    item_id = task_id(session, payload.get("task_id"))
    target = _plan()
    done = Mirrored()
    current = read_plan(target).state.get(item_id)
    if current is None:
        subject = str(payload.get("task_subject") or payload.get("task_description") or item_id).strip() or item_id
        _upsert(target, item_id, subject, "completed", None, done)
    elif current.get("status") == "completed":
        done.unchanged.append(item_id)
    else:
        engine.set_status(target, item_id, "completed", allow_multiple_in_progress=True)
        done.written.append(item_id)
    return done


def _steps(document: Any) -> list[tuple[str, str]]:
    if not isinstance(document, dict) or not isinstance(document.get("plan"), list):
        raise UsageError(
            'update_plan JSON must be an object with a "plan" list',
            fix='pass {"plan": [{"step": "...", "status": "pending|in_progress|completed"}]}',
        )
    steps = []
    for index, entry in enumerate(document["plan"], 1):
        step = entry.get("step") if isinstance(entry, dict) else None
        if not isinstance(step, str) or not step.strip():
            raise UsageError(f'update_plan step {index} has no "step" text')
        steps.append((step.strip(), normalize_status(entry.get("status") or "pending")))
    return steps


def import_update_plan(document: Any, *, session: str) -> Mirrored:
    """Each step of an ``update_plan`` document upserted under its stable id (module docstring)."""
    target = _plan()
    done = Mirrored()
    for step, status in _steps(document):
        _upsert(target, plan_id(session, step), step, status, None, done)
    return done


def todos_to_plan(tool_input: Any) -> dict[str, Any]:
    """Claude Code's ``TodoWrite`` input (``{"todos": [{"content", "status", …}]}``) as an
    ``update_plan`` document."""
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list):
        raise UsageError('TodoWrite input has no "todos" list')
    return {"plan": [{"step": t.get("content"), "status": t.get("status")} for t in todos if isinstance(t, dict)]}
