"""What a worktree holds that removing it could lose, and whether its work is merged.

- **Uncommitted changes**: one ``git status`` (staged, unstaged, untracked files that are not
  ignored). Files gitst itself copied in (``st.worktree.copy``) or the trusted setup script
  created, and that are unchanged since — their SHA-256 is in the registry entry
  (``copied_sha256``, ``created_sha256``) — are not the user's work and are left out.
- **Commits found only here**: reachable from the worktree's ``HEAD`` and from no other
  branch and no remote-tracking ref.
- **Merged**: the worktree's ``HEAD`` is reachable from its base branch (the entry's
  ``base_branch``, else the main worktree's branch) or from that branch's upstream.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from gitst.core.errors import UsageError
from gitst.core.safepaths import open_fd
from gitst.core.values import field, value_class
from gitst.git.history import is_ancestor
from gitst.git.refs import branch_exists, upstream_of
from gitst.git.repo import current_branch
from gitst.git.worktrees import uncommitted_changes

__all__ = ["Changes", "base_branch_of", "changes", "copy_digest", "merged_into_base"]


def copy_digest(path: str | os.PathLike[str]) -> str | None:
    """SHA-256 of a file's bytes, of a symlink's target; None when it cannot be read."""
    digest = hashlib.sha256()
    try:
        if os.path.islink(path):
            digest.update(os.fsencode(os.readlink(os.fspath(path))))
        else:
            with os.fdopen(open_fd(path, os.O_RDONLY), "rb") as handle:  # a FIFO is refused, never waited on
                for chunk in iter(lambda: handle.read(1 << 16), b""):
                    digest.update(chunk)
    except (OSError, UsageError):
        return None
    return digest.hexdigest()


@value_class
class Changes:
    """Uncommitted work in a worktree, by kind (paths relative to its top)."""

    staged: list[str] = field(default_factory=list)
    unstaged: list[str] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)  # gitst's own copies (and setup's files), unchanged

    @property
    def paths(self) -> list[str]:
        return list(dict.fromkeys([*self.staged, *self.unstaged, *self.untracked]))

    def counts(self) -> dict[str, Any]:
        return {
            "staged": len(self.staged),
            "unstaged": len(self.unstaged),
            "untracked": len(self.untracked),
            "total": len(self.paths),
        }


def changes(path: str | os.PathLike[str], entry: dict[str, Any] | None) -> Changes:
    """The uncommitted work in the worktree at ``path`` (one ``git status``)."""
    setup = (entry or {}).get("setup") or {}
    copied = {**(setup.get("created_sha256") or {}), **(setup.get("copied_sha256") or {})}
    found = Changes()
    for line in uncommitted_changes(path):
        index, work, name = line[0], line[1], line[3:]
        if index == "?":
            if name in copied and copy_digest(os.path.join(path, name)) == copied[name]:
                found.copies.append(name)
            else:
                found.untracked.append(name)
            continue
        if index not in (" ", "?"):
            found.staged.append(name)
        if work not in (" ", "?"):
            found.unstaged.append(name)
    return found


def base_branch_of(entry: dict[str, Any], main_root: str | os.PathLike[str]) -> str | None:
    """The branch the issue's work is merged into: the entry's ``base_branch``, else the
    branch checked out in the main worktree (None when detached)."""
    base = entry.get("base_branch")
    if isinstance(base, str) and base:
        return base

    return current_branch(main_root)


def _targets(
    base: str, cwd: str | os.PathLike[str], refs: tuple[dict[str, str], dict[str, str]] | None
) -> tuple[list[str], str | None]:
    """(the refs ``head`` may be merged into: ``base`` and its upstream, those that exist; the
    upstream), from ``refs`` (every ref, every branch's upstream) or else asked of git."""
    branch = f"refs/heads/{base}"
    if refs is None:
        exists = branch_exists(base, cwd)
        upstream = upstream_of(base, cwd) if exists else None
    else:
        exists = branch in refs[0]
        upstream = refs[1].get(branch) if exists else None
    if not exists:
        return [], None
    return [branch, *([upstream] if upstream else [])], upstream


def merged_into_base(
    head: str | None,
    base: str | None,
    cwd: str | os.PathLike[str],
    *,
    refs: tuple[dict[str, str], dict[str, str]] | None = None,
) -> tuple[bool, str]:
    """(merged?, why): ``head`` reachable from ``base`` or from ``base``'s upstream. ``refs``:
    every ref and branch upstream (:func:`gitst.git.refs.refs_with_upstreams`) the caller read
    a moment ago, instead of asking git for the base and its upstream; a target that points at
    ``head`` itself is merged without asking git."""
    if not head:
        return False, "its HEAD is unknown"
    if not base:
        return False, "it has no base branch (the main worktree is detached)"
    tips = refs[0] if refs is not None else {}
    targets, upstream = _targets(base, cwd, refs)
    if not targets:
        return False, f"its base branch {base} does not exist"
    found = next((t for t in targets if tips.get(t) == head), None)  # merged: git not asked
    found = found or next((t for t in targets if is_ancestor(head, t, cwd)), None)
    if found is not None:
        return True, f"merged into {found.removeprefix('refs/heads/').removeprefix('refs/remotes/')}"
    return False, f"not merged into {base}" + (f" nor {upstream.removeprefix('refs/remotes/')}" if upstream else "")
