"""Which of a set of paths gitst has anything to say about — decided cheaply.

This is the pre-commit hook's fast path: it runs for every commit, so it uses no more than
three small git calls (the staged names, one ``check-attr`` for all of them, one config
key) and imports only the format registry's path patterns. Only when it finds something
relevant does the hook import the checkers.

A path is relevant when it is

- of a known kind: its ``st-kind`` attribute names one (``-st-kind`` turns checking off),
  else the built-in patterns of :func:`gitst.formats.kind_for_path` match — content is
  never sniffed here, that would mean reading every staged blob;
- the lock sidecar of a plan (``<plan>.lock``, where ``<plan>`` is of kind ``st-plan``);
- inside the state dir, which is runtime-only and never committed.
"""

from __future__ import annotations

import os

PLAN_KIND = "st-plan"
SIDECAR_SUFFIX = ".lock"


class Selection:
    """The relevant part of a list of paths (all relative to the work tree's top)."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}  # path -> kind
        self.sidecars: dict[str, str] = {}  # sidecar path -> its plan's path
        self.state_files: list[str] = []
        self.state_dir: str | None = None  # absolute, when it was needed

    @property
    def relevant(self) -> bool:
        return bool(self.kinds or self.sidecars or self.state_files)

    @property
    def plans(self) -> list[str]:
        return [path for path, kind in self.kinds.items() if kind == PLAN_KIND]


def select(paths: list[str], cwd=None, *, cached: bool) -> Selection:
    """Classify ``paths``; ``cached`` takes ``.gitattributes`` from the index (commits)."""
    from gitst.formats import kind_for_path
    from gitst.gitops.hooks import attr_values

    selection = Selection()
    if not paths:
        return selection
    bases = [p[: -len(SIDECAR_SUFFIX)] for p in paths if p.endswith(SIDECAR_SUFFIX)]
    attrs = attr_values(paths + bases, "st-kind", cwd, cached=cached)

    def kind_of(path: str) -> str | None:
        value = attrs.get(path, "unspecified")
        if value == "unset":
            return None
        if value not in ("unspecified", "set"):
            return value
        return kind_for_path(path)

    for path in paths:
        kind = kind_of(path)
        if kind:
            selection.kinds[path] = kind
        elif path.endswith(SIDECAR_SUFFIX) and kind_of(path[: -len(SIDECAR_SUFFIX)]) == PLAN_KIND:
            selection.sidecars[path] = path[: -len(SIDECAR_SUFFIX)]
    if _may_hold_state_files(paths, cwd):
        _find_state_files(selection, paths, cwd)
    return selection


def _may_hold_state_files(paths: list[str], cwd) -> bool:
    """False when no path can be inside the state dir, found without resolving it.

    Unconfigured, the state dir is ``state/`` at the main worktree's root, so only paths
    under a top-level ``state/`` can be in it. A configured one is resolved for real.
    """
    from gitst.gitops.hooks import fast_config

    if os.environ.get("ST_STATE_DIR") or fast_config("st.stateDir", cwd):
        return True
    return any(p.startswith("state/") for p in paths)


def _find_state_files(selection: Selection, paths: list[str], cwd) -> None:
    from gitst.gitops.core import require_repo
    from gitst.state.paths import state_dir

    top = os.path.realpath(require_repo(cwd).toplevel)
    sdir = os.path.realpath(state_dir(cwd))
    selection.state_dir = sdir
    for path in paths:
        full = os.path.normpath(os.path.join(top, path))  # the staged entry itself, links not followed
        if full == sdir or full.startswith(sdir + os.sep):
            selection.state_files.append(path)
            selection.kinds.pop(path, None)
