"""The files of one plan on disk - the plan, its lock sidecar ``<plan>.lock``, the
``.gitignore`` next to it, its set-aside torn tails - and the check every plan command runs
before it opens any of them.

A cloned repository is untrusted input (docs/security.md): it can commit
``.step/st-plan.jsonl -> /outside/file``, ``.step -> /outside/dir`` or
``.step/.gitignore -> /some/secret``. :func:`check` walks each path component by component
from the top of the work tree holding the plan (:func:`gitst.core.safepaths.check`): a
symbolic link anywhere below the top, or a FIFO or device where a file must be, is refused
with exit 2 and the fix before a byte is read or written; a directory where the plan must be
is exit 4 (``cannot read plan …: it is a directory``). Outside any work tree only the plan
file and its sidecar themselves are checked.
"""

from __future__ import annotations

import os
from pathlib import Path

from gitst.core import safepaths
from gitst.core.errors import EnvironmentProblem
from gitst.git.repo import work_tree_of
from gitst.plan.location import PlanLocation
from gitst.plan.store import Tail, read_tail

__all__ = ["TailCache", "check", "gitignore_path", "read_gitignore", "read_plan", "top_of"]


def top_of(plan: str | os.PathLike[str]) -> Path | None:
    """The top of the work tree holding ``plan`` (None outside any work tree)."""
    return work_tree_of(plan)


def gitignore_path(plan: str | os.PathLike[str]) -> Path:
    """The ``.gitignore`` next to the plan, where ``git st init`` puts the sidecar's rule."""
    return Path(plan).parent / ".gitignore"


def _shown_next_to(shown_plan: str, name: str) -> str:
    return os.path.join(os.path.dirname(shown_plan), name)


def check(location: PlanLocation, *, gitignore: bool = False) -> Path | None:
    """Refuse the plan (exit 2) when it, its directory or its sidecar (and its .gitignore
    with ``gitignore``) is a symbolic link below the work tree's top, or a FIFO or device;
    exit 4 when the plan is a directory. Returns the work tree's top."""
    plan, shown, top = location.path, location.shown, location.top
    if os.path.isdir(plan) and not os.path.islink(plan):
        # Before the sidecar's name made from the plan's is looked at (`--file .` or `/` has none).
        raise _a_directory(shown)
    paths = [(plan, shown), (location.lock, location.shown_lock)]
    if gitignore:
        paths.append((gitignore_path(plan), _shown_next_to(shown, ".gitignore")))
    for path, label in paths:
        try:
            safepaths.check(path, top, shown=label)
        except IsADirectoryError:
            raise _a_directory(shown) from None
    return top


def read_plan(location: PlanLocation) -> Tail:
    """The plan as every read command sees it: :func:`check`, then the O(tail) read."""
    check(location)
    return read_tail(location.path)


def _a_directory(shown: str) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"cannot read plan {shown}: it is a directory",
        fix="pass --file with the path of a plan file, or move the directory out of the way",
    )


def read_gitignore(location: PlanLocation) -> bytes:
    """The content of the plan's ``.gitignore`` (empty when there is none), read without
    following a link (a linked one is refused, exit 2, never copied into the repository)."""
    path = gitignore_path(location.full)
    return safepaths.read_bytes(path, location.top, shown=_shown_next_to(location.shown, ".gitignore")) or b""


class TailCache:
    """:func:`read_plan`, read again only when the file changed since the last read (its inode,
    size or mtime: a plan is appended to, or replaced by a rename). For the long-lived readers —
    the MCP server, the board —: an unchanged 10,000-item plan costs a ``stat``, not a rebuild
    from its checkpoint. A plan that cannot be stat'ed is read every time (its own error)."""

    def __init__(self) -> None:
        self._tails: dict[Path, tuple[tuple[int, int, int], Tail]] = {}

    def read(self, location: PlanLocation) -> Tail:
        try:
            st = os.stat(location.full)
        except OSError:
            return read_plan(location)
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._tails.get(location.full)
        if cached is not None and cached[0] == key:
            return cached[1]
        tail = read_plan(location)
        self._tails[location.full] = (key, tail)
        return tail
