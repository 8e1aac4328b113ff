"""What commits changed: paths between two commits, in a range, touched by a list of
commits; commits only one branch has."""

from __future__ import annotations

import os

from gitst.git.runner import encode, run, split_z, text

__all__ = ["changed_paths", "commits_only_here", "paths_in_range", "paths_touched_by"]


def changed_paths(old: str, new: str, cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """Paths that differ between two commits and still exist in ``new``."""
    out = run(["diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", old, new, "--"], cwd).stdout
    return split_z(out)


def paths_touched_by(commits: list[str], cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """Paths any of ``commits`` changed against its first parent (a root commit: all of its
    files). One ``git diff-tree --stdin`` for all the commits."""
    if not commits:
        return []
    out = run(
        ["diff-tree", "--stdin", "-r", "--root", "--no-commit-id", "--name-only", "-z", "--no-renames"],
        cwd,
        input=b"".join(encode(c) + b"\n" for c in commits),
    ).stdout
    return list(dict.fromkeys(split_z(out)))


def paths_in_range(tip: str, exclude: list[str], cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """Paths changed by the commits reachable from ``tip`` and from none of ``exclude``."""
    out = run(["log", "--format=", "--name-only", "-z", "--no-renames", tip, "--not", *exclude, "--"], cwd).stdout
    return list(dict.fromkeys(p.strip("\n") for p in split_z(out) if p.strip("\n")))


def commits_only_here(worktree: str | os.PathLike[str], branch: str | None) -> list[str]:
    """Commits reachable from the worktree's HEAD but from no other branch and no remote-tracking ref."""
    refs = text(["for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes"], worktree).splitlines()
    own = f"refs/heads/{branch}" if branch else None
    stdin = "HEAD\n" + "".join(f"^{ref}\n" for ref in refs if ref and ref != own)
    return [line for line in text(["rev-list", "--stdin"], worktree, input=stdin.encode()).splitlines() if line]
