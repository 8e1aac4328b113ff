"""Clean the state dir: expired leases, dead sessions, stray temp files (``git st gc``).

1. Every stale or dead lock is released and logged in the reclaim log (:func:`locks.gc`).
2. The record of every stale or dead session that no longer holds a lock is deleted.
3. Temp files of crash-safe writes (``.<name>.<random>.tmp``) untouched for
   :data:`STRAY_AGE` seconds — a writer was killed between writing and renaming — are
   deleted. A younger one may belong to a write in progress and is left alone.
4. With a remote (``st.remote``): every pending release (:mod:`gitst.sessions.pending`)
   is tried again, and every stale or dead claim on the remote is deleted (with a lease on
   the commit read; the fence ref stays), and so is every stale or dead entry of its
   reservation table (:mod:`gitst.sessions.reservations`). An unreachable remote is
   reported, not fatal.

``worktree prune`` runs the same steps. Nothing here touches a worktree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitst.core.jsonio import stray_temp_files
from gitst.core.values import field, value_class
from gitst.sessions import claims, locks, pending, remote_claims, remote_reservations, reservations
from gitst.statedir.paths import refuse_symlinks

__all__ = ["STRAY_AGE", "GcReport", "collect"]

STRAY_AGE = 60.0  # seconds: a crash-safe write takes milliseconds


@value_class
class GcReport:
    dry_run: bool
    released_locks: list[dict[str, Any]] = field(default_factory=list)  # reclaim-log entries
    dropped_sessions: list[dict[str, Any]] = field(default_factory=list)  # {"session", "state"}
    removed_temp_files: list[str] = field(default_factory=list)
    remote: str | None = None
    remote_released: list[dict[str, Any]] = field(default_factory=list)  # pending releases done now
    remote_dropped: list[dict[str, Any]] = field(default_factory=list)  # stale or dead claims deleted on the remote
    remote_pending: list[dict[str, Any]] = field(default_factory=list)  # pending releases still pending
    remote_error: str | None = None
    remote_reservations_dropped: list[dict[str, Any]] = field(default_factory=list)  # ended entries of its table

    @property
    def empty(self) -> bool:
        return not (
            self.released_locks
            or self.dropped_sessions
            or self.removed_temp_files
            or self.remote_released
            or self.remote_dropped
            or self.remote_reservations_dropped
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "dry_run": self.dry_run,
            "released_locks": self.released_locks,
            "dropped_sessions": self.dropped_sessions,
            "removed_temp_files": self.removed_temp_files,
        }
        if self.remote is not None:  # st.remote set: what step 4 did there
            data.update(
                {
                    "remote": self.remote,
                    "remote_released": self.remote_released,
                    "remote_dropped": self.remote_dropped,
                    "remote_pending": self.remote_pending,
                    "remote_error": self.remote_error,
                    "remote_reservations_dropped": self.remote_reservations_dropped,
                }
            )
        return data


def collect(
    root: Path,
    *,
    dry_run: bool = False,
    stray_age: float = STRAY_AGE,
    remote: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> GcReport:
    """Do (or, with ``dry_run``, only find) the steps of the module docstring (the fourth
    only with ``remote``)."""
    report = GcReport(dry_run)
    root = Path(root)
    if not root.is_dir():  # a clone that never ran a command here: still, the remote is swept
        if remote is not None:
            _collect_remote(report, root, remote, cwd)
        return report
    refuse_symlinks(root, root)
    # Temp files first: releasing a lock rewrites its record, and a write clears its own left-overs.
    report.removed_temp_files = _remove_temp_files(root, dry_run=dry_run, stray_age=stray_age)
    report.released_locks = locks.gc(root, dry_run=dry_run)
    if not dry_run:
        reservations.refresh_marker(root)  # the hook's marker goes with the last reservation
    report.dropped_sessions = _drop_idle_sessions(
        root, {entry["resource"] for entry in report.released_locks}, dry_run=dry_run
    )
    if remote is not None:
        _collect_remote(report, root, remote, cwd)
    return report


def _remove_temp_files(root: Path, *, dry_run: bool, stray_age: float) -> list[str]:
    """The stray temp files in the state dir and its folders (deleted unless ``dry_run``)."""
    removed = []
    for directory in [root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())]:
        for path in stray_temp_files(directory, older_than=stray_age):
            if not dry_run:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    continue
            removed.append(str(path))
    return removed


def _drop_idle_sessions(root: Path, released: set[str], *, dry_run: bool) -> list[dict[str, Any]]:
    """The stale or dead sessions whose records go (dropped unless ``dry_run``): those
    holding no lock once the locks ``released`` just now are."""
    dropped = []
    for view in claims.list_sessions(root):
        if view.state not in (locks.STALE, locks.DEAD) or view.record is None:
            continue
        if dry_run:
            own = {c.get("lock") for c in view.record.get("claims", [])}
            if any(v.name in own and v.name not in released for v in locks.locks_of_session(root, view.session)):
                continue  # (drop_session_if_idle's rule, after the locks above are released)
            dropped.append({"session": view.session, "state": view.state})
        elif claims.drop_session_if_idle(view, root):
            dropped.append({"session": view.session, "state": view.state})
    return dropped


def _collect_remote(report: GcReport, root: Path, remote: str, cwd: str | os.PathLike[str] | None) -> None:
    report.remote = remote
    if report.dry_run:
        report.remote_pending = pending.list_pending(root)[0]
    else:
        retried = pending.retry(root, cwd=cwd)
        report.remote_released = retried.released
        report.remote_pending = retried.pending
    try:
        dropped = remote_claims.sweep(remote, cwd, dry_run=report.dry_run)
    except remote_claims.RemoteUnreachable as gone:
        report.remote_error = gone.message
        return
    report.remote_dropped = [view.to_dict() for view in dropped]
    try:
        ended = reservations.sweep_remote(remote, cwd=cwd, root=root, dry_run=report.dry_run)
    except (remote_claims.RemoteUnreachable, remote_reservations.BadReservationTable) as gone:
        report.remote_error = gone.message
        return
    report.remote_reservations_dropped = [
        {k: e.get(k) for k in ("pattern", "session", "host", "token", "expires_at")} for e in ended
    ]
