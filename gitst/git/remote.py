"""Talking to a remote: fetch refs into a local namespace, push with compare-and-swap, merge
without touching the work tree.

One function per git question (docs/architecture.md, "Running git"):

- :func:`fetch_refs` — ``git fetch --prune REMOTE SPEC…`` into local refs (no FETCH_HEAD, no
  tags, no auto maintenance), retried when another process of the same clone holds a ref lock;
- :func:`push_refs` — ``git push --porcelain [--atomic] --force-with-lease=REF:EXPECT …``: each
  ref moves only if the remote still holds what we expect (an empty expectation: the ref must
  not exist). The server checks the old value under its ref lock, so this is a true
  compare-and-swap; a rejection is returned, never raised;
- :func:`merge_tree_conflicts` — ``git merge-tree --write-tree`` (git ≥ 2.38): the paths a
  merge of two commits would leave conflicted, as a git host merges (no custom driver);
- :func:`remote_url` — where a remote points (for messages).

A remote that cannot be reached raises :class:`RemoteUnreachable` (exit 4).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from gitst.core.errors import EnvironmentProblem
from gitst.git import config
from gitst.git.runner import GitError, decode, run, split_z

__all__ = [
    "PushResult",
    "RefUpdate",
    "RemoteUnreachable",
    "fetch_refs",
    "merge_tree_conflicts",
    "push_refs",
    "remote_branches",
    "remote_exists",
    "remote_url",
]

# Another process of this clone updating the same local ref: git says one of these.
_LOCK_CONTENTION = ("cannot lock ref", "unable to create", ".lock': file exists", "unable to update local ref")
_FETCH_TRIES = 8


class RemoteUnreachable(EnvironmentProblem):
    """The remote could not be reached (or refused us): exit 4, git's own words included."""

    def __init__(self, remote: str, detail: str, cwd: str | os.PathLike[str] | None = None):
        url = remote_url(remote, cwd)
        where = f"{remote} ({url})" if url and url != remote else remote
        lines = [line.strip() for line in detail.strip().splitlines() if line.strip()]
        super().__init__(
            f"cannot reach the remote {where}: {' / '.join(lines[-3:]) or 'git failed'}",
            fix="check the network and the remote's URL (`git remote -v`), or pass --offline to work locally",
        )
        self.remote = remote


def remote_url(remote: str, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """``remote.<name>.url`` (None for a remote given as a URL or path)."""
    return config.get(f"remote.{remote}.url", cwd)


def remote_exists(remote: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """A configured remote name, or something git can use as one (a URL or a path)."""
    return remote_url(remote, cwd) is not None or "/" in remote or ":" in remote


_QUIET = ["-c", "gc.auto=0", "-c", "maintenance.auto=false"]


def fetch_refs(
    remote: str, refspecs: list[str], cwd: str | os.PathLike[str] | None = None, *, missing_ok: bool = False
) -> bool:
    """Fetch ``refspecs`` from ``remote`` and prune what the remote deleted (within them).

    A glob refspec that matches nothing is not an error; an exact one the remote lacks is
    one, unless ``missing_ok`` (then False is returned). :class:`RemoteUnreachable` when the
    remote cannot be reached."""
    args = [
        *_QUIET,
        "fetch",
        "--quiet",
        "--no-tags",
        "--prune",
        "--no-write-fetch-head",
        "--no-auto-maintenance",
        "--no-recurse-submodules",
        remote,
        *refspecs,
    ]
    delay, err = 0.01, ""
    for attempt in range(_FETCH_TRIES):
        proc = run(args, cwd, check=False)
        if proc.ok:
            return True
        err = decode(proc.stderr)
        if missing_ok and "couldn't find remote ref" in err:
            return False
        if attempt + 1 == _FETCH_TRIES or not any(sign in err for sign in _LOCK_CONTENTION):
            break
        time.sleep(delay)  # another process of this clone is updating the same ref
        delay = min(delay * 2, 0.2)
    raise RemoteUnreachable(remote, err, cwd)


def remote_branches(remote: str, patterns: list[str], cwd: str | os.PathLike[str] | None = None) -> set[str]:
    """The branches of ``remote`` matching ``patterns`` (``git ls-remote --heads``; a pattern
    matches whole trailing parts of the name, ``*`` as in a glob): their short names."""
    proc = run([*_QUIET, "ls-remote", "--heads", "--", remote, *patterns], cwd, check=False)
    if not proc.ok:
        raise RemoteUnreachable(remote, decode(proc.stderr), cwd)
    names = set()
    for line in decode(proc.stdout).splitlines():
        _oid, _, ref = line.partition("\t")
        if ref.startswith("refs/heads/"):
            names.add(ref[len("refs/heads/") :])
    return names


@dataclass(frozen=True)
class RefUpdate:
    """Move ``ref`` on the remote to ``new`` (None: delete it) if it still is ``expect``
    (``""``: it must not exist)."""

    ref: str
    new: str | None
    expect: str


@dataclass(frozen=True)
class PushResult:
    ok: bool
    rejected: dict[str, str]  # ref -> git's reason ("stale info", "failed to update ref", …)


def push_refs(
    remote: str,
    updates: list[RefUpdate],
    cwd: str | os.PathLike[str] | None = None,
    *,
    atomic: bool = False,
    verify: bool = False,
) -> PushResult:
    """Push ``updates`` with a lease each (``--atomic``: all or none). The pre-push hook runs
    only with ``verify`` (a branch); gitst's own records (claims) are pushed without it."""
    args = ["push", "--porcelain", *([] if verify else ["--no-verify"]), *(["--atomic"] if atomic else [])]
    args += [f"--force-with-lease={u.ref}:{u.expect}" for u in updates]
    args.append(remote)
    args += [f"{u.new}:{u.ref}" if u.new is not None else f":{u.ref}" for u in updates]
    proc = run(args, cwd, check=False)
    statuses: dict[str, tuple[str, str]] = {}
    for line in decode(proc.stdout).splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1 and ":" in parts[1]:
            statuses[parts[1].rsplit(":", 1)[1]] = (parts[0], parts[2])
    if not statuses:  # no ref was even tried: the remote was not reached
        raise RemoteUnreachable(remote, decode(proc.stderr) or decode(proc.stdout), cwd)
    rejected = {ref: summary.strip("[] ") for ref, (flag, summary) in statuses.items() if flag == "!"}
    missing = [u.ref for u in updates if u.ref not in statuses]
    for ref in missing:
        rejected[ref] = "not pushed"
    return PushResult(ok=proc.ok and not rejected, rejected=rejected)


def merge_tree_conflicts(
    ours: str,
    theirs: str,
    cwd: str | os.PathLike[str] | None = None,
    *,
    overrides: dict[str, str] | None = None,
) -> list[str] | None:
    """The paths a merge of ``ours`` and ``theirs`` would leave conflicted, computed in memory
    (no work tree, no index). ``overrides`` are ``-c KEY=VALUE`` settings for this one merge
    (e.g. a merge driver). None when the two have no common history."""
    flags = [arg for key, value in (overrides or {}).items() for arg in ("-c", f"{key}={value}")]
    args = [*flags, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs]
    proc = run(args, cwd, check=False)
    if proc.returncode == 0:
        return []
    if proc.returncode != 1:
        if b"refusing to merge unrelated histories" in proc.stderr:
            return None
        raise GitError(["merge-tree", "--write-tree", ours, theirs], proc.returncode, decode(proc.stderr))
    fields = split_z(proc.stdout)
    return sorted(set(fields[1:]))  # first: the tree id; then the conflicted paths
