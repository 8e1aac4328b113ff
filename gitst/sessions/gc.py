"""Clean the state dir: expired leases, dead sessions, stray temp files (``git st gc``).

1. Every stale or dead lock is released and logged in the reclaim log (:func:`locks.gc`).
2. The record of every stale or dead session that no longer holds a lock is deleted.
3. Temp files of crash-safe writes (``.<name>.<random>.tmp``) untouched for
   :data:`STRAY_AGE` seconds — a writer was killed between writing and renaming — are
   deleted. A younger one may belong to a write in progress and is left alone.

``worktree prune`` runs the same steps. Nothing here touches a worktree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["STRAY_AGE", "GcReport", "collect"]

STRAY_AGE = 60.0  # seconds: a crash-safe write takes milliseconds


@dataclass
class GcReport:
    dry_run: bool
    released_locks: list[dict] = field(default_factory=list)  # reclaim-log entries
    dropped_sessions: list[dict] = field(default_factory=list)  # {"session", "state"}
    removed_temp_files: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.released_locks or self.dropped_sessions or self.removed_temp_files)

    def to_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "released_locks": self.released_locks,
            "dropped_sessions": self.dropped_sessions,
            "removed_temp_files": self.removed_temp_files,
        }


def collect(root: Path, *, dry_run: bool = False, stray_age: float = STRAY_AGE) -> GcReport:
    """Do (or, with ``dry_run``, only find) the three steps of the module docstring."""
    from gitst.core.jsonio import stray_temp_files
    from gitst.sessions import claims, locks
    from gitst.statedir.paths import refuse_symlinks

    report = GcReport(dry_run)
    root = Path(root)
    if not root.is_dir():
        return report
    refuse_symlinks(root, root)
    # Temp files first: releasing a lock rewrites its record, and a write clears its own left-overs.
    for directory in [root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())]:
        for path in stray_temp_files(directory, older_than=stray_age):
            if not dry_run:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    continue
            report.removed_temp_files.append(str(path))
    report.released_locks = locks.gc(root, dry_run=dry_run)
    released = {entry["resource"] for entry in report.released_locks}
    for view in claims.list_sessions(root):
        if view.state not in (locks.STALE, locks.DEAD) or view.record is None:
            continue
        if dry_run:
            own = {c.get("lock") for c in view.record.get("claims", [])}
            if any(v.name in own and v.name not in released for v in locks.locks_of_session(root, view.session)):
                continue  # (drop_session_if_idle's rule, after the locks above are released)
            report.dropped_sessions.append({"session": view.session, "state": view.state})
        elif claims.drop_session_if_idle(view, root):
            report.dropped_sessions.append({"session": view.session, "state": view.state})
    return report
