"""The agent loop's path reservations (docs/agent-loop.md, "Reservations"): ``next`` reserves
the globs an item names, ``land`` releases the session's reservations with its claim.

An item names its paths in a ``paths`` field (a list of globs; the plan keeps unknown fields)
or in a line of its notes that starts with ``paths:`` (:func:`reservations.patterns_of_item`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitst.core.errors import ConflictError, EnvironmentProblem, UsageError
from gitst.sessions import claims, reservations
from gitst.sessions.identity import Identity

__all__ = ["end_session", "release_all", "release_item", "reserve_item"]

PathLike = str | os.PathLike[str] | None


def reserve_item(
    who: Identity, row: dict[str, Any], *, remote: str | None, ttl: float, root: Path, cwd: PathLike
) -> tuple[list[reservations.Reservation], str | None]:
    """Reserve the paths item ``row`` names for ``who``: (what was reserved, None), or ([], why
    the item cannot be worked on now: an overlapping live reservation, or globs that are no
    paths). An item that names no paths reserves nothing."""
    patterns = reservations.patterns_of_item(row)
    if not patterns:
        return [], None
    try:
        got = reservations.reserve(patterns, who, ttl=ttl, remote=remote, cwd=cwd, root=root, item=str(row["id"]))
    except reservations.ReservationTaken as taken:
        return [], taken.message
    except ConflictError as busy:  # the remote's table kept changing hands: the item is for later
        return [], busy.message
    except UsageError as bad:
        return [], f"its paths cannot be reserved: {bad.message}"
    return got, None


def release_all(
    who: Identity, *, remote: str | None, root: Path, cwd: PathLike, say: Callable[[str], None]
) -> list[str]:
    """Release every reservation of ``who`` (here, and on ``remote``); a remote that cannot be
    reached (or whose table kept changing) is said, not fatal: ``land`` has pushed already, and
    the entries there end with their TTL, the next release or ``git st gc``. A session that
    holds no reservation here does not ask the remote (every reservation has its twin here)."""
    if not reservations.held(who, cwd=cwd, root=root):
        return []
    try:
        return reservations.release(None, who, remote=remote, cwd=cwd, root=root)
    except (EnvironmentProblem, ConflictError) as gone:
        say(f"gitst: warning: could not release the reservations on {remote}: {gone.message}")
        return reservations.release(None, who, cwd=cwd, root=root)


def end_session(
    who: Identity, *, root: Path, cwd: PathLike, say: Callable[[str], None]
) -> tuple[claims.Released, list[str]]:
    """A session's end — `git st release` with no issue, the MCP `release` of everything, the
    harness's SessionEnd —: every claim released, then every path reservation, here and on
    ``st.remote`` (:func:`release_all`). (the claims' outcome, the patterns released)"""
    done = claims.release(who, root=root)
    return done, release_all(who, remote=claims.configured_remote(cwd), root=root, cwd=cwd, say=say)


def release_item(who: Identity, row: dict[str, Any], *, remote: str | None, root: Path, cwd: PathLike) -> None:
    """Give back the paths :func:`reserve_item` took for ``row`` (``next`` passing it over after
    all); a remote that cannot be reached leaves its entries to their TTL."""
    patterns = reservations.patterns_of_item(row)
    if not patterns:
        return
    try:
        reservations.release(patterns, who, remote=remote, cwd=cwd, root=root)
    except (EnvironmentProblem, ConflictError):
        reservations.release(patterns, who, cwd=cwd, root=root)
