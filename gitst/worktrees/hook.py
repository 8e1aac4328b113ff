"""The post-checkout hook's hand-over to the worktree manager (docs/parallel.md).

git runs post-checkout after every checkout; only a new linked worktree's first checkout
concerns gitst. This module imports nothing but the errors at load time and decides that
from git's arguments alone, so every other checkout returns at once: the manager (claims,
records, schemas, the setup script) is imported only when there is a worktree to register.
"""

from __future__ import annotations

import os

from gitst.core.errors import GitstError

__all__ = ["post_checkout"]


def post_checkout(args: list[str], cwd: str) -> int:
    """Register a hand-made ``git worktree add`` whose branch matches the template, then set it up.

    ``args`` are git's (previous HEAD, new HEAD, branch flag). Only a new worktree's first
    checkout (previous HEAD all zeros, in a linked worktree) is considered; anything else
    returns at once without running git. Never fails the checkout for gitst's own reasons:
    problems are printed as warnings and 0 is returned.
    """
    if len(args) < 3 or args[2] != "1" or args[0].strip("0") or os.environ.get("GITST_WORKTREE_ADD"):
        return 0
    from gitst.worktrees.manager import _register_hand_made, _stderr  # lazy: post-checkout runs after every checkout

    try:
        _register_hand_made(cwd)
    except GitstError as exc:
        _stderr(f"gitst: post-checkout: {exc.message}")
    except Exception as exc:  # the checkout itself succeeded: gitst's failure must not fail it (docs/parallel.md)
        _stderr(f"gitst: post-checkout: internal error ignored: {exc!r}")
    return 0
