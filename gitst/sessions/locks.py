"""TTL locks: ``state/locks/<name>.json`` (seed 001 ``locks/``), shape ``state-lock``.

One record per lock name. While held it names the owner (session, session pid and its
start time, host, actor), when it was acquired and renewed, when it expires, and the
fencing token. On release the record stays with ``owner: null`` so the token — which
grows by one for every new owner of the resource — survives release and ``gc``; a
resource's token never goes back.

Atomicity: every read-decide-write of a record (acquire, reclaim, renew, release, gc)
runs under a short exclusive ``flock`` on the sidecar ``<name>.json.lock``
(:func:`gitst.core.filelocks.locked`), and the record itself is replaced by temp file + fsync
+ rename, so of N racing processes exactly one wins and readers without the flock always
see a whole record. The kernel drops the flock of a killed process, so a crash inside the
critical section blocks nobody. Sidecars are never deleted (unlinking a flocked file would
let two processes lock two different inodes).

States of a record (:func:`state_of`):

- ``live``     held, TTL not passed, owner pid alive (or on another host);
- ``stale``    held, TTL passed;
- ``dead``     held, owner pid gone on this host (checked with its start time);
- ``released`` nobody holds it.

``stale`` and ``dead`` locks may be reclaimed by anybody; a lock held from another host
becomes reclaimable only when its TTL passes. Every reclaim (and every ``gc`` of a stale
or dead lock) appends one JSON line to ``state/locks/reclaims.jsonl``.

The same session re-acquiring its own lock keeps the token and refreshes the expiry (and
the pid, when the session's pid changed). Only the owning session renews or releases;
anybody else gets a conflict (exit 3) that names the owner.

TTL: ``--ttl``, else ``ST_LOCK_TTL``, else ``git config st.lockTtl``, else 1800 s
(:mod:`gitst.settings`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal

from gitst.core import timestamps
from gitst.core.errors import ConflictError, UsageError
from gitst.core.jsonio import dumps_bytes
from gitst.core.values import value_class
from gitst.sessions.identity import Identity, current, pid_alive
from gitst.sessions.identity import host as this_host
from gitst.settings import lock_ttl
from gitst.statedir import records
from gitst.statedir.paths import (
    MAX_IDENTIFIER,
    Identifier,
    IssueId,
    ensure_state_dir,
    refuse_symlinks,
    state_dir,
    state_path,
    validate_identifier,
)
from gitst.statedir.records import locked

__all__ = [
    "CORRUPT",
    "DEAD",
    "ISSUE_PREFIX",
    "LIVE",
    "RELEASED",
    "STALE",
    "Acquired",
    "LockBusy",
    "LockName",
    "LockState",
    "NotOwner",
    "acquire",
    "default_ttl",
    "describe_owner",
    "end_if_not_live",
    "expiry_text",
    "gc",
    "list_locks",
    "lock_files",
    "locks_of_session",
    "owner_dead",
    "owner_details",
    "read",
    "reclaim_log_path",
    "release",
    "renew",
    "state_of",
    "try_acquire",
    "validate_lock_name",
]

SCHEMA = "state-lock"
LOCKS_DIR = "locks"
RECLAIM_LOG = "reclaims.jsonl"
ISSUE_PREFIX = "issue-"
RECORD_VERSION = 1

LockState = Literal["live", "stale", "dead", "released"]
LIVE: Final = "live"
STALE: Final = "stale"
DEAD: Final = "dead"
RELEASED: Final = "released"
CORRUPT: Final = "corrupt"  # a record ``lock list`` cannot read (never a state_of answer)


# --- names, paths, settings ------------------------------------------------------------


class LockName(Identifier):
    """A lock name that passed :func:`validate_lock_name` (or was made from an
    :class:`IssueId` by :meth:`of_issue`): trusted by the lock's paths."""

    __slots__ = ()
    what = "lock name"

    def __new__(cls, value: str) -> LockName:
        if type(value) is cls:
            return value
        return str.__new__(cls, _checked_lock_name(value))

    @classmethod
    def of_issue(cls, issue: IssueId) -> LockName:
        """``issue-<issue>``: a valid lock name for every valid issue id, so not checked again."""
        return str.__new__(cls, ISSUE_PREFIX + issue)


def _checked_lock_name(name: str) -> str:
    if isinstance(name, str) and name.startswith(ISSUE_PREFIX) and len(name) > MAX_IDENTIFIER:
        validate_identifier(name[len(ISSUE_PREFIX) :], "lock name (issue id after 'issue-')")
        return name
    return validate_identifier(name, "lock name")


def validate_lock_name(name: str) -> LockName:
    """The identifier rule (≤ 64 characters); an issue's lock ``issue-<issue>`` is valid for
    every valid issue id, so any name ``lock list`` shows can be given back."""
    return name if isinstance(name, LockName) else LockName(name)


def lock_files(name: str, root: Path) -> records.RecordFiles:
    """The record and flock sidecar of lock ``name``, validated, symlinks refused."""
    return records.record_files(root, LOCKS_DIR, validate_lock_name(name))


_RECLAIM_LOG = Identifier(RECLAIM_LOG)


def reclaim_log_path(root: Path) -> Path:
    return state_path(LOCKS_DIR, _RECLAIM_LOG, root=root)


def default_ttl(cwd: str | os.PathLike[str] | None = None) -> float:
    """``ST_LOCK_TTL``, else ``git config st.lockTtl``, else 1800 seconds."""
    return lock_ttl(cwd)


def _never_used(name: str, root: Path) -> bool:
    """True when lock ``name`` has no record (checked like every path, nothing created): a
    command with nothing to do then writes nothing, not even the state dir."""
    files = lock_files(name, root)
    return not files.record.exists()


def _prepare(name: str, root: Path, files: records.RecordFiles | None = None) -> records.RecordFiles:
    """Validate and check every path first, then create the dirs (nothing written on a refusal).
    ``files``: the lock's paths when the caller derived them already (with the reclaim log's)."""
    if files is None:
        files = lock_files(name, root)
        reclaim_log_path(root)
    ensure_state_dir(root)
    records.make_dir(files.record.parent, root)
    refuse_symlinks(files.sidecar, root)
    return files


# --- reading and judging ----------------------------------------------------------------


def read(name: str, root: Path) -> dict[str, Any] | None:
    """The record of lock ``name`` (None when never used). CorruptRecord when invalid."""
    return records.load(lock_files(name, root).record, SCHEMA)


def state_of(record: dict[str, Any] | None, now: float | None = None) -> LockState:
    """``live``, ``stale``, ``dead`` or ``released`` (see the module docstring)."""
    if not record or not record.get("owner"):
        return RELEASED
    if owner_dead(record["owner"]):
        return DEAD
    when = timestamps.now() if now is None else now
    if when >= timestamps.parse(record["expires_at"]):
        return STALE
    return LIVE


def owner_dead(owner: dict[str, Any]) -> bool:
    """True when the owner's session process is gone on this host (checked with its start
    time). An owner judged by heartbeat (``liveness: heartbeat``: no session process could
    be established) or on another host is never dead: only its TTL ends it."""
    if owner.get("liveness") == "heartbeat" or owner.get("host") != this_host():
        return False
    return not pid_alive(owner.get("pid", 0), owner.get("pid_start"))


def owner_details(record: dict[str, Any]) -> str:
    """``pid P on host H, actor A, token T, expires in 29m`` for messages."""
    owner = record.get("owner") or record.get("last_owner") or {}
    parts = [
        f"pid {owner.get('pid')} on {owner.get('host')}",
        f"actor {owner.get('actor')}",
        f"token {record.get('token')}",
    ]
    if record.get("owner") and record.get("expires_at"):
        parts.append(expiry_text(record))
    return ", ".join(parts)


def expiry_text(record: dict[str, Any] | None, state: str | None = None) -> str:
    """How long a lease has left, in words that match its state: ``expires in 29m 58s``
    (live), ``expired 3m 2s ago`` (stale), ``owner dead, reclaimable now`` (dead — never an
    expiry in the future for a lock anybody may take), ``-`` (released)."""
    state = state_of(record) if state is None else state
    if record is None or state == RELEASED or not record.get("expires_at"):
        return "-"
    if state == DEAD:
        return "owner dead, reclaimable now"
    delta = timestamps.parse(record["expires_at"]) - timestamps.now()
    return ("expires " if delta >= 0 else "expired ") + timestamps.human_delta(delta)


def describe_owner(record: dict[str, Any]) -> str:
    """``session S (pid P on host H, actor A, token T, expires in 29m)`` for messages."""
    owner = record.get("owner") or record.get("last_owner") or {}
    return f"session {owner.get('session')} ({owner_details(record)})"


class LockBusy(ConflictError):
    """The lock is held by another live owner (exit 3); ``record`` is the owner's record."""

    def __init__(self, name: str, record: dict[str, Any], message: str | None = None, fix: str | None = None):
        self.name = name
        self.record = record
        super().__init__(
            message or f"lock {name} is held by {describe_owner(record)}",
            fix=fix or "wait for it to be released or to expire, or use --wait SECONDS",
        )


class NotOwner(ConflictError):
    """Renew or release by a session that does not hold the lock (exit 3)."""

    def __init__(self, name: str, record: dict[str, Any] | None, who: Identity):
        self.name = name
        self.record = record
        if record and record.get("owner"):
            message = f"lock {name} is held by {describe_owner(record)}, not by session {who.session}"
        else:
            message = f"lock {name} is not held (session {who.session} does not own it)"
        super().__init__(message, fix="only the owning session renews or releases a lock; acquire it first")


@value_class
class Acquired:
    record: dict[str, Any]
    renewed: bool = False  # the session already held it: same token, new expiry
    reclaimed: dict[str, Any] | None = None  # the reclaim log entry when taken from a stale/dead owner


# --- writing ------------------------------------------------------------------------------


def _held_record(
    name: str,
    base: dict[str, Any] | None,
    who: Identity,
    *,
    token: int,
    ttl: float,
    now: float,
    acquired_at: str | None,
) -> dict[str, Any]:
    record = dict(base or {})
    for key in ("released_at", "released_by", "last_owner", "reclaimed_from"):
        record.pop(key, None)
    stamp = timestamps.iso(now)
    record.update(
        {
            "version": RECORD_VERSION,
            "resource": name,
            "token": token,
            "owner": who.owner(),
            "acquired_at": acquired_at or stamp,
            "renewed_at": stamp,
            "expires_at": timestamps.iso(now + ttl),
            "ttl": ttl,
        }
    )
    return record


def _released_record(current: dict[str, Any], *, now: float, by: str) -> dict[str, Any]:
    record = dict(current)
    for key in ("acquired_at", "renewed_at", "expires_at", "ttl", "reclaimed_from"):
        record.pop(key, None)
    record.update(
        {
            "owner": None,
            "released_at": timestamps.iso(now),
            "released_by": by,
            "last_owner": current["owner"],
        }
    )
    return record


def _held_by(record: dict[str, Any], session: str) -> bool:
    """True when ``record`` has an owner and it is ``session``."""
    owner = record.get("owner")
    return isinstance(owner, dict) and owner.get("session") == session


def _log_reclaim(root: Path, entry: dict[str, Any]) -> None:
    records.append_line(reclaim_log_path(root), dumps_bytes(entry) + b"\n")


def _reclaim_entry(
    action: str, name: str, previous: dict[str, Any], reason: str, now: float, new: dict[str, Any] | None
) -> dict[str, Any]:
    entry = {
        "at": timestamps.iso(now),
        "action": action,
        "resource": name,
        "reason": reason,
        "previous": {
            "token": previous["token"],
            "owner": previous["owner"],
            "expires_at": previous.get("expires_at"),
        },
    }
    if new is not None:
        entry["token"] = new["token"]
        entry["owner"] = new["owner"]
    return entry


def try_acquire(
    name: str,
    who: Identity,
    *,
    root: Path,
    ttl: float,
    files: records.RecordFiles | None = None,
    fields: dict[str, Any] | None = None,
) -> Acquired:
    """Take lock ``name`` once: free, released, stale or dead → ours; live → LockBusy.
    ``files``: its paths, when the caller checked them already (:func:`lock_files`).
    ``fields``: extra fields the record keeps (a reservation's ``pattern``; kept by every rewrite)."""
    files = _prepare(name, root, files)
    with locked(files.sidecar):
        current = records.load(files.record, SCHEMA)
        now = timestamps.now()
        if current is not None and _held_by(current, who.session):
            record = _held_record(
                name, current, who, token=current["token"], ttl=ttl, now=now, acquired_at=current.get("acquired_at")
            )
            if current.get("reclaimed_from"):
                record["reclaimed_from"] = current["reclaimed_from"]
            record.update(fields or {})
            records.save(files.record, record, SCHEMA)
            return Acquired(record, renewed=True)
        state = state_of(current, now)
        if current is not None and state == LIVE:  # (a missing record is RELEASED)
            raise LockBusy(name, current)
        token = (current["token"] if current else 0) + 1
        record = _held_record(name, current, who, token=token, ttl=ttl, now=now, acquired_at=None)
        entry = None
        if current is not None and state in (STALE, DEAD):
            record["reclaimed_from"] = {
                "token": current["token"],
                "owner": current["owner"],
                "reason": state,
                "expires_at": current["expires_at"],
            }
            entry = _reclaim_entry("reclaim", name, current, state, now, record)
        record.update(fields or {})
        records.save(files.record, record, SCHEMA)
        if entry is not None:
            _log_reclaim(root, entry)
        return Acquired(record, reclaimed=entry)


def _defaults(who: Identity | None, root: Path | None, cwd: str | os.PathLike[str] | None) -> tuple[Identity, Path]:
    """The acting session and the state dir when the caller did not give them."""
    if who is None:
        who = current()
    if root is None:
        root = state_dir(cwd)
    return who, Path(root)


def acquire(
    name: str,
    who: Identity | None = None,
    *,
    root: Path | None = None,
    ttl: float | None = None,
    wait: float = 0.0,
    cwd: str | os.PathLike[str] | None = None,
    on_wait: Callable[[LockBusy], None] | None = None,
) -> Acquired:
    """:func:`try_acquire`, retried until ``wait`` seconds have passed (then LockBusy).

    ``who`` defaults to the acting session, ``root`` to the state dir of ``cwd`` and ``ttl``
    to :func:`default_ttl`. ``on_wait(busy)`` is called once, when the first try finds the
    lock busy and the caller is going to wait for it (so a person sees why nothing happens).
    """
    who, root = _defaults(who, root, cwd)
    ttl = ttl or default_ttl(cwd)
    if wait < 0:
        raise UsageError(f"--wait must not be negative, got {wait:g}")
    deadline = time.monotonic() + wait
    delay = 0.02
    while True:
        try:
            return try_acquire(name, who, root=root, ttl=ttl)
        except LockBusy as busy:
            if on_wait is not None and wait > 0:
                on_wait(busy)  # said even when the first try alone used up the wait (a loaded box)
                on_wait = None
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.5)


def renew(
    name: str,
    who: Identity | None = None,
    *,
    root: Path | None = None,
    ttl: float | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Push the expiry of our own lock to now + ttl (the record's ttl when not given).

    A lock whose TTL passed but that nobody reclaimed is still ours: renewing it keeps
    the token (nobody else ever got a newer one).
    """
    who, root = _defaults(who, root, cwd)
    if _never_used(name, root):  # nothing to renew: refused before anything is created
        raise NotOwner(name, None, who)
    files = _prepare(name, root)
    with locked(files.sidecar):
        current = records.load(files.record, SCHEMA)
        if current is None or not _held_by(current, who.session):
            raise NotOwner(name, current, who)
        now = timestamps.now()
        record = _held_record(
            name,
            current,
            who,
            token=current["token"],
            ttl=ttl or current["ttl"],
            now=now,
            acquired_at=current.get("acquired_at"),
        )
        if current.get("reclaimed_from"):
            record["reclaimed_from"] = current["reclaimed_from"]
        records.save(files.record, record, SCHEMA)
        return record


def release(
    name: str,
    who: Identity | None = None,
    *,
    root: Path | None = None,
    by: str = "owner",
    cwd: str | os.PathLike[str] | None = None,
    force: bool = False,
    reason: str | None = None,
) -> dict[str, Any] | None:
    """Release our lock; None when it was not held at all. Another owner → NotOwner.

    ``force`` breaks another session's lock, live or not (a hung agent whose pid still
    runs): the record is released by ``break`` (``broken_by`` names us), the fencing token is kept
    (the next owner gets a bigger one, so the old owner's writes can be fenced off) and the
    break is logged in the reclaim log with ``reason``.
    """
    who, root = _defaults(who, root, cwd)
    if _never_used(name, root):  # a no-op: neither the state dir nor a sidecar is created
        return None
    files = _prepare(name, root)
    with locked(files.sidecar):
        current = records.load(files.record, SCHEMA)
        if current is None or not current.get("owner"):
            return None
        now = timestamps.now()
        if not _held_by(current, who.session):
            if not force:
                raise NotOwner(name, current, who)
            record = _released_record(current, now=now, by="break")
            record["broken_by"] = who.session
            records.save(files.record, record, SCHEMA)
            why = reason or f"broken by session {who.session} (git st lock release --force)"
            _log_reclaim(root, _reclaim_entry("break", name, current, why, now, None))
            return record
        record = _released_record(current, now=now, by=by)
        records.save(files.record, record, SCHEMA)
        return record


def end_if_not_live(name: str, *, root: Path, action: str = "gc") -> dict[str, Any] | None:
    """Release lock ``name`` when its owner is stale or dead (logged); the log entry or None."""
    files = _prepare(name, root)
    with locked(files.sidecar):
        current = records.load(files.record, SCHEMA)
        now = timestamps.now()
        state = state_of(current, now)
        if current is None or state not in (STALE, DEAD):  # (a missing record is RELEASED)
            return None
        entry = _reclaim_entry(action, name, current, state, now, None)
        records.save(files.record, _released_record(current, now=now, by="gc" if action == "gc" else "remove"), SCHEMA)
        _log_reclaim(root, entry)
        return entry


# --- listing and gc -------------------------------------------------------------------------


@value_class
class LockView:
    name: str
    path: Path
    record: dict[str, Any] | None
    state: LockState | Literal["corrupt"]
    problem: records.CorruptRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "state": self.state, "path": str(self.path)}
        if self.record is not None:
            data.update(
                {
                    "token": self.record.get("token"),
                    "owner": self.record.get("owner"),
                    "acquired_at": self.record.get("acquired_at"),
                    "renewed_at": self.record.get("renewed_at"),
                    "expires_at": self.record.get("expires_at"),
                    "ttl": self.record.get("ttl"),
                }
            )
            if self.state == RELEASED:
                data["released_at"] = self.record.get("released_at")
                data["last_owner"] = self.record.get("last_owner")
        if self.problem is not None:
            data["errors"] = list(self.problem.problems)
        return data


def list_locks(root: Path, *, include_released: bool = False) -> list[LockView]:
    """Every lock record under ``state/locks/`` (read without the flock), sorted by name."""
    views = []
    now = timestamps.now()
    for name, path, record, problem in records.scan(root, LOCKS_DIR, SCHEMA, validate_lock_name):
        if problem is not None:
            views.append(LockView(name, path, None, CORRUPT, problem))
            continue
        state = state_of(record, now)
        if state != RELEASED or include_released:
            views.append(LockView(name, path, record, state))
    return views


def gc(root: Path, *, dry_run: bool = False) -> list[dict[str, Any]]:
    """Release every stale or dead lock (logged); the entries (would-be entries with dry_run)."""
    done = []
    for view in list_locks(root):
        if view.state not in (STALE, DEAD) or view.record is None:  # (a stale or dead view has its record)
            continue
        if dry_run:
            done.append(_reclaim_entry("gc", view.name, view.record, view.state, timestamps.now(), None))
            continue
        entry = end_if_not_live(view.name, root=root)
        if entry is not None:
            done.append(entry)
    return done


def locks_of_session(root: Path, session: str) -> list[LockView]:
    """The locks whose owner is ``session`` (any state but released)."""
    return [v for v in list_locks(root) if v.record and (v.record.get("owner") or {}).get("session") == session]
