"""``git st land``: put the item's branch on the base branch without racing (docs/agent-loop.md).

From the item's worktree:

1. the item is marked ``completed`` in the worktree's plan and that is committed on the
   branch, so the completion reaches the base in the same push as the code;
2. the branch is brought up to date with the base as ``git st sync`` does (plan files merged
   by the plan driver, ids on the base kept); a conflict in code stops here with the files
   named and nothing pushed (exit 3);
3. the repository's check (``st.land.check``, run with ``/bin/sh -c`` in the worktree) and
   gitst's own check of the plan (``doctor``) run; a failure stops, nothing pushed (exit 1);
4. the **merge slot** is taken, in queue order (:mod:`gitst.loop.slot`); holding it, the
   branch is synced again (the base may have moved while we waited: the checks run again
   only then) and the base is fast-forwarded with a push that holds a lease on the base's tip
   it merged and gives the slot back in the same ``--atomic`` push — without a remote, by a
   compare-and-swap of the local branch (``update-ref NEW OLD``, or ``merge --ff-only`` in the
   worktree that has it checked out);
5. the slot is given back (when that push did not), the item's claim released (here and on
   the remote) — only now, after ``completed`` is on the base, so a ``next`` that wins the
   claim later sees it — and the worktree removed (its branch too: it is merged).

**Through a PR** (``st.land.mode = pr``, ``land --pr``; :mod:`gitst.loop.pr`): steps 1-3 as
above, then holding the slot the branch is synced again, pushed with a lease and a PR opened
(or the open one reused) and merged through ``gh`` per ``st.land.prMerge`` (``auto``: GitHub
merges it when its checks pass; ``now``; ``none``). The slot is given back once the PR is
merged or queued; while it is open the PR holds the item's claim on the remote (its session
may end or die: :func:`gitst.loop.pr.hold`), the reservations and the worktree stay, and
``land`` there again — any session's — finishes (MERGED) or gives the item back (CLOSED
unmerged), ending the PR's hold.

Every step can be repeated: a ``land`` killed at any point is finished by the next ``land``
of the same session (a branch already on the base is not pushed again); a slot whose holder
died is taken over by the next ``land`` (at once on this host) or deleted by ``git st gc``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitst import settings
from gitst.core.errors import ConflictError, EnvironmentProblem, ProblemsFound, UsageError
from gitst.core.values import field, value_class
from gitst.git import attributes, objects, refs, remote
from gitst.git.history import is_ancestor, merge_base
from gitst.git.repo import current_branch, require_repo
from gitst.git.runner import run
from gitst.git.worktrees import list_worktrees, uncommitted_changes
from gitst.loop import base as bases
from gitst.loop import pr as prs
from gitst.loop import slot as slots
from gitst.loop.checks import run_check
from gitst.loop.paths import release_all
from gitst.loop.take import mark
from gitst.plan import driver, engine, store
from gitst.plan.sync import SyncResult, sync
from gitst.sessions import claims, registry
from gitst.sessions.identity import Identity
from gitst.statedir.paths import state_dir
from gitst.worktrees import removal
from gitst.worktrees.context import Repo

__all__ = ["STAGES", "Landed", "land"]

PathLike = str | os.PathLike[str] | None
Say = Callable[[str], None]

# The moments a test stops `land` at (ST_LAND_STOP_AT) to kill it there.
STAGES = ("before-sync", "after-sync", "holding-slot", "after-push")
PUSH_ROUNDS = 5  # pushes that lost their lease to a push from outside the loop, retried in the slot


@value_class
class Landed:
    item: str
    branch: str
    base: str
    commit: str  # the base's tip after landing
    already: bool  # the branch was on the base already (a land resumed after its push)
    slot_token: int | None = None
    waited: float = 0.0
    ahead: int = 0  # holders the slot waited behind
    pushes_rejected: int = 0  # pushes that lost their lease (a push from outside the loop)
    queue: dict[str, Any] = field(default_factory=lambda: {"places": [], "first_place": 0})
    worktree: str | None = None
    removed: bool = False
    kept_because: str | None = None
    main_worktree: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    route: str = "push"  # push, or pr (st.land.mode, --pr)
    pr: prs.PullRequest | None = None
    pr_merge: str | None = None  # st.land.prMerge: auto, now, none
    given_back: bool = False  # its PR was closed unmerged: claim and reservations released

    @property
    def on_base(self) -> bool:
        """The item's work is on the base (pushed there, or its PR merged)."""
        return self.route == "push" or (self.pr is not None and self.pr.state == prs.MERGED)

    def clock(self, started: float) -> None:
        """``timings``: the landing's seconds since ``started`` and, of them, gitst's own (less
        the slot's wait and the checks)."""
        self.timings["land"] = time.monotonic() - started
        self.timings["own"] = self.timings["land"] - self.waited - self.timings.get("check", 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item,
            "branch": self.branch,
            "base": self.base,
            "commit": self.commit,
            "already_landed": self.already,
            "slot_token": self.slot_token,
            "slot_waited": round(self.waited, 3),
            "slot_ahead": self.ahead,
            "pushes_rejected": self.pushes_rejected,
            "queue": self.queue,
            "worktree": self.worktree,
            "removed": self.removed,
            "kept_because": self.kept_because,
            "main_worktree": self.main_worktree,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "route": self.route,
            "landed": self.on_base,
            "pr": None if self.pr is None else {**self.pr.to_dict(), "merge": self.pr_merge},
            "given_back": self.given_back,
        }


def _stage(name: str) -> None:
    """A test stops here (``ST_LAND_STOP_AT=name``): says so in ``ST_LAND_STOP_FILE`` and waits
    to be killed. docs/agent-loop.md, "Crash safety"."""
    if os.environ.get("ST_LAND_STOP_AT") != name:
        return
    marker = os.environ.get("ST_LAND_STOP_FILE")
    if marker:
        Path(marker).write_text(f"{os.getpid()} {name}\n")
    while True:
        time.sleep(3600)


@value_class
class _Where:
    top: str
    branch: str
    item: str
    main_root: str
    root: Path
    common_dir: Path

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def repo(self) -> Repo:
        """The repository as the worktree commands see it from the main worktree."""
        return Repo(Path(self.main_root), self.root, self.common_dir)


def _where(who: Identity, cwd: PathLike) -> _Where:
    """The worktree, its branch and item; refused (exit 2) outside an item's worktree."""
    info = require_repo(cwd)
    top = str(info.toplevel)
    branch = current_branch(cwd)
    root = state_dir(cwd)
    item = registry.issue_for_branch(branch, cwd, root=root) if branch else None
    if branch is None or item is None or os.path.realpath(top) == os.path.realpath(info.shared_root):
        raise UsageError(
            "land runs in the worktree of an item (`git st next` printed its path)",
            fix='cd "$(git st next --format json | jq -r .path)" first, or into an item\'s worktree',
        )
    return _Where(top, branch, item, str(info.shared_root), root, info.common_dir)


def _require_plan_driver(where: _Where) -> None:
    """The plan must merge with the plan driver, or every sync of two agents' plans would be a
    conflict: refused first (exit 2) with the fix, not reported as a code conflict later."""
    merge = attributes.check_attr([store.DEFAULT_PLAN], where.top, attribute="merge").get(store.DEFAULT_PLAN)
    if merge != driver.DRIVER:
        raise UsageError(
            f"{store.DEFAULT_PLAN} does not merge with the plan driver here (merge={merge}); land would "
            "find every other agent's plan change a conflict",
            fix="`git st hooks install` adds '**/.step/*.jsonl merge=gitst-plan' to .gitattributes: commit it on "
            "the base",
        )


def _check(where: _Where, landed: Landed) -> None:
    """gitst's own check of the plan, then the configured command; ProblemsFound (exit 1).
    The command's time is counted apart (``timings.check``): it is not gitst's own."""
    plan = Path(where.top) / store.DEFAULT_PLAN
    report = engine.doctor(store.Target(plan, store.DEFAULT_PLAN, Path(where.top)))
    broken = [d.to_text() for d in report.diagnostics if d.is_error]
    if broken:
        raise ProblemsFound("the plan does not pass `git st doctor`; nothing pushed:\n" + "\n".join(broken[:5]))
    command = settings.optional_str_setting("land_check", where.top)
    if not command:
        return
    started = time.monotonic()
    code = run_check(command, where.top)
    landed.timings["check"] = landed.timings.get("check", 0.0) + time.monotonic() - started
    if code != 0:
        raise ProblemsFound(
            f"the check `{command}` failed (exit {code}); nothing pushed",
            fix="fix what it found, commit, and run `git st land` again",
        )


def _sync(where: _Where, base: bases.Base, *, fetch: bool = True, clean: bool = False) -> SyncResult:
    """``clean``: the work tree is known clean on ``where.branch`` (land checked it and has only
    committed since): the sync does not ask git again."""
    local = base.remote is None
    return sync(
        base.branch,
        remote_name=base.remote,
        cwd=where.top,
        local=local,
        fetch=fetch and not local,
        on_branch=where.branch if clean else None,
    )


def _landed_already(where: _Where, base: bases.Base) -> bool:
    head = objects.resolve_commit("HEAD", where.top) or ""
    return bool(head) and is_ancestor(head, base.tip, where.top)


def _advance(where: _Where, base: bases.Base, head: str, leases: slots.Leases) -> bool:
    """Fast-forward the base to ``head`` (the branch, synced and checked): a push with a lease
    on the tip merged (a remote), a compare-and-swap of the local branch (none). False when
    the base moved meanwhile, or ``head`` does not hold the tip (never a rewind). Through a
    remote the slot is given back in the same push (``--atomic``: all or none; one round trip
    fewer inside the slot); a slot that is not ours any more (taken over after its TTL) or a
    remote whose hooks refuse its give-back gets the base pushed alone, as without it, and the
    slot given back after (:func:`_land_new`)."""
    if base.remote is None:
        return _move_local(where, base, head)
    if not is_ancestor(base.tip, head, where.top):
        return False  # the lease would let git rewind the base to it: read and sync again, never that
    ref, timeout = f"refs/heads/{base.branch}", settings.remote_timeout(where.top)
    update, slot_back = remote.RefUpdate(ref, head, base.tip), leases.give_back_updates(slots.SLOT)
    if slot_back:
        with contextlib.suppress(remote.RemoteRefused):  # refused: the base alone tells which
            both = remote.push_refs(base.remote, [update, *slot_back], where.top, timeout=timeout, atomic=True)
            if both.ok:
                leases.given_back(slots.SLOT)
                return True
            if "stale" in both.rejected.get(ref, ""):
                return False  # the base moved: synced again, the slot still held
    return remote.push_refs(base.remote, [update], where.top, timeout=timeout).ok


def _left(where: _Where, head: str) -> str:
    """What this landing leaves on the base, for the slot's doorbell: ``pending=N``, the items
    still pending in the plan it pushes (0: a waiting ``next`` on this machine ends now, not at
    its next try), and ``base=HEAD``, the commit it pushes (the next in line fetches that alone,
    or nothing)."""
    return f"pending={sum(1 for item in _items(where) if item.get('status') == 'pending')} base={head}"


def _items(where: _Where) -> list[dict[str, Any]]:
    """The items of the worktree's plan (its tail: the state, not every record)."""
    items: list[dict[str, Any]] = store.read_tail(Path(where.top) / store.DEFAULT_PLAN).state.items()
    return items


def _move_local(where: _Where, base: bases.Base, head: str) -> bool:
    """The local base branch moved from the tip merged to ``head``, never a non-fast-forward:
    ``update-ref NEW OLD``; where the base is checked out (the main worktree, usually) a
    ``merge --ff-only`` there instead, so its files follow. False when the base moved."""
    if not is_ancestor(base.tip, head, where.top):
        return False
    checkout = next((w for w in list_worktrees(where.top) if w.branch == base.branch and not w.bare), None)
    if checkout is None:
        return refs.move_branch(base.branch, head, base.tip, where.top, why=f"gitst land {where.item}")
    if objects.resolve_commit(base.ref, where.top) != base.tip:
        return False
    merged = run(["merge", "--ff-only", "--quiet", head], checkout.path, check=False)
    if merged.ok:
        return True
    if objects.resolve_commit(base.ref, where.top) != base.tip:
        return False  # somebody committed there meanwhile: sync again
    said = merged.stderr.decode("utf-8", "replace").strip().splitlines() or ["refused"]
    raise ConflictError(
        f"{base.branch} is checked out in {checkout.path} and git would not fast-forward it there: "
        f"{said[0]}; nothing moved",
        fix=f"commit or stash the changes in {checkout.path}, then `git st land` again",
    )


def _in_slot(
    where: _Where, base: bases.Base, landed: Landed, head: str, held: tuple[slots.Leases, bases.Base | None, bool]
) -> str:
    """Holding the slot: the base read again — first as the fetch beside the slot's take read
    it (``held``: the leases, that base — None: no such fetch —, whether the take won at once);
    then, when it moved since ``base`` (what the branch at ``head`` has merged), synced again and
    checked again; then pushed. The base's tip."""
    leases, fetched, at_once = held
    for round_ in range(PUSH_ROUNDS):
        if round_ == 0 and fetched is not None:
            # the take won on the look before the fetch began: nobody took the slot since, only a
            # push from outside the loop moves the base (its lease tells); else one ls-remote
            # says whether the fetch is still the base (a fetch again only when it is not)
            now = fetched if at_once else bases.again(fetched, where.top)
        else:  # a fetch only when it moved; after a lost push, read anew
            now = bases.again(base, where.top)
        if now.tip != base.tip or not head:
            synced = _sync(where, now, fetch=False, clean=True)
            base, head = now, synced.head
            if synced.action in ("merged", "rebased"):
                _check(where, landed)
            if is_ancestor(head, base.tip, where.top):
                return base.tip
        _stage("holding-slot")
        leases.note(_left(where, head))
        if _advance(where, base, head, leases):
            return head
        leases.note("")
        landed.pushes_rejected += 1
        base = bases.Base(base.branch, base.remote, "")  # moved under an outside push: read and synced again
    raise ConflictError(
        f"{base.shown} kept moving under pushes from outside `git st land` ({PUSH_ROUNDS} rounds); nothing lost",
        fix="run `git st land` again",
    )


def land(
    who: Identity,
    *,
    remote_name: str | None,
    wait: float,
    cwd: PathLike = None,
    say: Say = print,
    route: str | None = None,
) -> Landed:
    """Land the item of the worktree at ``cwd`` (module docstring); ``remote_name`` None: on
    the local base branch, the slot a local lease. ``route``: ``push`` or ``pr`` (None: the
    setting ``st.land.mode``)."""
    started = time.monotonic()
    where = _where(who, cwd)
    _require_plan_driver(where)
    dirty = [line for line in uncommitted_changes(where.top) if not line.startswith("??")]
    if dirty:
        raise UsageError(f"the worktree has uncommitted changes ({len(dirty)} files)", fix="commit them, then land")
    record = prs.remembered(where.item, where.root)
    if route is None and record is not None:
        route = "pr"  # its PR is open (or was merged): finished through it, whatever the mode
    if (route or settings.str_setting("land_mode", where.top)) == "pr":
        return _land_pr(who, where, remote_name, wait, say, (started, record or {}))
    base, seen = bases.refresh_with(bases.locate(remote_name, where.top), [where.branch_ref], where.top)
    head = seen.get(where.branch_ref) or objects.resolve_commit("HEAD", where.top) or ""
    common = merge_base(head, base.tip, where.top) if head else None  # one question: landed? up to date?
    landed = Landed(where.item, where.branch, base.shown, base.tip, already=bool(head) and common == head)
    if not landed.already:
        _land_new(who, where, base, landed, wait, say, up_to_date=common == base.tip)
    landed.clock(started)
    _stage("after-push")
    release_all(who, remote=remote_name, root=where.root, cwd=where.top, say=say)  # the item's paths, with its claim
    _finish(who, where, landed, say)
    return landed


def _prepare(who: Identity, where: _Where, base: bases.Base, landed: Landed, *, up_to_date: bool = False) -> str:
    """Before the slot: the item ours, marked completed on the branch, synced, checked. The
    branch's commit when the sync made it ("": the completion's, not read yet). ``up_to_date``:
    the branch has the base's tip already (land() asked), nothing to sync."""
    status = claims.inspect_issue(where.item, who, root=where.root)
    if status.state == claims.TAKEN:
        raise claims.IssueTaken(status, action="land")
    mark(where.top, where.item, "completed", f"st: land {where.item}")
    _stage("before-sync")
    # land() fetched the base a moment ago, and found the work tree clean: only the mark committed since
    head = "" if up_to_date else _sync(where, base, fetch=False, clean=True).head
    _stage("after-sync")
    _check(where, landed)
    return head


@value_class
class _Fetching:
    """The base fetched beside the push that takes the slot: two round trips at once instead of
    one after the other while the slot is held (``land``'s first read of the base holding it).
    A fetch that failed is no answer: the slot reads the base itself then.

    When the base moved since the branch was synced, the branch is **synced with it and checked
    there too**, while the take's push is on its way (a merge of the base into the branch is
    what ``land`` does before the slot anyway: never wrong to have, won or lost). Holding the
    slot, what is left is the push — unless the base moved again. A conflict found there is
    raised holding the slot (given back as for any failure in it), nothing pushed."""

    where: _Where
    base: bases.Base  # what the branch has merged
    head: str  # the branch's commit with it ("": not read)
    landed: Landed
    _thread: threading.Thread | None = None
    _got: bases.Base | None = None
    _fresh: bool = False  # the last try to take the slot began the fetch running
    _failed: Exception | None = None  # the sync beside the take stopped on it (a conflict, a check)

    def start(self, landed: str = "") -> None:
        """A fetch begun now (each try to take the slot). One at a time: while an earlier try's
        is still on its way, its answer is too old for this try and none is begun. ``landed``:
        the commit the landing that gave the slot back said it pushed (the doorbell): that
        commit alone is fetched, or none when this clone has it (:func:`bases.refresh_to`).
        What stopped the sync beside an earlier take that lost (a conflict, a failed check) is
        raised now: nothing to land, no reason to wait for the slot."""
        if self._failed is not None:
            raise self._failed
        self._fresh = self._thread is None or not self._thread.is_alive()
        if self._fresh:
            self._got = None
            self._thread = threading.Thread(target=self._fetch, args=(landed,), name="gitst-land-fetch", daemon=True)
            self._thread.start()

    def _fetch(self, landed: str) -> None:
        # whatever stops the fetch (the remote, git, the disk, a bug), the slot's own read of the
        # base meets it again in the main thread and says it there: never a thread's traceback
        with contextlib.suppress(Exception):
            top = self.where.top
            self._got = bases.refresh_to(self.base, landed, top) if landed else bases.refresh(self.base, top)
        got = self._got
        if got is None or got.tip == self.base.tip or self._failed is not None:
            return
        try:  # the sync the slot would run, run now: the same function, the same checks after
            synced = _sync(self.where, got, fetch=False, clean=True)
            if synced.action in ("merged", "rebased"):
                _check(self.where, self.landed)
        except Exception as failed:  # said holding the slot, in the main thread (a bug's traceback too)
            self._failed = failed
            return
        self.base, self.head = got, synced.head

    def synced(self) -> tuple[bases.Base, str]:
        """What the branch has merged now, and its commit (waits for the sync beside the take);
        raises what stopped that sync."""
        self.join()
        if self._failed is not None:
            raise self._failed
        return self.base, self.head

    def join(self) -> None:
        """Nothing of it still running (``land`` never returns with a merge under way)."""
        if self._thread is not None:
            self._thread.join()

    def got(self) -> bases.Base | None:
        """The base as the last fetch read it (waits for it); None: no fetch, or it failed."""
        if self._thread is None:
            return None
        self._thread.join()
        return self._got if self._fresh else None


def _take_slot(
    who: Identity,
    where: _Where,
    base: bases.Base,
    landed: Landed,
    wait: float,
    say: Say,
    fetching: _Fetching | None = None,
) -> slots.Leases:
    if base.remote is not None:  # each full look reads the branch's commit along: no rev-parse of it later
        leases = slots.remote_leases(who, base.remote, where.top, read=(where.branch_ref,))
    else:
        leases = slots.local_leases(who, where.root, where.top)
    taking = fetching.start if fetching is not None else None
    slot = slots.acquire(leases, who, item=where.item, wait=wait, say=say, taking=taking)
    landed.slot_token, landed.waited, landed.ahead = slot.token, slot.waited, slot.holders_seen
    landed.queue = slot.queue()
    return leases


def _give_slot_back(leases: slots.Leases, say: Say) -> None:
    try:
        slots.release(leases)
    except EnvironmentProblem as gone:  # the slot expires; gc deletes it
        say(f"gitst: warning: could not give the merge slot back: {gone.message}")


def _land_new(
    who: Identity, where: _Where, base: bases.Base, landed: Landed, wait: float, say: Say, *, up_to_date: bool
) -> None:
    head = _prepare(who, where, base, landed, up_to_date=up_to_date)
    fetching = _Fetching(where, base, head, landed) if base.remote is not None else None
    try:
        leases = _take_slot(who, where, base, landed, wait, say, fetching)
    finally:
        if fetching is not None:
            fetching.join()
    try:
        fetched = fetching.got() if fetching is not None else None  # waited for, whatever it is worth
        if fetching is not None:
            base, head = fetching.synced()  # synced beside the take: the base it merged, the commit
        # the branch's commit: what the sync made, else what the slot's look read along, else asked
        head = head or leases.seen(where.branch_ref) or objects.resolve_commit("HEAD", where.top) or ""
        landed.commit = _in_slot(where, base, landed, head, (leases, fetched, leases.took_at_once()))
    finally:
        _give_slot_back(leases, say)


# --- the PR route (st.land.mode = pr): gh, docs/agent-loop.md "Landing through a PR" -------------


def _land_pr(
    who: Identity, where: _Where, remote_name: str | None, wait: float, say: Say, begun: tuple[float, dict[str, Any]]
) -> Landed:
    """Through a PR: the PR this landing opened (or the open one of the branch) found first
    (gh missing or failing stops here, nothing done); a MERGED one finishes the landing, a
    CLOSED one gives the item back; else, holding the slot, the branch synced, checked,
    pushed, the PR opened and merged per ``st.land.prMerge``. ``begun``: when the landing
    started, and the PR its worktree remembers (empty: none)."""
    started, record = begun
    if remote_name is None:
        raise UsageError(
            "the PR route of land needs a remote (st.remote, or --remote NAME) the PR's branch is pushed to",
            fix="`git config st.remote origin`, or land on the local base with `git st land --push`",
        )
    base = bases.refresh(bases.locate(remote_name, where.top), where.top)
    landed = Landed(where.item, where.branch, base.shown, base.tip, already=False, route="pr")
    landed.pr_merge = settings.str_setting("land_pr_merge", where.top)
    head = objects.resolve_commit("HEAD", where.top) or ""
    found = prs.find(where.branch, head, record.get("number"), where.top)
    landed.already = found is not None and found.state == prs.MERGED
    if found is not None and found.state == prs.CLOSED:
        _give_back(who, where, landed, found, record, say)
        return landed
    pr = found if found is not None and landed.already else None
    if pr is None:
        pr = _through_pr(who, where, (base, remote_name), landed, found, record, wait, say)
    landed.pr = pr
    landed.clock(started)
    landed.main_worktree, landed.worktree = where.main_root, where.top
    if not landed.on_base:
        landed.kept_because = f"PR #{pr.number} is open ({landed.pr_merge} merge): `git st land` here again finishes"
        prs.hold(who, where.item, pr, remote_name=remote_name, root=where.root, cwd=where.top, say=say)
        return landed
    base = bases.refresh(base, where.top)
    landed.commit = base.tip
    _stage("after-push")
    release_all(who, remote=remote_name, root=where.root, cwd=where.top, say=say)
    prs.end_hold(where.item, pr, record, remote_name=remote_name, cwd=where.top, say=say)
    prs.forget(where.item, where.root)
    # a squashed or rebased PR leaves the branch's own commits off the base: the branch is kept
    _finish(who, where, landed, say, delete_branch=_landed_already(where, base))
    return landed


def _through_pr(
    who: Identity,
    where: _Where,
    on: tuple[bases.Base, str],
    landed: Landed,
    found: prs.PullRequest | None,
    record: dict[str, Any],
    wait: float,
    say: Say,
) -> prs.PullRequest:
    """Holding the slot: sync again (checks again when the base moved), push the branch with a
    lease, open the PR (or reuse the open one) and merge it per ``st.land.prMerge``."""
    base, remote_name = on
    _prepare(who, where, base, landed)
    leases = _take_slot(who, where, base, landed, wait, say)
    try:
        if _sync(where, base).action in ("merged", "rebased"):
            _check(where, landed)
        _stage("holding-slot")
        pushed = prs.push_branch(where.branch, remote_name, record.get("pushed"), where.top)
        pr = found or prs.create(where.branch, base.branch, *_texts(who, where), where.top)
        prs.remember(where.item, pr, pushed=pushed, remote_name=remote_name, session=who.session, root=where.root)
        if landed.pr_merge != "none":
            method = settings.str_setting("land_pr_method", where.top)
            pr = prs.merge(pr, landed.pr_merge or "auto", method, pushed, where.top)
        return pr
    finally:
        _give_slot_back(leases, say)


def _texts(who: Identity, where: _Where) -> tuple[str, str]:
    """The PR's title and body from the item in the worktree's plan."""
    item = next((i for i in _items(where) if i["id"] == where.item), {"id": where.item})
    return prs.title_of(item), prs.body_of(item, who.session)


def _give_back(
    who: Identity, where: _Where, landed: Landed, pr: prs.PullRequest, record: dict[str, Any], say: Say
) -> None:
    """The PR this landing opened was closed unmerged: the item goes back to the plan's pool
    (still pending on the base) — its claim and reservations released, the PR's branch deleted
    on the remote when it is still what this landing pushed (its work stays in the PR), the
    worktree and its branch kept."""
    landed.pr, landed.given_back = pr, True
    landed.worktree, landed.main_worktree = where.top, where.main_root
    remote_name = str(record.get("remote") or "")
    if remote_name and record.get("pushed"):
        prs.delete_branch(where.branch, remote_name, str(record["pushed"]), where.top)
    release_all(who, remote=remote_name or None, root=where.root, cwd=where.top, say=say)
    claims.release(who, root=where.root, issue=where.item)
    prs.end_hold(where.item, pr, record, remote_name=remote_name or None, cwd=where.top, say=say)
    prs.forget(where.item, where.root)
    landed.kept_because = f"PR #{pr.number} was closed without merging: the item is given back"
    say(
        f"gitst: PR #{pr.number} ({pr.url}) was closed without merging; {where.item} is given back (pending on "
        f"{landed.base}); its work stays in the PR and in {where.top}"
    )


def _finish(who: Identity, where: _Where, landed: Landed, say: Say, *, delete_branch: bool = True) -> None:
    """The claim released (here and on the remote), the worktree and its merged branch removed."""
    claims.release(who, root=where.root, issue=where.item)
    landed.worktree, landed.main_worktree = where.top, where.main_root
    # This process stands in the worktree it removes: every later path lookup (the state dir's
    # checks call os.getcwd()) would fail in a deleted directory, so move to the main worktree.
    os.chdir(where.main_root)
    try:
        removal.remove(where.item, who, cwd=where.main_root, delete_branch=delete_branch, say=say, repo=where.repo())
        landed.removed = True
    except (UsageError, ProblemsFound, ConflictError) as kept:
        landed.kept_because = kept.message
        say(f"gitst: kept the worktree {where.top}: {kept.message}")
