"""``git st next``: take the next ready item of the plan, atomically (docs/agent-loop.md).

1. read the plan at the base's tip (fetched when a remote is set, in the same fetch as the
   remote's claims and fence counters: :func:`gitst.loop.base.look`);
2. resume the item this session already holds, when it is still open there;
3. else walk the ready items (pending, every dependency completed) that pass the filters, in
   plan order, skipping those a live session holds (here, or on the remote: that fetch);
4. claim the first one (the local lock; through the remote's compare-and-swap when
   ``st.remote`` is set): of N sessions racing for it exactly one wins, the others move on
   (a ``next --wait`` with time left ends its try instead: ``back_off``);
5. reserve the item's paths (:mod:`gitst.loop.paths`; another live session holding one: the
   claim is given back, the item passed over), then read the base again **after the claim
   won** (one ``ls-remote``; a fetch only when it moved): an item completed, canceled or held
   there meanwhile is released and passed over.
   ``land`` publishes ``completed`` on the base before it releases the claim, so a claim won
   after that release always sees the completion;
6. create or resume the item's worktree at the base's tip, mark the item ``in_progress`` in
   the worktree's plan and commit that mark on the item's branch.

The claim is keyed on the plan item id (``st-007``): an item id is an issue id as far as
claims, worktrees and branches are concerned (``st/issue-st-007``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitst.core import filelocks
from gitst.core.errors import ConflictError, GitstError, ProblemsFound, UsageError
from gitst.core.values import field, value_class
from gitst.git.runner import NO_AUTO_MAINTENANCE, run
from gitst.loop import base as bases
from gitst.loop import doorbell as doorbells
from gitst.loop.paths import release_item, reserve_item
from gitst.loop.pr import remembered
from gitst.plan import engine, model, sidecar, store
from gitst.sessions import claims, remote_claims
from gitst.sessions.identity import Identity
from gitst.sessions.locks import ISSUE_PREFIX, lock_files
from gitst.sessions.remote_records import held_by_pr
from gitst.sessions.remote_survey import Survey
from gitst.statedir.paths import ensure_state_dir, state_dir
from gitst.worktrees import manager

__all__ = ["CLOSED", "HELD", "Filters", "NothingToTake", "Taken", "mark", "take"]

PathLike = str | os.PathLike[str] | None
Say = Callable[[str], None]

CLOSED = ("completed", "canceled")  # done: never handed out again
HELD = ("blocked", "deferred")  # held by hand: never handed out until set back to pending


@value_class(frozen=True)
class Filters:
    """Which ready items ``next`` may take: one id, a label, a text."""

    item_id: str | None = None
    label: str | None = None  # in the item's ``labels`` list
    match: str | None = None  # in its id, step or notes (case-insensitive)

    def accepts(self, row: dict[str, Any]) -> bool:
        if self.item_id is not None and row["id"] != self.item_id:
            return False
        if self.label is not None and self.label not in _labels(row):
            return False
        if self.match is not None:
            text = " ".join(str(row.get(key) or "") for key in ("id", "step", "notes")).casefold()
            return self.match.casefold() in text
        return True


def _labels(row: dict[str, Any]) -> list[str]:
    labels = row.get("labels")
    return [str(label) for label in labels] if isinstance(labels, list) else []


@value_class
class Taken:
    """What ``next`` took: the item (as on the base), where to work on it, and the claim."""

    item: dict[str, Any]
    path: str
    branch: str
    base: bases.Base
    session: str
    token: int | None
    remote_token: int | None
    resumed: bool
    passed: list[dict[str, str]] = field(default_factory=list)
    reserved: list[dict[str, Any]] = field(default_factory=list)  # the item's paths, reserved for the session

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "id": self.item["id"],
            "path": self.path,
            "branch": self.branch,
            "base": self.base.shown,
            "base_commit": self.base.tip,
            "session": self.session,
            "token": self.token,
            "remote": self.base.remote,
            "remote_token": self.remote_token,
            "resumed": self.resumed,
            "passed": self.passed,
            "reserved": self.reserved,
        }


class NothingToTake(GitstError):
    """No item can be taken now. Exit 1 when nothing is left to do (no pending item passes
    the filters); exit 3 when pending items wait: on dependencies, or held by live sessions."""

    def __init__(self, reason: str, base: bases.Base, passed: list[dict[str, str]], waiting: list[str]):
        self.reason = reason  # "done" | "wait"
        self.base = base
        self.passed = passed
        self.waiting = waiting
        if reason == "done":
            message = f"nothing left to take on {base.shown}: no pending item (of those asked for)"
            super().__init__(message, exit_code=1)
        else:
            held = ", ".join(p["id"] for p in passed) or "none"
            message = (
                f"no item can be taken now on {base.shown}: ready items held by live sessions: {held}; "
                f"waiting on dependencies: {', '.join(waiting) or 'none'}"
            )
            super().__init__(message, fix="run `git st next` again when another agent has landed", exit_code=3)

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": None,
            "reason": self.reason,
            "base": self.base.shown,
            "base_commit": self.base.tip,
            "passed": self.passed,
            "waiting": self.waiting,
        }


# --- choosing ---------------------------------------------------------------------------------


def _check_asked(rows: list[dict[str, Any]], filters: Filters, base: bases.Base) -> None:
    """``--id`` of an item that can never be taken now: said exactly, exit 2 (closed, held,
    unknown) or 3 (waiting on its dependencies)."""
    if filters.item_id is None:
        return
    row = next((r for r in rows if r["id"] == filters.item_id), None)
    if row is None:
        raise engine.unknown_id(filters.item_id, [r["id"] for r in rows])
    status = row["status"]
    if status in CLOSED or status in HELD:
        raise UsageError(
            f"{row['id']} is {status} on {base.shown}: a {status} item is never claimed",
            fix="set it back to pending on the base first" if status in HELD else "pick another item",
        )
    if status == "pending" and row["dep_state"] != model.READY:
        raise ConflictError(
            f"{row['id']} waits on {', '.join(row['waiting_on'])} on {base.shown}",
            fix="take it once those are completed there",
        )


def _remote_holders(seen: Survey | None, who: Identity) -> dict[str, str]:
    """Items a live session other than ``who`` holds on the remote, as the one fetch of the base
    and the claims saw them: a race is only run for items that may be free (the CAS decides)."""
    if seen is None:
        return {}
    held = {}
    for view in seen.views:
        record = view.record or {}
        if view.state != "live":
            continue
        number = held_by_pr(record)
        if number is not None:  # the PR's, whoever opened it (docs/agent-loop.md, "Landing through a PR")
            held[view.issue] = f"its PR #{number} waits to be merged (held on {seen.remote})"
        elif record.get("session") != who.session:
            held[view.issue] = f"claimed on {seen.remote} by session {record.get('session')}"
    return held


def _claimed_here(item_id: str, who: Identity, root: Path) -> str | None:
    status = claims.inspect_issue(item_id, who, root=root)
    if status.state == claims.TAKEN:
        return f"claimed by session {(status.owner or {}).get('session')}"
    return None


def _still_open(
    item_id: str, base: bases.Base, rows: list[dict[str, Any]], cwd: PathLike
) -> tuple[bases.Base, list[dict[str, Any]], str | None]:
    """The base read again after the claim won, and its plan (``rows``, the plan at ``base``,
    read again only when the tip moved); why the item may not be worked on (None: ok)."""
    now = bases.again(base, cwd)
    if now.tip != base.tip:
        rows = model.derive(bases.items_at(now, cwd))
    row = next((r for r in rows if r["id"] == item_id), None)
    if row is None:
        return now, rows, f"removed on {now.shown} meanwhile"
    if row["status"] != "pending" and row["status"] != "in_progress":
        return now, rows, f"{row['status']} on {now.shown} meanwhile"
    if row["dep_state"] != model.READY:
        return now, rows, f"waits on {', '.join(row['waiting_on'])} on {now.shown}"
    return now, rows, None


# --- taking -----------------------------------------------------------------------------------


@value_class
class _Run:
    """One ``next``: who takes, through which remote, and what happened so far."""

    who: Identity
    root: Path
    remote: str | None
    ttl: float
    cwd: PathLike
    say: Say
    back_off: bool = False  # (a --wait with time left) a claim race lost ends the try: no read-again
    passed: list[dict[str, str]] = field(default_factory=list)
    seen: Survey | None = None  # the remote's claims, read with the base in one fetch
    lost: bool = False  # back_off, and a race was lost: the try ends with nothing taken

    def pass_over(self, item_id: str, why: str) -> None:
        self.passed.append({"id": item_id, "why": why})


def _description(row: dict[str, Any]) -> str | None:
    """What the claim and the worktree record say the work is: the item's step (cut short)."""
    return str(row.get("step") or "")[:200] or None


def _try_claim(run_: _Run, row: dict[str, Any]) -> claims.Claimed | None:
    """The claim on ``row``'s item, or None when another session won it, or another session of
    this clone is claiming it through the remote right now (:func:`_racing_here`)."""
    if run_.remote is None:
        return _claim(run_, row)
    with contextlib.ExitStack() as racing:
        why = _racing_here(racing, row["id"], run_.root)
        if why is not None:
            run_.pass_over(row["id"], why)
            return None
        return _claim(run_, row)


def _racing_here(stack: contextlib.ExitStack, item_id: str, root: Path) -> str | None:
    """Hold, for ``stack``'s block, the flock sidecar ``locks/issue-<item>.json.claiming`` that says
    "a session of this clone is claiming this item through the remote"; why not, when another
    holds it. The sessions of one clone that start together then race each other here, in the
    file system, instead of in pushes to the remote: of N agents on one clone only one pushes
    for an item, the others move on to the next (their sibling wins it, or loses it to another
    clone: either way a live session holds it). Held only for the claim's round trips."""
    ensure_state_dir(root)  # the sidecar may be the first file of the state dir: git ignores it
    record = lock_files(ISSUE_PREFIX + item_id, root).record
    try:
        stack.enter_context(filelocks.locked(record.with_name(record.name + ".claiming"), 0))
    except ConflictError:
        return "being claimed right now by another session of this clone"
    return None


class _RaceLost(ConflictError):
    """A claim race lost by a try that backs off (``_Run.back_off``): it reads nothing again."""


def _reread(run_: _Run, seen: Survey) -> remote_claims.Reread:
    """How a lost claim race reads the remote again: every claim (:meth:`Survey.again`, one
    fetch, what reading the lost item's claim alone cost), kept as ``run_.seen`` — so the walk
    then passes over every item claimed since the first look without pushing for it. A try that
    backs off (a ``--wait`` with time left) reads nothing: the race lost ends it, and the wait
    looks again after its pause. Of twelve agents starting together on four ready items, eight
    lose: their reads-again (a fetch each, and the walk: 30 of the burst's ~165 git processes)
    ran while the four winners were still taking theirs (docs/performance.md, "Round 35")."""

    looks = [seen]

    def read(issue: str) -> remote_claims.Snapshot:
        if run_.back_off:
            run_.lost = True
            raise _RaceLost(f"lost the race for {issue} on {run_.remote}: this try ends, the wait looks again")
        looks.append(looks[-1].again())  # the records of the last look that did not move are reused
        run_.seen = looks[-1]
        return looks[-1].snapshot(issue)

    return read


def _claim(run_: _Run, row: dict[str, Any]) -> claims.Claimed | None:
    seen = run_.seen
    try:
        return claims.claim(
            row["id"],
            run_.who,
            root=run_.root,
            ttl=run_.ttl,
            description=_description(row),
            remote=run_.remote,
            cwd=run_.cwd,
            seen=seen.snapshot(row["id"]) if seen is not None else None,
            again=_reread(run_, seen) if seen is not None else None,
        )
    except (claims.IssueTaken, remote_claims.RemoteIssueTaken, _RaceLost) as lost:
        run_.pass_over(row["id"], lost.message)
        return None


def _pr_open(item_id: str, root: Path) -> str | None:
    """Why an item whose worktree here opened a PR (``land --pr``) is not taken or resumed."""
    opened = remembered(item_id, root)
    if opened is None:
        return None
    return f"its PR #{opened['number']} waits to be merged: `git st land` in its worktree finishes it"


def _own_open_item(run_: _Run, rows: list[dict[str, Any]], filters: Filters) -> dict[str, Any] | None:
    """An item this session already holds that is still open on the base: ``next`` resumes it
    (an agent that crashed after taking an item gets the same item back)."""
    record = claims.read_session(run_.who.session, run_.root) or {}
    held = {c.get("issue") for c in record.get("claims", []) if not c.get("lost")}
    for row in rows:
        if row["id"] in held and row["status"] in ("pending", "in_progress") and filters.accepts(row):
            why = _pr_open(row["id"], run_.root)
            if why is not None:  # its PR waits for GitHub: `land` there finishes it, not a resume
                run_.pass_over(row["id"], why)
                continue
            return row
    return None


def _last_landing_here(remote: str | None, cwd: PathLike) -> int:
    """When the last landing on this machine gave the slot back (ns; 0: none known)."""
    bell = doorbells.for_remote(remote, cwd) if remote is not None else None
    return bell.rung_at() if bell is not None else 0


def take(
    who: Identity,
    *,
    remote: str | None,
    filters: Filters,
    ttl: float,
    cwd: PathLike = None,
    say: Say = print,
    back_off: bool = False,
) -> Taken:
    """Take the next ready item for ``who`` (module docstring). NothingToTake when none.
    ``back_off`` (``next --wait`` with time left): a claim race lost through the remote ends
    the try (NothingToTake, "wait") instead of reading the remote again to walk on. The look
    never takes a shared fetch begun before the last landing on this machine (its doorbell's
    last ring): the agent that landed it and runs ``next`` at once must see it, and so must a
    ``next --wait`` that the ring of the last landing woke (a fetch under way since before it
    made the one answer "wait" on its next try, the other "wait" again)."""
    run_ = _Run(who, state_dir(cwd), remote, ttl, cwd, say, back_off)
    claims.preflight(who, run_.root)
    base, run_.seen = bases.look(bases.locate(remote, cwd), cwd, since=_last_landing_here(remote, cwd))
    rows = model.derive(bases.items_at(base, cwd))
    own = _own_open_item(run_, rows, filters)
    resumed = _resume(run_, own, base) if own is not None else None
    if resumed is not None:
        return resumed
    _check_asked(rows, filters, base)
    ready = [r for r in rows if r["status"] == "pending" and r["dep_state"] == model.READY and filters.accepts(r)]
    taken = _take_first(run_, ready, base, rows) if not run_.lost else None
    if taken is not None:
        return taken
    pending = [r for r in rows if r["status"] == "pending" and filters.accepts(r)]
    waiting = [r["id"] for r in pending if r["dep_state"] != model.READY]
    raise NothingToTake("wait" if pending else "done", base, run_.passed, waiting)


def _resume(run_: _Run, own: dict[str, Any], base: bases.Base) -> Taken | None:
    """The session's own open item again: its claim renewed (and published on a remote set
    since), its paths reserved again; None when either was lost meanwhile."""
    claimed = _try_claim(run_, own)
    reserved = _reserve(run_, own) if claimed is not None else None
    if claimed is None or reserved is None:
        return None
    return _open(run_, own, base, claimed, resumed=True, reserved=reserved)


def _take_first(run_: _Run, ready: list[dict[str, Any]], base: bases.Base, rows: list[dict[str, Any]]) -> Taken | None:
    """Claim the first of ``ready`` nobody else holds and that is still open after the claim
    (``rows``: the plan at ``base``, all of it)."""
    looked, on_remote = None, {}
    for row in ready:
        if run_.seen is not looked:  # the first look, or the claims read again by a lost race
            looked, on_remote = run_.seen, _remote_holders(run_.seen, run_.who)
        why = (
            on_remote.get(row["id"]) or _claimed_here(row["id"], run_.who, run_.root) or _pr_open(row["id"], run_.root)
        )
        if why is not None:
            run_.pass_over(row["id"], why)
            continue
        claimed = _try_claim(run_, row)
        if run_.lost:
            return None
        reserved = _reserve(run_, row) if claimed is not None else None
        if claimed is None or reserved is None:
            continue
        # read after the paths are ours: a land that released them had pushed its change first
        base, rows, why = _still_open(row["id"], base, rows, run_.cwd)
        if why is not None:
            claims.release(run_.who, root=run_.root, issue=row["id"])
            release_item(run_.who, row, remote=run_.remote, root=run_.root, cwd=run_.cwd)
            run_.pass_over(row["id"], why)
            continue
        return _open(run_, row, base, claimed, resumed=False, reserved=reserved)
    return None


def _reserve(run_: _Run, row: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The item's paths reserved for the session (:mod:`gitst.loop.paths`); None when another
    live session holds one of them: the claim is given back and the item passed over, so the
    agent hears of the conflict before it writes any code."""
    got, why = reserve_item(run_.who, row, remote=run_.remote, ttl=run_.ttl, root=run_.root, cwd=run_.cwd)
    if why is None:
        return [r.to_dict() for r in got]
    claims.release(run_.who, root=run_.root, issue=row["id"])
    run_.pass_over(row["id"], why)
    return None


def _open(
    run_: _Run,
    row: dict[str, Any],
    base: bases.Base,
    claimed: claims.Claimed,
    *,
    resumed: bool,
    reserved: list[dict[str, Any]],
) -> Taken:
    """The item's worktree (created at the base's tip, or resumed), its ``in_progress`` mark."""
    added = manager.add(
        row["id"],
        run_.who,
        cwd=run_.cwd,
        base=base.tip,
        description=_description(row),
        ttl=run_.ttl,
        say=run_.say,
    )
    message = f"st: take {row['id']}\n\n{row.get('step') or ''}\n"
    mark(added.path, row["id"], "in_progress", message, fresh=added.created)
    remote_token = claimed.remote.record["token"] if claimed.remote is not None else None
    token = claimed.lock.record.get("token")
    return Taken(
        row, added.path, added.branch, base, run_.who.session, token, remote_token, resumed, run_.passed, reserved
    )


def mark(worktree: str, item_id: str, status: str, message: str, *, fresh: bool = False) -> None:
    """``status`` for ``item_id`` in the worktree's plan, committed on its branch with
    ``message`` (so ``land`` and ``sync`` find a clean work tree); nothing when it has that
    status already (a repeated ``next`` or ``land``). ``fresh``: git checked the worktree
    out in this command (the lock sidecar's check may then need no git: :func:`gitst.plan.sidecar.surely_ignored`)."""
    plan = Path(worktree) / store.DEFAULT_PLAN
    tail = store.read_tail(plan)
    item = next((i for i in tail.state.items() if i["id"] == item_id), None)
    if item is None:
        raise ProblemsFound(f"{item_id} is not in the worktree's plan {plan}: its branch is older than the base")
    if item.get("status") == status:
        return
    target = store.Target(plan, str(plan), Path(worktree))
    known = fresh and sidecar.surely_ignored(plan, worktree)
    engine.set_status(target, item_id, status, allow_multiple_in_progress=True, check_sidecar=not known)
    # no auto maintenance after it (a `git maintenance run --auto` process at every take): the
    # agents' own commits in the worktree run it, as git does after every commit
    run([*NO_AUTO_MAINTENANCE, "commit", "-q", "--no-verify", "-m", message, "--", store.DEFAULT_PLAN], worktree)
