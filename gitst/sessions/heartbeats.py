"""``git st heartbeat``: renew every lock the session holds, refresh its record, renew or
publish its claims on their remotes, and report the claims it lost (another session took
them, here or on the remote). ``publish_local`` publishes, as a heartbeat would, the claims
taken before ``st.remote`` was set."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.errors import UsageError
from gitst.core.values import field, value_class
from gitst.git.repo import repo_info
from gitst.sessions import locks, pending, remote_beats, remote_claims, reservations
from gitst.sessions.chats import (
    SCHEMA,
    configured_remote,
    inspect_issue,
    issue_lock_name,
    issue_of_lock,
    own_chat_files,
    preflight,
    update_chat,
)
from gitst.sessions.identity import Identity
from gitst.statedir import records
from gitst.statedir.paths import IssueId, validate_session

__all__ = ["Heartbeat", "heartbeat", "publish_local"]


@value_class
class Heartbeat:
    record: dict[str, Any] | None
    renewed: list[str] = field(default_factory=list)  # lock names
    lost: list[dict[str, Any]] = field(default_factory=list)  # {"issue", "owner", "asked"}: claims another session took
    remote_renewed: list[str] = field(default_factory=list)  # "7 on origin"
    remote_errors: list[str] = field(default_factory=list)  # remotes we could not reach (exit 4)
    bad_remote: list[str] = field(default_factory=list)  # claims whose remote record is refused (exit 1)
    asked: list[str] = field(default_factory=list)  # the claims whose loss makes the exit status 3
    pending: Any = None  # pending.Retry of releases that could not reach the remote before
    reservations_renewed: list[str] = field(default_factory=list)  # path globs renewed on st.remote
    reservations_lost: list[str] = field(default_factory=list)  # why a reservation could not be renewed there

    @property
    def lost_asked(self) -> list[dict[str, Any]]:
        return [lost for lost in self.lost if lost.get("asked")]


def _scope(claims: list[dict[str, Any]], issues: list[str] | None, cwd: str | os.PathLike[str] | None) -> list[str]:
    """The claims a heartbeat answers for: ``issues`` when named; else those recorded for the
    worktree ``cwd`` is in; else (outside any claimed worktree) every claim of the session."""
    if issues:
        return list(dict.fromkeys(issues))
    info = repo_info(cwd)
    top = os.path.realpath(info.toplevel) if info is not None and info.toplevel is not None else None
    here = [c["issue"] for c in claims if top and c.get("worktree") and os.path.realpath(c["worktree"]) == top]
    return here or [c["issue"] for c in claims]


def heartbeat(
    who: Identity,
    *,
    root: Path,
    ttl: float | None = None,
    issues: list[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Heartbeat:
    """Renew every lock the session holds and refresh its record; report lost claims.

    ``asked`` (:func:`_scope`) are the claims the caller asks about: a lost one among them is
    reported and dropped from the record; a lost one outside them stays in the record marked
    ``lost`` (a warning now, the error of a later heartbeat that asks about it). A claim taken
    before ``st.remote`` was set is published there now (or lost to the session holding it)."""
    for issue in issues or []:
        IssueId(issue)
    checked = preflight(who, root)
    record = records.load(checked.chat.record, SCHEMA)
    beat = Heartbeat(record=None)
    claims = (record or {}).get("claims", [])
    asked = set(_scope(claims, issues, cwd))
    beat.asked = sorted(asked)
    lost: set[str] = set()
    names = _lock_names(who, root, claims, beat, lost)
    _renew_locks(names, who, root=root, ttl=ttl, beat=beat, lost=lost)
    configured = configured_remote(cwd)
    beat.pending = pending.retry(root, cwd=cwd)  # no pending release: no git call
    remote_now = _beat_remotes(record, who, ttl, lost, beat, root, configured=configured, cwd=cwd)
    if configured is not None:
        _beat_reservations(who, configured, ttl, beat, root, cwd)
    held = {c["issue"] for c in claims} | {issue_of_lock(n) for n in beat.renewed}
    for issue in sorted(asked - held - lost):  # named, but this session holds no such claim
        lost.add(issue)
        beat.lost.append({"issue": issue, "owner": inspect_issue(issue, who, root=root).owner, "not_held": True})
    for item in beat.lost:
        item["asked"] = item["issue"] in asked

    def change(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _mark(claims, beat.lost, remote_now, drop=asked)

    if record is not None:
        beat.record = update_chat(who, root, ttl=ttl, change=change, files=checked.chat)
    return beat


def _beat_reservations(
    who: Identity, remote: str, ttl: float | None, beat: Heartbeat, root: Path, cwd: str | os.PathLike[str] | None
) -> None:
    """The session's path reservations renewed on ``remote`` (here they are locks: renewed above)."""
    try:
        beat.reservations_renewed = reservations.renew_remote(who, remote=remote, ttl=ttl, cwd=cwd, root=root)
    except reservations.ReservationTaken as taken:
        beat.reservations_lost.append(taken.message)
    except remote_claims.RemoteUnreachable as gone:
        beat.remote_errors.append(f"{gone.message}; the path reservations there were not renewed")


def _lock_names(who: Identity, root: Path, claims: list[dict[str, Any]], beat: Heartbeat, lost: set[str]) -> list[str]:
    """The issue locks a heartbeat renews: the record's claims and any other lock the session
    owns, less the claims marked lost before (reported in ``beat``, added to ``lost``)."""
    names: list[str] = [issue_lock_name(c["issue"]) for c in claims]
    for view in locks.locks_of_session(root, who.session):
        if view.name not in names:
            names.append(view.name)
    for claim in claims:
        if claim.get("lost"):
            lost.add(claim["issue"])
            marker = claim["lost"]
            item = {"issue": claim["issue"], "owner": {"session": marker.get("to"), "host": marker.get("host")}}
            if marker.get("remote"):
                item["remote"] = marker["remote"]
            beat.lost.append(item)
            names.remove(issue_lock_name(claim["issue"]))
    return names


def _renew_locks(
    names: list[str], who: Identity, *, root: Path, ttl: float | None, beat: Heartbeat, lost: set[str]
) -> None:
    """Renew each lock into ``beat.renewed``; one another session took is a lost claim."""
    for name in names:
        try:
            locks.renew(name, who, root=root, ttl=ttl)
            beat.renewed.append(str(name))
        except locks.NotOwner as not_owner:
            gone = issue_of_lock(name)
            if gone is not None and gone not in lost:
                lost.add(gone)
                beat.lost.append({"issue": gone, "owner": (not_owner.record or {}).get("owner")})


def _mark(
    claims: list[dict[str, Any]], lost: list[dict[str, Any]], remote_now: dict[str, Any], *, drop: set[str]
) -> list[dict[str, Any]]:
    """The session's claims after a heartbeat: those ``lost`` and in ``drop`` are gone (they
    were reported), the other lost ones are marked ``lost`` (reported by a later heartbeat
    that asks about them); the ones renewed on a remote get its entry (``remote_now``)."""
    stamp = timestamps.iso(timestamps.now())
    lost_to = {item["issue"]: item for item in lost}
    out = []
    for claim in claims:
        issue = claim.get("issue")
        entry = dict(claim)
        if issue in lost_to:
            if issue in drop:
                continue
            if not entry.get("lost"):
                owner = lost_to[issue].get("owner") or {}
                to = owner.get("session")
                entry["lost"] = {"at": stamp, "to": to if _session_id(to) else None}
                if lost_to[issue].get("remote"):
                    entry["lost"]["remote"] = lost_to[issue]["remote"]
                if isinstance(owner.get("host"), str):
                    entry["lost"]["host"] = owner["host"][:255]
        elif issue in remote_now:
            entry["remote"] = remote_now[issue]
        out.append(entry)
    return out


def _session_id(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        validate_session(value)
    except UsageError:  # not a session id gitst could have written
        return False
    return True


def publish_local(
    who: Identity,
    *,
    root: Path,
    remote: str,
    skip: frozenset[str] | set[str] = frozenset(),
    cwd: str | os.PathLike[str] | None = None,
) -> Heartbeat:
    """Publish on ``remote`` the session's claims taken here before ``st.remote`` was set
    (claims with no remote entry), as a heartbeat would; one another session holds there is
    given up here and marked lost. Nothing to publish: no git call."""
    beat = Heartbeat(record=None)
    record = records.load(own_chat_files(who, root).record, SCHEMA)
    todo = [
        c
        for c in (record or {}).get("claims", [])
        if not c.get("remote") and not c.get("lost") and c["issue"] not in skip
    ]
    if not todo:
        return beat
    lost: set[str] = set()
    renewed = _beat_remotes({**(record or {}), "claims": todo}, who, None, lost, beat, root, configured=remote, cwd=cwd)

    def change(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _mark(claims, beat.lost, renewed, drop=set())

    beat.record = update_chat(who, root, ttl=None, change=change)
    return beat


def _beat_remotes(
    record: dict[str, Any] | None,
    who: Identity,
    ttl: float | None,
    lost: set[str],
    beat: Heartbeat,
    root: Path,
    *,
    configured: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Renew each claim's remote lease (publish one taken ``--offline``, or taken before
    ``st.remote`` — ``configured`` — was set); ``{issue: remote entry}`` of those renewed. A
    claim another session holds there now is lost, and its local lock is given up too (the
    remote's owner is the issue's owner)."""
    renewed: dict[str, dict[str, Any]] = {}
    unreachable: dict[str, str] = {}

    def give_up(issue: str) -> None:
        name = issue_lock_name(issue)
        with contextlib.suppress(locks.NotOwner):
            locks.release(name, who, root=root)
        if name in beat.renewed:
            beat.renewed.remove(name)

    batched = _batch(record, who, ttl, lost, root, unreachable, beat, cwd=cwd)
    for entry in (record or {}).get("claims", []):
        spec = entry.get("remote") or ({"name": configured, "pending": True} if configured else {})
        issue = entry["issue"]
        if not spec.get("name") or issue in lost:
            continue
        remote = spec["name"]
        if remote in unreachable:
            continue  # asked once in this run: the message is given once
        lease = _lease(ttl, spec, record)
        if issue in batched:
            renewed[issue] = {**batched[issue].entry(), "ttl": lease}
            beat.remote_renewed.append(f"{issue} on {remote}")
            continue
        try:
            got, owner = _renew_remote(entry, spec, who, remote=remote, lease=lease, cwd=cwd)
        except remote_claims.RemoteIssueTaken as taken:
            got, owner = None, taken.record
        except remote_claims.RemoteUnreachable as gone:
            unreachable[remote] = gone.message
            beat.remote_errors.append(gone.message)
            continue
        except remote_claims.BadRemoteClaim as bad:  # one forged record never stops the others' renewal
            beat.bad_remote.append(bad.render().removeprefix("error: "))
            continue
        if got is None:  # another session holds it there
            give_up(issue)
            lost.add(issue)
            beat.lost.append({"issue": issue, "owner": owner, "remote": remote})
            continue
        renewed[issue] = {**got.entry(), "ttl": lease}
        beat.remote_renewed.append(f"{issue} on {remote}")
    return renewed


def _lease(ttl: float | None, spec: dict[str, Any], record: dict[str, Any] | None) -> float:
    """The TTL a claim's remote lease is renewed for."""
    return float(ttl or spec.get("ttl") or (record or {}).get("ttl") or locks.default_ttl())


def _batch(
    record: dict[str, Any] | None,
    who: Identity,
    ttl: float | None,
    lost: set[str],
    root: Path,
    unreachable: dict[str, str],
    beat: Heartbeat,
    *,
    cwd: str | os.PathLike[str] | None,
) -> dict[str, remote_claims.RemoteAcquired]:
    """The session's published claims renewed per remote by :func:`remote_beats.beat` (fresh
    ones read here, due ones in one push with this clone's other live sessions'); the rest
    (pending, refused, lost) are left to the one-by-one path. A remote that cannot be reached
    goes to ``unreachable`` (reported once)."""
    by_remote: dict[str, dict[str, float]] = {}
    for entry in (record or {}).get("claims", []):
        spec = entry.get("remote") or {}
        if spec.get("name") and spec.get("commit") and not spec.get("pending") and entry["issue"] not in lost:
            by_remote.setdefault(spec["name"], {})[entry["issue"]] = _lease(ttl, spec, record)
    out: dict[str, remote_claims.RemoteAcquired] = {}
    for remote, own in by_remote.items():
        try:
            out.update(remote_beats.beat(remote, own, who, root=root, cwd=cwd).renewed)
        except remote_claims.RemoteUnreachable as gone:
            unreachable[remote] = gone.message
            beat.remote_errors.append(gone.message)
    return out


def _renew_remote(
    entry: dict[str, Any],
    spec: dict[str, Any],
    who: Identity,
    *,
    remote: str,
    lease: float,
    cwd: str | os.PathLike[str] | None,
) -> tuple[remote_claims.RemoteAcquired | None, Any]:
    """Renew the claim ``entry`` on ``remote`` (publish it, when it is ``pending`` there):
    (the claim there, None) or, when another session holds it there, (None, that owner)."""
    if spec.get("pending"):
        got = remote_claims.acquire(
            entry["issue"],
            who,
            remote=remote,
            ttl=lease,
            cwd=cwd,
            branch=entry.get("branch"),
            description=entry.get("description"),
        )
        return got, None
    renewal = remote_claims.renew(entry["issue"], who, remote=remote, ttl=lease, cwd=cwd)
    return renewal.acquired, renewal.owner
