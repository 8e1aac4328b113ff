"""Crash safety of ``worktree add`` and ``remove``: an operation lock and a pending mark.

Every add or remove of an issue's worktree

1. holds the issue's **operation lock** (``active-worktrees/<issue>.op.lock``, a flock) for its
   whole run. The git processes it starts inherit the lock, so it stays held until they
   have exited too, even when gitst itself is killed: nobody repairs an operation whose git
   is still running;
2. writes ``pending: {"op": "add"|"remove", "at"}`` into the issue's registry entry
   **before** it touches git, and drops it as its last step.

An entry that has ``pending`` while its operation lock is free was interrupted (the session
was killed, the machine went down). Whatever touches the issue next — ``add``, ``remove``,
``clean`` or ``prune`` — repairs it first:

- **pending add**, the worktree complete in git (listed, not locked ``initializing``, its
  ``.git`` in place): the add got that far; it is finished (locked, ``pending`` dropped; ``add``
  then runs the setup).
- **pending add**, the worktree incomplete (git was killed during its checkout) or absent:
  the half-made directory is deleted, git is told to forget it, and ``add`` creates it anew.
- **pending remove**: the checks had passed when it was written, so the removal is carried
  out (forced), the claim ended and the entry dropped.

A half-made worktree does not stay in the way of commands about *other* things either: git
writes the null id into the new worktree's ``HEAD`` before it points it at the branch, and
until that is undone every ``git fetch`` of the clone fails (``fatal: bad object
worktrees/<name>/HEAD``) — the remote would look unreachable. :func:`recover_half_made`
(one directory listing of ``<common dir>/worktrees``, nothing when all is well) runs first in
every command that touches worktrees or the remote: the half-made directory of an
interrupted ``worktree add`` is deleted and git forgets it; the registry entry keeps its
``pending: add`` and the claim stays, so ``worktree add`` creates the worktree again (and
``prune`` undoes the add as before).

A directory is only ever deleted when it is git's own linked worktree of this repository,
or empty, or holds nothing but a ``.git`` file pointing into this repository: never the
main worktree, never the state dir, never anything else.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from gitst.core import timestamps
from gitst.core.errors import ConflictError, GitstError, UsageError
from gitst.core.filelocks import Held, held
from gitst.git import worktrees as git_wt
from gitst.git.objects import resolve_commit
from gitst.git.refs import branch_exists, create_branch, delete_branch, delete_branch_at
from gitst.git.runner import GitError
from gitst.git.worktrees import GitWorktree, linked_gitdir
from gitst.sessions import claims, registry
from gitst.sessions.identity import Identity
from gitst.sessions.registry import operation_lock_path, paths_lock_path, write_worktree_entry
from gitst.settings import lock_timeout
from gitst.statedir.paths import ensure_state_dir
from gitst.worktrees.context import Repo, inside, same_path

__all__ = [
    "ADD_ENV",
    "INITIALIZING",
    "Listed",
    "Seen",
    "complete",
    "deletable",
    "discard",
    "finish_remove",
    "git_worktree_at",
    "listed_now",
    "mark",
    "materialize",
    "nested_worktrees",
    "operation",
    "pending_op",
    "recover_half_made",
    "refuse_nested",
]

# Set while `git st worktree add` runs `git worktree add`: the post-checkout hook that git
# runs in the new worktree leaves the registration and setup to us.
ADD_ENV = "GITST_WORKTREE_ADD"
# What `git worktree add` writes into the new worktree's `locked` file until its checkout is done.
INITIALIZING = "initializing"


@contextlib.contextmanager
def operation(
    issue: str,
    root: Path,
    *,
    timeout: float | None = None,
    on_busy: Callable[[], None] | None = None,
    path: Path | None = None,
) -> Iterator[Held]:
    """Hold the operation lock of ``issue`` (waits up to ``ST_LOCK_TIMEOUT``, or ``timeout``;
    ``on_busy()`` is called once first when another command holds it). ``path``: the lock's
    path when the caller derived it already (:func:`gitst.sessions.registry.operation_lock_path`)."""
    path = path or operation_lock_path(issue, root=root)
    ensure_state_dir(root)
    with held(
        path,
        lock_timeout() if timeout is None else timeout,
        busy=f"another `git st worktree` command is working on issue {issue} right now",
        on_busy=on_busy,
    ) as hold:
        yield hold


def pending_op(entry: dict[str, Any] | None) -> str | None:
    pending = (entry or {}).get("pending")
    return pending.get("op") if isinstance(pending, dict) else None


def mark(issue: str, op: str, root: Path, **extra: Any) -> dict[str, Any]:
    """Write ``pending`` into the entry of ``issue`` (before touching git)."""
    return write_worktree_entry(
        {"issue": issue, "pending": {"op": op, "at": timestamps.iso(timestamps.now()), **extra}}, root=root
    )


def git_worktree_at(path: str | os.PathLike[str], known: list[GitWorktree]) -> GitWorktree | None:
    real = os.path.realpath(path)
    return next((w for w in known if os.path.realpath(w.path) == real), None)


def complete(path: str | os.PathLike[str], worktree: GitWorktree | None) -> bool:
    """True when git finished creating the worktree at ``path``."""
    return (
        worktree is not None
        and worktree.locked != INITIALIZING
        and os.path.isdir(path)
        and linked_gitdir(path) is not None
    )


def deletable(path: str | os.PathLike[str], repo: Repo, known: list[GitWorktree]) -> bool:
    """True when ``path`` may be deleted as a worktree of this repository (module docstring)."""
    if not os.path.lexists(path):
        return True
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    for precious in (repo.main_root, repo.state_root, repo.common_dir):
        if inside(precious, path):
            return False
    main = known[0].path if known else None
    listed = git_worktree_at(path, known)
    if listed is not None and not (main and same_path(listed.path, main)) and not listed.bare:
        return True
    if not os.listdir(path):
        return True
    gitdir = linked_gitdir(path)
    return gitdir is not None and inside(gitdir, Path(repo.common_dir) / "worktrees")


def nested_worktrees(path: str | os.PathLike[str], repo: Repo, known: list[GitWorktree]) -> list[str]:
    """Other worktrees below ``path`` (git's, and every registered one): deleting ``path``
    would delete them too."""
    if not os.path.isdir(path):
        return []
    found = [w.path for w in known if not same_path(w.path, path) and inside(w.path, path)]
    for _issue, _file, entry, _problem in registry.list_worktree_entries(repo.state_root):
        if (
            entry is not None
            and not same_path(entry["path"], path)
            and inside(entry["path"], path)
            and os.path.lexists(entry["path"])
        ):
            found.append(entry["path"])
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def refuse_nested(path: str | os.PathLike[str], repo: Repo, known: list[GitWorktree]) -> None:
    """Exit 3 when ``path`` holds another worktree: it is never deleted with it, even forced."""
    nested = nested_worktrees(path, repo, known)
    if nested:
        raise ConflictError(
            f"{path} holds another worktree ({', '.join(nested[:3])}{' …' if len(nested) > 3 else ''}); "
            "gitst never deletes a directory holding another worktree, even with --force",
            fix="remove or move the nested worktree first (`git st worktree remove ISSUE`, or "
            "`git worktree move`), then run the command again",
        )


def recover_half_made(repo: Repo, *, say: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Undo what an interrupted ``git worktree add`` left (module docstring): for each
    worktree git began and never finished whose issue's add is not running now, the
    directory is deleted and git forgets it; the entry keeps ``pending: add``. A half-made
    worktree gitst has no entry for (a hand-made ``git worktree add`` that was killed, or
    one still running) is only reported. Returns ``{"issue", "path", "action"}`` items."""
    found = git_wt.half_made(repo.common_dir)
    if not found:
        return []
    say = say or (lambda text: None)
    by_path: dict[str, str] = {}
    for issue, _file, entry, _problem in registry.list_worktree_entries(repo.state_root):
        if entry is not None and pending_op(entry) == "add":
            by_path[os.path.realpath(entry["path"])] = issue
    done: list[dict[str, Any]] = []
    for item in found:
        owner = by_path.get(os.path.realpath(item.path)) if item.path else None
        shown = item.path or item.admin
        if owner is None:
            say(
                f"gitst: warning: {shown} is a linked worktree `git worktree add` left half-made ({item.why}); "
                f"git fetch fails until it is gone: `git worktree remove --force {shown}` (or "
                "`git worktree prune` when its directory is gone)"
            )
            done.append({"issue": None, "path": shown, "action": "reported"})
            continue
        issue = owner
        try:
            with operation(issue, repo.state_root, timeout=0):
                entry = registry.load_worktree_entry(issue, root=repo.state_root)
                if entry is None or pending_op(entry) != "add":
                    continue
                known = git_wt.list_worktrees(repo.main_root)
                if complete(entry["path"], git_worktree_at(entry["path"], known)):
                    continue
                discard(entry["path"], repo, known)
        except ConflictError:
            continue  # its add runs right now (or a nested worktree is in the way: reported by remove)
        except GitstError as exc:
            say(f"gitst: warning: could not undo the half-made worktree of issue {issue} ({shown}): {exc.message}")
            continue
        say(
            f"gitst: undid the half-made worktree of issue {issue} ({entry['path']}) an interrupted "
            f"`worktree add` left ({item.why}); `git st worktree add {issue}` creates it again"
        )
        done.append({"issue": issue, "path": entry["path"], "action": "undid-add"})
    return done


def discard(path: str | os.PathLike[str], repo: Repo, known: list[GitWorktree]) -> None:
    """Delete the worktree at ``path`` (half-made, or whose removal was decided) and make git
    forget it. Refuses (exit 2) a directory that is not deletable."""
    if not deletable(path, repo, known):
        raise UsageError(
            f"{path} is not a worktree of this repository; gitst will not delete it",
            fix="move it away by hand, then run the command again",
        )
    refuse_nested(path, repo, known)
    git_wt.unlock_worktree(path, repo.main_root)
    if os.path.lexists(path):
        import shutil  # lazy: only a discarded worktree is deleted

        shutil.rmtree(path)
    git_wt.prune_worktrees(repo.main_root)


class Listed(NamedTuple):
    """git's worktrees (``known``) as a command listed them, with
    :func:`gitst.git.worktrees.admin_stamp` taken just before: used again while the stamp holds."""

    known: list[GitWorktree]
    stamp: git_wt.Stamp


def listed_now(repo: Repo) -> Listed:
    """git's worktrees now, stamped (:class:`Listed`)."""
    stamp = git_wt.admin_stamp(repo.common_dir)
    return Listed(git_wt.list_worktrees(repo.main_root), stamp)


class Seen(NamedTuple):
    """What a new add read of git a moment before it materializes the worktree: the worktrees
    (``listed``, :func:`listed_now`), and whether the branch existed then (``branch_exists``;
    the entry's ``base`` is the commit :func:`gitst.worktrees.targets.base_commit` resolved for
    a new one)."""

    listed: Listed
    branch_exists: bool


def materialize(entry: dict[str, Any], repo: Repo, op: Held, *, fresh: bool = False, seen: Seen | None = None) -> bool:
    """Make sure git has the complete worktree ``entry`` describes; True when it was
    (re)created, False when it was already there. A half-made one is discarded first.

    ``fresh``: the first attempt of a new add, which found the path free (or an empty
    directory) a moment ago: whatever is there now is another command's (a racing add of
    another issue to the same path, its checkout under way) and is never discarded: the
    add loses the race (exit 3). ``seen`` (with ``fresh``): what that add read of git; its
    listing is used again when git's worktree files did not change since (the stamp), its
    branch and base are not looked up again."""
    if fresh:
        with held(paths_lock_path(repo.state_root), lock_timeout()):
            return _materialize(entry, repo, op, fresh=True, seen=seen)
    return _materialize(entry, repo, op, fresh=False)


def _listing(repo: Repo, seen: Listed | None) -> list[GitWorktree]:
    """``seen``'s listing when git's worktree files are as they were when it was read, else git's now."""
    if seen is not None and git_wt.admin_stamp(repo.common_dir) == seen.stamp:
        return seen.known
    return git_wt.list_worktrees(repo.main_root)


def _materialize(entry: dict[str, Any], repo: Repo, op: Held, *, fresh: bool, seen: Seen | None = None) -> bool:
    path, branch = entry["path"], entry["branch"]
    known = _listing(repo, seen.listed if seen is not None else None)
    listed = git_worktree_at(path, known)
    if listed is not None and listed.branch not in (None, branch):
        raise _taken_meanwhile(path)  # another issue's add (or the user) got there first: not ours to discard
    if fresh and (listed is not None or _occupied(path)):
        raise _taken_meanwhile(path)
    if complete(path, listed):
        return False
    if not fresh and (listed is not None or os.path.lexists(path)):
        discard(path, repo, known)
        known = git_wt.list_worktrees(repo.main_root)
    for other in known:
        if other.branch == branch:
            raise ConflictError(
                f"branch {branch} is already checked out in {other.path}",
                fix="remove that worktree, or choose another --branch",
            )
    new_branch = not (seen.branch_exists if seen is not None else branch_exists(branch, repo.main_root))
    _add_worktree(entry, repo, op, new_branch=new_branch, base=entry.get("base") if seen is not None else None)
    return True


def _add_worktree(entry: dict[str, Any], repo: Repo, op: Held, *, new_branch: bool, base: str | None = None) -> None:
    """``git worktree add`` of the entry's path on its branch (made first when ``new_branch``,
    at ``base`` — the commit id the add resolved a moment ago — else at the entry's base),
    the operation lock shared with git; a failed add deletes the branch it made, and a target
    a racing add filled meanwhile is said to be taken."""

    path, branch = entry["path"], entry["branch"]
    env = dict(os.environ)
    env[ADD_ENV] = "1"
    created = None  # the commit of the branch this add created, deleted again if the add fails
    with op.shared_with_children():
        try:
            if new_branch:
                # Created first and create-only, so a failed add deletes exactly what it made
                # (the losers of a same-path race used to leave their new branches behind).
                base = base or _base_of(entry, repo)
                if base is None or not create_branch(branch, base, repo.main_root):
                    raise ConflictError(
                        f"branch {branch} was created by another process meanwhile",
                        fix="run the command again: it then checks that branch out, or reports who has it",
                    )
                created = base
            git_wt.add_worktree(Path(path), branch=branch, base=None, create_branch=False, cwd=repo.main_root, env=env)
        except BaseException as exc:
            if created is not None:
                delete_branch_at(branch, created, repo.main_root)
            if isinstance(exc, GitstError) and not isinstance(exc, ConflictError) and _occupied(path):
                raise _taken_meanwhile(path) from None
            raise


def _branch_free(branch: str, repo: Repo, known: list[GitWorktree], removed: GitWorktree | None) -> bool:
    """True when ``branch`` exists and no worktree has it checked out any more. ``removed``: the
    worktree git just removed cleanly, from ``known`` (listed before): when it had the branch,
    the branch exists and the other worktrees are ``known``'s others — nothing to ask git."""
    if removed is not None and removed.branch == branch:
        return not any(w.branch == branch for w in known if w is not removed)
    return branch_exists(branch, repo.main_root) and not any(
        w.branch == branch for w in git_wt.list_worktrees(repo.main_root)
    )


def _base_of(entry: dict[str, Any], repo: Repo) -> str | None:
    """The commit a new branch starts from: the entry's ``base``, else HEAD's."""
    return resolve_commit(entry.get("base") or "HEAD", repo.main_root) or resolve_commit("HEAD", repo.main_root)


def _occupied(path: str) -> bool:
    """True when ``path``, free when ``add`` checked it, now holds something (a racing add)."""
    target = Path(path)
    try:
        return target.is_symlink() or target.is_file() or (target.is_dir() and any(target.iterdir()))
    except OSError:
        return False


def _taken_meanwhile(path: str) -> ConflictError:
    return ConflictError(
        f"{path} was taken by another `git st worktree add` meanwhile",
        fix="choose another --path (or wait for the other command and look at `git st worktree list`)",
    )


def finish_remove(
    entry: dict[str, Any], repo: Repo, who: Identity | None, *, seen: Listed | None = None
) -> dict[str, Any]:
    """Carry out a removal whose checks passed: the worktree (forced, locked or not), the
    branch when asked, the claim (released when ``who``'s, ended when stale or dead), then the
    entry. ``seen``: git's worktrees as the caller listed them a moment ago (used while git's
    worktree files are unchanged)."""
    issue, path, branch = entry["issue"], entry["path"], entry.get("branch")
    pending = entry.get("pending") or {}
    known = _listing(repo, seen)
    listed = git_worktree_at(path, known)
    removed = False
    if listed is not None or os.path.lexists(path):
        refuse_nested(path, repo, known)
        if complete(path, listed):
            try:
                git_wt.remove_worktree(path, force=True, locked=True, cwd=repo.main_root)
                removed = True
            except GitError:
                removed = False  # half-removed already: finished by hand below
        if not removed:
            discard(path, repo, known)  # unlocks it first
    else:
        git_wt.prune_worktrees(repo.main_root)
    deleted = None
    if pending.get("delete_branch") and branch and _branch_free(branch, repo, known, listed if removed else None):
        delete_branch(branch, repo.main_root)
        deleted = branch
    ended = claims.end_claim(issue, who, root=repo.state_root, action="remove")
    registry.remove_worktree_entry(issue, root=repo.state_root)
    return {
        "issue": issue,
        "path": path,
        "branch": branch,
        "deleted_branch": deleted,
        "claim": ended,
    }
