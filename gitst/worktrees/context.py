"""Where a worktree command works: the main worktree, git's common dir and the state dir."""

from __future__ import annotations

import os
from pathlib import Path

from gitst.git.repo import require_repo
from gitst.sessions.identity import Identity
from gitst.statedir.paths import state_dir

__all__ = ["LOCK_REASON_RE", "Repo", "inside", "lock_reason", "repo_of", "same_path"]

# The reason `git worktree lock` records for a worktree gitst holds (see lock_reason).
LOCK_REASON_RE = r"^gitst: issue (?P<issue>\S+) claimed by session (?P<session>\S+) "


class Repo:
    """The repository a worktree command acts on."""

    __slots__ = ("common_dir", "main_root", "state_root")

    def __init__(self, main_root: Path, state_root: Path, common_dir: Path):
        self.main_root = main_root
        self.state_root = state_root
        self.common_dir = common_dir


def repo_of(cwd: str | os.PathLike[str] | None) -> Repo:
    info = require_repo(cwd)
    return Repo(info.shared_root, state_dir(cwd), info.common_dir)


def same_path(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def inside(path: str | os.PathLike[str], parent: str | os.PathLike[str]) -> bool:
    """True when ``path`` is ``parent`` or lies below it (symlinks resolved)."""
    real, top = os.path.realpath(path), os.path.realpath(parent)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def lock_reason(issue: str, who: Identity) -> str:
    """What `git worktree lock --reason` records: the issue and the session holding it."""
    return f"gitst: issue {issue} claimed by session {who.session} (pid {who.pid} on {who.host})"
