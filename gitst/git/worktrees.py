"""Git operations for linked worktrees: list, add, lock, remove, prune, and the questions
``git st worktree`` asks before removing one (dirty? commits nowhere else?).

Every call is a ``git`` subprocess with an argument list (never a shell).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from gitst.git.core import git_text, run_git


@dataclass
class GitWorktree:
    """One record of ``git worktree list --porcelain -z``."""

    path: str
    head: str | None = None
    branch: str | None = None  # short name (``st/issue-7``), None when detached
    bare: bool = False
    detached: bool = False
    locked: str | None = None  # the reason ("" when locked without one), None when unlocked
    prunable: str | None = None

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "head": self.head,
            "branch": self.branch,
            "detached": self.detached,
            "locked": self.locked,
            "prunable": self.prunable,
        }


def list_worktrees(cwd: str | os.PathLike | None = None) -> list[GitWorktree]:
    """Every worktree git knows, the main one first."""
    raw = run_git(["worktree", "list", "--porcelain", "-z"], cwd).stdout.decode("utf-8", "surrogateescape")
    result: list[GitWorktree] = []
    current: GitWorktree | None = None
    for field in raw.split("\0"):
        if not field:
            if current is not None:
                result.append(current)
                current = None
            continue
        key, _, value = field.partition(" ")
        if key == "worktree":
            if current is not None:
                result.append(current)
            current = GitWorktree(path=value)
        elif current is None:
            continue
        elif key == "HEAD":
            current.head = value
        elif key == "branch":
            current.branch = value[len("refs/heads/"):] if value.startswith("refs/heads/") else value
        elif key == "bare":
            current.bare = True
        elif key == "detached":
            current.detached = True
        elif key == "locked":
            current.locked = value
        elif key == "prunable":
            current.prunable = value
    if current is not None:
        result.append(current)
    return result


def add_worktree(path: Path, *, branch: str, base: str | None, create_branch: bool,
                 cwd: str | os.PathLike | None = None, env: dict | None = None) -> None:
    """``git worktree add [-b BRANCH] PATH [BASE|BRANCH]``."""
    args = ["worktree", "add", "--quiet"]
    if create_branch:
        args += ["-b", branch, "--", str(path)] + ([base] if base else [])
    else:
        args += ["--", str(path), branch]
    run_git(args, cwd, env=env)


def lock_worktree(path: str | os.PathLike, reason: str, cwd: str | os.PathLike | None = None) -> None:
    """(Re)lock ``path`` with ``reason`` (an existing lock is replaced)."""
    run_git(["worktree", "unlock", str(path)], cwd, check=False)
    run_git(["worktree", "lock", "--reason", reason, str(path)], cwd)


def unlock_worktree(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> None:
    run_git(["worktree", "unlock", str(path)], cwd, check=False)


def remove_worktree(path: str | os.PathLike, *, force: bool, cwd: str | os.PathLike | None = None) -> None:
    run_git(["worktree", "remove", *(["--force"] if force else []), str(path)], cwd)


def prune_worktrees(cwd: str | os.PathLike | None = None, *, dry_run: bool = False) -> list[str]:
    """``git worktree prune --verbose`` (with ``--dry-run``); git's lines."""
    proc = run_git(["worktree", "prune", "--verbose", *(["--dry-run"] if dry_run else [])], cwd)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    return [line for line in text.splitlines() if line.strip()]


def branch_exists(branch: str, cwd: str | os.PathLike | None = None) -> bool:
    return run_git(["show-ref", "--verify", "--quiet", f"refs/heads/{branch}"], cwd, check=False).returncode == 0


def valid_branch_name(branch: str, cwd: str | os.PathLike | None = None) -> bool:
    if not branch or branch.startswith("-"):
        return False
    return run_git(["check-ref-format", "--branch", branch], cwd, check=False).returncode == 0


def resolve_commit(rev: str, cwd: str | os.PathLike | None = None) -> str | None:
    """The commit id ``rev`` names, or None."""
    if not rev or rev.startswith("-"):
        return None
    proc = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode().strip() or None


def current_branch(cwd: str | os.PathLike | None = None) -> str | None:
    """The short name of the checked-out branch (None when detached)."""
    proc = run_git(["symbolic-ref", "-q", "--short", "HEAD"], cwd, check=False)
    return proc.stdout.decode("utf-8", "surrogateescape").strip() or None


def uncommitted_changes(worktree: str | os.PathLike) -> list[str]:
    """``git status --porcelain`` lines: staged, unstaged and untracked (not ignored) files."""
    raw = run_git(["status", "--porcelain=v1", "-z", "--untracked-files=all"], worktree).stdout
    entries = raw.decode("utf-8", "surrogateescape").split("\0")
    lines, skip = [], False
    for entry in entries:
        if skip:
            skip = False
            continue
        if not entry:
            continue
        lines.append(entry)
        if entry[:1] in ("R", "C"):
            skip = True  # the rename's source path follows
    return lines


def commits_only_here(worktree: str | os.PathLike, branch: str | None) -> list[str]:
    """Commits reachable from the worktree's HEAD but from no other branch and no remote-tracking ref."""
    refs = git_text(["for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes"], worktree).splitlines()
    own = f"refs/heads/{branch}" if branch else None
    stdin = "HEAD\n" + "".join(f"^{ref}\n" for ref in refs if ref and ref != own)
    text = git_text(["rev-list", "--stdin"], worktree, input=stdin.encode())
    return [line for line in text.splitlines() if line]


def untracked_matching(patterns: Sequence[str], cwd: str | os.PathLike) -> list[str]:
    """Untracked files (ignored ones included) matching glob ``patterns``, relative to ``cwd``."""
    if not patterns:
        return []
    specs = [f":(glob){pattern}" for pattern in patterns]
    raw = run_git(["ls-files", "-z", "--others", "--", *specs], cwd).stdout
    return sorted({p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p})


def show_blob(rev: str, path: str, cwd: str | os.PathLike) -> bytes | None:
    """The content of ``REV:PATH`` (None when there is no such file)."""
    proc = run_git(["cat-file", "blob", f"{rev}:{path}"], cwd, check=False)
    return proc.stdout if proc.returncode == 0 else None


def config_get_all(key: str, cwd: str | os.PathLike | None = None) -> list[str]:
    """Every value of a multi-valued ``git config`` key (empty when unset)."""
    proc = run_git(["config", "--get-all", key], cwd, check=False)
    if proc.returncode != 0:
        return []
    return [v for v in proc.stdout.decode("utf-8", "surrogateescape").split("\n") if v]


def config_add_local(key: str, value: str, cwd: str | os.PathLike | None = None) -> None:
    run_git(["config", "--local", "--add", key, value], cwd)


def config_unset_local(key: str, value: str, cwd: str | os.PathLike | None = None) -> None:
    """Remove ``value`` from the local multi-valued ``key`` (no error when absent)."""
    import re

    run_git(["config", "--local", "--unset-all", key, "^" + re.escape(value) + "$"], cwd, check=False)
