"""What ``.gitattributes`` and the ignore rules say about paths.

:func:`check_attr` is on the hooks' fast path: one ``git check-attr`` for any number of
paths (NUL-separated on stdin, so no name is ever quoted or split), nothing imported but
the runner.
"""

from __future__ import annotations

import os

from gitst.git.runner import GitError, decode, encode, run

__all__ = ["check_attr", "check_ignore"]


def check_attr(
    paths: list[str], cwd: str | os.PathLike[str] | None = None, *, attribute: str = "st-kind", cached: bool = False
) -> dict[str, str]:
    """``{path: value}`` of ``attribute`` for ``paths`` (relative to ``cwd``, usually the top).

    Values are what git reports: ``unspecified``, ``unset`` (``-attr``), ``set`` (bare
    ``attr``) or the assigned text. ``cached`` reads ``.gitattributes`` from the index:
    what a commit will hold.
    """
    if not paths:
        return {}
    args = ["check-attr", "-z", "--stdin", *(["--cached"] if cached else []), attribute]
    out = run(args, cwd, input=b"".join(encode(p) + b"\0" for p in paths)).stdout.split(b"\0")
    return {decode(out[i]): decode(out[i + 2]) for i in range(0, len(out) - 2, 3)}


def check_ignore(
    path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None, *, index: bool = False
) -> bool:
    """True when git ignores ``path`` (``git check-ignore`` semantics). Without ``index`` the
    index is not consulted (a tracked path matching a rule counts as ignored); with it, a
    tracked path is never ignored, so True means both "ignored" and "not tracked" at once."""
    args = ["check-ignore", "-q", *([] if index else ["--no-index"]), "--", os.fspath(path)]
    proc = run(args, cwd, check=False)
    if proc.returncode not in (0, 1):
        raise GitError(["check-ignore", os.fspath(path)], proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.returncode == 0
