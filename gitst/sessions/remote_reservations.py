"""Reservations through the git remote: one table, ``refs/st/reservations/table``, moved only by
compare-and-swap pushes. docs/parallel.md, "Reservations through the remote".

Two globs can overlap without being equal, so the reservations of every session live in one
record: the ref points to a small commit (no parent, on no branch) whose tree holds
``reservations.json``::

    {"version": 1, "token": 17, "nonce": "…", "updated_at": "…",
     "entries": [{"pattern": "src/api/**", "session": "…", "host": "…", "actor": "…", "pid": 4242,
                  "pid_start": 1234, "liveness": "pid", "token": 17, "item": "st-007",
                  "reserved_at": "…", "renewed_at": "…", "expires_at": "…", "ttl": 1800}]}

- Every change reads the table, decides, and pushes a new commit with
  ``--force-with-lease=REF:OLD`` (create-only when there is none): of N sessions reserving
  overlapping globs at once exactly one push lands; the others read again and either find the
  winner's live entry (:class:`ReservationTaken`, exit 3, owner named) or go on.
- ``token`` is the highest fencing token ever handed out: a new entry gets ``token + 1``; a
  session reserving its own pattern again keeps its token (a renewal). The table is never
  deleted (a release empties entries), so tokens never go back.
- An entry is judged like a remote claim (:func:`gitst.sessions.remote_claims.claim_state`):
  live until ``expires_at``, dead at once when its owner ran on this host and is gone. Stale
  and dead entries are dropped by the next write (reclaimed) or by ``git st gc``.
- The table is untrusted: at most :data:`MAX_TABLE_BYTES`, :data:`MAX_DEPTH` levels,
  :data:`MAX_ENTRIES` entries, every field of the type gitst writes; else
  :class:`BadReservationTable` (exit 1) naming the ref, and nothing is written from it.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

import orjson

from gitst.core import jsonio, pathglobs, timestamps
from gitst.core.errors import ConflictError, ProblemsFound, UsageError
from gitst.core.values import field, value_class
from gitst.git import objects, refs
from gitst.git.remote import RefUpdate
from gitst.sessions import locks, remote_claims
from gitst.sessions.identity import Identity

__all__ = [
    "TABLE_REF",
    "BadReservationTable",
    "ReservationTaken",
    "Table",
    "drop",
    "live_entries",
    "read_table",
    "sweep",
    "take",
]

TABLE_REF = "refs/st/reservations/table"
TABLE_FILE = "reservations.json"
MAX_TABLE_BYTES = 1 << 20
MAX_DEPTH = 6
MAX_ENTRIES = 2000
RECORD_VERSION = 1
PathLike = str | os.PathLike[str] | None

_ENTRY_FIELDS: dict[str, Any] = {
    "pattern": str,
    "session": str,
    "host": str,
    "token": int,
    "expires_at": str,
}
_ENTRY_OPTIONAL: dict[str, Any] = {
    "actor": str,
    "pid": int,
    "pid_start": int,
    "liveness": str,
    "item": str,
    "reserved_at": str,
    "renewed_at": str,
    "ttl": (int, float),
    "process": str,
}


class ReservationTaken(ConflictError):
    """A live reservation of another session overlaps one asked for (exit 3): names its owner,
    its pattern and, through a remote, where."""

    def __init__(self, pattern: str, theirs: dict[str, Any], *, remote: str | None = None):
        self.pattern = pattern  # the one asked for
        self.theirs = theirs  # the owner's reservation: pattern, session, host, token, expires_at
        self.remote = remote
        self.owner = str(theirs.get("session"))
        self.table: Table | None = None  # the remote's table that refused it
        where = f" on {remote}" if remote else ""
        same = "" if theirs.get("pattern") == pattern else f" as {theirs.get('pattern')}"
        super().__init__(
            f"{pattern} is reserved{where}{same} by session {theirs.get('session')} on host {theirs.get('host')} "
            f"(token {theirs.get('token')}, {_expiry(theirs)})",
            fix="work on other paths, or wait until that session releases them (`git st reserve --list` shows "
            "who holds what); a reservation ends when its session dies or its TTL passes",
        )


def _expiry(entry: dict[str, Any]) -> str:
    try:
        delta = timestamps.parse(str(entry.get("expires_at"))) - timestamps.now()
    except (TypeError, ValueError, OverflowError):
        return "expiry unknown"
    return ("expires " if delta >= 0 else "expired ") + timestamps.human_delta(delta)


class BadReservationTable(ProblemsFound):
    """The remote's table is not one gitst wrote (exit 1)."""

    def __init__(self, remote: str, why: str):
        super().__init__(
            f"{TABLE_REF} on {remote} is not a gitst reservation table: {why}",
            fix=f"look at it (`git fetch {remote} {TABLE_REF} && git show FETCH_HEAD`), then delete it: "
            f"git push {remote} :{TABLE_REF}",
        )


@value_class(frozen=True)
class Table:
    remote: str
    oid: str | None  # None: the remote holds no table yet
    token: int = 0
    entries: list[dict[str, Any]] = field(default_factory=list)


def _tracking_ref(remote: str) -> str:
    """Where this clone keeps its copy of the table: beside its copy of the claims. (remote_claims
    is at its 700-line cap, so its naming rule is borrowed rather than made public there.)"""
    return remote_claims.tracking(remote) + "reservations/table"


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "an entry is not an object"
    for fields, required in ((_ENTRY_FIELDS, True), (_ENTRY_OPTIONAL, False)):
        for key, kind in fields.items():
            value = entry.get(key)
            if (value is None and not required) or (isinstance(value, kind) and not isinstance(value, bool)):
                continue
            return f"an entry's {key!r} is missing or of the wrong type"
    if any(isinstance(v, str) and any(ord(c) < 32 for c in v) for v in entry.values()):
        return "an entry holds control characters"
    if not 1 <= entry["token"] <= remote_claims.MAX_TOKEN:
        return f"an entry's token {entry['token']} is out of range"
    try:
        timestamps.parse(entry["expires_at"])
        pathglobs.normalize(entry["pattern"])
    except (ValueError, TypeError, OverflowError, UsageError) as bad:
        return f"an entry is unusable ({bad})"
    return None


def _parse(remote: str, raw: bytes) -> tuple[int, list[dict[str, Any]]]:
    if jsonio.too_deep(raw, MAX_DEPTH):
        raise BadReservationTable(remote, f"it nests deeper than {MAX_DEPTH} levels")
    try:
        record = jsonio.loads(raw)
    except jsonio.JSONDecodeError as exc:
        raise BadReservationTable(remote, f"not JSON ({exc})") from None
    if not isinstance(record, dict) or not isinstance(record.get("entries"), list):
        raise BadReservationTable(remote, "not an object with a list of entries")
    token, entries = record.get("token"), record["entries"]
    if not isinstance(token, int) or isinstance(token, bool) or not 0 <= token <= remote_claims.MAX_TOKEN:
        raise BadReservationTable(remote, "its token is not an integer in range")
    if len(entries) > MAX_ENTRIES:
        raise BadReservationTable(remote, f"it holds {len(entries)} entries, more than {MAX_ENTRIES}")
    for entry in entries:
        problem = _entry_problem(entry)
        if problem is not None:
            raise BadReservationTable(remote, problem)
    return max([token, *(e["token"] for e in entries)]), entries


def read_table(remote: str, cwd: PathLike = None) -> Table:
    """The remote's table now (one fetch of ``refs/st/reservations/*``, then read locally)."""
    track = _tracking_ref(remote)
    folder = track.rsplit("/", 1)[0] + "/"
    remote_claims.fetch_refs(remote, [f"+refs/st/reservations/*:{folder}*"], cwd)
    oid = refs.refs_under(folder, cwd).get(track)
    if not oid:
        return Table(remote, None)
    found = objects.object_sizes(cwd, [f"{oid}:{TABLE_FILE}"])[0]
    if found is None:
        raise BadReservationTable(remote, f"its commit has no {TABLE_FILE}")
    if found[1] > MAX_TABLE_BYTES:
        raise BadReservationTable(remote, f"its {TABLE_FILE} is {found[1]} bytes, more than {MAX_TABLE_BYTES}")
    raw = objects.read_objects(cwd, [found[0]])[0] or b""
    token, entries = _parse(remote, raw)
    return Table(remote, oid, token, entries)


def live_entries(entries: list[dict[str, Any]], now: float | None = None) -> list[dict[str, Any]]:
    """The entries whose owner is live (the remote-claim rule)."""
    when = timestamps.now() if now is None else now
    return [e for e in entries if remote_claims.claim_state(e, when) == locks.LIVE]


def _push(table: Table, entries: list[dict[str, Any]], token: int, verb: str, cwd: PathLike) -> Table | None:
    """The table with ``entries`` pushed over the one read; None when it moved meanwhile."""
    now = timestamps.now()
    record = {
        "version": RECORD_VERSION,
        "token": token,
        "entries": entries,
        "updated_at": timestamps.iso(now),
        "nonce": secrets.token_hex(16),  # two equal tables never make one commit: a lost race never "succeeds"
    }
    data = orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    if len(data) > MAX_TABLE_BYTES or len(entries) > MAX_ENTRIES:
        raise UsageError(
            f"the reservation table on {table.remote} would hold {len(entries)} entries ({len(data)} bytes), "
            f"more than a table may ({MAX_ENTRIES}, {MAX_TABLE_BYTES} bytes)",
            fix="reserve fewer, wider globs (src/api/** rather than each file)",
        )
    oid = objects.commit_file(cwd, TABLE_FILE, data, f"gitst: {verb}\n", author=remote_claims.AUTHOR)
    pushed = remote_claims.push_refs(table.remote, [RefUpdate(TABLE_REF, oid, table.oid or "")], cwd)
    return Table(table.remote, oid, token, entries) if pushed.ok else None


def _entry(
    pattern: str, who: Identity, token: int, ttl: float, old: dict[str, Any] | None, item: str | None
) -> dict[str, Any]:
    now = timestamps.now()
    entry: dict[str, Any] = {
        "pattern": pattern,
        **who.owner(),  # session, pid (and its start), host, actor, liveness: as a lock's owner
        "token": token,
        "reserved_at": (old or {}).get("reserved_at") or timestamps.iso(now),
        "renewed_at": timestamps.iso(now),
        "expires_at": timestamps.iso(now + ttl),
        "ttl": ttl,
    }
    if item or (old or {}).get("item"):
        entry["item"] = item or (old or {}).get("item")
    return entry


def _plan_take(
    table: Table, wanted: list[str], who: Identity, ttl: float, item: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(the new entries, ours for ``wanted``, the table's token) or ReservationTaken."""
    now = timestamps.now()
    live = {id(e) for e in live_entries(table.entries, now)}
    kept, mine = [], {}
    for entry in table.entries:
        if entry["session"] == who.session:
            if entry["pattern"] in wanted:
                mine[entry["pattern"]] = entry
            elif id(entry) in live:
                kept.append(entry)
            continue
        if id(entry) not in live:
            continue  # stale or dead: reclaimed by this write
        for pattern in wanted:
            if pathglobs.overlap(pattern, entry["pattern"]):
                raise ReservationTaken(pattern, entry, remote=table.remote)
        kept.append(entry)
    token = table.token
    ours = []
    for pattern in wanted:
        old = mine.get(pattern)
        if old is None:
            token += 1
        ours.append(_entry(pattern, who, old["token"] if old else token, ttl, old, item))
    return [*kept, *ours], ours, token


def take(
    patterns: list[str], who: Identity, *, remote: str, ttl: float, cwd: PathLike = None, item: str | None = None
) -> tuple[list[dict[str, Any]], Table]:
    """Reserve the normalized ``patterns`` for ``who`` on ``remote``, all or none: (our entries,
    the table pushed). ReservationTaken (exit 3) when a live other session's entry overlaps;
    RemoteUnreachable (exit 4) when the remote cannot be reached."""
    for _ in range(remote_claims.RACE_TRIES):
        table = read_table(remote, cwd)
        try:
            entries, ours, token = _plan_take(table, patterns, who, ttl, item)
        except ReservationTaken as taken:
            taken.table = table  # the caller keeps it: --check answers from it without a fetch
            raise
        pushed = _push(table, entries, token, f"reserve {', '.join(patterns)} for session {who.session}", cwd)
        if pushed is not None:
            return ours, pushed
    raise ConflictError(
        f"the reservation table on {remote} kept changing while we tried ({remote_claims.RACE_TRIES} rounds)",
        fix="try again in a moment",
    )


def drop(patterns: list[str] | None, session: str, *, remote: str, cwd: PathLike = None) -> tuple[list[str], Table]:
    """Remove ``session``'s entries for ``patterns`` (None: all of them) from the table:
    (the patterns removed, the table now). Nothing is pushed when it holds none."""
    for _ in range(remote_claims.RACE_TRIES):
        table = read_table(remote, cwd)

        def gone(entry: dict[str, Any]) -> bool:
            return entry["session"] == session and (patterns is None or entry["pattern"] in patterns)

        removed = [e["pattern"] for e in table.entries if gone(e)]
        if not removed:
            return [], table
        left = [e for e in table.entries if not gone(e)]
        pushed = _push(table, left, table.token, f"release {', '.join(removed)} of session {session}", cwd)
        if pushed is not None:
            return removed, pushed
    raise ConflictError(f"the reservation table on {remote} kept changing while we released it")


def sweep(remote: str, cwd: PathLike = None, *, dry_run: bool = False) -> list[dict[str, Any]]:
    """Drop every stale or dead entry (``git st gc``); the entries dropped (or, dry, that would be)."""
    for _ in range(remote_claims.RACE_TRIES):
        table = read_table(remote, cwd)
        live = live_entries(table.entries)
        ended = [e for e in table.entries if e not in live]
        if not ended or dry_run:
            return ended
        if _push(table, live, table.token, f"gc {len(ended)} ended reservation(s)", cwd) is not None:
            return ended
    raise ConflictError(f"the reservation table on {remote} kept changing while gc ran")
