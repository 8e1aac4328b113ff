"""One issue, one worktree, one live owner: ``git st worktree add|list|remove|prune|setup``
and the post-checkout hook's registration of hand-made worktrees.

``add`` claims the issue first (a contested issue is refused before anything is created),
then creates the branch and the linked worktree from the templates
(:mod:`gitst.sessions.registry`), registers it in ``state/active-worktrees/<issue>.json``,
``git worktree lock``s it with a reason naming the session, and sets it up
(:mod:`gitst.worktrees.setup`). Running ``add`` again for an issue the session already
has is a no-op that prints the path; running it for an issue whose registered worktree
belongs to a stale or dead session takes the worktree over (resume after a crash).

This module is imported by the post-checkout hook, which runs after every checkout: it
imports nothing heavy at load time (no click, no dataclasses — plain classes keep the
hook's fast path near the interpreter's start-up); everything else is imported inside
the functions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gitst.core.errors import ConflictError, GitstError, ProblemsFound, UsageError

__all__ = [
    "CORRUPT",
    "add",
    "list_rows",
    "post_checkout",
    "prune",
    "remove",
    "setup",
]

# Set while `git st worktree add` runs `git worktree add`: the post-checkout hook that git
# runs in the new worktree leaves the registration and setup to us.
ADD_ENV = "GITST_WORKTREE_ADD"

ACTIVE, STALE, ORPHANED, UNREGISTERED, CORRUPT = "active", "stale", "orphaned", "unregistered", "corrupt"


def _stderr(text: str) -> None:
    """A line for the person on stderr; branch names and paths may hold control characters."""
    from gitst.core.terminal import sanitize

    print(sanitize(text), file=sys.stderr)


class _Repo:
    __slots__ = ("main_root", "state_root")

    def __init__(self, main_root: Path, state_root: Path):
        self.main_root = main_root
        self.state_root = state_root


def _repo(cwd) -> _Repo:
    from gitst.git.repo import require_repo
    from gitst.statedir.paths import state_dir

    info = require_repo(cwd)
    return _Repo(info.shared_root, state_dir(cwd))


def _same_path(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def lock_reason(issue: str, who) -> str:
    return f"gitst: issue {issue} claimed by session {who.session} (pid {who.pid} on {who.host})"


# --- add -------------------------------------------------------------------------------------------


class AddResult:
    """What ``add`` did. ``created`` is False when the session already had the worktree or
    took it over (``adopted_from`` is then the previous, stale or dead, owner)."""

    __slots__ = ("adopted_from", "branch", "created", "entry", "issue", "path", "setup")

    def __init__(
        self,
        issue: str,
        path: str,
        branch: str,
        created: bool,
        adopted_from: str | None = None,
        setup: dict | None = None,
        entry: dict | None = None,
    ):
        self.issue, self.path, self.branch, self.created = issue, path, branch, created
        self.adopted_from, self.setup, self.entry = adopted_from, setup, entry


def add(
    issue: str,
    who,
    *,
    cwd=None,
    branch: str | None = None,
    base: str | None = None,
    path: str | None = None,
    description: str | None = None,
    ttl: float | None = None,
    say=_stderr,
) -> AddResult:
    from gitst.core import timestamps
    from gitst.git import worktrees as git_wt
    from gitst.git.objects import resolve_commit
    from gitst.git.refs import branch_exists, create_branch, delete_branch_at, valid_branch_name
    from gitst.sessions import claims as sessions
    from gitst.sessions import locks, registry
    from gitst.statedir.paths import validate_identifier
    from gitst.worktrees.setup import run_setup

    validate_identifier(issue, "issue")
    repo = _repo(cwd)
    root = repo.state_root
    sessions.preflight(who, root, issue)
    registry.worktree_entry_path(issue, root=root)
    ttl = ttl or locks.default_ttl(cwd)
    status = sessions.inspect_issue(issue, who, root=root)
    if status.state == sessions.TAKEN:
        raise sessions.IssueTaken(status)  # refused first; the claim below settles races
    entry = registry.load_worktree_entry(issue, root=root)

    if entry is not None:
        return _reuse(issue, who, entry, repo, branch=branch, path=path, description=description, ttl=ttl, say=say)

    branch = branch or registry.branch_for_issue(issue, cwd)
    if not valid_branch_name(branch, cwd):
        raise UsageError(f"invalid branch name {branch!r}")
    target = Path(os.path.abspath(os.path.expanduser(path))) if path else registry.worktree_path_for_issue(issue, cwd)
    if os.path.lexists(target) and (not target.is_dir() or target.is_symlink() or any(target.iterdir())):
        raise UsageError(f"{target} already exists", fix="choose another --path or remove it")
    for existing in git_wt.list_worktrees(cwd):
        if existing.branch == branch:
            raise ConflictError(
                f"branch {branch} is already checked out in {existing.path}",
                fix="choose another --branch, or register that worktree by re-running its checkout",
            )
    existing_branch = branch_exists(branch, cwd)
    if existing_branch and base:
        raise UsageError(
            f"branch {branch} already exists; --base applies only to a new branch",
            fix="drop --base to check the existing branch out, or choose another --branch",
        )
    base_commit = None
    if not existing_branch:
        base_commit = resolve_commit(base or "HEAD", cwd)
        if base_commit is None:
            raise UsageError(f"unknown base revision {base or 'HEAD'!r}")

    claimed = sessions.claim(
        issue, who, root=root, ttl=ttl, description=description, branch=branch, worktree=str(target)
    )
    created = None  # the branch this add created (deleted again if the add fails)
    try:
        env = dict(os.environ)
        env[ADD_ENV] = "1"
        if base_commit is not None:
            # Created first and create-only, so a failed add removes exactly what it made (the
            # losers of a same-path race used to leave their new branches behind).
            if not create_branch(branch, base_commit, cwd):
                raise ConflictError(
                    f"branch {branch} was created by another process meanwhile",
                    fix="run the command again: it then checks that branch out, or reports who has it",
                )
            created = base_commit
        git_wt.add_worktree(target, branch=branch, base=None, create_branch=False, cwd=cwd, env=env)
    except BaseException as exc:
        if created is not None:
            delete_branch_at(branch, created, cwd)
        if not claimed.lock.renewed:
            sessions.release(who, root=root, issue=issue)
        if isinstance(exc, GitstError) and not isinstance(exc, ConflictError) and _taken_meanwhile(target):
            raise ConflictError(
                f"{target} was taken by another `git st worktree add` meanwhile",
                fix="choose another --path (or wait for the other command and look at `git st worktree list`)",
            ) from None
        raise
    git_wt.lock_worktree(target, lock_reason(issue, who), cwd)
    now = timestamps.iso(timestamps.now())
    entry = registry.write_worktree_entry(
        {
            "issue": issue,
            "branch": branch,
            "path": str(target),
            "session": who.session,
            "base": base_commit,
            "created_at": now,
            "updated_at": now,
            "created_by": "worktree-add",
        },
        root=root,
    )
    say(
        f"gitst: created worktree {target} on {'existing' if existing_branch else 'new'} branch {branch} "
        f"for issue {issue} (session {who.session}, token {claimed.lock.record['token']})"
    )
    setup = run_setup(target, main_root=repo.main_root, issue=issue, branch=branch, session=who.session, say=say)
    entry = registry.write_worktree_entry({"issue": issue, "setup": setup}, root=root)
    return AddResult(issue, str(target), branch, True, None, setup, entry)


def _taken_meanwhile(target: Path) -> bool:
    """True when ``target``, free when ``add`` checked it, now holds something (a racing add)."""
    try:
        return target.is_symlink() or (target.is_dir() and any(target.iterdir())) or target.is_file()
    except OSError:
        return False


def _reuse(issue, who, entry, repo: _Repo, *, branch, path, description, ttl, say) -> AddResult:
    """``add`` for an issue that already has a registered worktree."""
    from gitst.core import timestamps
    from gitst.git import worktrees as git_wt
    from gitst.sessions import claims as sessions
    from gitst.sessions import registry

    where = entry["path"]
    status = sessions.inspect_issue(issue, who, root=repo.state_root)
    if status.state == sessions.TAKEN:
        raise sessions.IssueTaken(status)  # the owner comes first, whatever else was asked
    if (branch and branch != entry["branch"]) or (path and not _same_path(os.path.abspath(path), where)):
        raise UsageError(
            f"issue {issue} already has a worktree at {where} on branch {entry['branch']}",
            fix=f"drop --branch/--path, or `git st worktree remove {issue}` first",
        )
    if not os.path.isdir(where):
        raise UsageError(
            f"the registered worktree of issue {issue} ({where}) is gone",
            fix="run `git st worktree prune` to drop the entry, then add it again",
        )
    claimed = sessions.claim(
        issue, who, root=repo.state_root, ttl=ttl, description=description, branch=entry["branch"], worktree=where
    )
    previous = entry.get("session")
    adopted = previous if previous != who.session else None
    git_wt.lock_worktree(where, lock_reason(issue, who), repo.main_root)
    entry = registry.write_worktree_entry(
        {
            "issue": issue,
            "session": who.session,
            "updated_at": timestamps.iso(timestamps.now()),
        },
        root=repo.state_root,
    )
    if adopted:
        say(f"gitst: took over worktree {where} of issue {issue} from {adopted} (token {claimed.lock.record['token']})")
    else:
        say(f"gitst: issue {issue} already has its worktree {where} (branch {entry['branch']})")
    return AddResult(issue, where, entry["branch"], False, adopted, None, entry)


# --- setup (again) -----------------------------------------------------------------------------------


def setup(issue: str, who, *, cwd=None, say=_stderr) -> dict:
    """Re-run the copy + trusted setup script for a registered worktree."""
    from gitst.sessions import claims as sessions
    from gitst.sessions import registry
    from gitst.worktrees.setup import run_setup

    repo = _repo(cwd)
    entry = registry.load_worktree_entry(issue, root=repo.state_root)
    if entry is None:
        raise UsageError(f"issue {issue} has no registered worktree", fix=f"git st worktree add {issue}")
    if not os.path.isdir(entry["path"]):
        raise UsageError(f"the registered worktree of issue {issue} ({entry['path']}) is gone")
    status = sessions.inspect_issue(issue, who, root=repo.state_root)
    if status.state == sessions.TAKEN:
        raise sessions.IssueTaken(status)
    result = run_setup(
        Path(entry["path"]), main_root=repo.main_root, issue=issue, branch=entry["branch"], session=who.session, say=say
    )
    registry.write_worktree_entry({"issue": issue, "setup": result}, root=repo.state_root)
    return result


# --- list ----------------------------------------------------------------------------------------------


class WorktreeRow:
    """One row of ``worktree list``: ``state`` is active / stale / orphaned / unregistered /
    corrupt; ``claim`` the issue's lock record; ``git`` the GitWorktree git reports;
    ``code`` the diagnostic code of a corrupt entry (``READ``, ``JSON``, ``SCHEMA``)."""

    __slots__ = (
        "branch",
        "claim",
        "claim_state",
        "code",
        "current",
        "entry",
        "errors",
        "git",
        "issue",
        "path",
        "reason",
        "session",
        "state",
    )

    def __init__(
        self,
        state: str,
        path: str,
        *,
        issue: str | None = None,
        branch: str | None = None,
        session: str | None = None,
        reason: str | None = None,
        git=None,
        entry: dict | None = None,
        errors: list[str] | None = None,
        current: bool = False,
        code: str | None = None,
    ):
        self.state, self.path, self.issue, self.branch, self.session = state, path, issue, branch, session
        self.reason, self.git, self.entry, self.current = reason, git, entry, current
        self.claim: dict | None = None
        self.claim_state: str | None = None
        self.errors = list(errors or [])
        self.code = code

    def to_dict(self) -> dict:
        return {
            "issue": self.issue,
            "state": self.state,
            "reason": self.reason,
            "branch": self.branch,
            "path": self.path,
            "session": self.session,
            "current": self.current,
            "claim": None
            if self.claim is None
            else {
                "state": self.claim_state,
                "owner": self.claim.get("owner"),
                "token": self.claim.get("token"),
                "expires_at": self.claim.get("expires_at"),
            },
            "git": None if self.git is None else self.git.to_dict(),
            "setup": (self.entry or {}).get("setup"),
            "errors": self.errors,
        }


def list_rows(cwd=None, who=None) -> list[WorktreeRow]:
    """The registry joined with ``git worktree list --porcelain``."""
    from gitst.git import worktrees as git_wt
    from gitst.sessions import claims as sessions
    from gitst.sessions import locks, registry
    from gitst.statedir import records

    repo = _repo(cwd)
    known = git_wt.list_worktrees(cwd)
    by_path = {os.path.realpath(w.path): w for w in known}
    main = os.path.realpath(known[0].path) if known else None
    rows: list[WorktreeRow] = []
    seen: set[str] = set()
    for issue, file, entry, problem in registry.list_worktree_entries(repo.state_root):
        if entry is None:
            if problem is not None:
                rows.append(
                    WorktreeRow(
                        CORRUPT,
                        str(file),
                        issue=issue,
                        reason="the registry entry is invalid",
                        errors=list(problem.problems),
                        code=problem.code,
                    )
                )
            continue
        real = os.path.realpath(entry["path"])
        seen.add(real)
        git = by_path.get(real)
        row = WorktreeRow(
            ACTIVE,
            entry["path"],
            issue=issue,
            branch=entry.get("branch"),
            session=entry.get("session"),
            git=git,
            entry=entry,
            current=who is not None and entry.get("session") == who.session,
        )
        try:
            lock = locks.read(sessions.issue_lock_name(issue), repo.state_root)
        except records.CorruptRecord as bad:
            lock = None
            row.errors.extend(bad.problems)
        lock_state = locks.state_of(lock)
        if lock and lock.get("owner"):
            row.claim, row.claim_state = lock, lock_state
        owner = ((lock or {}).get("owner") or {}).get("session")
        if not os.path.isdir(entry["path"]):
            row.state, row.reason = ORPHANED, "the directory is gone"
        elif git is None:
            row.state, row.reason = ORPHANED, "git does not know this worktree"
        elif lock_state != locks.LIVE:
            row.state = STALE
            row.reason = {
                locks.RELEASED: "the claim was released",
                locks.STALE: "the claim's TTL passed",
                locks.DEAD: "the owner's process is gone",
            }[lock_state]
        elif owner != entry.get("session"):
            row.state, row.reason = STALE, f"the issue is claimed by another session ({owner})"
        rows.append(row)
    for git in known:
        real = os.path.realpath(git.path)
        if real == main or real in seen or git.bare:
            continue
        rows.append(
            WorktreeRow(
                UNREGISTERED, git.path, branch=git.branch, git=git, reason="a git worktree gitst has no entry for"
            )
        )
    return rows


# --- remove --------------------------------------------------------------------------------------------


def remove(issue: str, who, *, cwd=None, force: bool = False, say=_stderr) -> dict:
    """Remove the worktree of ``issue``, its registry entry and the claim.

    Refused (exit 1) when the worktree has uncommitted changes (untracked files count,
    ignored ones do not) or commits on no other branch and no remote-tracking ref, unless
    ``force``. Refused (exit 3) while another live session holds the issue, even with
    ``force``. The branch itself is kept.
    """
    from gitst.git import worktrees as git_wt
    from gitst.git.history import commits_only_here
    from gitst.sessions import claims as sessions
    from gitst.sessions import locks, registry

    repo = _repo(cwd)
    root = repo.state_root
    sessions.preflight(who, root, issue)
    entry = registry.load_worktree_entry(issue, root=root)
    if entry is None:
        raise UsageError(
            f"issue {issue} has no registered worktree", fix="`git st worktree list` shows the registered ones"
        )
    status = sessions.inspect_issue(issue, who, root=root)
    if status.state == sessions.TAKEN:
        raise sessions.IssueTaken(status)
    where = entry["path"]
    exists = os.path.isdir(where)
    if exists and _inside(os.path.abspath(cwd or os.getcwd()), where):
        raise UsageError(f"you are inside {where}", fix="run this from another worktree")
    if exists and not force:
        changes = git_wt.uncommitted_changes(where)
        unique = commits_only_here(where, entry.get("branch"))
        problems = []
        if changes:
            problems.append(
                f"{len(changes)} uncommitted change(s): "
                + ", ".join(c[3:] for c in changes[:5])
                + (" …" if len(changes) > 5 else "")
            )
        if unique:
            problems.append(
                f"{len(unique)} commit(s) on no other branch or remote: "
                + ", ".join(c[:10] for c in unique[:5])
                + (" …" if len(unique) > 5 else "")
            )
        if problems:
            raise ProblemsFound(
                f"refusing to remove the worktree of issue {issue} ({where}): " + "; ".join(problems),
                fix="commit and push (or merge) the work first, or pass --force (the branch is kept either way)",
            )
    git_wt.unlock_worktree(where, repo.main_root)
    if exists:
        try:
            git_wt.remove_worktree(where, force=force, cwd=repo.main_root)
        except GitstError:
            git_wt.lock_worktree(where, lock_reason(issue, who), repo.main_root)
            raise
    else:
        git_wt.prune_worktrees(repo.main_root)
    released = None
    if status.state == sessions.OURS:
        released = sessions.release(who, root=root, issue=issue).released
    elif status.state == sessions.STALE_OWNER:
        ended = locks.end_if_not_live(sessions.issue_lock_name(issue), root=root, action="remove")
        if ended:
            sessions._mark_lost(ended["previous"]["owner"]["session"], root, {issue}, to=None)
            released = [issue]
    registry.remove_worktree_entry(issue, root=root)
    say(f"gitst: removed the worktree of issue {issue} ({where}); branch {entry.get('branch')} is kept")
    return {"issue": issue, "path": where, "branch": entry.get("branch"), "forced": force, "released": bool(released)}


def _inside(path: str, parent: str) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(parent)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


# --- prune ---------------------------------------------------------------------------------------------


class PruneReport:
    __slots__ = ("dropped_entries", "dropped_sessions", "dry_run", "git", "released_locks")

    def __init__(self, dry_run: bool):
        self.dry_run = dry_run
        self.dropped_entries: list[dict] = []
        self.released_locks: list[dict] = []
        self.dropped_sessions: list[str] = []
        self.git: list[str] = []

    def to_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "dropped_entries": self.dropped_entries,
            "released_locks": self.released_locks,
            "dropped_sessions": self.dropped_sessions,
            "git": self.git,
        }


def prune(cwd=None, *, dry_run: bool = False) -> PruneReport:
    """Drop entries whose directory is gone, release stale/dead locks, drop idle dead
    sessions, run ``git worktree prune``. Never deletes a directory."""
    from gitst.git import worktrees as git_wt
    from gitst.sessions import claims as sessions
    from gitst.sessions import locks, registry

    repo = _repo(cwd)
    root = repo.state_root
    report = PruneReport(dry_run)
    for row in list_rows(cwd):
        if row.state != ORPHANED or row.issue is None or os.path.isdir(row.path):
            continue
        report.dropped_entries.append({"issue": row.issue, "path": row.path, "branch": row.branch})
        if not dry_run:
            git_wt.unlock_worktree(row.path, repo.main_root)
            registry.remove_worktree_entry(row.issue, root=root)
    report.released_locks = locks.gc(root, dry_run=dry_run)
    for view in sessions.list_sessions(root):
        if view.state not in (locks.STALE, locks.DEAD):
            continue
        if dry_run or sessions.drop_session_if_idle(view, root):
            report.dropped_sessions.append(view.session)
    report.git = git_wt.prune_worktrees(repo.main_root, dry_run=dry_run)
    return report


# --- the post-checkout hook -------------------------------------------------------------------------------


def post_checkout(args: list[str], cwd) -> int:
    """Register a hand-made ``git worktree add`` whose branch matches the template, then set it up.

    ``args`` are git's (previous HEAD, new HEAD, branch flag). Only a new worktree's first
    checkout (previous HEAD all zeros, in a linked worktree) is considered; anything else
    returns at once without running git. Never fails the checkout for gitst's own reasons:
    problems are printed as warnings and 0 is returned.
    """
    if len(args) < 3 or args[2] != "1" or args[0].strip("0") or os.environ.get(ADD_ENV):
        return 0
    try:
        _register_hand_made(cwd)
    except GitstError as exc:
        _stderr(f"gitst: post-checkout: {exc.message}")
    except Exception as exc:
        _stderr(f"gitst: post-checkout: internal error ignored: {exc!r}")
    return 0


def _register_hand_made(cwd) -> None:
    from gitst.core import timestamps
    from gitst.git import worktrees as git_wt
    from gitst.git.repo import current_branch, require_repo
    from gitst.sessions import claims as sessions
    from gitst.sessions import identity, locks, registry
    from gitst.worktrees.setup import run_setup

    info = require_repo(cwd)
    if not info.is_linked_worktree:
        return  # a clone's first checkout, not a new linked worktree
    branch = current_branch(cwd)
    if branch is None:
        return
    issue = registry.issue_for_branch(branch, cwd)
    if issue is None:
        return
    repo = _repo(cwd)
    here = str(info.toplevel)
    entry = registry.load_worktree_entry(issue, root=repo.state_root)  # a corrupt entry is reported, not replaced
    if entry is not None:
        if not _same_path(entry["path"], here):
            _stderr(f"gitst: post-checkout: not registering {here}: issue {issue} is registered to {entry['path']}")
        return
    who = identity.current()
    try:
        claimed = sessions.claim(
            issue, who, root=repo.state_root, ttl=locks.default_ttl(cwd), branch=branch, worktree=here
        )
    except sessions.IssueTaken as taken:
        _stderr(f"gitst: post-checkout: not registering {here}: {taken.message}")
        return
    git_wt.lock_worktree(here, lock_reason(issue, who), cwd)
    now = timestamps.iso(timestamps.now())
    registry.write_worktree_entry(
        {
            "issue": issue,
            "branch": branch,
            "path": here,
            "session": who.session,
            "base": None,
            "created_at": now,
            "updated_at": now,
            "created_by": "post-checkout",
        },
        root=repo.state_root,
    )
    _stderr(
        f"gitst: registered worktree {here} for issue {issue} (session {who.session}, "
        f"token {claimed.lock.record['token']})"
    )
    result = run_setup(Path(here), main_root=repo.main_root, issue=issue, branch=branch, session=who.session)
    registry.write_worktree_entry({"issue": issue, "setup": result}, root=repo.state_root)
