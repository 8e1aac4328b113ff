"""One issue, one worktree, one live owner: ``git st worktree add|list|setup`` and the
post-checkout hook's registration of hand-made worktrees (``remove``, ``clean`` and ``prune``
are :mod:`gitst.worktrees.removal`).

``add`` claims the issue first (a contested issue is refused before anything is created),
then records the worktree in ``state/active-worktrees/<issue>.json`` with its port block and
``pending: add`` (:mod:`gitst.worktrees.journal`), creates the branch and the linked worktree
from the templates (:mod:`gitst.sessions.registry`), ``git worktree lock``s it with a reason
naming the session, drops ``pending`` and sets it up (:mod:`gitst.worktrees.setup`).
Running ``add`` again for an issue the session already has prints the path; running it for
an issue whose registered worktree belongs to a stale or dead session takes the worktree
over; an add or remove that was interrupted is finished or undone first; a worktree whose
directory was deleted by hand is created again from its branch; a linked worktree already on
the issue's branch that gitst does not know is adopted.

The post-checkout hook (:mod:`gitst.worktrees.hook`, which runs after every checkout) imports
this module only for a new linked worktree's first checkout.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.errors import ConflictError, GitstError, UsageError
from gitst.core.filelocks import Held
from gitst.core.terminal import sanitize
from gitst.git import config
from gitst.git import worktrees as git_wt
from gitst.git.refs import branch_exists
from gitst.git.repo import current_branch, require_repo
from gitst.git.worktrees import GitWorktree, list_worktrees
from gitst.sessions import claims as sessions
from gitst.sessions import identity, locks, registry
from gitst.sessions.claims import ClaimChecked, Claimed
from gitst.sessions.identity import Identity
from gitst.sessions.registry import WorktreeFiles
from gitst.statedir.paths import IssueId, ensure_state_dir
from gitst.statedir.records import CorruptRecord, locked
from gitst.worktrees import journal, leftovers, ports, targets
from gitst.worktrees.context import Repo, lock_reason, repo_of, same_path
from gitst.worktrees.ports import env_of
from gitst.worktrees.setup import copy_patterns, run_setup

__all__ = [
    "CORRUPT",
    "AddResult",
    "add",
    "list_rows",
    "setup",
]

ACTIVE, STALE, ORPHANED, UNREGISTERED, CORRUPT = "active", "stale", "orphaned", "unregistered", "corrupt"


def _stderr(text: str) -> None:
    """A line for the person on stderr; branch names and paths may hold control characters."""
    print(sanitize(text), file=sys.stderr)


# --- add -------------------------------------------------------------------------------------------


class AddResult:
    """What ``add`` did. ``created`` is True when git made the worktree in this run;
    ``adopted_from`` names the previous, stale or dead, owner it was taken over from;
    ``ports`` is its port block (None when ports are off)."""

    __slots__ = ("adopted_from", "branch", "created", "entry", "issue", "path", "ports", "setup")

    def __init__(
        self,
        issue: str,
        path: str,
        branch: str,
        created: bool,
        adopted_from: str | None = None,
        setup: dict[str, Any] | None = None,
        entry: dict[str, Any] | None = None,
    ):
        self.issue, self.path, self.branch, self.created = issue, path, branch, created
        self.adopted_from, self.setup, self.entry = adopted_from, setup, entry
        self.ports = (entry or {}).get("ports")

    def env(self) -> dict[str, str]:
        """What ``--print-env`` prints and the setup script gets."""
        return {"ST_ISSUE": self.issue, "ST_BRANCH": self.branch, "ST_WORKTREE": self.path, **env_of(self.ports)}


def add(
    issue: str,
    who: Identity,
    *,
    cwd: str | os.PathLike[str] | None = None,
    branch: str | None = None,
    base: str | None = None,
    path: str | None = None,
    description: str | None = None,
    ttl: float | None = None,
    remote: str | None = None,
    pending_remote: str | None = None,
    say: Callable[[str], None] = _stderr,
) -> AddResult:
    """Claim ``issue`` (through ``remote`` too, when given: docs/parallel.md, "Claims through
    the remote") and create or reuse its worktree."""
    issue = IssueId(issue)  # parsed here, once: everything below trusts it
    repo = repo_of(cwd)
    root = repo.state_root
    # Every path the command writes is checked before anything is written: the claim's and
    # the registry's, each given to the code that uses it (not derived again).
    checked = sessions.preflight_claim(who, root, issue)
    files = registry.worktree_files(issue, root=root)
    ttl = ttl or locks.default_ttl(cwd)
    spec = ports.spec_for(cwd)  # a bad st.worktree.ports is refused before anything is written
    copy_patterns(repo.main_root)  # so is a bad st.worktree.copy (a glob outside the repository)
    journal.recover_half_made(repo, say=say)  # a half-made worktree breaks every fetch: undone first
    status = sessions.inspect_issue(issue, who, root=root, name=checked.lock_name)
    if status.state == sessions.TAKEN:
        raise sessions.IssueTaken(status)  # refused first; the claim below settles races

    def busy() -> None:  # another add is running: when it claimed the issue, say so now, don't wait
        now = sessions.inspect_issue(issue, who, root=root, name=checked.lock_name)
        if now.state == sessions.TAKEN:
            raise sessions.IssueTaken(now)

    with journal.operation(issue, root, on_busy=busy, path=files.operation_lock) as op:
        ctx = _Adding(issue, who, repo, op, spec, checked, files, ttl, (remote, pending_remote), say, cwd)
        entry = files.load()
        if journal.pending_op(entry) == "remove" and entry is not None:
            journal.finish_remove(entry, repo, who)
            say(f"gitst: finished the interrupted removal of the worktree of issue {issue} ({entry['path']})")
            entry = None
        if entry is not None:
            return _resume(ctx, entry, branch=branch, path=path, description=description)
        return _create(ctx, cwd=cwd, branch=branch, base=base, path=path, description=description)


class _Adding:
    """What every step of one ``add`` works with, parsed and checked at its start: the issue,
    the acting session, the repository, the held operation lock, the port spec, the claim's
    checked paths (:func:`gitst.sessions.claims.preflight`), the registry's
    (:func:`gitst.sessions.registry.worktree_files`), the TTL, the remotes
    (``--remote``, ``--offline``'s) and where messages go."""

    __slots__ = ("checked", "cwd", "files", "issue", "op", "remotes", "repo", "say", "spec", "ttl", "who")

    def __init__(
        self,
        issue: IssueId,
        who: Identity,
        repo: Repo,
        op: Held,
        spec: tuple[int, int, int] | None,
        checked: ClaimChecked,
        files: WorktreeFiles,
        ttl: float,
        remotes: tuple[str | None, str | None],
        say: Callable[[str], None],
        cwd: str | os.PathLike[str] | None,  # where add runs: its config reads are the worktree's too
    ):
        self.issue, self.who, self.repo, self.op, self.spec = issue, who, repo, op, spec
        self.checked, self.files, self.ttl, self.remotes, self.say = checked, files, ttl, remotes, say
        self.cwd = cwd

    def share_config(self, worktree: str) -> None:
        """The worktree's git config reads answered from those where ``add`` runs, when they
        cannot differ (:func:`gitst.git.config.share_reads`): the setup and ``next``'s mark run there."""
        config.share_reads(worktree, self.cwd)

    def claim(self, *, branch: str, worktree: str, description: str | None) -> Claimed:
        """Claim the issue for the session (locally, and on the remote when given)."""
        return sessions.claim(
            self.issue,
            self.who,
            root=self.repo.state_root,
            ttl=self.ttl,
            description=description,
            branch=branch,
            worktree=worktree,
            remote=self.remotes[0],
            pending_remote=self.remotes[1],
            cwd=self.repo.main_root,
            checked=self.checked,
        )


def _create(
    ctx: _Adding,
    *,
    cwd: str | os.PathLike[str] | None,
    branch: str | None,
    base: str | None,
    path: str | None,
    description: str | None,
) -> AddResult:
    """``add`` for an issue without a registry entry: plan, claim, record, create, finish."""
    issue, who, repo = ctx.issue, ctx.who, ctx.repo
    named = branch is not None  # --branch: that branch, as it is; else the template's, made unique per claim
    listed = journal.listed_now(repo)  # materialize uses it again while git's worktree files hold
    known = listed.known
    branch, adopt, target = targets.place(issue, branch, path, repo, known, cwd)
    if adopt is None and not named:
        here = targets.branch_refs(branch, repo)  # the branch and its -N names: one for-each-ref
        existing_branch = f"refs/heads/{branch}" in here
        chosen, why = targets.claim_branch(
            ctx.checked.lock_name,
            who,
            branch,
            existing=existing_branch,
            base=base,
            repo=repo,
            remote=ctx.remotes[0],
            here=here,
        )
        if chosen != branch:
            ctx.say(f"gitst: {why}; this claim works on a new branch {chosen}")
            branch, existing_branch = chosen, False
    else:
        existing_branch = branch_exists(branch, cwd)
    base_commit, base_branch = targets.base_and_branch(branch, base, existing_branch, cwd)

    claimed = ctx.claim(branch=branch, worktree=str(target), description=description)
    now = timestamps.iso(timestamps.now())
    fields = {
        "issue": issue,
        "branch": branch,
        "path": str(target),
        "session": who.session,
        "base": base_commit,
        "base_branch": base_branch,
        "created_at": now,
        "updated_at": now,
        "created_by": "adopted" if adopt is not None else "worktree-add",
    }
    entry = None
    try:
        entry = _record(fields, issue, repo.state_root, ctx.spec, files=ctx.files)
        seen = journal.Seen(listed, existing_branch)
        created = adopt is None and journal.materialize(entry, repo, ctx.op, fresh=True, seen=seen)
    except BaseException:
        _undo_create(issue, who, entry, target, repo, renewed=claimed.lock.renewed)
        raise
    ctx.share_config(str(target))
    if adopt is not None:
        ctx.say(f"gitst: adopted the worktree {target} on branch {branch} for issue {issue} (session {who.session})")
    else:
        ctx.say(
            f"gitst: created worktree {target} on {'existing' if existing_branch else 'new'} branch {branch} "
            f"for issue {issue} (session {who.session}, token {claimed.lock.record['token']})"
        )
    return _finish(
        issue, who, entry, repo, created=created, adopted_from=None, run_setup_now=True, say=ctx.say, files=ctx.files
    )


def _record(
    fields: dict[str, Any],
    issue: str,
    root: Path,
    spec: tuple[int, int, int] | None,
    *,
    keep: dict[str, Any] | None = None,
    files: WorktreeFiles | None = None,
) -> dict[str, Any]:
    """Write the entry with ``pending: add`` and, when ports are on, its port block — chosen
    and written under the ports lock, so two adds never get overlapping blocks."""
    fields = {**fields, "pending": {"op": "add", "at": timestamps.iso(timestamps.now())}}
    if spec is None:
        return registry.write_worktree_entry(fields, root=root, files=files)
    lock = registry.ports_lock_path(root)
    ensure_state_dir(root)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with locked(lock):
        fields["ports"] = ports.pick(root, issue, spec, keep=keep)
        return registry.write_worktree_entry(fields, root=root, files=files)


def _undo_create(
    issue: str, who: Identity, entry: dict[str, Any] | None, target: Path, repo: Repo, *, renewed: bool
) -> None:
    """An add that failed (not one that was killed): drop what it recorded, unless git left
    something at the target — then the pending entry stays for the next command to repair."""
    try:
        listed = journal.git_worktree_at(target, git_wt.list_worktrees(repo.main_root))
        # Something of ours at the target (another add's worktree there is not: a lost race).
        left = listed is not None and (entry is None or listed.branch in (None, entry.get("branch")))
        if entry is not None and not left and (listed is not None or not os.path.lexists(target)):
            registry.remove_worktree_entry(issue, root=repo.state_root)
        if not renewed and (entry is None or not left):
            sessions.release(who, root=repo.state_root, issue=issue)
    except GitstError:
        pass  # the original error is the one to report


def _finish(
    issue: str,
    who: Identity,
    entry: dict[str, Any],
    repo: Repo,
    *,
    created: bool,
    adopted_from: str | None,
    run_setup_now: bool,
    say: Callable[[str], None],
    files: WorktreeFiles | None = None,
) -> AddResult:
    """Lock the worktree for ``who``, drop ``pending``, run the setup when asked."""
    where = entry["path"]
    git_wt.lock_worktree(where, lock_reason(issue, who), repo.main_root, fresh=created)
    entry = registry.write_worktree_entry(
        {"issue": issue, "session": who.session, "updated_at": timestamps.iso(timestamps.now())},
        root=repo.state_root,
        drop=("pending",),
        files=files,
    )
    if entry.get("ports"):
        say(f"gitst: ports {ports.render(entry['ports'])} are the worktree's (ST_PORT={entry['ports']['start']})")
    result = None
    if run_setup_now:
        result, entry = _set_up(issue, who, entry, repo, say, files=files, fresh=created)
    return AddResult(issue, where, entry["branch"], created, adopted_from, result, entry)


def _set_up(
    issue: str,
    who: Identity,
    entry: dict[str, Any],
    repo: Repo,
    say: Callable[[str], None],
    *,
    files: WorktreeFiles | None = None,
    fresh: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the setup of the entry's worktree and record it: (the setup record, the entry);
    ``fresh``: git checked it out in this command."""
    result = run_setup(
        Path(entry["path"]),
        main_root=repo.main_root,
        issue=issue,
        branch=entry["branch"],
        session=who.session,
        ports=entry.get("ports"),
        previous=entry.get("setup"),
        say=say,
        fresh=fresh,
    )
    return result, registry.write_worktree_entry({"issue": issue, "setup": result}, root=repo.state_root, files=files)


def _resume(
    ctx: _Adding, entry: dict[str, Any], *, branch: str | None, path: str | None, description: str | None
) -> AddResult:
    """``add`` for an issue that already has a registry entry: ours again, taken over from a
    stale or dead owner, an interrupted add finished, or a deleted directory re-created."""
    issue, who, repo, say = ctx.issue, ctx.who, ctx.repo, ctx.say
    where = entry["path"]
    if (branch and branch != entry["branch"]) or (path and not same_path(os.path.abspath(path), where)):
        raise UsageError(
            f"issue {issue} already has a worktree at {where} on branch {entry['branch']}",
            fix=f"drop --branch/--path, or `git st worktree remove {issue}` first",
        )
    interrupted = journal.pending_op(entry) == "add"
    present = journal.complete(where, journal.git_worktree_at(where, git_wt.list_worktrees(repo.main_root)))
    claimed = ctx.claim(branch=entry["branch"], worktree=where, description=description)
    previous = entry.get("session")
    adopted = previous if previous != who.session else None
    # Recorded as pending first: a kill from here on leaves an add the next command finishes.
    fields = {"issue": issue, "session": who.session, "updated_at": timestamps.iso(timestamps.now())}
    entry = _record(fields, issue, repo.state_root, ctx.spec, keep=entry.get("ports"), files=ctx.files)
    created = journal.materialize(entry, repo, ctx.op) if (interrupted or not present) else False
    if not created:
        _clear_leftovers(where, say)  # a killed command's index.lock or merge temp files: named, cleared
    _say_resumed(
        ctx, entry, interrupted=interrupted, created=created, adopted=adopted, token=claimed.lock.record["token"]
    )
    run_setup_now = created or interrupted or not entry.get("setup")
    ctx.share_config(where)
    return _finish(
        issue,
        who,
        entry,
        repo,
        created=created,
        adopted_from=adopted,
        run_setup_now=run_setup_now,
        say=say,
        files=ctx.files,
    )


def _say_resumed(
    ctx: _Adding, entry: dict[str, Any], *, interrupted: bool, created: bool, adopted: str | None, token: int
) -> None:
    """What :func:`_resume` did, for the person: an interrupted add finished, a deleted
    directory made again, a worktree taken over, or nothing to do."""
    issue, where, say = ctx.issue, entry["path"], ctx.say
    if interrupted:
        how = "created its worktree again" if created else "the worktree was complete; finished registering it"
        say(f"gitst: resumed the interrupted add of issue {issue}: {how} ({where})")
    elif created:
        say(f"gitst: the worktree of issue {issue} ({where}) was gone; created it again from branch {entry['branch']}")
    if adopted:
        say(f"gitst: took over worktree {where} of issue {issue} from {adopted} (token {token})")
    elif not interrupted and not created:
        say(f"gitst: issue {issue} already has its worktree {where} (branch {entry['branch']})")


def _clear_leftovers(where: str, say: Callable[[str], None]) -> None:
    """Name what a killed command left in the worktree and delete it, unless a live git or
    gitst process works there (:mod:`gitst.worktrees.leftovers`)."""
    found = leftovers.find(where)
    if not found:
        return
    names = ", ".join(item.path for item in found)
    cleared, working = leftovers.clear(where, found)
    if cleared:
        say(f"gitst: removed what a killed command left in the worktree: {names}")
    else:
        say(
            f"gitst: warning: the worktree holds what a killed command may have left: {names}; kept, "
            f"because git process(es) {', '.join(map(str, working))} work there"
        )


# --- setup (again) -----------------------------------------------------------------------------------


def setup(
    issue: str, who: Identity, *, cwd: str | os.PathLike[str] | None = None, say: Callable[[str], None] = _stderr
) -> dict[str, Any]:
    """Re-run the copy + trusted setup script for a registered worktree."""
    repo = repo_of(cwd)
    entry = registry.load_worktree_entry(issue, root=repo.state_root)
    if entry is None:
        raise UsageError(f"issue {issue} has no registered worktree", fix=f"git st worktree add {issue}")
    if not os.path.isdir(entry["path"]):
        raise UsageError(f"the registered worktree of issue {issue} ({entry['path']}) is gone")
    status = sessions.inspect_issue(issue, who, root=repo.state_root)
    if status.state == sessions.TAKEN:
        raise sessions.IssueTaken(status)
    return _set_up(issue, who, entry, repo, say)[0]


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
        git: GitWorktree | None = None,
        entry: dict[str, Any] | None = None,
        errors: list[str] | None = None,
        current: bool = False,
        code: str | None = None,
    ):
        self.state, self.path, self.issue, self.branch, self.session = state, path, issue, branch, session
        self.reason, self.git, self.entry, self.current = reason, git, entry, current
        self.claim: dict[str, Any] | None = None
        self.claim_state: str | None = None
        self.errors = list(errors or [])
        self.code = code

    def to_dict(self) -> dict[str, Any]:
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


def real_path(path: str, parents: dict[str, str]) -> str:
    """``os.path.realpath(path)`` with each parent directory resolved once (``parents``, one
    listing's cache): worktrees share a parent (``../repo.worktrees``), so a registry of
    10,000 rows costs one ``lstat`` a row instead of one per component."""
    parent, name = os.path.split(path)
    if not os.path.isabs(path) or path != os.path.normpath(path) or name in ("", ".", ".."):
        return os.path.realpath(path)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return os.path.realpath(path)
    except OSError:
        pass  # missing: realpath keeps the name as it is
    if parent not in parents:
        parents[parent] = os.path.realpath(parent)
    return os.path.join(parents[parent], name)


def list_rows(cwd: str | os.PathLike[str] | None = None, who: Identity | None = None) -> list[WorktreeRow]:
    """The registry joined with ``git worktree list --porcelain``."""
    repo = repo_of(cwd)
    known = git_wt.list_worktrees(cwd)
    by_path = {os.path.realpath(w.path): w for w in known}
    rows: list[WorktreeRow] = []
    seen: set[str] = set()
    # One scan of locks/ for every row (a lock read per row cost ~1 ms in path checks alone).
    lock_views = {view.name: view for view in locks.list_locks(repo.state_root, include_released=True)}
    parents: dict[str, str] = {}  # real_path's: each parent directory resolved once
    for issue, file, entry, problem in registry.list_worktree_entries(repo.state_root):
        if entry is None:
            if problem is not None:
                rows.append(_corrupt_row(issue, file, problem))
            continue
        real = real_path(entry["path"], parents)
        seen.add(real)
        lock_view = lock_views.get(locks.ISSUE_PREFIX + issue)  # (the scan validated ``issue``: its file name)
        rows.append(_registered_row(issue, entry, by_path.get(real), lock_view, who))
    rows.extend(_unregistered_rows(known, seen))
    return rows


def _corrupt_row(issue: str, file: Path, problem: CorruptRecord) -> WorktreeRow:
    return WorktreeRow(
        CORRUPT,
        str(file),
        issue=issue,
        reason="the registry entry is invalid",
        errors=list(problem.problems),
        code=problem.code,
    )


# Why a registered worktree whose claim is not live is stale, by the lock's state.
_STALE_BECAUSE = {
    locks.RELEASED: "the claim was released",
    locks.STALE: "the claim's TTL passed",
    locks.DEAD: "the owner's process is gone",
}


def _registered_row(
    issue: str,
    entry: dict[str, Any],
    git: GitWorktree | None,
    lock_view: locks.LockView | None,
    who: Identity | None,
) -> WorktreeRow:
    """The row of one registry entry: active, orphaned (no directory, or git does not know
    it) or stale (its claim is not live, or another session holds it) — judged from the
    entry, git's listing of its path (``git``) and the issue's lock (``lock_view``)."""
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
    lock = lock_view.record if lock_view is not None else None
    if lock_view is not None and lock_view.problem is not None:
        row.errors.extend(lock_view.problem.problems)
    lock_state = locks.state_of(lock)
    if lock and lock.get("owner"):
        row.claim, row.claim_state = lock, lock_state
    owner = ((lock or {}).get("owner") or {}).get("session")
    if not os.path.isdir(entry["path"]):
        row.state, row.reason = ORPHANED, "the directory is gone"
    elif git is None:
        row.state, row.reason = ORPHANED, "git does not know this worktree"
    elif lock_state != locks.LIVE:
        row.state, row.reason = STALE, _STALE_BECAUSE[lock_state]
    elif owner != entry.get("session"):
        row.state, row.reason = STALE, f"the issue is claimed by another session ({owner})"
    return row


def _unregistered_rows(known: list[GitWorktree], seen: set[str]) -> list[WorktreeRow]:
    """The linked worktrees git lists that no registry entry points at (``seen``: the
    entries' real paths); never the main worktree nor a bare one."""
    main = os.path.realpath(known[0].path) if known else None
    rows = []
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


# --- the post-checkout hook -------------------------------------------------------------------------------


def _register_hand_made(cwd: str | os.PathLike[str] | None) -> None:
    info = require_repo(cwd)
    if not info.is_linked_worktree:
        return  # a clone's first checkout, not a new linked worktree
    branch = current_branch(cwd)
    if branch is None:
        return
    issue = registry.issue_for_branch(branch, cwd)
    if issue is None:
        return
    repo = repo_of(cwd)
    here = str(info.toplevel)
    entry = registry.load_worktree_entry(issue, root=repo.state_root)  # a corrupt entry is reported, not replaced
    if entry is not None:
        if not same_path(entry["path"], here):
            _stderr(f"gitst: post-checkout: not registering {here}: issue {issue} is registered to {entry['path']}")
        return

    try:
        targets.refuse_nested_target(Path(here), issue, repo, list_worktrees(repo.main_root), made=True)
    except UsageError as nested:
        _stderr(f"gitst: post-checkout: not registering {here}: {nested.message}")
        return
    who = identity.current()
    try:
        claimed = sessions.claim(
            issue, who, root=repo.state_root, ttl=locks.default_ttl(cwd), branch=branch, worktree=here
        )
    except sessions.IssueTaken as taken:
        _stderr(f"gitst: post-checkout: not registering {here}: {taken.message}")
        return
    now = timestamps.iso(timestamps.now())
    fields = {
        "issue": issue,
        "branch": branch,
        "path": here,
        "session": who.session,
        "base": None,
        "base_branch": current_branch(repo.main_root),
        "created_at": now,
        "updated_at": now,
        "created_by": "post-checkout",
    }
    try:
        entry = _record(fields, issue, repo.state_root, ports.spec_for(cwd))
    except ConflictError as exc:  # no free port block: register it without one rather than not at all
        _stderr(f"gitst: post-checkout: {exc.message}; registering it without ports")
        entry = _record(fields, issue, repo.state_root, None)
    _stderr(
        f"gitst: registered worktree {here} for issue {issue} (session {who.session}, "
        f"token {claimed.lock.record['token']})"
    )
    _finish(issue, who, entry, repo, created=False, adopted_from=None, run_setup_now=True, say=_stderr)
