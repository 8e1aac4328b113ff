"""Which branch and worktree path belong to an issue (the worktree templates), and the
``active-worktrees/<issue>.json`` registry (schema ``state-active-worktree``): readers and
writers. Writers check the record against the schema, keep unknown fields, and replace the
file crash-safely under the sidecar flock ``<issue>.json.lock``.

Templates (git config; ``{issue}`` and ``{repo}`` are replaced):

- ``st.worktree.branch``  default ``st/issue-{issue}`` (a new claim whose branch is taken
  works on ``st/issue-{issue}-2``, ``-3``, …: :func:`gitst.worktrees.manager.add`)
- ``st.worktree.path``    default ``../{repo}.worktrees/issue-{issue}`` (relative to the
  main worktree's root)
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from gitst.core.values import Value
from gitst.git.repo import require_repo
from gitst.settings import str_setting
from gitst.statedir import records
from gitst.statedir.paths import Identifier, IssueId, ensure_state_dir, state_path
from gitst.statedir.records import CorruptRecord, ScanRow, locked

__all__ = [
    "branch_for_issue",
    "branch_of_issue",
    "issue_for_branch",
    "list_worktree_entries",
    "load_worktree_entry",
    "operation_lock_path",
    "paths_lock_path",
    "places_for_issue",
    "ports_lock_path",
    "read_worktree_entry",
    "remove_worktree_entry",
    "worktree_entry_path",
    "worktree_files",
    "write_worktree_entry",
]

WORKTREES_DIR = "active-worktrees"
SCHEMA = "state-active-worktree"
RECORD_VERSION = 1


# The names of the registry's two shared locks (constants: trusted as path components).
_PATHS, _PORTS = Identifier("paths"), Identifier("ports")


def _issue(issue: str) -> IssueId:
    """``issue`` as an :class:`IssueId`: parsed when it is a plain string, else trusted."""
    return issue if isinstance(issue, IssueId) else IssueId(issue)


def _render(template: str, issue: str, repo: str) -> str:
    return template.replace("{issue}", issue).replace("{repo}", repo)


def _main_root(cwd: str | os.PathLike[str] | None) -> Path:
    info = require_repo(cwd)
    return info.shared_root


def branch_template(cwd: str | os.PathLike[str] | None = None) -> str:
    return str_setting("worktree_branch", cwd)


def branch_for_issue(issue: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """The branch the template gives ``issue`` (does not look at the registry)."""
    return places_for_issue(issue, cwd)[0]


def places_for_issue(issue: str, cwd: str | os.PathLike[str] | None = None) -> tuple[str, Path]:
    """The branch (``st.worktree.branch``) and the worktree path (``st.worktree.path``, taken
    relative to the main worktree's root) the templates give ``issue`` (does not look at the
    registry): the one rendering of both templates."""
    parsed, root = _issue(issue), _main_root(cwd)
    branch = _render(branch_template(cwd), parsed, root.name)
    path = Path(os.path.expanduser(_render(str_setting("worktree_path", cwd), parsed, root.name)))
    return branch, Path(os.path.normpath(path if path.is_absolute() else root / path))


def issue_for_branch(branch: str, cwd: str | os.PathLike[str] | None = None, *, root: Path | None = None) -> str | None:
    """The issue whose branch is ``branch``: the registry's (a new claim may work on
    ``st/issue-7-2`` when ``st/issue-7`` was taken, docs/parallel.md "Branches"), else the
    template's (None when it does not match). ``root``: the state dir, when the caller has it."""
    if root is not None:
        for issue, _file, entry, _problem in list_worktree_entries(root):
            if entry is not None and entry.get("branch") == branch:
                return issue
    template = branch_template(cwd)
    if "{issue}" not in template:
        return None
    repo = _main_root(cwd).name
    pattern = "".join(
        "(?P<issue>[A-Za-z0-9._-]{1,64})" if piece == "{issue}" else re.escape(piece.replace("{repo}", repo))
        for piece in re.split(r"(\{issue\})", template, maxsplit=1)
    )
    match = re.fullmatch(pattern, branch)
    if not match or ".." in match.group("issue"):
        return None
    return match.group("issue")


class WorktreeFiles(Value):
    """The registry's paths of one issue, each checked (:func:`worktree_files`): its entry,
    the entry's flock sidecar and the operation lock."""

    __slots__ = ("entry", "operation_lock", "sidecar")

    def __init__(self, entry: Path, sidecar: Path, operation_lock: Path):
        self.entry, self.sidecar, self.operation_lock = entry, sidecar, operation_lock

    def load(self) -> dict[str, Any] | None:
        """The entry checked against the schema (CorruptRecord, exit 1, when bad), or None:
        :func:`load_worktree_entry` from these paths, not derived again."""
        return records.load(self.entry, SCHEMA)


def worktree_files(issue: str, *, root: Path) -> WorktreeFiles:
    """Every registry path a ``worktree add`` of ``issue`` touches, checked before anything is
    written; given to the readers and writers below so they are not derived again."""
    files = records.record_files(root, WORKTREES_DIR, _issue(issue))
    return WorktreeFiles(files.record, files.sidecar, operation_lock_path(issue, root=root))


def operation_lock_path(issue: str, *, root: Path) -> Path:
    """``active-worktrees/<issue>.op.lock``: held for the whole of a ``worktree add`` or
    ``remove`` of the issue (and by the git processes they start)."""
    return state_path(WORKTREES_DIR, _issue(issue), suffix=".op.lock", root=root)


def paths_lock_path(root: Path) -> Path:
    """``active-worktrees/paths.lock``: held by a new ``worktree add`` from the moment it looks
    at its target path until ``git worktree add`` has made it (git itself lets two adds share
    an empty directory, and both then fail)."""
    return state_path(WORKTREES_DIR, _PATHS, suffix=".lock", root=root)


def ports_lock_path(root: Path) -> Path:
    """``active-worktrees/ports.lock``: held while a port block is chosen and recorded."""
    return state_path(WORKTREES_DIR, _PORTS, suffix=".lock", root=root)


def worktree_entry_path(issue: str, cwd: str | os.PathLike[str] | None = None, *, root: Path | None = None) -> Path:
    return state_path(WORKTREES_DIR, _issue(issue), suffix=".json", cwd=cwd, root=root)


def read_worktree_entry(
    issue: str, cwd: str | os.PathLike[str] | None = None, *, root: Path | None = None
) -> dict[str, Any] | None:
    """The registry entry of ``issue`` (``active-worktrees/<issue>.json``), or None.

    Lenient: a missing, corrupt or schema-violating entry is None (the PR cascade falls
    back to the template). Use :func:`load_worktree_entry` to have corruption reported.
    """
    try:
        return load_worktree_entry(issue, cwd, root=root)
    except CorruptRecord:
        return None


def load_worktree_entry(
    issue: str, cwd: str | os.PathLike[str] | None = None, *, root: Path | None = None
) -> dict[str, Any] | None:
    """The entry of ``issue`` checked against the schema (CorruptRecord, exit 1, when bad).
    A caller holding the issue's checked paths loads it with :meth:`WorktreeFiles.load`."""
    return records.load(worktree_entry_path(issue, cwd, root=root), SCHEMA)


def write_worktree_entry(
    entry: dict[str, Any], *, root: Path, drop: tuple[str, ...] = (), files: WorktreeFiles | None = None
) -> dict[str, Any]:
    """Create or update the entry of ``entry["issue"]``: fields given replace, fields named in
    ``drop`` are removed, others kept. ``files``: that issue's checked paths (:func:`worktree_files`)."""
    issue = _issue(entry.get("issue", ""))
    if files is None:
        found = records.record_files(root, WORKTREES_DIR, issue)
        path, sidecar = found.record, found.sidecar
    else:
        path, sidecar = files.entry, files.sidecar
    ensure_state_dir(root)
    records.make_dir(path.parent, root)
    with locked(sidecar):
        try:
            current = records.load(path, SCHEMA) or {}
        except records.CorruptRecord:
            if not all(entry.get(key) for key in ("branch", "path", "session")):
                raise
            current = {}  # replaced by a whole new entry: the caller decided to (re)register
        merged = {"version": RECORD_VERSION, **current, **entry, "issue": str(issue)}
        for key in drop:
            merged.pop(key, None)
        records.save(path, merged, SCHEMA)
    return merged


def remove_worktree_entry(issue: str, *, root: Path) -> bool:
    """Drop the entry of ``issue`` (False when there was none)."""
    files = records.record_files(root, WORKTREES_DIR, _issue(issue))
    if not files.record.parent.is_dir():
        return False
    with locked(files.sidecar):
        return records.remove(files.record)


def list_worktree_entries(root: Path) -> list[ScanRow]:
    """Every entry as ``(issue, path, entry or None, CorruptRecord or None)``, sorted by issue."""
    return records.scan(root, WORKTREES_DIR, SCHEMA, IssueId)


def branch_of_issue(issue: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """The issue's branch: the registry's ``branch`` when registered, else the template's."""
    entry = read_worktree_entry(issue, cwd)
    if entry and isinstance(entry.get("branch"), str) and entry["branch"]:
        return entry["branch"]
    return branch_for_issue(issue, cwd)
