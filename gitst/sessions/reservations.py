"""Path reservations: leases a session holds on path globs, so a second agent hears "src/api is
taken" before it writes code there (issue 23 point 2; docs/agent-loop.md, "Reservations").

- **Patterns**: repository-relative globs anchored at the top (:mod:`gitst.core.pathglobs`:
  ``*``, ``?``, ``[...]`` within a segment, ``**`` for any depth; a directory covers what is
  below it). Two sessions never hold overlapping reservations: some path covered by both.
- **Here**: each reservation *is* a TTL lock (:mod:`gitst.sessions.locks`) named
  ``reserve-<hash of the pattern>`` whose record keeps ``pattern`` (and ``item``). So it has
  every property of a lock: a fencing token that grows with every new owner of the pattern,
  a TTL (``--ttl``, else ``st.lockTtl``), a dead owner's reservation free at once, renewal by
  ``git st heartbeat``, release of stale and dead ones by ``git st gc``, ``git st lock list``.
  Because two *different* patterns can overlap, every reserve checks and takes under one
  flock (``state/reservations/reservations.json.lock``): of N racing sessions one wins.
- **Through the remote** (``remote=``): the table ``refs/st/reservations/table``, moved by
  compare-and-swap pushes (:mod:`gitst.sessions.remote_reservations`), first; then here. The
  last table read is kept in ``state/reservations/remote-<hash>.json``, so :func:`conflicts`
  answers from local files alone (no network: fast enough for an agent's edit hook).
- **The hook's marker**: ``state/reservations/active`` exists while this clone knows of any
  reservation (held here or in the cached table); the pre-commit hook loads nothing of this
  module when it is absent.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gitst.core import jsonio, pathglobs, timestamps
from gitst.core.errors import UsageError
from gitst.core.values import replace, value_class
from gitst.sessions import locks, remote_reservations
from gitst.sessions.identity import Identity
from gitst.sessions.remote_reservations import ReservationTaken
from gitst.statedir import records
from gitst.statedir.paths import Identifier, ensure_state_dir, state_dir, state_path

__all__ = [
    "LOCK_PREFIX",
    "Conflict",
    "Reservation",
    "ReservationTaken",
    "conflicts",
    "held",
    "listing",
    "marker_path",
    "patterns_of_item",
    "refresh_cache",
    "refresh_marker",
    "release",
    "renew_remote",
    "reserve",
    "sweep_remote",
]

LOCK_PREFIX = "reserve-"
FOLDER = "reservations"
MARKER = "active"
PathLike = str | os.PathLike[str] | None


@value_class(frozen=True)
class Reservation:
    """One reservation: its pattern, owner session, fencing token and expiry (``remote``: the
    remote it is held on too, with that table's token)."""

    pattern: str
    session: str
    token: int
    expires: str
    host: str | None = None
    item: str | None = None
    state: str = locks.LIVE
    remote: str | None = None
    remote_token: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "session": self.session,
            "host": self.host,
            "token": self.token,
            "expires": self.expires,
            "item": self.item,
            "state": self.state,
            "remote": self.remote,
            "remote_token": self.remote_token,
        }


@value_class(frozen=True)
class Conflict:
    """``path`` is covered by ``pattern``, a live reservation of session ``owner`` (``remote``:
    found in the table of that remote)."""

    path: str
    pattern: str
    owner: str
    expires: str
    host: str | None = None
    token: int | None = None
    remote: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "pattern": self.pattern,
            "owner": self.owner,
            "host": self.host,
            "token": self.token,
            "expires": self.expires,
            "remote": self.remote,
        }

    def describe(self) -> str:
        where = f" on {self.remote}" if self.remote else ""
        return (
            f"{self.path} is reserved{where} by session {self.owner} on host {self.host} as {self.pattern} "
            f"(token {self.token}, until {self.expires})"
        )


# --- files ------------------------------------------------------------------------------------


def lock_name(pattern: str) -> str:
    """The lock of a normalized pattern: ``reserve-`` and 24 hex digits of its SHA-256."""
    return LOCK_PREFIX + hashlib.sha256(pattern.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def marker_path(root: Path) -> Path:
    return state_path(FOLDER, Identifier(MARKER), root=root)


def _cache_path(root: Path, remote: str) -> Path:
    digest = hashlib.sha256(remote.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return state_path(FOLDER, Identifier(f"remote-{digest}"), suffix=".json", root=root)


@contextmanager
def _table_lock(root: Path) -> Iterator[None]:
    """The one flock every local reserve (check and take) runs under."""
    ensure_state_dir(root)
    sidecar = state_path(FOLDER, Identifier("reservations"), suffix=".json.lock", root=root)
    records.make_dir(sidecar.parent, root)
    with records.locked(sidecar):
        yield


def _normalized(patterns: list[str]) -> list[str]:
    out: list[str] = []
    for pattern in patterns:
        norm = pathglobs.normalize(pattern)
        if norm not in out:
            out.append(norm)
    return out


def _roots(root: Path | None, cwd: PathLike) -> Path:
    return Path(root) if root is not None else state_dir(cwd)


# --- reading ----------------------------------------------------------------------------------


def _local_views(root: Path) -> list[locks.LockView]:
    """The reservation locks here that are not released (corrupt ones left to `lock list`)."""
    return [
        v
        for v in locks.list_locks(root)
        if v.name.startswith(LOCK_PREFIX) and v.record is not None and isinstance(v.record.get("pattern"), str)
    ]


def _from_lock(view: locks.LockView) -> Reservation:
    record = view.record or {}
    owner = record.get("owner") or {}
    return Reservation(
        pattern=record["pattern"],
        session=str(owner.get("session")),
        token=int(record.get("token") or 0),
        expires=str(record.get("expires_at")),
        host=owner.get("host"),
        item=record.get("item"),
        state=str(view.state),
    )


def _from_entry(entry: dict[str, Any], remote: str, state: str = locks.LIVE) -> Reservation:
    return Reservation(
        pattern=entry["pattern"],
        session=entry["session"],
        token=entry["token"],
        expires=entry["expires_at"],
        host=entry.get("host"),
        item=entry.get("item"),
        state=state,
        remote=remote,
        remote_token=entry["token"],
    )


def _cached_tables(root: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """(remote, entries) of every cached table (one that cannot be read is skipped: it is
    only a cache, rewritten by the next command that reaches the remote)."""
    folder = root / FOLDER
    out = []
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.startswith("remote-") and p.name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for name in names:
        try:
            data = jsonio.loads((folder / name).read_bytes())
            out.append((str(data["remote"]), [e for e in data["entries"] if isinstance(e, dict)]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def listing(*, cwd: PathLike = None, root: Path | None = None, include_ended: bool = False) -> list[Reservation]:
    """Every reservation this clone knows of: held here (live; with ``include_ended`` stale and
    dead ones too) and in the last table read from each remote (live ones)."""
    root = _roots(root, cwd)
    out = [_from_lock(v) for v in _local_views(root) if include_ended or v.state == locks.LIVE]
    for remote, entries in _cached_tables(root):
        out.extend(_from_entry(e, remote) for e in remote_reservations.live_entries(entries))
    return out


def held(who: Identity, *, cwd: PathLike = None, root: Path | None = None) -> list[Reservation]:
    """The reservations session ``who`` holds here (live or not yet released)."""
    root = _roots(root, cwd)
    return [
        _from_lock(v) for v in _local_views(root) if ((v.record or {}).get("owner") or {}).get("session") == who.session
    ]


def conflicts(
    paths: list[str], who: Identity | None, *, cwd: PathLike = None, root: Path | None = None
) -> list[Conflict]:
    """May I edit PATH: the live reservations of sessions other than ``who`` that cover each
    of ``paths`` (repository-relative), from the state dir and the last table fetched from each
    remote; no network. Empty: every path is free (or ours)."""
    root = _roots(root, cwd)
    mine = who.session if who is not None else None
    others = [r for r in listing(root=root) if r.session != mine]
    found: list[Conflict] = []
    seen: set[tuple[str, str, str]] = set()
    for path in paths:
        clean = path.strip().strip("/")
        for res in others:
            key = (clean, res.pattern, res.session)
            if key in seen or not pathglobs.covers(res.pattern, clean):
                continue
            seen.add(key)
            found.append(Conflict(clean, res.pattern, res.session, res.expires, res.host, res.token, res.remote))
    return found


def _check_here(wanted: list[str], who: Identity, root: Path, *, cached: bool) -> None:
    """ReservationTaken when a live reservation of another session here (or, with ``cached``, in
    a cached table: a reserve that asks the remote itself leaves its table to the remote's
    answer) overlaps one of ``wanted``."""
    known = listing(root=root) if cached else [_from_lock(v) for v in _local_views(root) if v.state == locks.LIVE]
    for res in known:
        if res.session == who.session:
            continue
        for pattern in wanted:
            if pathglobs.overlap(pattern, res.pattern):
                theirs = {"pattern": res.pattern, "session": res.session, "host": res.host, "token": res.token}
                theirs["expires_at"] = res.expires
                raise ReservationTaken(pattern, theirs, remote=res.remote)


# --- the marker and the cache -----------------------------------------------------------------


def _update_marker(root: Path) -> None:
    """``state/reservations/active`` while this clone knows of any reservation, else none."""
    count = len(_local_views(root)) + sum(len(entries) for _, entries in _cached_tables(root))
    path = marker_path(root)
    if count:
        records.make_dir(path.parent, root)
        jsonio.atomic_write_json(path, {"reservations": count, "at": timestamps.iso(timestamps.now())})
    else:
        records.remove(path)


def refresh_marker(root: Path) -> None:
    """Make the hook's marker match the reservations this clone knows of (``git st gc``)."""
    if (Path(root) / FOLDER).is_dir():
        with _table_lock(root):
            _update_marker(root)


def _save_cache(root: Path, table: remote_reservations.Table) -> None:
    ensure_state_dir(root)
    path = _cache_path(root, table.remote)
    records.make_dir(path.parent, root)
    jsonio.atomic_write_json(
        path,
        {
            "remote": table.remote,
            "at": timestamps.iso(timestamps.now()),
            "token": table.token,
            "entries": table.entries,
        },
    )


def _keep(root: Path, table: remote_reservations.Table) -> None:
    """The table just read or pushed, kept as the cache (and the marker made to match)."""
    with _table_lock(root):
        _save_cache(root, table)
        _update_marker(root)


def refresh_cache(remote: str, *, cwd: PathLike = None, root: Path | None = None) -> list[Reservation]:
    """Read the remote's table now, keep it as the cache :func:`conflicts` reads, return its
    live reservations (RemoteUnreachable, exit 4, when it cannot be reached)."""
    root = _roots(root, cwd)
    table = remote_reservations.read_table(remote, cwd)
    _keep(root, table)
    return [_from_entry(e, remote) for e in remote_reservations.live_entries(table.entries)]


# --- taking and releasing ---------------------------------------------------------------------


def reserve(
    patterns: list[str],
    who: Identity,
    *,
    ttl: float | None = None,
    remote: str | None = None,
    cwd: PathLike = None,
    root: Path | None = None,
    item: str | None = None,
) -> list[Reservation]:
    """Hold ``patterns`` for ``who``, all or none (module docstring): on ``remote`` first when
    given, then here. Reserving a pattern the session holds renews it (same token).
    ReservationTaken (exit 3) names the live owner of an overlapping reservation;
    RemoteUnreachable (exit 4, nothing taken) when the remote cannot be reached."""
    wanted = _normalized(patterns)
    if not wanted:
        raise UsageError("which paths? give at least one glob", fix="git st reserve 'src/api/**'")
    root = _roots(root, cwd)
    ttl = ttl or locks.default_ttl(cwd)
    _check_here(wanted, who, root, cached=remote is None)  # refused here before the remote is asked
    on_remote: dict[str, dict[str, Any]] = {}
    if remote is not None:
        try:
            ours, table = remote_reservations.take(wanted, who, remote=remote, ttl=ttl, cwd=cwd, item=item)
        except ReservationTaken as refused:
            if refused.table is not None:
                _keep(root, refused.table)
            raise
        on_remote = {e["pattern"]: e for e in ours}
        _keep(root, table)
    try:
        taken = _reserve_here(wanted, who, root, ttl, item)
    except BaseException:
        if remote is not None:
            _give_back(wanted, who, remote, cwd, root)
        raise
    out = []
    for res in taken:
        there = on_remote.get(res.pattern)
        out.append(replace(res, remote=remote, remote_token=there["token"] if there else None))
    return out


def _reserve_here(wanted: list[str], who: Identity, root: Path, ttl: float, item: str | None) -> list[Reservation]:
    with _table_lock(root):
        _check_here(wanted, who, root, cached=False)
        taken = []
        for pattern in wanted:
            extra: dict[str, Any] = {"pattern": pattern}
            if item:
                extra["item"] = item
            got = locks.try_acquire(lock_name(pattern), who, root=root, ttl=ttl, fields=extra)
            taken.append(_from_lock(locks.LockView(lock_name(pattern), Path(), got.record, locks.LIVE)))
        _update_marker(root)
    return taken


def _give_back(wanted: list[str], who: Identity, remote: str, cwd: PathLike, root: Path) -> None:
    """Undo a remote reservation just taken when the local step failed (best effort: the
    original error is the one to report; the entries expire with their TTL otherwise)."""
    try:
        _, table = remote_reservations.drop(wanted, who.session, remote=remote, cwd=cwd)
        _keep(root, table)
    except Exception:  # noqa: S110 - best effort, see the docstring
        pass


def release(
    patterns: list[str] | None,
    who: Identity,
    *,
    remote: str | None = None,
    cwd: PathLike = None,
    root: Path | None = None,
) -> list[str]:
    """Release ``patterns`` (None: every reservation) of ``who``, here and on ``remote`` when
    given; the patterns released. A pattern the session does not hold is left alone
    (another session's reservation is never touched). RemoteUnreachable (exit 4) after the
    local release when the remote cannot be reached (its entries then end with their TTL,
    or with the next release that reaches it)."""
    root = _roots(root, cwd)
    wanted = None if patterns is None else _normalized(patterns)
    done: list[str] = []

    def ours(view: locks.LockView) -> bool:
        record = view.record or {}
        mine = (record.get("owner") or {}).get("session") == who.session
        return mine and (wanted is None or record["pattern"] in wanted)

    if any(ours(v) for v in _local_views(root)):  # nothing to release: nothing written, not even a dir
        with _table_lock(root):
            mine = [v for v in _local_views(root) if ours(v)]
            done.extend(str((v.record or {})["pattern"]) for v in mine if locks.release(v.name, who, root=root))
            _update_marker(root)
    if remote is not None:
        removed, table = remote_reservations.drop(wanted, who.session, remote=remote, cwd=cwd)
        done.extend(p for p in removed if p not in done)
        _keep(root, table)
    return done


def renew_remote(
    who: Identity, *, remote: str, ttl: float | None = None, cwd: PathLike = None, root: Path | None = None
) -> list[str]:
    """``git st heartbeat`` with ``st.remote``: push the expiry of every live reservation the
    session holds here forward on ``remote`` too (one taken ``--offline`` is published); the
    patterns renewed. ReservationTaken when another session took an overlapping one there
    after ours ended; RemoteUnreachable when the remote cannot be reached."""
    root = _roots(root, cwd)
    mine = [r.pattern for r in held(who, root=root) if r.state == locks.LIVE]
    if not mine or _fresh_on_remote(root, remote, who.session, mine, ttl):
        return []  # as claims (remote_beats): more than half the lease left costs no network
    try:
        ours, table = remote_reservations.take(mine, who, remote=remote, ttl=ttl or locks.default_ttl(cwd), cwd=cwd)
    except ReservationTaken as refused:
        if refused.table is not None:
            _keep(root, refused.table)
        raise
    _keep(root, table)
    return [e["pattern"] for e in ours]


def _fresh_on_remote(root: Path, remote: str, session: str, patterns: list[str], ttl: float | None) -> bool:
    """Whether the cached table of ``remote`` holds every one of ``patterns`` for ``session``
    with more than half its lease left (and the lease ``ttl`` asks for, when given)."""
    now = timestamps.now()
    for name, entries in _cached_tables(root):
        if name != remote:
            continue
        ours = {e.get("pattern"): e for e in entries if e.get("session") == session}
        try:
            return all(
                p in ours
                and (ttl is None or float(ours[p]["ttl"]) == ttl)
                and timestamps.parse(str(ours[p]["expires_at"])) - now > float(ours[p]["ttl"]) / 2
                for p in patterns
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            return False
    return False


def sweep_remote(
    remote: str, *, cwd: PathLike = None, root: Path | None = None, dry_run: bool = False
) -> list[dict[str, Any]]:
    """``git st gc`` on the remote: drop its stale and dead entries, refresh the cache."""
    root = _roots(root, cwd)
    dropped = remote_reservations.sweep(remote, cwd, dry_run=dry_run)
    if not dry_run:
        refresh_cache(remote, cwd=cwd, root=root)
    return dropped


def patterns_of_item(item: dict[str, Any]) -> list[str]:
    """The globs a plan item asks ``next`` to reserve (docs/agent-loop.md, "Reservations"): its
    ``paths`` field (a list of globs, or one string of them separated by commas or spaces),
    else a line of its notes that starts with ``paths:``."""
    raw = item.get("paths")
    if raw is None:
        for line in str(item.get("notes") or "").splitlines():
            if line.strip().lower().startswith("paths:"):
                raw = line.strip()[len("paths:") :]
                break
    if isinstance(raw, str):
        raw = raw.replace(",", " ").split()
    if not isinstance(raw, list):
        return []
    return [str(p) for p in raw if str(p).strip()]
