"""Releases of remote claims that could not reach the remote:
``state/pending-releases/<issue>.json`` (schema ``state-pending-release``).

A claim released here while its remote is away (``git st release``, ``worktree remove``,
``clean``/``prune`` ending a gone owner's claim) is released here at once and remembered in
one record per issue: the remote, the session whose claim ref is to be deleted there and its
fencing token. :func:`retry` — run by the next command that reaches that remote (``claim``,
``heartbeat``, ``release``, ``check-issue``, ``status``, ``sessions --remote``, ``worktree
add|remove``) and by ``git st gc`` — deletes the claim ref when it still holds that session's
claim with that token, then the record; until then every such command warns about it and
``git st status`` lists it. docs/parallel.md, "Leaving while the remote is away".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.errors import GitstError
from gitst.core.values import field, value_class
from gitst.sessions import remote_claims
from gitst.statedir import records
from gitst.statedir.paths import ensure_state_dir, validate_identifier

__all__ = ["DIR", "SCHEMA", "Retry", "forget", "list_pending", "remember", "retry", "warning"]

SCHEMA = "state-pending-release"
DIR = "pending-releases"
RECORD_VERSION = 1


def _files(issue: str, root: Path) -> records.RecordFiles:
    return records.record_files(root, DIR, validate_identifier(issue, "issue"))


def remember(root: Path, issue: str, *, remote: str, session: str, token: int | None, error: str) -> dict[str, Any]:
    """Record (or refresh) the pending release of ``session``'s claim on ``issue`` at ``remote``."""
    files = _files(issue, root)
    ensure_state_dir(root)
    records.make_dir(files.record.parent, root)
    now = timestamps.iso(timestamps.now())
    with records.locked(files.sidecar):
        try:
            current = records.load(files.record, SCHEMA) or {}
        except records.CorruptRecord:
            current = {}
        same = current.get("session") == session and current.get("remote") == remote
        record = {**(current if same else {}), "version": RECORD_VERSION, "issue": issue, "remote": remote}
        record.update({"session": session, "token": token, "tried_at": now, "error": error[:4096]})
        record.setdefault("since", now)
        records.save(files.record, record, SCHEMA)
        return record


def remember_unanswered(
    root: Path, issue: str, failed: GitstError, *, what: str, remote: str, session: str, token: int | None
) -> None:
    """``session``'s lease ``issue`` (a claim, the merge slot, a ticket: ``what``) may be on
    ``remote`` with nobody here holding it — its push ended without the remote's answer, or
    its release could not reach the remote: remembered (:func:`remember`, its ``token``: a
    later lease is never dropped) and ``failed``'s message says what happens to it."""
    remember(root, issue, remote=remote, session=session, token=token, error=failed.message)
    failed.message += (
        f"; if the {what} reached {remote} anyway, it is released by the next command that reaches {remote}"
        " (or `git st gc`)"
    )


def forget(root: Path, issue: str, *, session: str | None = None) -> bool:
    """Drop the pending release of ``issue`` (only ``session``'s, when given)."""
    files = _files(issue, root)
    if not files.record.exists():
        return False
    with records.locked(files.sidecar):
        try:
            current = records.load(files.record, SCHEMA)
        except records.CorruptRecord:
            return False
        if current is None or (session is not None and current.get("session") != session):
            return False
        return records.remove(files.record)


def list_pending(root: Path) -> tuple[list[dict[str, Any]], list[records.CorruptRecord]]:
    """Every pending release (by issue) and the problems of the records that are not valid."""
    if not Path(root).is_dir():
        return [], []
    found: list[dict[str, Any]] = []
    bad: list[records.CorruptRecord] = []
    for _name, _path, record, problem in records.scan(
        root, DIR, SCHEMA, lambda name: validate_identifier(name, "issue")
    ):
        if record is not None:
            found.append(record)
        elif problem is not None:
            bad.append(problem)
    return found, bad


@value_class
class Retry:
    released: list[dict[str, Any]] = field(default_factory=list)  # the claim ref was deleted now
    settled: list[dict[str, Any]] = field(default_factory=list)  # nothing left to delete there (gone, or another's)
    pending: list[dict[str, Any]] = field(default_factory=list)  # still pending: the record (with its "error")

    def lines(self) -> list[str]:
        return [
            f"released issue {r['issue']} on {r['remote']} (its release was pending since {r['since']})"
            for r in self.released
        ]

    def warnings(self) -> list[str]:
        return [warning(r) for r in self.pending]


def warning(record: dict[str, Any]) -> str:
    return (
        f"warning: issue {record['issue']} is still claimed on {record['remote']} by session {record['session']}: "
        f"its release could not reach the remote since {record['since']} ({record.get('error') or 'unreachable'}); "
        f"the next command that reaches {record['remote']} releases it (or `git st gc`)"
    )


def retry(
    root: Path,
    *,
    remotes: set[str] | None = None,
    issues: set[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Retry:
    """Try every pending release (of ``remotes`` / ``issues`` when given) once more; a remote
    found unreachable is not asked again in this run. No record: no git call."""
    outcome = Retry()
    found, _bad = list_pending(root)
    away: dict[str, str] = {}
    for record in found:
        remote, issue = record["remote"], record["issue"]
        if (remotes is not None and remote not in remotes) or (issues is not None and issue not in issues):
            continue
        if remote in away:
            outcome.pending.append({**record, "error": away[remote]})
            continue
        try:
            done = remote_claims.release_held(
                issue, remote=remote, session=record["session"], token=record.get("token"), cwd=cwd
            )
        except remote_claims.RemoteUnreachable as gone:
            away[remote] = gone.message
            outcome.pending.append(
                remember(
                    root, issue, remote=remote, session=record["session"], token=record.get("token"), error=gone.message
                )
            )
            continue
        except GitstError as exc:  # a corrupt claim ref, a race that never settled: keep it, say why
            outcome.pending.append(
                remember(
                    root, issue, remote=remote, session=record["session"], token=record.get("token"), error=exc.message
                )
            )
            continue
        forget(root, issue, session=record["session"])
        (outcome.released if done is not None else outcome.settled).append(record)
    return outcome
