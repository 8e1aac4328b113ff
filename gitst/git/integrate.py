"""Bringing another branch into the current one: merge, rebase, abort, push the result.

Each takes ``overrides`` (``-c KEY=VALUE`` for that one command: the plan merge driver, which
`git st sync` passes whether or not the clone configured it).
"""

from __future__ import annotations

import os

from gitst.git.runner import Result, run

__all__ = ["abort", "merge", "rebase"]


def _flags(overrides: dict[str, str] | None) -> list[str]:
    return [arg for key, value in (overrides or {}).items() for arg in ("-c", f"{key}={value}")]


def merge(
    rev: str, message: str, cwd: str | os.PathLike[str] | None = None, *, overrides: dict[str, str] | None = None
) -> Result:
    """``git merge --no-edit -m MESSAGE REV`` (hooks run, as for any merge); not raised on failure."""
    return run([*_flags(overrides), "merge", "--no-edit", "--no-ff", "-m", message, rev], cwd, check=False)


def rebase(rev: str, cwd: str | os.PathLike[str] | None = None, *, overrides: dict[str, str] | None = None) -> Result:
    """``git rebase REV``; not raised on failure."""
    return run([*_flags(overrides), "rebase", "--no-autostash", rev], cwd, check=False)


def abort(kind: str, cwd: str | os.PathLike[str] | None = None) -> None:
    """``git merge --abort`` / ``git rebase --abort`` after a failed one: back to where it began."""
    run([kind, "--abort"], cwd, check=False)
