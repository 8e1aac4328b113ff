"""Linked worktrees as git sees them: list, add, lock, remove, prune, and what is
uncommitted in one (``git status``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst.core.values import value_class
from gitst.git import config
from gitst.git.files import linked_gitdir
from gitst.git.runner import decode, run

__all__ = [
    "GitWorktree",
    "HalfMade",
    "Stamp",
    "add_worktree",
    "admin_stamp",
    "half_made",
    "linked_gitdir",
    "list_worktrees",
    "lock_worktree",
    "not_in_checkout",
    "prune_worktrees",
    "remove_worktree",
    "uncommitted_changes",
    "unlock_worktree",
]


@value_class
class GitWorktree:
    """One record of ``git worktree list --porcelain -z``."""

    path: str
    head: str | None = None
    branch: str | None = None  # short name (``st/issue-7``), None when detached
    bare: bool = False
    detached: bool = False
    locked: str | None = None  # the reason ("" when locked without one), None when unlocked
    prunable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "head": self.head,
            "branch": self.branch,
            "detached": self.detached,
            "locked": self.locked,
            "prunable": self.prunable,
        }


def list_worktrees(cwd: str | os.PathLike[str] | None = None) -> list[GitWorktree]:
    """Every worktree git knows, the main one first."""
    raw = decode(run(["worktree", "list", "--porcelain", "-z"], cwd).stdout)
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
            current.branch = value[len("refs/heads/") :] if value.startswith("refs/heads/") else value
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


Stamp = tuple[tuple[str, tuple[int, int, int] | None], ...]


def admin_stamp(common_dir: str | os.PathLike[str]) -> Stamp:
    """What changes whenever git adds, removes, moves, locks, unlocks or switches the branch of
    a worktree of ``common_dir``, read without git: the main ``HEAD`` and each linked
    worktree's ``HEAD``, ``gitdir`` and ``locked`` (inode, size, mtime; git replaces each by a
    rename, so a new write is a new inode). Equal stamps taken before and after a
    :func:`list_worktrees`: that listing still holds every path, branch and lock git would
    list now (the commits checked out aside)."""
    root = os.fspath(common_dir)
    try:
        linked = sorted(os.listdir(os.path.join(root, "worktrees")))
    except OSError:
        linked = []  # no linked worktree yet
    names = ["HEAD"] + [os.path.join("worktrees", n, leaf) for n in linked for leaf in ("HEAD", "gitdir", "locked")]
    stamp: list[tuple[str, tuple[int, int, int] | None]] = []
    for name in names:
        try:
            st = os.stat(os.path.join(root, name))
            stamp.append((name, (st.st_ino, st.st_size, st.st_mtime_ns)))
        except OSError:
            stamp.append((name, None))
    return tuple(stamp)


def add_worktree(
    path: Path,
    *,
    branch: str,
    base: str | None,
    create_branch: bool,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """``git worktree add [-b BRANCH] PATH [BASE|BRANCH]``."""
    args = ["worktree", "add", "--quiet"]
    if create_branch:
        args += ["-b", branch, "--", str(path)] + ([base] if base else [])
    else:
        args += ["--", str(path), branch]
    run(args, cwd, env=env)


def not_in_checkout(worktree: str | os.PathLike[str], relpath: str) -> bool:
    """True when ``relpath`` is surely not in the commit that ``git worktree add`` checked out
    into ``worktree`` a moment ago (the caller knows it did): nothing is there on disk, and no
    sparse checkout (``core.sparseCheckout``) leaves a file of the commit out of the work tree.
    False means: ask git."""
    if os.path.lexists(os.path.join(os.fspath(worktree), relpath)):
        return False
    return config.get("core.sparsecheckout", worktree, type="bool") != "true"


def lock_worktree(
    path: str | os.PathLike[str], reason: str, cwd: str | os.PathLike[str] | None = None, *, fresh: bool = False
) -> None:
    """(Re)lock ``path`` with ``reason`` (an existing lock is replaced; ``fresh``: git made the
    worktree a moment ago in this process and it holds no lock, so none is taken off first)."""
    if not fresh:
        run(["worktree", "unlock", str(path)], cwd, check=False)
    run(["worktree", "lock", "--reason", reason, str(path)], cwd)


def unlock_worktree(path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> None:
    run(["worktree", "unlock", str(path)], cwd, check=False)


def remove_worktree(
    path: str | os.PathLike[str], *, force: bool, locked: bool = False, cwd: str | os.PathLike[str] | None = None
) -> None:
    """``git worktree remove [--force [--force]] PATH``; ``locked`` (with ``force``): a locked
    one too (git's second ``--force``), no ``worktree unlock`` first."""
    forced = ["--force", "--force"] if force and locked else ["--force"] if force else []
    run(["worktree", "remove", *forced, str(path)], cwd)


def prune_worktrees(cwd: str | os.PathLike[str] | None = None, *, dry_run: bool = False) -> list[str]:
    """``git worktree prune --verbose`` (with ``--dry-run``); git's lines."""
    proc = run(["worktree", "prune", "--verbose", *(["--dry-run"] if dry_run else [])], cwd)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    return [line for line in text.splitlines() if line.strip()]


@value_class(frozen=True)
class HalfMade:
    """A linked worktree ``git worktree add`` began and never finished: ``admin`` is its
    directory under ``<common dir>/worktrees/``, ``path`` the worktree (None when git's
    ``gitdir`` file cannot be read), ``why`` what gives it away."""

    admin: str
    path: str | None
    why: str


_NULL_OID = frozenset("0")


def _head_usable(text: str) -> bool:
    """A worktree HEAD every git command can read: a symbolic ref, or an object id that is
    not the null id ``git worktree add`` writes before it points HEAD at the branch."""
    text = text.strip()
    if text.startswith("ref: refs/"):
        return True
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text) and set(text) != _NULL_OID


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return decode(handle.read(4096))
    except OSError:
        return None


def half_made(common_dir: str | os.PathLike[str]) -> list[HalfMade]:
    """The linked worktrees of ``common_dir`` that an interrupted ``git worktree add`` left,
    found without running git (one directory listing, two small reads per worktree):
    ``locked`` still says ``initializing`` (git removes it when its checkout is done) or
    ``HEAD`` is unreadable or the null id — which makes every ``git fetch`` of the clone
    fail with ``fatal: bad object worktrees/<name>/HEAD``. An add running right now looks
    the same: callers decide whether one is (gitst's operation lock tells)."""
    admin_root = os.path.join(os.fspath(common_dir), "worktrees")
    try:
        names = sorted(os.listdir(admin_root))
    except OSError:
        return []
    found = []
    for name in names:
        admin = os.path.join(admin_root, name)
        head = _read_small(os.path.join(admin, "HEAD"))
        locked = _read_small(os.path.join(admin, "locked"))
        if head is not None and _head_usable(head) and (locked or "").strip() != "initializing":
            continue
        if head is None and not os.path.isdir(admin):
            continue
        why = "its checkout never finished" if head is not None and _head_usable(head) else "its HEAD is not set"
        gitdir = _read_small(os.path.join(admin, "gitdir"))
        path = os.path.dirname(os.path.normpath(gitdir.strip())) if gitdir and gitdir.strip() else None
        found.append(HalfMade(admin, path, why))
    return found


def uncommitted_changes(worktree: str | os.PathLike[str]) -> list[str]:
    """``git status --porcelain`` lines: staged, unstaged and untracked (not ignored) files."""
    raw = run(["status", "--porcelain=v1", "-z", "--untracked-files=all"], worktree).stdout
    entries = decode(raw).split("\0")
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


@value_class(frozen=True)
class WorkTreeState:
    """Where a work tree stands: its branch (None when detached), the commit HEAD names
    (None before the first commit) and how many files ``git status`` lists."""

    branch: str | None
    head: str | None
    dirty: int  # staged, unstaged and untracked (not ignored) files

    def to_dict(self) -> dict[str, Any]:
        return {"branch": self.branch, "head": self.head, "dirty": self.dirty}


def work_tree_state(worktree: str | os.PathLike[str]) -> WorkTreeState:
    """Branch, HEAD and the dirty count in one ``git status --porcelain=v2 --branch``."""
    raw = run(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"], worktree).stdout
    branch = head = None
    dirty, skip = 0, False
    for entry in decode(raw).split("\0"):
        if skip:
            skip = False  # a rename's source path
            continue
        if entry.startswith("# branch.oid "):
            oid = entry[len("# branch.oid ") :]
            head = None if oid == "(initial)" else oid
        elif entry.startswith("# branch.head "):
            name = entry[len("# branch.head ") :]
            branch = None if name == "(detached)" else name
        elif entry[:2] in ("1 ", "2 ", "u ", "? "):
            dirty += 1
            skip = entry.startswith("2 ")
    return WorkTreeState(branch, head, dirty)
