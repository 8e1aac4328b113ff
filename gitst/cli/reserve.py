"""`git st reserve` — path reservations of agent sessions (docs/agent-loop.md, "Reservations").

The logic is :mod:`gitst.sessions.reservations`; this module parses arguments and renders."""

from __future__ import annotations

import os
from typing import Any

import click

from gitst.cli._parallel import (
    format_option,
    offline_option,
    remote_option,
    session_option,
    table,
    ttl_option,
    ttl_value,
    warn_short_lived,
    who,
)
from gitst.cli.output import emit_json, say
from gitst.core.errors import ConflictError, UsageError
from gitst.git.repo import toplevel
from gitst.sessions import reservations
from gitst.sessions.identity import Identity
from gitst.sessions.remote_claims import choose_remote

RESERVE_THROUGH_REMOTE = (
    "Reserve (release, list, check) through this git remote too (refs/st/reservations/table): default "
    "st.remote, else origin. With st.remote set, reserve and release go through it without this option."
)


@click.command("reserve")
@click.argument("globs", nargs=-1, metavar="[GLOB|PATH]...")
@click.option("--release", "mode", flag_value="release", help="Release GLOBs (default: every reservation held).")
@click.option("--check", "mode", flag_value="check", help="May I edit PATHs? Exit 0 free or ours, 3 reserved.")
@click.option("--list", "mode", flag_value="list", help="List the reservations this clone knows of.")
@remote_option(help=RESERVE_THROUGH_REMOTE)
@offline_option
@ttl_option
@session_option
@format_option
def reserve(
    globs: tuple[str, ...],
    mode: str | None,
    remote: str | None,
    offline: bool,
    ttl: str | None,
    session: str | None,
    fmt: str,
) -> int:
    """Reserve GLOBs (repository-relative, anchored: `src/api/**`, `docs/*.md`) for this session,
    so other sessions are told before they edit those paths.

    Exit 0 reserved (or renewed); 3 a live session holds an overlapping reservation (named);
    4 the remote cannot be reached (nothing reserved). --check PATH... answers "may I edit
    PATH" from local state alone (no network unless --remote is given): exit 0 free or ours,
    3 reserved by another live session."""
    me = who(session)
    if mode == "check":
        return _check(list(globs), me, remote, offline, fmt)
    if mode == "list":
        return _list(remote, offline, fmt)
    through, _later = choose_remote(remote, offline=offline)
    if mode == "release":
        return _release(list(globs), me, through, fmt)
    return _take(list(globs), me, through, ttl, fmt)


def _release(globs: list[str], me: Identity, through: str | None, fmt: str) -> int:
    released = reservations.release(globs or None, me, remote=through)
    if fmt == "json":
        emit_json({"session": me.session, "released": released, "remote": through})
        return 0
    for pattern in released:
        say(f"released {pattern}")
    if not released:
        say(f"session {me.session} holds no reservations" + (" of those" if globs else ""))
    return 0


def _take(globs: list[str], me: Identity, through: str | None, ttl: str | None, fmt: str) -> int:
    if not globs:
        raise UsageError("which paths? give at least one GLOB", fix="git st reserve 'src/api/**' (or --list)")
    warn_short_lived(me)
    try:
        got = reservations.reserve(globs, me, ttl=ttl_value(ttl), remote=through)
    except reservations.ReservationTaken as taken:
        if fmt == "json":
            emit_json({"session": me.session, "reserved": [], "taken": _taken_json(taken)})
        raise
    if fmt == "json":
        emit_json({"session": me.session, "reserved": [r.to_dict() for r in got], "taken": None})
        return 0
    for res in got:
        there = f"; on {res.remote} token {res.remote_token}" if res.remote else ""
        say(f"reserved {res.pattern} for session {me.session} (token {res.token}, until {res.expires}{there})")
    return 0


def _taken_json(taken: reservations.ReservationTaken) -> dict[str, Any]:
    return {"pattern": taken.pattern, "owner": taken.owner, "theirs": taken.theirs, "remote": taken.remote}


def _repo_paths(paths: list[str]) -> list[str]:
    """PATHs given relative to the current directory, as repository-relative paths."""
    top = os.path.realpath(toplevel())
    here = os.getcwd()
    out = []
    for path in paths:
        full = os.path.realpath(os.path.join(here, path))
        rel = os.path.relpath(full, top)
        if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
            raise UsageError(f"{path} is outside the repository at {top}", fix="name paths inside the work tree")
        out.append("" if rel == "." else rel.replace(os.sep, "/"))
    return out


def _check(paths: list[str], me: Identity, remote: str | None, offline: bool, fmt: str) -> int:
    if not paths:
        raise UsageError("--check needs at least one PATH", fix="git st reserve --check src/api/app.py")
    if remote is not None and not offline:  # asked for: the remote's table now, else the last one read
        through, _ = choose_remote(remote)
        if through is not None:
            reservations.refresh_cache(through)
    found = reservations.conflicts(_repo_paths(paths), me)
    if fmt == "json":
        emit_json({"session": me.session, "free": not found, "conflicts": [c.to_dict() for c in found]})
    else:
        for conflict in found:
            say(conflict.describe())
        if not found:
            say("free: no other live session reserves " + ", ".join(paths))
    return ConflictError.exit_code if found else 0


def _list(remote: str | None, offline: bool, fmt: str) -> int:
    through, _ = choose_remote(remote, offline=offline)
    if through is not None:
        reservations.refresh_cache(through)
    known = reservations.listing(include_ended=True)
    if fmt == "json":
        emit_json({"reservations": [r.to_dict() for r in known], "remote": through})
        return 0
    if not known:
        say("no reservations")
        return 0
    rows = [
        [r.pattern, r.session, r.host or "-", str(r.token), r.state, r.expires, r.item or "-", r.remote or "here"]
        for r in known
    ]
    say(table(rows, ["PATTERN", "SESSION", "HOST", "TOKEN", "STATE", "EXPIRES", "ITEM", "WHERE"], squeeze=(0,)))
    return 0
