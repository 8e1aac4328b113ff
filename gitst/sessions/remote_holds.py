"""A claim held by an open pull request (docs/remote.md; docs/agent-loop.md, "Landing through a PR").

``git st land --pr`` that leaves its PR open hands the item's claim on the remote to the PR:
the record keeps its token and gains ``pr`` (``{"number", "url"}``), loses its owner process
(``pid``, ``pid_start``, ``liveness``: never *dead*) and is leased for ``st.land.prHold``. No
session renews it, none may take it over while it is live (its own included:
:func:`gitst.sessions.remote_claims.acquire`), and ``land`` ends it once the PR is merged or
closed, whichever session runs it. Every move is one push with a lease on the commit read.
"""

from __future__ import annotations

import os
from typing import Any

from gitst.core.errors import ConflictError
from gitst.git.remote import RefUpdate
from gitst.sessions.identity import Identity
from gitst.sessions.remote_claims import (
    RACE_TRIES,
    RemoteAcquired,
    claim_ref,
    commit_record,
    push_refs,
    read_claim,
    renewal_of,
)
from gitst.sessions.remote_records import held_by_pr

__all__ = ["end_hold", "hold"]

PathLike = str | os.PathLike[str] | None

_NO_OWNER = ("pid", "pid_start", "liveness")


def hold(
    issue: str, who: Identity, *, remote: str, pr: dict[str, Any], ttl: float, cwd: PathLike = None
) -> RemoteAcquired | None:
    """Hand the claim on ``issue`` to the open pull request ``pr`` (``{"number", "url"}``) for
    ``ttl`` seconds: ``who``'s own claim, or a hold of the same PR (its lease renewed). None when
    another session's claim, another PR's hold or no claim is there (nothing is pushed)."""
    ref = claim_ref(issue)
    for _ in range(RACE_TRIES):
        current = read_claim(issue, remote, cwd).claim
        if current is None:
            return None
        old = current.record
        same = held_by_pr(old) == pr["number"]
        if not same and (held_by_pr(old) is not None or old["session"] != who.session):
            return None
        record = renewal_of(old, who, ttl)
        for key in _NO_OWNER:
            record.pop(key, None)
        record["pr"] = {"number": pr["number"], "url": pr.get("url")}
        oid = commit_record(record, f"hold for PR #{pr['number']}", cwd)
        if push_refs(remote, [RefUpdate(ref, oid, current.oid)], cwd).ok:
            return RemoteAcquired(remote, ref, oid, record, "renewed")
    raise ConflictError(f"issue {issue}: the claim on {remote} kept changing while it was handed to its PR")


def end_hold(issue: str, *, remote: str, number: int, cwd: PathLike = None) -> bool:
    """Delete the claim on ``issue`` that PR ``number`` holds. False when the remote holds no
    such hold (ended already; expired and taken over)."""
    ref = claim_ref(issue)
    for _ in range(RACE_TRIES):
        current = read_claim(issue, remote, cwd).claim
        if current is None or held_by_pr(current.record) != number:
            return False
        if push_refs(remote, [RefUpdate(ref, None, current.oid)], cwd).ok:
            return True
    raise ConflictError(f"issue {issue}: the claim on {remote} kept changing while its PR's hold was ended")
