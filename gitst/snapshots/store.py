"""Session snapshots (seed 001 ``session-snapshots/``): what one chat saves for the next.

``state/session-snapshots/<session_id>.json``, schema ``state-session-snapshot``: the
reasoning context — ``summary``, ``completed`` work, ``decisions``, ``gotchas``,
``next_steps`` — with the ``git`` state and the ``pipeline`` status when it was saved.

- The key is the session's declared id (``--session``, ``ST_SESSION_ID``,
  ``CLAUDE_SESSION_ID``, ``CODEX_THREAD_ID``), else ``anonymous`` (the seed's rule: a chat
  without a session id saves ``anonymous.json``). A process id is no key here: the next
  chat could never name it.
- :func:`save` takes the user's document (unknown fields kept) plus the items given as
  options (appended to the document's lists), then fills in what gitst knows — who saved it
  and when, how many saves, the git state (:func:`gitst.git.worktrees.work_tree_state`) and
  the pipeline status (:func:`gitst.pipeline.state.status_summary`) — overriding any such
  field of the document. It replaces the session's snapshot under the record's flock
  (``created_at`` and the ``saves`` count carry over).
- :func:`load` returns the most recent snapshot (by ``saved_at``) of **another** session —
  what ``/jkz:load`` does — or the one of ``--session ID``; with the current git state next
  to it, so the reader sees what moved since. A session without an id (``anonymous``) cannot
  tell its own snapshot from another anonymous chat's, so it may load ``anonymous.json`` too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.errors import ProblemsFound
from gitst.core.values import field, value_class
from gitst.git.repo import repo_info
from gitst.git.worktrees import work_tree_state
from gitst.pipeline.state import status_summary
from gitst.sessions.identity import actor, declared_session_id, host
from gitst.statedir import records
from gitst.statedir.paths import ensure_state_dir, refuse_symlinks, validate_session

__all__ = [
    "ANONYMOUS",
    "DIRECTORY",
    "LISTS",
    "SCHEMA",
    "Loaded",
    "Row",
    "git_state",
    "list_snapshots",
    "load",
    "save",
    "session_key",
]

SCHEMA = "state-session-snapshot"
DIRECTORY = "session-snapshots"
ANONYMOUS = "anonymous"
RECORD_VERSION = 1
LISTS = ("completed", "decisions", "gotchas", "next_steps")
# Fields gitst fills in on every save; the document's own values for them are replaced.
OWNED = ("version", "session_id", "saved_at", "created_at", "saves", "actor", "host", "git", "pipeline")


def session_key(explicit: str | None = None) -> str:
    """The snapshot's key: the declared session id, else ``anonymous`` (validated: it names
    the file)."""
    return validate_session(declared_session_id(explicit) or ANONYMOUS)


def git_state(cwd: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """``{"branch", "head", "dirty", "worktree"}`` of the work tree around ``cwd``; None outside one."""
    info = repo_info(cwd)
    if info is None or info.toplevel is None:
        return None
    state = work_tree_state(info.toplevel).to_dict()
    state["worktree"] = str(info.toplevel)
    return state


def _files(session: str, root: Path) -> records.RecordFiles:
    return records.record_files(root, DIRECTORY, validate_session(session))


def save(
    document: dict[str, Any] | None,
    *,
    session: str,
    root: Path,
    summary: str | None = None,
    items: dict[str, list[str]] | None = None,
    issues: list[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Write ``session``'s snapshot (see the module docstring); ``(path, record)``.

    ``issues`` limits the pipeline status to those issues (default: every issue). Content
    that breaks the schema (a list that is not a list, ...) is refused (exit 2).
    """
    content: dict[str, Any] = {k: v for k, v in (document or {}).items() if k not in OWNED}
    if summary is not None:
        content["summary"] = summary
    for name, added in (items or {}).items():
        if added:
            existing = content.get(name, [])
            content[name] = (list(existing) if isinstance(existing, list) else [existing]) + list(added)
    files = _files(session, root)
    known_git = git_state(cwd)
    pipeline = status_summary(issues, cwd)
    ensure_state_dir(root)
    files.record.parent.mkdir(parents=True, exist_ok=True)
    refuse_symlinks(files.sidecar, root)
    with records.locked(files.sidecar):
        try:
            previous = records.load(files.record, SCHEMA) or {}
        except records.CorruptRecord:
            previous = {}  # the session's own snapshot, unreadable: this save replaces it
        stamp = timestamps.iso(timestamps.now())
        record: dict[str, Any] = {
            "version": RECORD_VERSION,
            "session_id": session,
            "saved_at": stamp,
            "created_at": previous.get("created_at") or stamp,
            "saves": int(previous.get("saves") or 0) + 1,
            "actor": actor(),
            "host": host(),
        }
        record.update(content)
        record["git"] = known_git
        record["pipeline"] = pipeline
        records.require_valid(record, SCHEMA, "the snapshot")
        records.save(files.record, record, SCHEMA)
    return files.record, record


@value_class(frozen=True)
class Row:
    session: str
    path: Path
    record: dict[str, Any]

    @property
    def saved(self) -> float:
        when = timestamps.moment(self.record.get("saved_at"))
        return when.timestamp() if when is not None else 0.0


def list_snapshots(root: Path) -> tuple[list[Row], list[records.CorruptRecord]]:
    """Every snapshot, oldest save first, and the unreadable ones."""
    rows, problems = [], []
    for name, path, stored, problem in records.scan(root, DIRECTORY, SCHEMA, validate_session):
        if problem is not None:
            problems.append(problem)
        elif stored is not None:
            rows.append(Row(name, path, stored))
    rows.sort(key=lambda row: (row.saved, row.session))
    return rows, problems


@value_class
class Loaded:
    session: str
    path: Path
    record: dict[str, Any]
    git_now: dict[str, Any] | None  # the git state where it is loaded
    problems: list[records.CorruptRecord] = field(default_factory=list)  # unreadable snapshots passed over

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session, "path": str(self.path), "snapshot": self.record, "git_now": self.git_now}


def load(root: Path, *, current: str, session: str | None = None, cwd: str | os.PathLike[str] | None = None) -> Loaded:
    """``session``'s snapshot, or the most recent one of a session other than ``current``
    (any, ``anonymous`` included, when ``current`` is ``anonymous``). None there: exit 1."""
    problems: list[records.CorruptRecord] = []
    if session is not None:
        files = _files(session, root)
        stored = records.load(files.record, SCHEMA)
        if stored is None:
            raise ProblemsFound(
                f"no session snapshot of session {session} ({files.record} does not exist)",
                fix="`git st snapshot list` shows the saved ones",
            )
        chosen = Row(session, files.record, stored)
    else:
        rows, problems = list_snapshots(root)
        others = [row for row in rows if current == ANONYMOUS or row.session != current]
        if not others:
            where = root / DIRECTORY
            mine = " (only this session's own)" if rows else ""
            raise ProblemsFound(
                f"no session snapshot from another session in {where}{mine}; this session is {current}",
                fix="save one with `git st snapshot save` in the session that has the context, "
                "or load a given one with `git st snapshot load --session ID`",
            )
        chosen = others[-1]
    return Loaded(chosen.session, chosen.path, chosen.record, git_state(cwd), problems)
