"""Running git, and finding out where we are (work tree, git dirs, main worktree)."""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from gitst.core.errors import ENVIRONMENT, EnvironmentProblem, GitstError


class GitError(GitstError):
    """A git command failed; carries git's own stderr."""

    exit_code = ENVIRONMENT

    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        cmd = "git " + " ".join(args)
        detail = stderr.strip() or f"exit status {returncode}"
        super().__init__(f"`{cmd}` failed: {detail}")
        self.returncode = returncode
        self.stderr = stderr


def run_git(
    args: Sequence[str],
    cwd: str | os.PathLike | None = None,
    *,
    input: bytes | None = None,
    check: bool = True,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """Run ``git ARGS`` in ``cwd``; stdout/stderr captured as bytes."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except FileNotFoundError as exc:
        raise EnvironmentProblem("git is not installed or not on PATH") from exc
    if check and proc.returncode != 0:
        raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


def git_text(args: Sequence[str], cwd: str | os.PathLike | None = None, **kwargs) -> str:
    """stdout of ``git ARGS`` as text, trailing newline stripped."""
    return run_git(args, cwd, **kwargs).stdout.decode("utf-8", "surrogateescape").rstrip("\n")


@dataclass(frozen=True)
class RepoInfo:
    toplevel: Path | None  # None in a bare repo or inside .git
    git_dir: Path
    common_dir: Path

    @property
    def is_linked_worktree(self) -> bool:
        return self.git_dir != self.common_dir

    @property
    def main_root(self) -> Path | None:
        """Top of the main worktree (shared by every linked worktree)."""
        if self.common_dir.name == ".git":
            return self.common_dir.parent
        return self.toplevel if not self.is_linked_worktree else None


@functools.lru_cache(maxsize=32)
def _repo_info_cached(cwd: str) -> RepoInfo | None:
    proc = run_git(
        ["rev-parse", "--is-inside-work-tree", "--absolute-git-dir", "--git-common-dir", "--show-toplevel"],
        cwd,
        check=False,
    )
    if proc.returncode != 0:
        return None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    inside = lines[0] == "true"
    git_dir = Path(lines[1])
    common = Path(lines[2])
    if not common.is_absolute():
        common = (Path(cwd) / common).resolve()
    toplevel = Path(lines[3]) if inside and len(lines) > 3 and lines[3] else None
    return RepoInfo(toplevel=toplevel, git_dir=git_dir, common_dir=common.resolve())


def repo_info(cwd: str | os.PathLike | None = None) -> RepoInfo | None:
    """Where ``cwd`` sits in git, or None outside any repository."""
    return _repo_info_cached(os.path.abspath(cwd or os.getcwd()))


def require_repo(cwd: str | os.PathLike | None = None) -> RepoInfo:
    """Like :func:`repo_info` but a missing work tree is an environment error (exit 4)."""
    info = repo_info(cwd)
    if info is None or info.toplevel is None:
        raise EnvironmentProblem(
            f"not inside a git work tree: {os.path.abspath(cwd or os.getcwd())}",
            fix="run this inside a git repository (or `git init` one first)",
        )
    return info


def config_get(key: str, cwd: str | os.PathLike | None = None, *, type: str | None = None) -> str | None:
    """``git config --get KEY`` (None when unset or outside a repo)."""
    args = ["config"]
    if type:
        args.append(f"--type={type}")
    args += ["--get", key]
    proc = run_git(args, cwd, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")


def check_ignore(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> bool:
    """True when git ignores ``path`` (``git check-ignore`` semantics, index not consulted)."""
    proc = run_git(["check-ignore", "-q", "--no-index", "--", str(path)], cwd, check=False)
    if proc.returncode not in (0, 1):
        raise GitError(["check-ignore", str(path)], proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.returncode == 0


def is_tracked(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> bool:
    """True when ``path`` is in the index."""
    proc = run_git(["ls-files", "--error-unmatch", "--", str(path)], cwd, check=False)
    return proc.returncode == 0
