"""Undo what an interrupted ``worktree add`` left, before a command reads every worktree.

Every command that reads the worktrees (``next``, ``land``, ``claim``, ``release``,
``heartbeat``, ``status``, the MCP server's tools) calls :func:`recover_worktrees` first: a
half-made worktree makes a fetch fail as if the remote were away. One directory listing when
all is well; outside a repository, nothing (docs/recovery.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from gitst.core.errors import GitstError
from gitst.git.repo import repo_info
from gitst.git.worktrees import half_made

__all__ = ["recover_worktrees"]


def recover_worktrees(cwd: str | os.PathLike[str] | None, say: Callable[[str], None]) -> None:
    """Finish or undo an interrupted ``worktree add`` of the repository around ``cwd``,
    telling ``say`` what was done; errors are left for the command itself to report."""
    try:
        info = repo_info(cwd)
        if info is None or not half_made(info.common_dir):
            return
        from gitst.worktrees.context import repo_of  # lazy: crash recovery only (with journal: ~11 ms, shutil, lzma)
        from gitst.worktrees.journal import recover_half_made  # lazy: crash recovery only (see above)

        recover_half_made(repo_of(cwd), say=say)
    except GitstError:
        return  # the command itself reports what is wrong with the repository or the state dir
