"""Taking worktrees away: ``git st worktree remove | clean | prune``.

- ``remove ISSUE`` removes one issue's worktree, its registry entry and the claim, after
  checking that nothing would be lost (uncommitted changes — gitst's own unchanged copies
  excepted — and commits found nowhere else) and that no other live session holds the
  directory: ownership is read from the worktree itself (git's lock reason, the branch it
  has checked out, every registry entry that points at it), not from one record.
  ``--delete-branch`` deletes the branch too when it is merged into its base.
- ``clean`` removes every worktree whose owner is gone (released, dead, or stale without
  a process we can see) and that holds nothing to lose; ``--merged`` only those whose
  branch is merged into its base. Never a live session's, never a dirty one without
  ``--force``; it says what it removed and what it kept, and why.
- ``prune`` repairs interrupted adds and removes, drops entries whose directory is gone,
  cleans the state dir (:mod:`gitst.sessions.gc`) and runs ``git worktree prune``. It never
  deletes a directory that holds anything but what an interrupted command left.

Every removal goes through :mod:`gitst.worktrees.journal`: ``pending: remove`` is written
once the checks have passed, before git is touched, so a removal that is interrupted is
finished by the next command.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitst.core.errors import ConflictError, GitstError, ProblemsFound, UsageError
from gitst.core.errors import ConflictError as Busy
from gitst.core.values import field, value_class
from gitst.git import worktrees as git_wt
from gitst.git.history import commits_only_here
from gitst.git.refs import refs_with_upstreams
from gitst.git.worktrees import GitWorktree
from gitst.sessions import claims as sessions
from gitst.sessions import gc, locks, registry
from gitst.sessions.claims import configured_remote
from gitst.sessions.gc import GcReport
from gitst.sessions.identity import Identity, host, pid_alive
from gitst.statedir.records import CorruptRecord
from gitst.worktrees import journal
from gitst.worktrees.changes import base_branch_of, changes, merged_into_base
from gitst.worktrees.context import LOCK_REASON_RE, Repo, inside, repo_of, same_path
from gitst.worktrees.journal import git_worktree_at
from gitst.worktrees.manager import ORPHANED, UNREGISTERED, list_rows

__all__ = ["CleanReport", "PruneReport", "clean", "prune", "remove"]


def _stderr(text: str) -> None:
    print(text, file=sys.stderr)


def _foreign_holder(
    entry: dict[str, Any], who: Identity, repo: Repo, known: list[GitWorktree]
) -> sessions.IssueStatus | None:
    """The claim (an IssueStatus) of another live session on the directory ``entry`` points
    at, judged from the worktree itself; None when there is none."""
    for other in _claimants(entry, repo, known):
        try:
            status = sessions.inspect_issue(other, who, root=repo.state_root)
        except (UsageError, CorruptRecord):
            continue
        if status.state == sessions.TAKEN:
            return status
    return None


def _claimants(entry: dict[str, Any], repo: Repo, known: list[GitWorktree]) -> list[str]:
    """The other issues that may hold the directory ``entry`` points at: registry entries
    of the same path, the issue in git's lock reason of it, the issue of its branch."""
    issue, where = entry["issue"], entry["path"]
    candidates: list[str] = []
    for other, _path, other_entry, _problem in registry.list_worktree_entries(repo.state_root):
        if other_entry is not None and other != issue and same_path(other_entry["path"], where):
            candidates.append(other)
    listed = git_worktree_at(where, known)
    if listed is not None and listed.locked:
        match = re.match(LOCK_REASON_RE, listed.locked)
        if match and match["issue"] != issue:
            candidates.append(match["issue"])
    if listed is not None and listed.branch:
        owner_issue = registry.issue_for_branch(listed.branch, repo.main_root, root=repo.state_root)
        if owner_issue and owner_issue != issue:
            candidates.append(owner_issue)
    return list(dict.fromkeys(candidates))


def _refuse_foreign(entry: dict[str, Any], who: Identity, repo: Repo, known: list[GitWorktree]) -> None:
    """Exit 2 for the main worktree, 3 for a directory another live session holds (even forced)."""
    where = entry["path"]
    if known and same_path(where, known[0].path):
        raise UsageError(f"{where} is the main worktree; gitst never removes it")
    holder = _foreign_holder(entry, who, repo, known)
    if holder is not None:
        raise ConflictError(
            f"{where} is the worktree of issue {holder.issue}, claimed by {holder.describe()}; not removing it",
            fix=f"fix the registry entry of issue {entry['issue']} (it points at another issue's worktree), "
            "or wait until that session releases it",
        )


def _summary(items: list[str], limit: int = 5) -> str:
    return ", ".join(items[:limit]) + (" …" if len(items) > limit else "")


def _losses(entry: dict[str, Any], where: str, *, head: str | None, delete_branch: bool, repo: Repo) -> list[str]:
    """What removing the worktree (and, with ``delete_branch``, its branch) would lose."""
    problems = []
    found = changes(where, entry)
    if found.paths:
        problems.append(f"{len(found.paths)} uncommitted change(s): {_summary(found.paths)}")
    listed = refs_with_upstreams(repo.main_root)  # one listing answers both questions below
    unique = commits_only_here(where, entry.get("branch"), refs=listed[0], head=head)
    if unique:
        problems.append(f"{len(unique)} commit(s) on no other branch or remote: {_summary([c[:10] for c in unique])}")
    if delete_branch:
        merged, why = merged_into_base(head, base_branch_of(entry, repo.main_root), repo.main_root, refs=listed)
        if not merged:
            problems.append(f"branch {entry.get('branch')} is {why}")
    return problems


def _done_message(issue: str, done: dict[str, Any]) -> str:
    branch = done.get("branch")
    tail = f"deleted branch {branch}" if done.get("deleted_branch") else f"branch {branch} is kept"
    return f"gitst: removed the worktree of issue {issue} ({done['path']}); {tail}"


def remove(
    issue: str,
    who: Identity,
    *,
    cwd: str | os.PathLike[str] | None = None,
    force: bool = False,
    delete_branch: bool = False,
    say: Callable[[str], None] = _stderr,
    repo: Repo | None = None,
) -> dict[str, Any]:
    """Remove the worktree of ``issue``, its registry entry and the claim (module docstring).

    Exit 1 when something would be lost (unless ``force``), 3 while another live session
    holds the issue or the directory (even with ``force``), 2 for the worktree you stand in,
    the main worktree, or a directory that is not a worktree of this repository. ``repo``:
    the repository around ``cwd`` when the caller knows it already (``land``).
    """
    repo = repo or repo_of(cwd)
    root = repo.state_root
    sessions.preflight(who, root, issue)
    registry.operation_lock_path(issue, root=root)
    with journal.operation(issue, root):
        entry = _entry_to_remove(issue, who, root)
        where = entry["path"]
        if journal.pending_op(entry) == "remove":
            done = journal.finish_remove(entry, repo, who)
            say(f"gitst: finished the interrupted removal of the worktree of issue {issue} ({where})")
            return {**done, "forced": force, "released": done["claim"] is not None}
        seen = journal.listed_now(repo)  # used again by finish_remove while git's worktree files hold
        known = seen.known
        listed = journal.git_worktree_at(where, known)
        exists = os.path.isdir(where)
        _refuse_foreign(entry, who, repo, known)
        journal.refuse_nested(where, repo, known)  # exit 3 even with --force: another worktree is inside
        if exists and inside(os.path.abspath(cwd or os.getcwd()), where):
            raise UsageError(f"you are inside {where}", fix="run this from another worktree")
        if journal.pending_op(entry) == "add" and not journal.complete(where, listed):
            journal.mark(issue, "remove", root)  # an add that never finished: nothing of anyone's is there
            done = journal.finish_remove(registry.load_worktree_entry(issue, root=root) or entry, repo, who)
            say(f"gitst: removed the half-made worktree of issue {issue} ({where}) an interrupted add left")
            return {**done, "forced": force, "released": done["claim"] is not None}
        if exists:
            _refuse_loss(entry, listed, repo, known, force=force, delete_branch=delete_branch)
        marked = journal.mark(issue, "remove", root, delete_branch=delete_branch)
        done = journal.finish_remove(marked, repo, who, seen=seen)
    say(_done_message(issue, done))
    return {**done, "forced": force, "released": done["claim"] is not None}


def _entry_to_remove(issue: str, who: Identity, root: Path) -> dict[str, Any]:
    """The registry entry of ``issue``; exit 2 when it has none, 3 while another live
    session holds the issue."""
    entry = registry.load_worktree_entry(issue, root=root)
    if entry is None:
        raise UsageError(
            f"issue {issue} has no registered worktree", fix="`git st worktree list` shows the registered ones"
        )
    status = sessions.inspect_issue(issue, who, root=root)
    if status.state == sessions.TAKEN:
        raise sessions.IssueTaken(status, action="remove")
    return entry


def _refuse_loss(
    entry: dict[str, Any],
    listed: GitWorktree | None,
    repo: Repo,
    known: list[GitWorktree],
    *,
    force: bool,
    delete_branch: bool,
) -> None:
    """For an existing directory: exit 2 when it is not a worktree of this repository, 1
    (unless ``force``) when removing it would lose work (:func:`_losses`)."""
    issue, where = entry["issue"], entry["path"]
    if listed is None and not journal.deletable(where, repo, known):
        raise UsageError(
            f"{where} is not a worktree of this repository; gitst will not delete it",
            fix=f"check the registry entry of issue {issue}; "
            "`git st worktree prune` drops entries whose directory is gone",
        )
    if force:
        return
    problems = _losses(entry, where, head=listed.head if listed else None, delete_branch=delete_branch, repo=repo)
    if problems:
        raise ProblemsFound(
            f"refusing to remove the worktree of issue {issue} ({where}): " + "; ".join(problems),
            fix="commit and push (or merge) the work first, or pass --force"
            + (" (the branch is kept unless --delete-branch)" if not delete_branch else ""),
        )


# --- clean ---------------------------------------------------------------------------------------


@value_class
class CleanReport:
    dry_run: bool
    merged: bool
    removed: list[dict[str, Any]] = field(default_factory=list)  # {"issue", "path", "branch", "deleted_branch", "why"}
    kept: list[dict[str, Any]] = field(default_factory=list)  # {"issue", "path", "branch", "why"}

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "merged": self.merged, "removed": self.removed, "kept": self.kept}


def _owner_gone(lock: dict[str, Any] | None) -> tuple[bool, str]:
    """(may clean remove it?, why) from the issue's lock: released, dead, or stale with no
    process we can see are gone; live, or stale while its process still runs here, are not."""
    state = locks.state_of(lock)
    owner = (lock or {}).get("owner") or {}
    session = owner.get("session")
    if state == locks.RELEASED:
        return True, "its claim was released"
    if state == locks.DEAD:
        return True, f"its owner {session} is dead"
    if state == locks.STALE:
        if (
            owner.get("liveness") != "heartbeat"
            and owner.get("host") == host()
            and pid_alive(owner.get("pid", 0), owner.get("pid_start"))
        ):
            return False, f"session {session}'s lease expired but its process {owner.get('pid')} still runs"
        return True, f"its owner {session}'s lease expired"
    return False, f"claimed by live session {session}"


def clean(
    who: Identity,
    *,
    cwd: str | os.PathLike[str] | None = None,
    merged: bool = False,
    force: bool = False,
    delete_branch: bool = False,
    dry_run: bool = False,
) -> CleanReport:
    """Remove the worktrees of gone owners that hold nothing to lose (module docstring)."""
    repo = repo_of(cwd)
    root = repo.state_root
    report = CleanReport(dry_run, merged)
    for issue, path, entry, problem in registry.list_worktree_entries(root):
        if entry is None:
            why = f"its registry entry is invalid ({problem.code if problem else 'READ'})"
            report.kept.append({"issue": issue, "path": str(path), "branch": None, "why": why})
            continue
        row = {"issue": issue, "path": entry["path"], "branch": entry.get("branch")}
        try:
            with journal.operation(issue, root, timeout=0):
                verdict = _clean_one(
                    entry, who, repo, merged=merged, force=force, delete_branch=delete_branch, dry_run=dry_run
                )
        except ConflictError as busy:
            verdict = ("kept", busy.message, None)
        except GitstError as exc:
            verdict = ("kept", f"could not remove it: {exc.message}", None)
        action, why, deleted = verdict
        if action == "kept":
            report.kept.append({**row, "why": why})
        else:
            report.removed.append({**row, "deleted_branch": deleted, "why": why})
    return report


def _clean_one(
    entry: dict[str, Any], who: Identity, repo: Repo, *, merged: bool, force: bool, delete_branch: bool, dry_run: bool
) -> tuple[str, str, str | None]:
    """("removed" | "kept", why, deleted branch) for one registered worktree."""
    issue, where = entry["issue"], entry["path"]
    op = journal.pending_op(entry)
    known = git_wt.list_worktrees(repo.main_root)
    listed = journal.git_worktree_at(where, known)
    if op == "remove" or (op == "add" and not journal.complete(where, listed)):
        return _finish_interrupted(entry, op, who, repo, dry_run=dry_run)
    kept, why_owner = _kept_for_others(entry, who, repo, known)
    if kept is not None:
        return "kept", kept, None
    if not os.path.isdir(where):
        if not dry_run:
            journal.finish_remove(journal.mark(issue, "remove", repo.state_root), repo, who)
        return "removed", "its directory was already gone", None
    if listed is None:
        return "kept", "git does not know this worktree (see `git st worktree list`)", None
    kept, is_merged, why_merged = _kept_for_work(entry, listed, repo, merged=merged, force=force)
    if kept is not None:
        return "kept", kept, None
    why = f"{why_owner}; " + (why_merged if is_merged else "nothing found only here")
    if dry_run:
        return "removed", why, None
    marked = journal.mark(issue, "remove", repo.state_root, delete_branch=bool(delete_branch and is_merged))
    done = journal.finish_remove(marked, repo, who)
    return "removed", why, done["deleted_branch"]


def _finish_interrupted(
    entry: dict[str, Any], op: str | None, who: Identity, repo: Repo, *, dry_run: bool
) -> tuple[str, str, str | None]:
    """:func:`_clean_one` of an entry an interrupted remove, or an add that never made its
    worktree, left: the remove is finished."""
    why = "an interrupted remove, finished" if op == "remove" else "half-made by an interrupted add"
    if dry_run:
        return "removed", why, None
    if op == "add":
        entry = journal.mark(entry["issue"], "remove", repo.state_root)
    done = journal.finish_remove(entry, repo, who)
    return "removed", why, done["deleted_branch"]


def _kept_for_others(
    entry: dict[str, Any], who: Identity, repo: Repo, known: list[GitWorktree]
) -> tuple[str | None, str]:
    """(why the worktree is kept for somebody else - its claim's live owner, another issue
    sharing its directory, a worktree inside it - or None; why its owner is gone)."""

    try:
        lock = locks.read(sessions.issue_lock_name(entry["issue"]), repo.state_root)
    except CorruptRecord as bad:
        return f"its claim's lock record is invalid ({bad.code})", ""
    gone, why_owner = _owner_gone(lock)
    if not gone:
        return why_owner, why_owner
    holder = _foreign_holder(entry, who, repo, known)
    if holder is not None:
        return f"the directory is also issue {holder.issue}'s, claimed by {holder.describe()}", why_owner
    nested = journal.nested_worktrees(entry["path"], repo, known)
    if nested:
        return f"it holds another worktree ({_summary(nested, 3)})", why_owner
    return None, why_owner


def _kept_for_work(
    entry: dict[str, Any], listed: GitWorktree, repo: Repo, *, merged: bool, force: bool
) -> tuple[str | None, bool, str]:
    """(why the worktree is kept for the work in it - not merged with ``merged``, commits found
    only there, uncommitted changes without ``force`` - or None; is it merged; how)."""
    where = entry["path"]
    is_merged, why_merged = merged_into_base(listed.head, base_branch_of(entry, repo.main_root), repo.main_root)
    if merged and not is_merged:
        return f"its branch is {why_merged}", is_merged, why_merged
    if not merged:
        unique = commits_only_here(where, entry.get("branch"))
        if unique:
            return f"{len(unique)} commit(s) found only here", is_merged, why_merged
    found = changes(where, entry)
    if found.paths and not force:
        return (
            f"{len(found.paths)} uncommitted change(s): {_summary(found.paths)} (--force removes them)",
            is_merged,
            why_merged,
        )
    return None, is_merged, why_merged


# --- prune ---------------------------------------------------------------------------------------------


class PruneReport:
    __slots__ = ("dropped_entries", "dry_run", "gc", "git", "repaired", "unregistered")

    def __init__(self, dry_run: bool):
        self.dry_run = dry_run
        self.dropped_entries: list[dict[str, Any]] = []
        self.repaired: list[
            dict[str, Any]
        ] = []  # {"issue", "path", "action": "finished-remove" | "finished-add" | "undid-add"}
        self.unregistered: list[
            dict[str, Any]
        ] = []  # {"path", "branch", "issue"}: linked worktrees on an issue's branch
        self.gc = GcReport(dry_run)
        self.git: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "repaired": self.repaired,
            "dropped_entries": self.dropped_entries,
            "released_locks": self.gc.released_locks,
            "dropped_sessions": [s["session"] for s in self.gc.dropped_sessions],
            "removed_temp_files": self.gc.removed_temp_files,
            "unregistered": self.unregistered,
            "git": self.git,
        }


def _repair(entry: dict[str, Any], repo: Repo, known: list[GitWorktree], dry_run: bool) -> str | None:
    """Finish or undo an interrupted add or remove (its operation lock is held by the caller)."""
    op = journal.pending_op(entry)
    issue, where = entry["issue"], entry["path"]
    if op == "remove":
        if not dry_run:
            journal.finish_remove(entry, repo, None)
        return "finished-remove"
    if op == "add":
        if journal.complete(where, journal.git_worktree_at(where, known)):
            if not dry_run:
                registry.write_worktree_entry({"issue": issue}, root=repo.state_root, drop=("pending",))
            return "finished-add"
        if not dry_run:
            journal.finish_remove(journal.mark(issue, "remove", repo.state_root), repo, None)
        return "undid-add"
    return None


def _repair_interrupted(repo: Repo, known: list[GitWorktree], dry_run: bool) -> list[dict[str, Any]]:
    """Repair each entry an add or remove left pending (:func:`_repair`), under its
    operation lock; one a command is working on right now is left alone."""
    root = repo.state_root
    repaired = []
    for issue, _path, entry, _problem in registry.list_worktree_entries(root):
        if entry is None or not journal.pending_op(entry):
            continue
        try:
            with journal.operation(issue, root, timeout=0):
                current = registry.load_worktree_entry(issue, root=root)
                action = _repair(current, repo, known, dry_run) if current else None
        except Busy:
            continue  # a command is working on it right now
        if action:
            repaired.append({"issue": issue, "path": entry["path"], "action": action})
    return repaired


def _prune_rows(report: PruneReport, repo: Repo, cwd: str | os.PathLike[str] | None) -> None:
    """Name the unregistered worktrees on an issue's branch; drop the entries (not just
    repaired) whose directory is gone (only named with ``report.dry_run``)."""
    root = repo.state_root
    repaired = {item["issue"] for item in report.repaired}
    for row in list_rows(cwd):
        if row.state == UNREGISTERED:
            owner = registry.issue_for_branch(row.branch, cwd, root=root) if row.branch else None
            if owner is not None:
                report.unregistered.append({"path": row.path, "branch": row.branch, "issue": owner})
            continue
        if row.state != ORPHANED or row.issue is None or row.issue in repaired or os.path.isdir(row.path):
            continue
        report.dropped_entries.append({"issue": row.issue, "path": row.path, "branch": row.branch})
        if not report.dry_run:
            git_wt.unlock_worktree(row.path, repo.main_root)
            registry.remove_worktree_entry(row.issue, root=root)


def prune(cwd: str | os.PathLike[str] | None = None, *, dry_run: bool = False) -> PruneReport:
    """Repair interrupted adds and removes, drop entries whose directory is gone, clean the
    state dir, run ``git worktree prune``. Never deletes a directory with anyone's work."""
    repo = repo_of(cwd)
    root = repo.state_root
    report = PruneReport(dry_run)
    report.repaired = _repair_interrupted(repo, git_wt.list_worktrees(repo.main_root), dry_run)
    _prune_rows(report, repo, cwd)
    report.gc = gc.collect(root, dry_run=dry_run, remote=configured_remote(cwd), cwd=cwd)
    report.git = git_wt.prune_worktrees(repo.main_root, dry_run=dry_run)
    return report
