"""Batched heartbeats on a remote (issue 25.2): one push per clone per renewal interval, not one
per claim or per agent.

A session's ``heartbeat`` asks :func:`beat` for its claims on a remote:

1. **Fresh ones cost nothing.** This clone's copy of the remote's claims
   (``refs/st-remote/<remote>/claims/*``, moved by every fetch and by every batch pushed from
   here) tells when each was last renewed. A claim of ours with more than half its TTL left is
   reported renewed as it stands: no fetch, no push. Nobody can have taken it over (a claim is
   taken over only after it expired), so nothing is missed.
2. **Due ones go in one batch with the clone's others.** When one of ours is due, the claims
   of every live session of this clone on that remote are renewed together: one fetch of just
   those claim refs, one new record each (same owner, same token, new expiry and nonce), and
   one ``git push`` with a lease on each ref. The push is *not* ``--atomic``: each ref's lease
   is checked on its own, so a claim taken over or released meanwhile fails alone and never
   holds up the others (an atomic push would refuse every renewal for one lost claim). After
   the batch every claim of the clone is renewed at the same moment, so the next batch is due
   for all at once: about one push per clone every TTL/2 whatever the number of agents.
3. **Anything unusual goes the old way.** A claim of ours whose push was refused, or whose
   record is not ours or not readable, is handed back to the caller, which renews it alone
   (:func:`gitst.sessions.remote_claims.renew`) and reports it lost, forged or renewed as
   before.

Another session's claim is renewed only while that session is live here (its record in this
clone's state is live) and the remote's record still names it; its own next heartbeat finds it
fresh. docs/remote.md, "Heartbeats, batched".
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.values import field, value_class
from gitst.git import refs
from gitst.git.remote import RefUpdate
from gitst.git.runner import run
from gitst.sessions import chats, locks, remote_claims
from gitst.sessions.identity import Identity
from gitst.sessions.remote_records import CLAIM_FIELDS, CLAIM_FILE, BadRemoteClaim, parse, read_records

__all__ = ["Beat", "beat", "due"]

# A claim is renewed once less than this share of its TTL is left (heartbeats come every TTL/3
# or so: a claim is never closer than TTL/6 to lapsing while a session of its clone beats).
DUE_SHARE = 0.5


@value_class
class Beat:
    renewed: dict[str, remote_claims.RemoteAcquired] = field(default_factory=dict)  # ours, fresh or pushed
    alone: list[str] = field(default_factory=list)  # ours the caller renews one by one
    others: list[str] = field(default_factory=list)  # other sessions' claims this batch renewed
    pushes: int = 0


def due(record: dict[str, Any], ttl: float, now: float | None = None) -> bool:
    """True when less than half of the claim's TTL is left (or it is gone)."""
    left = timestamps.parse(record["expires_at"]) - (timestamps.now() if now is None else now)
    return left < ttl * DUE_SHARE


def _tracked(
    remote: str, issues: list[str], cwd: str | os.PathLike[str] | None
) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{issue: (commit, record)}`` of this clone's copy of the remote's claims of ``issues``
    (no network; a record that does not read is left out: the batch reads it again)."""
    track = remote_claims.tracking(remote) + "claims/"
    local = refs.refs_under(track, cwd)
    oids = {issue: local[track + issue] for issue in issues if track + issue in local}
    raws = read_records(remote, {remote_claims.claim_ref(i): oid for i, oid in oids.items()}, cwd)
    out = {}
    for issue, oid in oids.items():
        ref = remote_claims.claim_ref(issue)
        try:
            out[issue] = (oid, parse(remote, ref, raws[ref], CLAIM_FIELDS, issue))
        except BadRemoteClaim:
            continue
    return out


def _clone_claims(remote: str, who: Identity, root: Path) -> dict[str, tuple[str, float]]:
    """``{issue: (session, ttl)}``: the claims on ``remote`` of the other live sessions of this clone."""
    out = {}
    for view in chats.list_sessions(root):
        if view.session == who.session or view.state != locks.LIVE or view.record is None:
            continue
        for claim in view.record.get("claims", []):
            spec = claim.get("remote") or {}
            if spec.get("name") == remote and spec.get("commit") and not claim.get("lost"):
                ttl = spec.get("ttl") or view.record.get("ttl") or locks.default_ttl()
                out[claim["issue"]] = (view.session, float(ttl))
    return out


def beat(
    remote: str,
    own: dict[str, float],
    who: Identity,
    *,
    root: Path,
    cwd: str | os.PathLike[str] | None = None,
) -> Beat:
    """Renew ``own`` (``{issue: ttl}``, the session's claims on ``remote``) as the module says:
    fresh ones from this clone's copy, due ones in one push with the clone's other live
    sessions' claims. RemoteUnreachable (exit 4) when the remote cannot be reached."""
    result = Beat()
    now = timestamps.now()
    tracked = _tracked(remote, list(own), cwd)
    todo = {}
    for issue, ttl in own.items():
        got = tracked.get(issue)
        if got is not None and got[1]["session"] == who.session and not due(got[1], ttl, now):
            result.renewed[issue] = remote_claims.RemoteAcquired(
                remote, remote_claims.claim_ref(issue), got[0], got[1], "renewed"
            )
        else:
            todo[issue] = (who.session, ttl)
    if not todo:
        return result
    batch = {**_clone_claims(remote, who, root), **todo}
    _push_batch(remote, batch, who, result, cwd)
    result.alone += [issue for issue in todo if issue not in result.renewed and issue not in result.alone]
    return result


def _push_batch(
    remote: str,
    batch: dict[str, tuple[str, float]],
    who: Identity,
    result: Beat,
    cwd: str | os.PathLike[str] | None,
) -> None:
    """One fetch of the ``batch`` claim refs, one push renewing those still held by the session
    named (a lease each); ours that fail go to ``result.alone``."""
    track = remote_claims.tracking(remote)
    remote_claims.fetch_refs(remote, [f"+refs/st/claim*/{issue}:{track}claim*/{issue}" for issue in batch], cwd)
    made = _renewals(remote, batch, who, result, cwd)
    if not made:
        return
    updates = [RefUpdate(remote_claims.claim_ref(issue), oid, old) for issue, (old, oid, _) in made.items()]
    pushed = remote_claims.push_refs(remote, updates, cwd)
    result.pushes += 1
    moved = []
    for issue, (_, oid, record) in made.items():
        ref = remote_claims.claim_ref(issue)
        mine = batch[issue][0] == who.session
        if ref in pushed.rejected:
            result.alone += [issue] if mine else []
            continue
        moved.append(f"update {track}claims/{issue} {oid}\n")
        if mine:
            result.renewed[issue] = remote_claims.RemoteAcquired(remote, ref, oid, record, "renewed")
        else:
            result.others.append(issue)
    if moved:  # this clone's copy follows what it pushed: the others' next beat finds them fresh
        run(["update-ref", "--stdin"], cwd, input="".join(moved).encode())


def _renewals(
    remote: str,
    batch: dict[str, tuple[str, float]],
    who: Identity,
    result: Beat,
    cwd: str | os.PathLike[str] | None,
) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """``{issue: (commit read, new commit, new record)}`` for each claim of ``batch`` the remote
    (as just fetched) still gives to the session named, live; ours that it does not go to
    ``result.alone`` (lost, released or unreadable: renew() says which)."""
    current = _tracked(remote, list(batch), cwd)
    made = {}
    for issue, (session, ttl) in sorted(batch.items()):
        got = current.get(issue)
        mine = session == who.session
        if (
            got is None
            or got[1]["session"] != session
            or (not mine and remote_claims.claim_state(got[1]) != locks.LIVE)
        ):
            result.alone += [issue] if mine else []
            continue
        record = _renewed(got[1], who if mine else None, ttl)
        made[issue] = (
            got[0],
            remote_claims._commit(cwd, CLAIM_FILE, record, remote_claims._message("renew", record)),
            record,
        )
    return made


def _renewed(old: dict[str, Any], who: Identity | None, ttl: float) -> dict[str, Any]:
    """``old`` with a new expiry: rebuilt from ``who`` for our own claim (as a renewal always
    was), copied field for field for another session's (its owner stays as it wrote it)."""
    if who is not None:
        return remote_claims.renewal_of(old, who, ttl)
    now = timestamps.now()
    stamp = {"renewed_at": timestamps.iso(now), "expires_at": timestamps.iso(now + ttl), "ttl": ttl}
    return {**old, **stamp, "nonce": secrets.token_hex(16)}
