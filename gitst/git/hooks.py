"""The git operations the hooks and the hooks installer need.

Two kinds of call live here:

- **fast** ones (what is staged, where we are, one attribute, one config key) run on a
  hook's fast path, before we know whether there is anything to check. They go through
  :func:`_spawn`, which uses ``os.posix_spawnp`` so that neither ``subprocess`` nor
  :mod:`gitst.git.core` (``dataclasses``, ``pathlib``, ``functools``) is imported when a
  commit has nothing for gitst to look at. This module imports only ``os`` at load time.
- the rest (ranges, config writes) runs through :func:`gitst.git.core.run_git` like
  every other git call; blobs are read with :mod:`gitst.git.blobs`.

Paths travel NUL-separated (``-z``) so no file name is ever quoted or split.
"""

from __future__ import annotations

import os

# argv longer than this is split over several git calls (Linux allows ~2 MB)
_ARGS_BUDGET = 100_000


def _spawn(args: list[str], cwd=None) -> tuple[int, bytes, bytes]:
    """Run ``git ARGS`` (stdin /dev/null); return (exit code, stdout, stderr).

    Reads stdout to its end before stderr, so it is only for commands whose error output
    is short (every caller here); stdin is not offered, so no command here can block on it.
    """
    argv = ["git"] + (["-C", os.fspath(cwd)] if cwd is not None else []) + list(args)
    if not hasattr(os, "posix_spawnp"):  # pragma: no cover - non-POSIX platforms
        import subprocess

        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return proc.returncode, proc.stdout, proc.stderr
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        pid = os.posix_spawnp(
            "git",
            argv,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, out_w, 1),
                (os.POSIX_SPAWN_DUP2, err_w, 2),
            ],
        )
    except FileNotFoundError as exc:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        from gitst.core.errors import EnvironmentProblem

        raise EnvironmentProblem("git is not installed or not on PATH") from exc
    os.close(out_w)
    os.close(err_w)
    out = _read_all(out_r)
    err = _read_all(err_r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out, err


def _read_all(fd: int) -> bytes:
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _fast(args: list[str], cwd=None) -> bytes:
    """stdout of a fast git call; a failure raises core's GitError with git's message."""
    code, out, err = _spawn(args, cwd)
    if code != 0:
        from gitst.git.core import GitError

        raise GitError(args, code, err.decode("utf-8", "replace"))
    return out


def _split_z(data: bytes) -> list[str]:
    return [part for part in data.decode("utf-8", "surrogateescape").split("\0") if part]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape").rstrip("\n")


def is_null_sha(sha: str) -> bool:
    """The all-zero id git uses for "no commit" (a new branch, a deleted ref)."""
    return bool(sha) and sha.strip("0") == ""


# -- fast: where we are, what is staged ------------------------------------------------------


def toplevel(cwd=None) -> str:
    """The top of the work tree around ``cwd`` (paths git prints are relative to it).

    git runs hooks at the top of the work tree, where ``.git`` (a directory, or a file in
    a linked worktree) is: then no git call is needed. Anywhere else git is asked.
    """
    here = os.path.abspath(cwd or os.getcwd())
    if os.path.lexists(os.path.join(here, ".git")) and not os.environ.get("GIT_WORK_TREE"):
        return here
    code, out, err = _spawn(["rev-parse", "--show-toplevel"], cwd)
    top = _text(out)
    if code != 0 or not top:
        from gitst.core.errors import EnvironmentProblem

        where = os.path.abspath(cwd or os.getcwd())
        raise EnvironmentProblem(f"not inside a git work tree: {where}", fix="run the hook inside a git repository")
    return top


def fast_config(key: str, cwd=None, *, type: str | None = None) -> str | None:
    """``git config --get KEY`` on the fast path (None when unset or not valid for ``type``)."""
    args = ["config"] + ([f"--type={type}"] if type else []) + ["--get", key]
    code, out, _ = _spawn(args, cwd)
    return _text(out) if code == 0 else None


def staged_paths(cwd=None) -> list[str]:
    """Paths added, copied, modified or type-changed in the index (deletions left out).

    Uses the index git hands the hook (``GIT_INDEX_FILE`` is inherited, so ``git commit
    FILE`` and ``git commit -a`` are seen exactly as git will commit them). Before the
    first commit git compares with the empty tree, so everything staged is listed.
    """
    return _split_z(_fast(["diff", "--cached", "--name-only", "-z", "--no-renames", "--diff-filter=d"], cwd))


def attr_values(paths: list[str], attr: str, cwd=None, *, cached: bool = False) -> dict[str, str]:
    """``git check-attr ATTR`` for many paths: path -> value.

    Values as git reports them: ``unspecified``, ``unset`` (``-attr``), ``set`` (bare
    ``attr``) or the assigned text. ``cached`` reads ``.gitattributes`` from the index —
    what the commit will hold.
    """
    values: dict[str, str] = {}
    base = ["check-attr", "-z"] + (["--cached"] if cached else []) + [attr, "--"]
    start = 0
    while start < len(paths):
        end, size = start, 0
        while end < len(paths) and (end == start or size + len(paths[end]) < _ARGS_BUDGET):
            size += len(paths[end]) + 1
            end += 1
        out = _fast(base + paths[start:end], cwd).decode("utf-8", "surrogateescape").split("\0")
        for i in range(0, len(out) - 2, 3):
            values[out[i]] = out[i + 2]
        start = end
    return values


# -- the hooks directory and the merge driver's config ----------------------------------------


def hooks_dir(cwd=None) -> str:
    """The directory git really runs hooks from, for the work tree around ``cwd``.

    ``git rev-parse --git-path hooks`` applies ``core.hooksPath`` (absolute, ``~/…``, or
    relative, which git takes from the top of the work tree that runs the hook) and, in a
    linked worktree, the common dir every worktree shares.
    """
    path = _text(_fast(["rev-parse", "--git-path", "hooks"], cwd))
    return os.path.normpath(os.path.join(os.path.abspath(cwd or os.getcwd()), path))


def config_set(key: str, value: str, cwd=None) -> bool:
    """Set ``key`` in the repository's own config; False (nothing written) when already so."""
    from gitst.git.core import run_git

    current = run_git(["config", "--local", "--get", key], cwd, check=False)
    if current.returncode == 0 and _text(current.stdout) == value:
        return False
    run_git(["config", "--local", key, value], cwd)
    return True


def config_remove_section(section: str, cwd=None) -> bool:
    """Remove ``[section]`` from the repository's config; False when it was not there."""
    from gitst.git.core import run_git

    return run_git(["config", "--local", "--remove-section", section], cwd, check=False).returncode == 0


# -- ranges --------------------------------------------------------------------------


def changed_paths(old: str, new: str, cwd=None) -> list[str]:
    """Paths that differ between two commits and still exist in ``new``."""
    from gitst.git.core import run_git

    out = run_git(["diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", old, new, "--"], cwd).stdout
    return _split_z(out)


def paths_touched_by(commits: list[str], cwd=None) -> list[str]:
    """Paths any of ``commits`` changed against its first parent (a root commit: all)."""
    from gitst.git.core import run_git

    seen: dict[str, None] = {}
    for commit in commits:
        out = run_git(["diff-tree", "-r", "--root", "--no-commit-id", "--name-only", "-z", "--no-renames", commit], cwd).stdout
        for path in _split_z(out):
            seen.setdefault(path, None)
    return list(seen)


def paths_in_range(tip: str, exclude: list[str], cwd=None) -> list[str]:
    """Paths changed by the commits reachable from ``tip`` and from none of ``exclude``."""
    from gitst.git.core import run_git

    out = run_git(["log", "--format=", "--name-only", "-z", "--no-renames", tip, "--not", *exclude, "--"], cwd).stdout
    seen: dict[str, None] = {}
    for path in _split_z(out):
        path = path.strip("\n")
        if path:
            seen.setdefault(path, None)
    return list(seen)
