"""Which of a set of paths gitst has anything to say about — decided cheaply.

This is the pre-commit hook's fast path: it runs for every commit with something staged,
so it imports only the format registry's path rules, and asks git nothing in the common
case: when :class:`gitst.git.files.GitFiles` proves from git's own files that no attribute
file mentions ``st-kind`` and no config file ``st.stateDir``. Otherwise it makes at most
two small git calls (one ``check-attr`` for all the paths, one config key). Only when it
finds something relevant does the hook import the checkers.

A path is relevant when it is

- of a known kind, decided as the validator decides (:func:`gitst.validate.detect.resolve_kind`):
  its ``st-kind`` attribute (``-st-kind`` turns checking off; a value naming no kind is
  relevant too, validation reports it), else the built-in path patterns — content is
  never sniffed here, that would mean reading every staged blob;
- the lock sidecar of a plan (``<plan>.lock``, where ``<plan>`` is of kind ``st-plan``);
- inside the state dir, which is runtime-only and never committed;
- a temp file git writes for a merge driver (``.merge_file_XXXXXX``), which a killed merge
  leaves behind and ``git add -A`` would commit.
"""

from __future__ import annotations

import os

from gitst.git.attributes import check_attr
from gitst.git.files import GitFiles
from gitst.git.repo import require_repo
from gitst.settings import SETTINGS, optional_str_setting
from gitst.validate.detect import resolve_kind

PLAN_KIND = "st-plan"
ATTRIBUTE = "st-kind"
SIDECAR_SUFFIX = ".lock"
MERGE_TEMP_PREFIX = ".merge_file_"  # git's ll-merge temp files (gitst.worktrees.leftovers)


class Selection:
    """The relevant part of a list of paths (all relative to the work tree's top)."""

    def __init__(self) -> None:
        self.kinds: dict[str, str | None] = {}  # path -> kind (None: its st-kind is unusable)
        self.sidecars: dict[str, str] = {}  # sidecar path -> its plan's path
        self.state_files: list[str] = []
        self.state_dir: str | None = None  # absolute, when it was needed
        self.merge_temps: list[str] = []

    @property
    def relevant(self) -> bool:
        return bool(self.kinds or self.sidecars or self.state_files or self.merge_temps)

    @property
    def plans(self) -> list[str]:
        return [path for path, kind in self.kinds.items() if kind == PLAN_KIND]


def select(paths: list[str], cwd: str | None = None, *, cached: bool, top: bool = False) -> Selection:
    """Classify ``paths``; ``cached`` takes ``.gitattributes`` from the index (commits).
    ``top``: ``cwd`` is the top of the work tree, where git's own files can answer first."""
    selection = Selection()
    if not paths:
        return selection
    files = GitFiles(cwd) if cached and top and cwd is not None else None
    attrs = _attributes(paths, cwd, files, cached=cached)
    for path in paths:
        _classify(selection, path, attrs)
    if _may_hold_state_files(paths, cwd, files):
        _find_state_files(selection, paths, cwd)
    return selection


def _attributes(paths: list[str], cwd: str | None, files: GitFiles | None, *, cached: bool) -> dict[str, str]:
    """The ``st-kind`` attribute of ``paths`` and of the plans their ``.lock`` names; git is
    not asked when ``files`` proves that no attribute file mentions it."""
    bases = [p[: -len(SIDECAR_SUFFIX)] for p in paths if p.endswith(SIDECAR_SUFFIX)]
    if files is None or files.attribute_may_apply(ATTRIBUTE, paths + bases):
        return check_attr(paths + bases, cwd, cached=cached)
    return {}


def _classify(selection: Selection, path: str, attrs: dict[str, str]) -> None:
    """Add ``path`` to ``selection`` when it is a merge temp file, of a known kind or a
    plan's lock sidecar."""
    if path.rpartition("/")[2].startswith(MERGE_TEMP_PREFIX):
        selection.merge_temps.append(path)
        return
    # the validator's own rule: attribute first, then the path patterns (no sniffing)
    choice = resolve_kind(path, attribute=attrs.get(path))
    if choice.kind or choice.problem:  # a bad st-kind value is for validate to report
        selection.kinds[path] = choice.kind
    elif path.endswith(SIDECAR_SUFFIX):
        base = path[: -len(SIDECAR_SUFFIX)]
        if resolve_kind(base, attribute=attrs.get(base)).kind == PLAN_KIND:
            selection.sidecars[path] = base


def _may_hold_state_files(paths: list[str], cwd: str | None, files: GitFiles | None = None) -> bool:
    """False when no path can be inside the state dir, found without resolving it.

    Unconfigured, the state dir is ``state/`` at the main worktree's root, so only paths
    under a top-level ``state/`` can be in it. A configured one is resolved for real.
    Whether it is configured is read from git's config files when ``files`` can prove
    that none sets it (then git is not asked).
    """
    if any(p.startswith("state/") for p in paths):
        return True
    setting = SETTINGS["state_dir"]
    unset_here = files is not None and not os.environ.get(setting.env or "", "").strip()
    if unset_here and files is not None and not files.config_may_set(setting.git or ""):
        return False
    return bool(optional_str_setting("state_dir", cwd))


def _find_state_files(selection: Selection, paths: list[str], cwd: str | None) -> None:
    from gitst.statedir.paths import state_dir  # lazy: the state dir's rules load orjson, off the no-op commit

    top = os.path.realpath(require_repo(cwd).work_tree)
    sdir = os.path.realpath(state_dir(cwd))
    selection.state_dir = sdir
    inside = []
    for path in paths:
        full = os.path.normpath(os.path.join(top, path))  # the staged entry itself, links not followed
        if full == sdir or full.startswith(sdir + os.sep):
            inside.append(path)
    if inside and _project_folder(top, sdir):
        return  # the project's own folder of that name: its files are source, gitst writes elsewhere
    for path in inside:
        selection.state_files.append(path)
        selection.kinds.pop(path, None)


def _project_folder(top: str, sdir: str) -> bool:
    """True when the last commit already tracks files in ``sdir`` that are not state files (a
    ``state/reducer.js``): the folder is the project's, gitst refuses to use it as its state
    dir (:func:`gitst.statedir.paths.refuse_project_folder`), and editing them is no concern of
    the hook. A new file there in a first commit is still refused, with the way out named."""
    from gitst.git.objects import paths_at  # lazy: git.objects (pygit2) is pinned off the no-op commit
    from gitst.statedir.paths import is_state_layout  # lazy: as above

    if not (sdir + os.sep).startswith(top + os.sep):
        return False
    folder = os.path.relpath(sdir, top).replace(os.sep, "/")
    prefix = len(folder) + 1
    return any(not is_state_layout(path[prefix:]) for path in paths_at(top, "HEAD", folder))
