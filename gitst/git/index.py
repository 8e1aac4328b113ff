"""The index and the files git tracks: what is staged, every tracked path, untracked files.

:func:`staged_paths` is on the hooks' fast path: this module imports only the runner.
"""

from __future__ import annotations

import os

from gitst.git.files import checkout_between
from gitst.git.runner import decode, run, split_z

__all__ = [
    "IndexEntry",
    "clear_cache",
    "is_tracked",
    "staged_entries",
    "staged_paths",
    "tracked_below",
    "tracked_files",
    "untrack",
    "untracked_matching",
]


class IndexEntry:
    """One index entry (``git ls-files --stage``); ``path`` is relative to the top."""

    __slots__ = ("mode", "oid", "path", "stage")

    def __init__(self, mode: str, oid: str, stage: int, path: str):
        self.mode, self.oid, self.stage, self.path = mode, oid, stage, path

    def __repr__(self) -> str:
        return f"IndexEntry({self.mode} {self.oid} {self.stage} {self.path!r})"

    @property
    def is_regular_file(self) -> bool:
        return self.mode in ("100644", "100755")


def staged_paths(cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """Paths added, copied, modified or type-changed in the index (deletions left out).

    Uses the index git hands the hook (``GIT_INDEX_FILE`` is inherited, so ``git commit
    FILE`` and ``git commit -a`` are seen exactly as git will commit them). Before the
    first commit git compares with the empty tree, so everything staged is listed.
    """
    return split_z(run(["diff", "--cached", "--name-only", "-z", "--no-renames", "--diff-filter=d"], cwd).stdout)


def staged_entries(cwd: str | os.PathLike[str] | None = None, paths: list[str] | None = None) -> list[IndexEntry]:
    """The index entries, optionally limited to pathspecs relative to ``cwd`` (taken
    literally: a file named ``a[1].json`` means that file, not a glob)."""
    args = ["--literal-pathspecs", "ls-files", "--stage", "-z", "--full-name", *(["--", *paths] if paths else [])]
    entries = []
    for record in run(args, cwd).stdout.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            mode, oid, stage = decode(meta).split(" ")
            entries.append(IndexEntry(mode, oid, int(stage), decode(path)))
    return entries


def tracked_files(top: str | os.PathLike[str]) -> list[str]:
    """Every path in the index (relative to the top), deduplicated across merge stages."""
    return list(dict.fromkeys(entry.path for entry in staged_entries(top)))


_TRACKED: dict[str, list[str]] = {}


def tracked_below(directory: str | os.PathLike[str]) -> list[str]:
    """The paths git tracks below ``directory``, relative to it; empty when ``directory`` does
    not exist or is not inside a work tree. One ``git ls-files`` per directory per process, none
    for a directory below one listed already (:func:`gitst.git.repo.clear_cache` forgets the
    answers)."""
    where = os.path.abspath(directory)
    if where not in _TRACKED:
        if not os.path.isdir(where):
            return []
        above = next((top for top in _TRACKED if where.startswith(top.rstrip(os.sep) + os.sep)), None)
        if above is not None and not checkout_between(above, where):  # answered from that listing
            folder = os.path.relpath(where, above).replace(os.sep, "/") + "/"
            return [path[len(folder) :] for path in _TRACKED[above] if path.startswith(folder)]
        proc = run(["ls-files", "-z", "--", "."], where, check=False)
        _TRACKED[where] = split_z(proc.stdout) if proc.ok else []
    return _TRACKED[where]


def clear_cache() -> None:
    """Forget what :func:`tracked_below` learnt."""
    _TRACKED.clear()


def is_tracked(path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> bool:
    """True when ``path`` (or a file below it) is in the index."""
    return bool(staged_entries(cwd, [os.fspath(path)]))


def untrack(path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> None:
    """``git rm --cached`` one path: git stops tracking it, the file on disk stays."""
    run(["rm", "--cached", "--quiet", "--ignore-unmatch", "--", os.fspath(path)], cwd)


def untracked_matching(patterns: list[str], cwd: str | os.PathLike[str]) -> list[str]:
    """Untracked files (ignored ones included) matching glob ``patterns``, relative to ``cwd``."""
    if not patterns:
        return []
    specs = [f":(glob){pattern}" for pattern in patterns]
    return sorted(set(split_z(run(["ls-files", "-z", "--others", "--", *specs], cwd).stdout)))
