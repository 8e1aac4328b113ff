"""What commits changed: paths between two commits, in a range, touched by a list of
commits; commits only one branch has."""

from __future__ import annotations

import os

from gitst.git.refs import all_refs
from gitst.git.runner import encode, run, split_z, text

__all__ = [
    "ahead_behind",
    "changed_paths",
    "commits_only_here",
    "is_ancestor",
    "merge_base",
    "paths_in_range",
    "paths_touched_by",
]

# From this many branches on, pygit2 (import included) counts ahead/behind faster than one
# `git rev-list --left-right --count` per branch: benchmarks/bench_git.py measured 1.00x at
# 20 branches (break-even), 0.78x at 40, and 7x slower at 2. (git 2.41's for-each-ref
# %(ahead-behind) would be one call, but gitst supports older git.)
PYGIT2_MIN_BRANCHES = 24


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


def commits_only_here(
    worktree: str | os.PathLike[str],
    branch: str | None,
    *,
    refs: dict[str, str] | None = None,
    head: str | None = None,
) -> list[str]:
    """Commits reachable from the worktree's HEAD but from no other branch and no remote-tracking ref.
    ``refs``: every ref as :func:`gitst.git.refs.all_refs` lists them, read a moment ago by the
    caller; ``head``: the worktree's HEAD as the caller read it — when another branch or
    remote-tracking ref points at it, nothing is found only here and git is not asked."""
    own = f"refs/heads/{branch}" if branch else None
    listed = all_refs(worktree) if refs is None else refs
    others = [ref for ref in listed if ref.startswith(("refs/heads/", "refs/remotes/")) and ref != own]
    if head and any(listed[ref] == head for ref in others):
        return []
    stdin = "HEAD\n" + "".join(f"^{ref}\n" for ref in others)
    return [line for line in text(["rev-list", "--stdin"], worktree, input=stdin.encode()).splitlines() if line]


def is_ancestor(commit: str, of: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """True when ``commit`` is reachable from ``of`` (``git merge-base --is-ancestor``): merged into it."""
    return run(["merge-base", "--is-ancestor", "--end-of-options", commit, of], cwd, check=False).returncode == 0


def merge_base(one: str, other: str, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """A best common ancestor of two commits (``git merge-base``), None when they share no
    history. One question answers two: it is ``one`` exactly when ``one`` is merged into
    ``other``, ``other`` when ``other`` is merged into ``one``."""
    proc = run(["merge-base", "--end-of-options", one, other], cwd, check=False)
    return proc.text().strip() or None if proc.returncode == 0 else None


def ahead_behind(
    cwd: str | os.PathLike[str], base: str, tips: list[str], *, use_pygit2: bool | None = None
) -> list[tuple[int, int] | None]:
    """For each of ``tips`` (commits or names), ``(ahead, behind)``: commits it has that
    ``base`` has not, and the other way round; None when a name resolves to no commit.
    ``use_pygit2`` forces one way (the tests compare them)."""
    if use_pygit2 is None:
        use_pygit2 = len(tips) >= PYGIT2_MIN_BRANCHES
    if use_pygit2:
        return _ahead_behind_pygit2(cwd, base, tips)
    out: list[tuple[int, int] | None] = []
    for tip in tips:
        proc = run(["rev-list", "--left-right", "--count", "--end-of-options", f"{tip}...{base}"], cwd, check=False)
        counts = proc.text().split()
        out.append((int(counts[0]), int(counts[1])) if proc.returncode == 0 and len(counts) == 2 else None)
    return out


def _ahead_behind_pygit2(cwd: str | os.PathLike[str], base: str, tips: list[str]) -> list[tuple[int, int] | None]:
    import pygit2  # lazy: pygit2 is heavy; only the ahead/behind speed path

    repository = pygit2.Repository(os.fspath(cwd))

    def commit_of(name: str) -> pygit2.Oid | None:
        try:
            return repository.revparse_single(name).peel(pygit2.Commit).id
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None

    base_id = commit_of(base)
    out: list[tuple[int, int] | None] = []
    for tip in tips:
        tip_id = commit_of(tip)
        if base_id is None or tip_id is None:
            out.append(None)
        else:
            ahead, behind = repository.ahead_behind(tip_id, base_id)
            out.append((ahead, behind))
    return out
