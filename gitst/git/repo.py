"""Where we are in git: the work tree's top, the git dirs, the main worktree, HEAD.

:func:`toplevel` and :func:`hooks_dir` are on the hooks' fast path: this module imports
only ``os`` at load time (paths are ``pathlib.Path`` objects, made on first use).
"""

from __future__ import annotations

import os

from gitst.core.errors import EnvironmentProblem
from gitst.git.runner import decode, run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "RepoInfo",
    "clear_cache",
    "commit_and_branch",
    "current_branch",
    "head_is_unborn",
    "hooks_dir",
    "repo_info",
    "require_repo",
    "toplevel",
    "work_tree_of",
    "work_tree_top",
]


class RepoInfo:
    """Where a directory sits in git."""

    __slots__ = ("common_dir", "git_dir", "toplevel")

    def __init__(self, toplevel: Path | None, git_dir: Path, common_dir: Path):
        self.toplevel = toplevel  # None in a bare repo or inside .git
        self.git_dir = git_dir
        self.common_dir = common_dir

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepoInfo) and (self.toplevel, self.git_dir, self.common_dir) == (
            other.toplevel,
            other.git_dir,
            other.common_dir,
        )

    def __hash__(self) -> int:
        return hash((self.toplevel, self.git_dir, self.common_dir))

    def __repr__(self) -> str:
        return f"RepoInfo(toplevel={self.toplevel!r}, git_dir={self.git_dir!r}, common_dir={self.common_dir!r})"

    @property
    def is_linked_worktree(self) -> bool:
        return self.git_dir != self.common_dir

    @property
    def main_root(self) -> Path | None:
        """Top of the main worktree (shared by every linked worktree)."""
        if self.common_dir.name == ".git":
            return self.common_dir.parent
        return self.toplevel if not self.is_linked_worktree else None

    @property
    def work_tree(self) -> Path:
        """``toplevel`` where there must be one (what :func:`require_repo` guarantees); exit 4 without."""
        if self.toplevel is None:
            raise _not_a_work_tree(os.fspath(self.git_dir))
        return self.toplevel

    @property
    def shared_root(self) -> Path:
        """The main worktree's top, else this work tree's: where state every worktree shares lives."""
        return self.main_root or self.work_tree


_CACHE: dict[str, RepoInfo | None] = {}


def clear_cache() -> None:
    """Forget what :func:`repo_info` (and :func:`gitst.git.index.tracked_below`) learnt, for a
    process that changes repositories."""
    from gitst.git import index  # lazy: git.index is not in the plan fast path's pinned import set

    _CACHE.clear()
    index.clear_cache()


def repo_info(cwd: str | os.PathLike[str] | None = None) -> RepoInfo | None:
    """Where ``cwd`` sits in git, or None outside any repository (one git call per directory)."""
    where = os.path.abspath(cwd or os.getcwd())
    if where not in _CACHE:
        _CACHE[where] = _ask(where)
    return _CACHE[where]


def _ask(where: str) -> RepoInfo | None:
    from pathlib import Path  # lazy: the hook fast path loads only os (docs/architecture.md)

    proc = run(
        ["rev-parse", "--is-inside-work-tree", "--absolute-git-dir", "--git-common-dir", "--show-toplevel"],
        where,
        check=False,
    )
    if proc.returncode != 0:
        return None
    lines = decode(proc.stdout).splitlines()
    inside = lines[0] == "true"
    common = Path(lines[2])
    if not common.is_absolute():
        common = (Path(where) / common).resolve()
    top = Path(lines[3]) if inside and len(lines) > 3 and lines[3] else None
    return RepoInfo(toplevel=top, git_dir=Path(lines[1]), common_dir=common.resolve())


def require_repo(cwd: str | os.PathLike[str] | None = None) -> RepoInfo:
    """Like :func:`repo_info` but a missing work tree is an environment error (exit 4)."""
    info = repo_info(cwd)
    if info is None or info.toplevel is None:
        raise _not_a_work_tree(os.path.abspath(cwd or os.getcwd()))
    return info


def _not_a_work_tree(where: str) -> Exception:
    return EnvironmentProblem(
        f"not inside a git work tree: {where}",
        fix="run this inside a git repository (or `git init` one first)",
    )


def toplevel(cwd: str | os.PathLike[str] | None = None) -> str:
    """The top of the work tree around ``cwd`` (paths git prints are relative to it).

    git runs hooks at the top of the work tree, where ``.git`` (a directory, or a file in
    a linked worktree) is: then no git call is needed. Anywhere else git is asked.
    """
    top = work_tree_top(cwd)
    if top is None:
        raise _not_a_work_tree(os.path.abspath(cwd or os.getcwd()))
    return top


def work_tree_top(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The top of the work tree around ``cwd`` (main or linked), None outside any work tree.

    At the top itself (``.git`` is there: a directory, or a file in a linked worktree) no
    git call is needed; anywhere else git is asked, once per directory.
    """
    here = os.path.abspath(cwd or os.getcwd())
    if os.path.lexists(os.path.join(here, ".git")) and not os.environ.get("GIT_WORK_TREE"):
        return here
    info = repo_info(here)
    return None if info is None or info.toplevel is None else str(info.toplevel)


def work_tree_of(path: str | os.PathLike[str]) -> Path | None:
    """The top of the work tree that holds ``path`` (which need not exist yet), or None.

    The current directory's work tree when ``path`` lies inside it (the usual case: no git
    call beyond the cached one). Otherwise the work tree around the deepest directory on
    ``path``'s way down from ``/`` that exists and is reached without a symbolic link, so a
    linked directory inside a work tree (``.step -> /elsewhere``) never hides the work tree
    it sits in. Used to know from where a path's components are checked
    (:mod:`gitst.core.safepaths`).
    """
    from gitst.core.safepaths import below  # lazy: core.safepaths is off the hook fast path

    full = os.path.abspath(path)
    here = work_tree_top()  # no git process at the top of a work tree, where commands usually run
    if here is not None and below(full, here) is not None:
        from pathlib import Path  # lazy: the hook fast path loads only os (docs/architecture.md)

        return Path(here)
    current = os.sep
    for part in full.split(os.sep)[1:-1]:
        step = os.path.join(current, part)
        if os.path.islink(step) or not os.path.isdir(step):
            break
        current = step
    info = repo_info(current)
    if info is not None and info.toplevel is not None and below(full, info.toplevel) is not None:
        return info.toplevel
    return None


def hooks_dir(cwd: str | os.PathLike[str] | None = None) -> str:
    """The directory git really runs hooks from, for the work tree around ``cwd``.

    ``git rev-parse --git-path hooks`` applies ``core.hooksPath`` (absolute, ``~/…``, or
    relative, which git takes from the top of the work tree that runs the hook) and, in a
    linked worktree, the common dir every worktree shares.
    """
    path = run(["rev-parse", "--git-path", "hooks"], cwd).text()
    return os.path.normpath(os.path.join(os.path.abspath(cwd or os.getcwd()), path))


def head_is_unborn(cwd: str | os.PathLike[str] | None = None) -> bool:
    """True in a repository whose current branch has no commit yet."""
    return commit_and_branch("HEAD", cwd) is None and current_branch(cwd) is not None


def current_branch(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The short name of the checked-out branch (None when detached)."""
    return run(["symbolic-ref", "-q", "--short", "HEAD"], cwd, check=False).text().strip() or None


def commit_and_branch(rev: str, cwd: str | os.PathLike[str] | None = None) -> tuple[str, str | None] | None:
    """The commit ``rev`` names and :func:`current_branch`, in one ``git rev-parse REV^{commit}
    --abbrev-ref=loose HEAD`` (``loose``: the short name ``symbolic-ref --short`` gives; ``HEAD``
    when detached). None when git cannot say both this way — ``rev`` names no commit, HEAD's
    branch has no commit yet —: the caller asks each question alone."""
    if not rev or rev.startswith("-"):
        return None
    proc = run(["rev-parse", f"{rev}^{{commit}}", "--abbrev-ref=loose", "HEAD"], cwd, check=False)
    lines = decode(proc.stdout).split("\n")
    if proc.returncode != 0 or len(lines) != 3 or lines[2] or not lines[0] or not lines[1]:
        return None
    return lines[0], (None if lines[1] == "HEAD" else lines[1])
