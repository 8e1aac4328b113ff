"""What a killed command leaves in a worktree, found before it does harm.

A session killed during ``git st sync`` (a merge, a rebase) or a commit leaves

- git's ``index.lock`` in the worktree's git dir: every later ``git commit`` and ``git add``
  fails on it (``Unable to create '…/index.lock': File exists``);
- ``.merge_file_XXXXXX``: the temp files git writes at the worktree's top for a merge driver
  (``%O %A %B``); ``git add -A`` would commit them;
- gitst's own temp files (``.<name>.<random>.tmp`` beside ``state.json`` or the plan in
  ``.step/``) of a writer killed between write and rename.

:func:`find` lists them (one ``stat`` and two small directory listings); :func:`clear`
deletes them unless a live git or gitst process works in the worktree (its current
directory is inside it: the files may be that process's). The agent that takes a worktree
over (``git st worktree add``) gets them named and cleared; ``git st status`` names them.
"""

from __future__ import annotations

import os
from typing import Any

from gitst.core.jsonio import stray_temp_files
from gitst.git.worktrees import linked_gitdir
from gitst.sessions.identity import client_pid, name_and_parent
from gitst.worktrees.context import inside

__all__ = ["MERGE_TEMP_PREFIX", "Leftover", "busy", "clear", "find"]

MERGE_TEMP_PREFIX = ".merge_file_"  # git's ll-merge temp files (`.merge_file_XXXXXX`)
_GITST_DIRS = ("", ".step")  # where gitst writes inside a work tree: state.json, the plan


class Leftover:
    """One file a killed command left: ``kind`` is ``index.lock``, ``merge-temp`` or
    ``gitst-temp``; ``path`` is absolute."""

    __slots__ = ("kind", "path")

    def __init__(self, kind: str, path: str):
        self.kind, self.path = kind, path

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path}

    def __repr__(self) -> str:
        return f"Leftover({self.kind!r}, {self.path!r})"


def _git_dir(worktree: str) -> str | None:
    dot = os.path.join(worktree, ".git")
    if os.path.isdir(dot) and not os.path.islink(dot):
        return dot
    return linked_gitdir(worktree)


def find(worktree: str | os.PathLike[str]) -> list[Leftover]:
    """The leftovers in ``worktree`` (module docstring); [] when it is not a directory."""
    top = os.fspath(worktree)
    if not os.path.isdir(top):
        return []
    found: list[Leftover] = []
    git_dir = _git_dir(top)
    if git_dir is not None and os.path.isfile(os.path.join(git_dir, "index.lock")):
        found.append(Leftover("index.lock", os.path.join(git_dir, "index.lock")))
    try:
        names = sorted(os.listdir(top))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(top, name)
        if name.startswith(MERGE_TEMP_PREFIX) and os.path.isfile(path) and not os.path.islink(path):
            found.append(Leftover("merge-temp", path))
    for sub in _GITST_DIRS:
        folder = os.path.join(top, sub) if sub else top
        if sub and (os.path.islink(folder) or not os.path.isdir(folder)):
            continue
        found.extend(Leftover("gitst-temp", str(path)) for path in stray_temp_files(folder, older_than=0))
    return found


def _ancestors() -> set[int]:
    """This process and its ancestors, and in a resident worker the client it runs for and
    that client's ancestors (:func:`gitst.sessions.identity.client_pid`): never "another
    process working here"."""
    pids: set[int] = set()
    for start in (os.getpid(), client_pid()):
        pid = start or 0
        while pid > 1 and pid not in pids:
            pids.add(pid)
            info = name_and_parent(pid)
            if info is None:
                break
            pid = info[1]
    return pids


def busy(worktree: str | os.PathLike[str]) -> list[int]:
    """Pids of live git or gitst processes (``git``, ``git-*``, ``gitst``) whose current
    directory is inside ``worktree``, this command and its ancestors left out. Where
    ``/proc`` cannot be read, nothing is known to be free: [-1]."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return [-1]
    mine = _ancestors()
    top = os.path.realpath(worktree)
    working = []
    for pid in pids:
        if pid in mine:
            continue
        info = name_and_parent(pid)
        if info is None or not info[0].startswith("git"):
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue  # gone meanwhile, or not ours to look at
        if inside(cwd, top):
            working.append(pid)
    return working


def clear(worktree: str | os.PathLike[str], found: list[Leftover]) -> tuple[list[Leftover], list[int]]:
    """Delete ``found`` unless a live git or gitst process works in ``worktree``:
    (the ones deleted, the pids that kept them)."""
    if not found:
        return [], []
    working = busy(worktree)
    if working:
        return [], working
    cleared = []
    for item in found:
        try:
            os.unlink(item.path)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        cleared.append(item)
    return cleared, []
