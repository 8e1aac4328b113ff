"""``git st sync [BASE]``: keep a PR branch mergeable on a git host that runs no merge driver.

A host (GitHub, GitLab, …) ignores custom merge drivers and ``merge=union``: when one PR
that appended to the plan is merged, every other open PR that appended to it conflicts. sync
fetches BASE from the remote and merges it into the current branch here, where the plan
driver runs (or rebases onto it, ``--rebase``); afterwards the host's own merge of the
branch is clean. docs/hooks.md, "Keeping PRs mergeable".

1. fetch ``refs/heads/BASE`` into ``refs/remotes/<remote>/BASE``;
2. nothing to do when BASE is already in the branch (and, with ``plan_conflicts_only``,
   when the host would merge the two cleanly anyway);
3. what would conflict on the host (``git merge-tree`` with the plan merged as text): paths
   other than plan files (``merge=gitst-plan``) are refused (exit 3), nothing written — a
   person resolves those;
4. merge (``--no-ff``, hooks run) or rebase with the driver — the driver runs once per
   merge, never for a trial merge first —; a failure is aborted (exit 3), and what still
   conflicted with the driver (a contradiction the driver cannot merge) is named as such;
5. checked: the host's merge of BASE and the result is clean;
6. ``push``: the branch goes to the remote with a lease on the commit it was before, so
   somebody else's newer push is never overwritten (exit 3 instead).
"""

from __future__ import annotations

import os
from typing import Literal

from gitst import settings
from gitst.core.errors import ConflictError, EnvironmentProblem, UsageError
from gitst.core.values import as_dict, field, value_class
from gitst.git import attributes, integrate, objects, remote
from gitst.git.history import is_ancestor
from gitst.git.index import staged_entries
from gitst.git.repo import current_branch, require_repo
from gitst.git.worktrees import uncommitted_changes
from gitst.plan import driver

__all__ = ["SyncResult", "sync"]

Action = Literal["up-to-date", "clean", "merged", "rebased"]


@value_class
class SyncResult:
    branch: str
    base: str
    remote: str
    action: Action
    before: str  # the branch's commit before
    head: str  # and after
    conflicts: list[str] = field(default_factory=list)  # what the host would have found
    pushed: bool = False
    remote_before: str = ""  # the remote's branch before (the push's lease; "" when it had none)
    renumbered: list[str] = field(default_factory=list)  # the driver's lines: this branch's items that moved

    def to_dict(self) -> dict[str, object]:
        return as_dict(self)

    @property
    def upstream(self) -> str:
        """How BASE is named in messages: ``origin/main``, or ``main`` when synced locally."""
        return f"{self.remote}/{self.base}" if self.remote else self.base


def _plan_paths(paths: list[str], cwd: str | os.PathLike[str] | None) -> set[str]:
    """The paths that merge with the plan driver (``merge=gitst-plan``)."""
    merge_attr = attributes.check_attr(paths, cwd, attribute="merge")
    return {path for path in paths if merge_attr.get(path) == driver.DRIVER}


def sync(
    base: str | None = None,
    *,
    remote_name: str | None = None,
    rebase: bool = False,
    push: bool = False,
    plan_conflicts_only: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    local: bool = False,
    fetch: bool = True,
    on_branch: str | None = None,
) -> SyncResult:
    """(the module docstring) ``local``: merge the local branch BASE, no remote involved (the
    agent loop on one machine); ``fetch=False``: the caller fetched BASE a moment ago;
    ``on_branch``: the branch checked out at ``cwd``, which the caller knows and whose work
    tree it knows clean (``land``: it read both and committed since) — not asked again."""
    info = require_repo(cwd)
    top = info.work_tree
    _refuse_leftovers(info.git_dir)
    base = base or settings.str_setting("sync_base", cwd)
    name = "" if local else remote_name or settings.optional_str_setting("remote", cwd) or "origin"
    branch = on_branch if on_branch and on_branch != base else _branch_to_sync(base, name, top, cwd)
    tracking = _fetch_base(base, name, fetch=fetch, cwd=cwd)
    deadline = settings.remote_timeout(cwd)
    before = objects.resolve_commit("HEAD", cwd) or ""
    upstream = objects.resolve_commit(tracking, cwd) or ""
    result = SyncResult(branch, base, name, "up-to-date", before, before)
    if push:  # what the remote's branch is now: the push's lease
        result.remote_before = _push_lease(result, deadline, cwd)
    if is_ancestor(upstream, before, cwd):
        return _push(result, cwd) if push else result
    result.conflicts = _host_conflicts(result, upstream, cwd)
    if plan_conflicts_only and not result.conflicts:
        result.action = "clean"
        return result
    _refuse_outside_the_plan(result, top)
    _integrate(result, tracking, rebase, cwd)
    # no second look at what a host would find: the branch now contains BASE, so a host's merge
    # of it is a fast-forward and cannot conflict (the check that stood here could not fail)
    return _push(result, cwd) if push else result


def _branch_to_sync(base: str, name: str, top: str | os.PathLike[str], cwd: str | os.PathLike[str] | None) -> str:
    """The current branch, once the remote exists, HEAD is on a branch other than ``base`` and
    the work tree has no uncommitted changes (untracked files aside); else exit 2."""
    if name and not remote.remote_exists(name, cwd):
        raise UsageError(f"no git remote named {name!r}", fix="name one with --remote (see `git remote -v`)")
    branch = current_branch(cwd)
    if branch is None:
        raise UsageError("HEAD is detached: sync works on a branch", fix="`git switch BRANCH` first")
    if branch == base:
        raise UsageError(f"you are on {base}, the branch to sync with", fix="switch to the PR's branch first")
    dirty = [line for line in uncommitted_changes(top) if not line.startswith("??")]
    if dirty:
        raise UsageError(
            f"the work tree has uncommitted changes ({len(dirty)} files)", fix="commit or stash them, then sync"
        )
    return branch


def _fetch_base(base: str, name: str, *, fetch: bool, cwd: str | os.PathLike[str] | None) -> str:
    """The ref BASE is merged from: fetched into ``refs/remotes/<name>/BASE`` (unless the caller
    just did, ``fetch=False``); the local branch itself when ``name`` is "" (``local``)."""
    if not name:
        return f"refs/heads/{base}"
    tracking = f"refs/remotes/{name}/{base}"
    if fetch:
        remote.fetch_refs(name, [f"+refs/heads/{base}:{tracking}"], cwd, timeout=settings.remote_timeout(cwd))
    return tracking


def _push_lease(result: SyncResult, deadline: float, cwd: str | os.PathLike[str] | None) -> str:
    """The remote's commit of the branch ("" when it has none), fetched: the push's lease.
    Exit 3 when it holds commits the branch does not (nothing is synced or pushed)."""
    name, branch = result.remote, result.branch
    mine = f"refs/remotes/{name}/{branch}"
    fetched = remote.fetch_refs(name, [f"+refs/heads/{branch}:{mine}"], cwd, timeout=deadline, missing_ok=True)
    lease = (objects.resolve_commit(mine, cwd) if fetched else None) or ""
    if lease and not is_ancestor(lease, result.before, cwd):
        raise ConflictError(
            f"{name}/{branch} has commits this branch does not: nothing was synced or pushed",
            fix=f"bring them in first (`git pull {name} {branch}`), then sync again",
        )
    return lease


def _host_conflicts(result: SyncResult, upstream: str, cwd: str | os.PathLike[str] | None) -> list[str]:
    """The paths a git host's merge of BASE into the branch would conflict on (plans as text)."""
    host = remote.merge_tree_conflicts(result.before, upstream, cwd, overrides=driver.HOST_VIEW)
    if host is None:
        raise UsageError(f"{result.branch} and {result.upstream} have no history in common")
    return host


def _refuse_outside_the_plan(result: SyncResult, top: str | os.PathLike[str]) -> None:
    """Exit 3, nothing written, when the host's conflicts reach beyond the plan files: a
    person resolves those."""
    upstream_name = result.upstream
    plans = _plan_paths(result.conflicts, top)
    others = [path for path in result.conflicts if path not in plans]
    if others:
        raise ConflictError(
            f"{result.branch} conflicts with {upstream_name} outside the plan: {', '.join(others)}",
            fix=f"merge {upstream_name} by hand (`git merge {upstream_name}`), resolve, commit and push",
        )


def _integrate(result: SyncResult, tracking: str, rebase: bool, cwd: str | os.PathLike[str] | None) -> None:
    """Merge BASE into the branch (or rebase onto it) with the plan driver; a failure is aborted
    (exit 3). ``result`` records what was done, the driver's renumbering lines and the new head."""
    kind = "rebase" if rebase else "merge"
    upstream_name = result.upstream
    if rebase:
        done = integrate.rebase(tracking, cwd, overrides=driver.driver_overrides(tracking))
    else:
        done = integrate.merge(
            tracking,
            f"Merge {upstream_name} into {result.branch} (git st sync)",
            cwd,
            overrides=driver.driver_overrides(tracking),
        )
    if not done.ok:
        left = sorted({entry.path for entry in staged_entries(cwd) if entry.stage})  # what the merge left conflicted
        integrate.abort(kind, cwd)
        # only plan files left conflicted: a contradiction the driver cannot merge, named as such
        if left and _plan_paths(left, require_repo(cwd).work_tree) == set(left):
            raise ConflictError(
                f"the plan merge driver cannot merge {', '.join(left)} of {result.branch} and {upstream_name}",
                fix=f"run `git merge {upstream_name}` to see why (the driver says what contradicts), resolve, commit",
            )
        detail = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
        raise ConflictError(
            f"git {kind} of {upstream_name} failed and was undone: {' / '.join(detail[-3:])}",
            fix=f"run `git {kind} {upstream_name}` yourself to resolve it",
        )
    result.action = "rebased" if rebase else "merged"
    said = (done.stderr or b"").decode("utf-8", "replace").splitlines()
    result.renumbered = [line for line in said if line.startswith("gitst merge: ")]
    result.head = objects.resolve_commit("HEAD", cwd) or ""


def _refuse_leftovers(git_dir: str | os.PathLike[str]) -> None:
    """What an interrupted git command (a sync killed mid-merge) left in this work tree's git
    directory, named with its fix before anything runs: a merge or rebase in progress (exit 3),
    git's index lock (exit 4). Else the merge would fail on it and be reported as undone."""
    where = os.fspath(git_dir)
    for name, what, fix in (
        ("MERGE_HEAD", "a merge is in progress", "finish it (`git commit`) or undo it (`git merge --abort`)"),
        ("rebase-merge", "a rebase is in progress", "finish it (`git rebase --continue`) or `git rebase --abort`"),
        ("rebase-apply", "a rebase is in progress", "finish it (`git rebase --continue`) or `git rebase --abort`"),
        ("CHERRY_PICK_HEAD", "a cherry-pick is in progress", "`git cherry-pick --continue` or `--abort`"),
    ):
        if os.path.lexists(os.path.join(where, name)):
            raise ConflictError(
                f"{what} here ({os.path.join(where, name)} exists: an interrupted sync or git command?); "
                "nothing was synced",
                fix=f"{fix}, then sync again",
            )
    lock = os.path.join(where, "index.lock")
    if os.path.lexists(lock):
        raise EnvironmentProblem(
            f"git's index lock {lock} exists: another git command is running here, or one was killed "
            "(an interrupted sync?); nothing was synced",
            fix=f"if no git command is running in this work tree, remove it (`rm {lock}`), then sync again",
        )


def _push(result: SyncResult, cwd: str | os.PathLike[str] | None) -> SyncResult:
    """Push the branch with a lease on what the remote had (a newer push there is never lost)."""
    head = result.head
    ref = f"refs/heads/{result.branch}"
    pushed = remote.push_refs(
        result.remote,
        [remote.RefUpdate(ref, head, result.remote_before)],
        cwd,
        timeout=settings.remote_timeout(cwd),
        verify=True,
    )
    if not pushed.ok:
        why = pushed.rejected.get(ref, "rejected")
        raise ConflictError(
            f"{result.remote} refused {result.branch} ({why}): somebody pushed to it meanwhile",
            fix=f"fetch and look (`git fetch {result.remote} && git log {result.remote}/{result.branch}`), "
            f"then sync again; or push it yourself",
        )
    result.pushed = True
    return result
