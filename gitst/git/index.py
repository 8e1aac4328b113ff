"""Index operations the plan engine needs (kept apart from the read-only core)."""

from __future__ import annotations

import os

from gitst.git.core import run_git


def untrack(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> None:
    """``git rm --cached`` one path: git stops tracking it, the file on disk stays."""
    run_git(["rm", "--cached", "--quiet", "--ignore-unmatch", "--", str(path)], cwd)
