"""Where a plan lives: the one value a plan command resolves at its edge and passes down.

A command names its plan with ``--file`` or not at all. :meth:`PlanLocation.of` (the command
line) or :meth:`PlanLocation.at` (a caller that already holds the plan's path: a hook, a test)
turns that into everything the inner code asks about the plan's place: the plan file, its lock
sidecar ``<plan>.lock``, how both are shown in messages, both as absolute paths, the top of the
work tree holding them (from where their components are checked, :mod:`gitst.plan.files`) and
the directory git is asked from. :mod:`gitst.plan.files`, :mod:`gitst.plan.sidecar`, the store
and the engine take the location and trust it: none of them derives the sidecar's name, makes
a path absolute or asks where the work tree is again.

On the plan commands' fast path (docs/architecture.md, "Start-up"): ``os``, ``pathlib`` and
:mod:`gitst.git.repo` only, all imported there already.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from gitst.core.values import Value
from gitst.git.repo import work_tree_of, work_tree_top

__all__ = ["DEFAULT_PLAN", "PlanLocation", "Target", "shown_path", "torn_glob"]

DEFAULT_PLAN = ".step/st-plan.jsonl"


class PlanLocation(Value):
    """A plan file, resolved once: where it is, its sidecar, how to show them, its work tree.

    ``path`` and ``lock`` are as the command named them (relative to the current directory,
    as ``shown``); ``full`` and ``full_lock`` are the same files as absolute paths; ``top`` is
    the top of the work tree holding the plan (None outside any work tree); ``git_dir`` is the
    deepest directory of the plan's that exists (the plan's own directory, or its nearest
    ancestor before ``git st init`` makes it): git is asked about the plan from there.
    """

    __slots__ = ("full", "full_lock", "git_dir", "lock", "path", "shown", "shown_lock", "top")

    def __init__(self, path: Path, shown: str, top: Path | None) -> None:
        self.path = path
        self.shown = shown
        self.top = top
        # (by name, not Path.with_name: a path with no file name - `.`, `/` - is refused as a
        # directory by the check that follows, not by a ValueError here)
        self.lock = Path(os.fspath(path) + ".lock")
        self.shown_lock = shown + ".lock"
        full = os.path.abspath(path)
        self.full = Path(full)
        self.full_lock = Path(full + ".lock")
        self.git_dir = Path(_existing_dir(os.path.dirname(full)))

    @classmethod
    def of(cls, file: str | os.PathLike[str] | None) -> PlanLocation:
        """The plan a command works on, found the way git finds the repository.

        ``--file`` is taken relative to the current directory and shown normalized as the
        original st shows it (``./x`` is ``x``). Without it, the plan is
        ``.step/st-plan.jsonl`` at the top of the current work tree (main or linked), from
        any subdirectory, shown relative to the current directory (``../.step/…``, like
        the paths git prints); outside a git work tree, in the current directory.
        """
        if file:
            shown = shown_path(file)
            return cls.at(Path(shown), shown)
        top = work_tree_top()
        if top is None:
            return cls(Path(DEFAULT_PLAN), DEFAULT_PLAN, None)
        shown = os.path.relpath(os.path.join(top, DEFAULT_PLAN))
        return cls(Path(shown), shown, Path(top))

    @classmethod
    def at(cls, path: Path, shown: str) -> PlanLocation:
        """The location of a plan whose path is known already, shown as ``shown``."""
        return cls(path, shown, work_tree_of(path))


# The name the engine and its callers have always used for a plan a command works on.
Target = PlanLocation


def _existing_dir(directory: str) -> str:
    """``directory`` (absolute) when it is one, else its nearest ancestor that is."""
    current = directory
    while not os.path.isdir(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path named on the command line as the original st shows it in messages: normalized
    the way ``pathlib`` prints it (``./x`` is ``x``, ``a//b`` is ``a/b``, ``..`` kept)."""
    return str(PurePath(os.fspath(path)))


def torn_glob(plan: str | os.PathLike[str]) -> str:
    """The names a plan's set-aside torn tails have: ``<plan>.torn-*``."""
    return Path(plan).name + ".torn-*"
