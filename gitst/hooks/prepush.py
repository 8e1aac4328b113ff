"""``pre-push``: validate the managed files changed in the commits being pushed.

git gives one line per ref on stdin: ``<local ref> <local sha> <remote ref> <remote sha>``.
For each ref being updated (deletions are skipped), the files changed between what the
remote has and what we push are found: ``remote sha..local sha`` when we know the remote's
commit, else every commit not yet on any remote-tracking branch of that remote. Each such
file of a known kind is validated as it is in the pushed commit (not the working tree);
a kind that checks transitions (SDLC ``state.json``) is checked against the remote's
version. State-dir files and plan lock sidecars in the pushed commit are refused.

A plan's append-only rule is *not* applied across a push: a rebased branch legitimately
re-sequences its own records (see docs/hooks.md); each commit was checked when it was made.
"""

from __future__ import annotations

from typing import BinaryIO

from gitst.core.diagnostics import Diagnostic
from gitst.git.history import changed_paths, paths_in_range
from gitst.git.objects import files_at, is_null_sha, resolve_commit
from gitst.hooks.checks import SIDECAR, STATE_FILE
from gitst.hooks.selection import PLAN_KIND, Selection, select
from gitst.validate.kinds import check


def pre_push(args: list[str], stdin: BinaryIO, cwd: str) -> list[Diagnostic]:
    """Problems in every ref update git announces on ``stdin`` (the entry point reports them)."""
    remote = args[0] if args else None
    diagnostics: list[Diagnostic] = []
    for line in stdin.read().decode("utf-8", "surrogateescape").splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        diagnostics.extend(check_push(parts[1], parts[3], remote, cwd))
    return diagnostics


def check_push(local_sha: str, remote_sha: str, remote: str | None, cwd: str) -> list[Diagnostic]:
    """Problems in the managed files that pushing ``local_sha`` over ``remote_sha`` changes."""
    if is_null_sha(local_sha):
        return []  # deleting a remote ref: nothing is sent
    base = None if is_null_sha(remote_sha) else resolve_commit(remote_sha, cwd)
    if base:
        paths = changed_paths(base, local_sha, cwd)
    else:
        paths = paths_in_range(local_sha, [f"--remotes={remote}"] if remote else [], cwd)
    if not paths:
        return []
    selection = select(paths, cwd, cached=False)
    if not selection.relevant:
        return []
    return check_commit_files(selection, local_sha, base, cwd)


def check_commit_files(selection: Selection, commit: str, base: str | None, cwd: str) -> list[Diagnostic]:
    pushed = files_at(cwd, commit, list(selection.kinds) + list(selection.sidecars) + selection.state_files)
    # transitions are checked against the remote's version, except a plan's append-only
    # rule: a rebased branch re-sequences its own records (each commit was checked)
    older = (
        files_at(cwd, base, [p for p, kind in selection.kinds.items() if kind and kind != PLAN_KIND]) if base else {}
    )
    short = commit[:12]
    diagnostics = [
        Diagnostic(path, None, STATE_FILE, f"commit {short} holds a file of the state dir, which is runtime-only")
        for path in selection.state_files
        if pushed.get(path) is not None
    ]
    diagnostics.extend(
        Diagnostic(path, None, SIDECAR, f"commit {short} holds a plan lock sidecar")
        for path in selection.sidecars
        if pushed.get(path) is not None
    )
    for path, kind in selection.kinds.items():
        data = pushed.get(path)
        if data is None or kind is None:
            continue  # deleted again later in the range / an st-kind that names no kind
        diagnostics.extend(check(kind, data, path, against=older.get(path)))
    return diagnostics
