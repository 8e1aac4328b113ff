"""The plan merge driver's names, and whether this clone has it: what `git st hooks install`
sets up, what `git st sync` passes to the merges it runs, and what every mutating command
checks (``.gitattributes`` asks for the driver, this clone does not define it: git then
merges plans as text, silently). Cheap to import: the core and the git layer.
"""

from __future__ import annotations

import os

from gitst.core.errors import GitstError
from gitst.core.safepaths import open_fd
from gitst.git import attributes, config
from gitst.git.repo import work_tree_top
from gitst.git.runner import GitError

__all__ = [
    "ATTRIBUTES_LINE",
    "DRIVER",
    "DRIVER_COMMAND",
    "DRIVER_LABEL",
    "HOST_VIEW",
    "PROBE_PLAN",
    "driver_overrides",
    "missing_driver_warning",
]

DRIVER = "gitst-plan"
DRIVER_LABEL = "gitst: append-only st plan merge"
DRIVER_COMMAND = "git-st merge-driver %O %A %B %P"
ATTRIBUTES_LINE = f"**/.step/*.jsonl merge={DRIVER}"
PROBE_PLAN = ".step/st-plan.jsonl"  # a path the attributes line must cover

# A git host runs no custom driver: it merges plans as text. `git merge-file` is that text
# merge, so `-c merge.gitst-plan.driver=<this>` shows a merge as a host would do it, even in
# a clone that has the real driver configured.
HOST_VIEW = {f"merge.{DRIVER}.driver": "git merge-file --quiet %A %O %B"}


def driver_overrides(published: str | None = None) -> dict[str, str]:
    """``-c`` settings that make one git command merge plans with the driver, configured or not;
    ``published``: the ref of the published branch (whose plan ids never change)."""
    command = DRIVER_COMMAND
    if published:
        import shlex  # lazy: pinned out of `git st add`, which imports this module

        command = command.replace(" %O", f" --published {shlex.quote(published)} %O", 1)
    return {f"merge.{DRIVER}.name": DRIVER_LABEL, f"merge.{DRIVER}.driver": command}


def missing_driver_warning(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The one-line warning (with its fix) when ``.gitattributes`` gives plan files
    ``merge=gitst-plan`` but this clone defines no such driver; None otherwise (or outside a
    work tree). The configured driver is asked first: a command that caches its config reads
    (:func:`gitst.git.config.cache_reads`) answers it from its own listing, and a clone that has
    the driver needs no ``git check-attr`` at all."""
    if not _committed_attributes_name_driver(work_tree_top(cwd)):
        return None  # the common case, without a git process: nothing in the repository asks for it
    if config.get(f"merge.{DRIVER}.driver", cwd):
        return None  # configured: whatever the attributes ask for, git can run it
    try:
        wanted = attributes.check_attr([PROBE_PLAN], cwd, attribute="merge").get(PROBE_PLAN)
    except GitError:
        return None
    if wanted != DRIVER:
        return None
    return (
        f"gitst: warning: .gitattributes merges plan files with merge={DRIVER}, but this clone has no such "
        f"driver configured, so git merges them as text (conflicts, or a plan `git st doctor` rejects)\n"
        f"  fix: git st hooks install   (or: git config merge.{DRIVER}.driver '{DRIVER_COMMAND}')"
    )


def _committed_attributes_name_driver(top: str | None) -> bool:
    """Whether a ``.gitattributes`` the repository holds on the plan's way (the top's, or
    ``.step/``'s) names the driver at all: a cheap filter before asking git. A file that cannot
    be read plainly (a link, a FIFO: a clone's) is left to git, which reads attributes itself."""
    if top is None:
        return False
    for where in (os.path.join(top, ".gitattributes"), os.path.join(top, ".step", ".gitattributes")):
        try:
            fd = open_fd(where, os.O_RDONLY, top=top)
        except FileNotFoundError:
            continue
        except (GitstError, OSError):
            return True
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(_ATTRIBUTES_LIMIT + 1)
        if len(data) > _ATTRIBUTES_LIMIT or DRIVER.encode() in data:
            return True  # (a file bigger than any real one: git decides, it has its own limit)
    return False


_ATTRIBUTES_LIMIT = 1 << 20  # bytes of a .gitattributes read for the filter
