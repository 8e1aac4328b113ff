"""The base branch the loop works against: where plan items are published.

The base is ``st.sync.base`` (default ``main``), the branch ``sync`` merges in. With a remote
(``st.remote``) its tip is fetched before every decision (``refs/remotes/<remote>/<base>``);
without one it is the local branch. The plan read there is the one every agent shares: an
item completed there is done, whatever an agent's older copy says.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

from gitst import settings
from gitst.core.errors import EnvironmentProblem, GitstError, ProblemsFound, UsageError
from gitst.core.values import value_class
from gitst.git import history, objects, refs, remote
from gitst.plan import store
from gitst.sessions import remote_survey

__all__ = ["Base", "again", "items_at", "locate", "look", "refresh", "refresh_to", "refresh_with"]

PathLike = str | os.PathLike[str] | None

_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a full object id (sha1, sha256): what a hint must be


@value_class(frozen=True)
class Base:
    branch: str  # "main"
    remote: str | None  # "origin"; None: the local branch
    tip: str  # the commit the plan was read at

    @property
    def ref(self) -> str:
        """The ref holding the base's tip here."""
        if self.remote is None:
            return f"refs/heads/{self.branch}"
        return f"refs/remotes/{self.remote}/{self.branch}"

    @property
    def refspec(self) -> str:
        """What a fetch of the base from its remote asks for (into :attr:`ref`)."""
        return f"+refs/heads/{self.branch}:{self.ref}"

    @property
    def shown(self) -> str:
        return self.branch if self.remote is None else f"{self.remote}/{self.branch}"


def locate(remote_name: str | None, cwd: PathLike = None) -> Base:
    """The base (not yet read): ``st.sync.base`` on ``remote_name`` (None: local)."""
    branch = settings.str_setting("sync_base", cwd)
    return Base(branch, remote_name, "")


def refresh(base: Base, cwd: PathLike = None, *, fetch: bool = True) -> Base:
    """``base`` with its tip now: fetched first when it lives on a remote (unless ``fetch`` is
    False: the caller fetched it a moment ago, e.g. through ``sync``)."""
    return refresh_with(base, [], cwd, fetch=fetch)[0]


def refresh_to(base: Base, tip: str, cwd: PathLike = None) -> Base:
    """``base`` at ``tip``, the commit a landing on this machine says it pushed there (the merge
    slot's doorbell, :mod:`gitst.loop.doorbell`): one round trip fewer than :func:`refresh`, or
    none. The commit is here already (the landing ran in a worktree of this clone): the
    tracking ref moved to it, a compare-and-swap, no fetch; else a fetch of that commit alone
    (no listing of the remote's refs first). Only forward: where the tracking ref does not lead
    to ``tip``, or the remote has no such commit, or anything else fails, :func:`refresh`. It is
    a hint: whoever trusts it pushes with a lease on it (a wrong tip is a refused push, never a
    lost commit)."""
    if base.remote is None or not _OID.fullmatch(tip):
        return refresh(base, cwd)
    at_tip = Base(base.branch, base.remote, tip)
    now = refs.refs_under_all([base.ref], cwd).get(base.ref, "")
    if now == tip:
        return at_tip
    if objects.resolve_commit(tip, cwd) == tip:  # here already: forward only, a compare-and-swap
        forward = bool(now) and history.is_ancestor(now, tip, cwd)
        if forward and refs.move_ref(base.ref, tip, now, cwd, why="gitst land: the base a landing here pushed"):
            return at_tip
        return refresh(base, cwd)
    with contextlib.suppress(GitstError):  # "not our ref", a non-fast-forward, the remote gone: read it whole
        remote.fetch_refs(base.remote, [f"{tip}:{base.ref}"], cwd, timeout=settings.remote_timeout(cwd))
        if refs.refs_under_all([base.ref], cwd).get(base.ref) == tip:
            return at_tip
    return refresh(base, cwd)


def refresh_with(
    base: Base, read: list[str], cwd: PathLike = None, *, fetch: bool = True
) -> tuple[Base, dict[str, str]]:
    """:func:`refresh` and the caller's local refs ``read`` (full names, e.g. the item's
    branch) in the same ``for-each-ref``: ``(base, {ref: object id})``."""
    if base.remote is not None and fetch:
        remote.fetch_refs(base.remote, [base.refspec], cwd, timeout=settings.remote_timeout(cwd))
    found = refs.refs_under_all([base.ref, *read], cwd)
    tip = found.get(base.ref)
    if tip is None:
        raise _missing(base)
    return Base(base.branch, base.remote, tip), {name: found[name] for name in read if name in found}


def _missing(base: Base) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"the base branch {base.shown} does not exist",
        fix="set the branch work lands on: `git config st.sync.base BRANCH`",
    )


def look(base: Base, cwd: PathLike = None, *, since: int = 0) -> tuple[Base, remote_survey.Survey | None]:
    """``base`` with its tip now and, when it lives on a remote, what the remote's claims are
    (:mod:`gitst.sessions.remote_survey`): the base, ``refs/st/claims/*`` and the fence
    counters in **one** fetch (``since``: not another session's begun before that moment, in
    ns). Without a remote: :func:`refresh` (the local branch), no survey."""
    if base.remote is None:
        return refresh(base, cwd), None
    seen = remote_survey.survey(base.remote, cwd, fetch=[base.refspec], read=[base.ref], since=since)
    tip = seen.local.get(base.ref)
    if tip is None:
        raise _missing(base)
    return Base(base.branch, base.remote, tip), seen


def again(base: Base, cwd: PathLike = None) -> Base:
    """``base`` read again (after a claim won): on a remote, one ``git ls-remote`` of the branch
    first, and a fetch only when its tip moved since ``base`` was read; else :func:`refresh`.
    The caller reads the plan again only when the returned tip differs."""
    if base.remote is not None:
        tip = remote.remote_ref(base.remote, f"refs/heads/{base.branch}", cwd, timeout=settings.remote_timeout(cwd))
        if tip == base.tip:
            return base
    return refresh(base, cwd)


def items_at(base: Base, cwd: PathLike = None) -> list[dict[str, Any]]:
    """The plan's items at the base's tip (no plan there: exit 2, nothing to take)."""
    data = objects.blob_at(cwd, base.tip, store.DEFAULT_PLAN)
    if data is None:
        raise UsageError(
            f"{base.shown} has no plan ({store.DEFAULT_PLAN})",
            fix=f"start one (`git st init`), commit it and bring it to {base.shown}",
        )
    tail = store.read_tail_bytes(data, f"{base.shown}:{store.DEFAULT_PLAN}")
    errors = [problem.message for problem in tail.errors]
    if errors:
        raise ProblemsFound(
            f"the plan on {base.shown} breaks the st contract: {errors[0]}",
            fix=f"`git st doctor` on {base.shown}, fix it there",
        )
    items: list[dict[str, Any]] = tail.state.items()
    return items
