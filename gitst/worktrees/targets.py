"""Where a new worktree of ``git st worktree add`` goes and on which branch: the branch
name (``--branch`` or the template's, made unique per claim), a linked worktree already on it
that the issue adopts, the target directory (refused inside another worktree, the state dir
or git's dir) and the commit a new branch starts from. Each function checks one thing and
refuses with the exit code the command documents (docs/parallel.md, "Worktrees")."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from gitst.core.errors import ConflictError, UsageError
from gitst.git.objects import resolve_commit
from gitst.git.refs import branch_exists, refs_under_all, valid_branch_name
from gitst.git.remote import remote_branches
from gitst.git.repo import commit_and_branch, current_branch
from gitst.sessions import locks, registry
from gitst.settings import remote_timeout
from gitst.statedir.records import CorruptRecord
from gitst.worktrees.context import LOCK_REASON_RE, inside, same_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitst.git.worktrees import GitWorktree
    from gitst.sessions.identity import Identity
    from gitst.sessions.locks import LockName
    from gitst.worktrees.context import Repo

    Cwd = str | os.PathLike[str] | None

__all__ = [
    "Placement",
    "adopted",
    "base_and_branch",
    "base_branch",
    "base_commit",
    "branch_name",
    "branch_refs",
    "claim_branch",
    "place",
    "refuse_nested_target",
    "target",
]


class Placement(NamedTuple):
    """Where a new worktree goes: its branch, the linked worktree it adopts (or None), its
    directory."""

    branch: str
    adopt: GitWorktree | None
    target: Path


def place(
    issue: str, branch: str | None, path: str | None, repo: Repo, known: list[GitWorktree], cwd: Cwd
) -> Placement:
    """The branch (:func:`branch_name`), the worktree it adopts (:func:`adopted`) and the
    target (:func:`target`), each checked in that order: one call for ``worktree add``. The
    templates' branch and path are read once (:func:`gitst.sessions.registry.places_for_issue`)."""
    template_branch, template_path = registry.places_for_issue(issue, cwd)
    name = branch_name(branch or template_branch, cwd)
    adopt = adopted(issue, name, known)
    return Placement(name, adopt, target(issue, name, path, adopt, repo, known, default=template_path))


def branch_name(branch: str, cwd: Cwd) -> str:
    """The branch (``--branch`` as given, else the template's); refused (exit 2) when git
    would refuse it."""

    if not valid_branch_name(branch, cwd):
        raise UsageError(f"invalid branch name {branch!r}")
    return branch


def adopted(issue: str, branch: str, known: list[GitWorktree]) -> GitWorktree | None:
    """The linked worktree already on ``branch`` that the issue takes as its own (None when
    no worktree is on it); exit 3 when one is on it that may not be taken."""
    main_path = known[0].path if known else None
    adopt = None
    for existing in known:
        if existing.branch != branch:
            continue
        if not _adoptable(existing, issue, main_path):
            raise ConflictError(
                f"branch {branch} is already checked out in {existing.path}",
                fix="choose another --branch, or free that worktree first",
            )
        adopt = existing
    return adopt


def target(
    issue: str,
    branch: str,
    path: str | None,
    adopt: GitWorktree | None,
    repo: Repo,
    known: list[GitWorktree],
    *,
    default: Path,
) -> Path:
    """Where the worktree will be: the adopted one's directory, ``--path`` or ``default`` (the
    template's); exit 2 for a ``--path`` other than the adopted worktree, a target that exists
    and is not an empty directory, or one inside another worktree."""

    if adopt is not None:
        if path and not same_path(os.path.abspath(os.path.expanduser(path)), adopt.path):
            raise UsageError(
                f"branch {branch} is already checked out in {adopt.path}",
                fix="drop --path to adopt that worktree for the issue, or choose another --branch",
            )
        return Path(adopt.path)
    target = Path(os.path.abspath(os.path.expanduser(path))) if path else default
    if os.path.lexists(target) and (not target.is_dir() or target.is_symlink() or any(target.iterdir())):
        raise UsageError(f"{target} already exists", fix="choose another --path or remove it")
    refuse_nested_target(target, issue, repo, known)
    return target


def base_commit(branch: str, base: str | None, existing_branch: bool, cwd: Cwd) -> str | None:
    """The commit a new branch starts from (``--base``, else HEAD); None for an existing
    branch, which ``--base`` may not be given for (exit 2)."""
    if existing_branch:
        if base:
            raise UsageError(
                f"branch {branch} already exists; --base applies only to a new branch",
                fix="drop --base to check the existing branch out, or choose another --branch",
            )
        return None
    commit = resolve_commit(base or "HEAD", cwd)
    if commit is None:
        raise UsageError(f"unknown base revision {base or 'HEAD'!r}")
    return commit


def base_and_branch(branch: str, base: str | None, existing_branch: bool, cwd: Cwd) -> tuple[str | None, str | None]:
    """(:func:`base_commit`, :func:`base_branch`) of one add: one git process when both are
    git's to say (a new branch from HEAD or from an object id, as ``next`` asks), else each alone."""
    if not existing_branch and (base is None or _object_id(base)):
        both = commit_and_branch(base or "HEAD", cwd)
        if both is not None:
            return both
    return base_commit(branch, base, existing_branch, cwd), base_branch(base, cwd)


def _adoptable(existing: GitWorktree, issue: str, main_path: str | None) -> bool:
    """A linked worktree on the issue's branch that gitst may take as the issue's: not the
    main worktree, and not locked by anybody but gitst for this issue."""
    if existing.bare or (main_path is not None and same_path(existing.path, main_path)):
        return False
    if existing.locked is None:
        return True
    match = re.match(LOCK_REASON_RE, existing.locked)
    return bool(match and match["issue"] == issue)


def base_branch(base: str | None, cwd: Cwd) -> str | None:
    """The branch the new one will be merged into: --base when it names a local branch, else
    the branch checked out where ``add`` runs."""

    if base and not _object_id(base) and branch_exists(base, cwd):
        return base
    return current_branch(cwd)


def _object_id(name: str) -> bool:
    """True for a full object id (``next`` passes the base's tip): git reads it as that object,
    never as a branch of that name, so no branch is looked for."""
    return len(name) in (40, 64) and all(ch in "0123456789abcdef" for ch in name)


def refuse_nested_target(target: Path, issue: str, repo: Repo, known: list[GitWorktree], *, made: bool = False) -> None:
    """Exit 2 for a target inside another linked worktree (git's or registered), the state dir
    or git's dir: removing that one would delete this one with it. ``made``: git has made
    the target already (the post-checkout hook), so its own listing is not "another"."""

    others = [(w.path, "the worktree") for w in known[1:] if not w.bare]
    others += [
        (entry["path"], f"the worktree of issue {other}")
        for other, _file, entry, _problem in registry.list_worktree_entries(repo.state_root)
        if entry is not None and other != issue
    ]
    others += [(str(repo.state_root), "the state dir"), (str(repo.common_dir), "git's directory")]
    for where, what in others:
        if inside(target, where) and not (made and same_path(target, where)):
            how = "already" if same_path(target, where) else "inside"
            raise UsageError(
                f"{target} is {how} {what} {where}; a worktree is never made inside another",
                fix="choose a --path outside every worktree (`git st worktree list` shows them)",
            )


def claim_branch(
    claim: LockName,
    who: Identity,
    name: str,
    *,
    existing: bool,
    base: str | None,
    repo: Repo,
    remote: str | None,
    here: dict[str, str] | None = None,
) -> tuple[str, str | None]:
    """The branch a new claim works on, from the template's ``name``, and why it is not
    ``name``; ``claim``: the claim's lock (:class:`gitst.sessions.claims.ClaimChecked`'s, not
    derived from the issue again), which says who held the issue last. ``name`` itself when
    it is free, or when it exists here, ``--base`` was not given and no other session held
    the issue last (your own branch, or one made by hand: checked out as it is). Otherwise
    — ``--base`` asks for a new branch, another session's abandoned work, or a branch of that
    name on a remote (another machine's claim) — the first of ``name-2``, ``name-3``, … that
    exists nowhere: branch names are unique per claim, across machines (docs/parallel.md,
    "Branches"). ``here``: :func:`branch_refs` of ``name``, when the caller read them already."""
    if existing:
        last = _last_holder(claim, repo)
        if base is None and last in (None, who.session):
            return name, None
        why = (
            f"branch {name} exists and --base asks for a new one"
            if base is not None
            else f"branch {name} holds the abandoned work of session {last}"
        )
    taken, on_remote = _taken_names(name, repo, remote, here)
    if not existing:
        if name not in taken:
            return name, None
        why = f"branch {name} exists on {remote if name in on_remote else 'a remote'} (another claim's work)"
    number = 2
    while f"{name}-{number}" in taken:
        number += 1
    return f"{name}-{number}", why


def _last_holder(claim: LockName, repo: Repo) -> str | None:
    """The session that holds or last held the ``claim`` lock (None: nobody, or its lock record
    is unreadable)."""

    try:
        lock = locks.read(claim, repo.state_root) or {}
    except CorruptRecord:
        lock = {}
    return ((lock.get("owner") or lock.get("last_owner")) or {}).get("session")


def branch_refs(name: str, repo: Repo) -> dict[str, str]:
    """The refs of the branch ``name`` and of ``name*`` here: local branches and remote-tracking
    ones (one ``for-each-ref``). ``refs/heads/<name>`` among them: the branch exists."""
    return refs_under_all([f"refs/heads/{name}*", f"refs/remotes/*/{name}*"], repo.main_root)


def _taken_names(
    name: str, repo: Repo, remote: str | None, here: dict[str, str] | None = None
) -> tuple[set[str], set[str]]:
    """The branch names ``name`` and ``name-*`` that exist here, as remote-tracking branches
    or (asked) on ``remote``: (all of them, those on ``remote``)."""

    if here is None:
        here = branch_refs(name, repo)
    taken = {ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref.split("/", 3)[3] for ref in here}
    on_remote = (
        remote_branches(remote, [name, f"{name}-*"], repo.main_root, timeout=remote_timeout(repo.main_root))
        if remote
        else set()
    )
    return taken | on_remote, on_remote
